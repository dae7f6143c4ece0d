"""A short final answer: fewer characters than `short_answer_chars` (100), as agent-eval's issue detector warns.

Missing and near-empty answers are `empty_answer`'s, so one answer is flagged once.
"""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Found, answer_check
from eval_pipeline.scoring.trajectory import Summaries


def rule(answer: str | None, config: ChecksConfig) -> Found:
    text = (answer or "").strip()
    if config.near_empty_chars <= len(text) < config.short_answer_chars and text:
        return [("warning", f"short final answer ({len(text)} characters, under {config.short_answer_chars})")]
    return []


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    lengths = summaries.answer_lengths
    return (lengths > 0) & (lengths >= config.near_empty_chars) & (lengths < config.short_answer_chars)


CHECK = answer_check("short_answer", rule, may_find)
