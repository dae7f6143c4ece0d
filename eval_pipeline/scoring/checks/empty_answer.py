"""A finished run must answer: no final answer is critical, a near-empty one an error."""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Found, answer_check
from eval_pipeline.scoring.trajectory import Summaries


def rule(answer: str | None, config: ChecksConfig) -> Found:
    text = (answer or "").strip()
    if not text:
        return [("critical", "no final answer")]
    if len(text) < config.near_empty_chars:
        return [("error", f"near-empty final answer ({len(text)} characters): {text!r}")]
    return []


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.answer_lengths < max(config.near_empty_chars, 1)


CHECK = answer_check("empty_answer", rule, may_find)
