"""A finished run must answer: no final answer is critical, a near-empty one an error."""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    answer = (trajectory.final_output or "").strip()
    if not answer:
        return [("critical", "no final answer")]
    if len(answer) < config.near_empty_chars:
        return [("error", f"near-empty final answer ({len(answer)} characters): {answer!r}")]
    return []


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.answer_lengths < max(config.near_empty_chars, 1)


CHECK = Check("empty_answer", run, may_find, reads_steps=False)
