"""Tool-use agreement over full call sequences, repeats kept (DESIGN §4)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

JACCARD_WEIGHT = 0.6
ORDER_WEIGHT = 0.4


def multiset_jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    ca, cb = Counter(a), Counter(b)
    union = sum((ca | cb).values())
    return sum((ca & cb).values()) / union if union else 1.0


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    previous = [0] * (len(b) + 1)
    for item in a:
        current = [0]
        for j, other in enumerate(b):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


@lru_cache(maxsize=65_536)
def _tool_match(a: tuple[str, ...], b: tuple[str, ...]) -> float:
    if not a and not b:
        return 1.0
    if not a or not b:
        return 0.0
    order = lcs_length(a, b) / max(len(a), len(b))
    return JACCARD_WEIGHT * multiset_jaccard(a, b) + ORDER_WEIGHT * order


def tool_match(candidate: Sequence[str], baseline: Sequence[str]) -> float:
    """0.6 × multiset Jaccard + 0.4 × LCS / longer length: identical 1.0, disjoint 0.0."""
    return _tool_match(tuple(candidate), tuple(baseline))
