"""A finished run must answer: no final answer is critical, a near-empty one an error."""

from __future__ import annotations

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    answer = (trajectory.final_output or "").strip()
    if not answer:
        return [("critical", "no final answer")]
    if len(answer) < config.near_empty_chars:
        return [("error", f"near-empty final answer ({len(answer)} characters): {answer!r}")]
    return []


CHECK = Check("empty_answer", run)
