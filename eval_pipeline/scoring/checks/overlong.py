"""Runs that go on too long: too many LLM calls, or too much wall time."""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    issues = []
    if trajectory.llm_calls > config.max_llm_calls:
        issues.append(("warning", f"{trajectory.llm_calls} LLM calls (more than {config.max_llm_calls})"))
    seconds = (trajectory.duration_ms or 0) / 1000
    if seconds > config.max_duration_seconds:
        issues.append(("warning", f"ran {seconds:,.0f} s (longer than {config.max_duration_seconds:,.0f} s)"))
    return issues


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    seconds = np.nan_to_num(summaries.duration_ms) / 1000
    return (summaries.llm_calls > config.max_llm_calls) | (seconds > config.max_duration_seconds)


CHECK = Check("overlong", run, may_find)
