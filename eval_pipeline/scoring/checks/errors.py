"""Errored steps and tracebacks: a traceback in the answer is critical, errored steps are warnings."""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory

TRACEBACK = "Traceback (most recent call last)"


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    issues = []
    if TRACEBACK in (trajectory.final_output or ""):
        issues.append(("critical", "the final answer contains a Python traceback"))
    tracebacks = sum(TRACEBACK in text for text in trajectory.error_outputs)
    if trajectory.error_outputs:
        first = trajectory.error_outputs[0].strip().splitlines()[0][:120] if trajectory.error_outputs[0].strip() else "?"
        severity = "error" if len(trajectory.error_outputs) * 2 > max(trajectory.step_count, 1) else "warning"
        more = f", {tracebacks} with a traceback" if tracebacks else ""
        issues.append(
            (severity, f"{len(trajectory.error_outputs)} of {trajectory.step_count} steps errored{more}; first: {first}")
        )
    return issues


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    in_answer = summaries.per_answer(lambda text: TRACEBACK in (text or ""), bool)
    return in_answer | (summaries.errored_steps > 0)


CHECK = Check("errors", run, may_find)
