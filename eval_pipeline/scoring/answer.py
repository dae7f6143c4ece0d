"""Answer agreement: normalized exact match, else token-level F1 (SQuAD style)."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

_WHITESPACE = re.compile(r"\s+")
_TOKEN = re.compile(r"\w+")


def normalize(text: str | None) -> str:
    """Case-folded, whitespace collapsed: how two answers are compared for exact match."""
    return _WHITESPACE.sub(" ", (text or "").casefold()).strip()


@lru_cache(maxsize=65_536)
def answer_match(candidate: str | None, reference: str | None) -> float:
    """1.0 on a normalized exact match, else the F1 of their word tokens (0..1)."""
    a, b = normalize(candidate), normalize(reference)
    if a == b:
        return 1.0
    tokens_a, tokens_b = Counter(_TOKEN.findall(a)), Counter(_TOKEN.findall(b))
    overlap = sum((tokens_a & tokens_b).values())
    if overlap == 0:
        return 0.0
    precision = overlap / sum(tokens_a.values())
    recall = overlap / sum(tokens_b.values())
    return 2 * precision * recall / (precision + recall)
