"""Stalls: the same tool called with the same arguments several times in a row."""

from __future__ import annotations

from itertools import groupby

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    issues = []
    for (name, arguments), run_ in groupby(trajectory.calls, key=lambda call: (call.name, call.arguments)):
        repeats = len(list(run_))
        if repeats >= config.stall_repeats and arguments is not None:
            issues.append(("error", f"stalled: called {name} with the same arguments {repeats} times in a row"))
    return issues


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.repeated_calls > 0


CHECK = Check("stalls", run, may_find)
