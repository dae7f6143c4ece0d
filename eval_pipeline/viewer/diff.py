"""Two runs side by side: tool sequences aligned step for step, answers diffed word by word."""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

Change = Literal["same", "changed", "removed", "added"]


@dataclass(frozen=True)
class AlignedStep:
    """One row of two aligned sequences: the baseline's item, the candidate's, or both."""

    change: Change
    baseline: str | None
    candidate: str | None


def align(baseline: list[str], candidate: list[str]) -> list[AlignedStep]:
    """The two sequences aligned on their longest common runs; what differs between two runs pairs up as `changed`,
    and what one has beyond the other is `removed` (baseline only) or `added` (candidate only)."""
    rows: list[AlignedStep] = []
    for op, b1, b2, c1, c2 in SequenceMatcher(a=baseline, b=candidate, autojunk=False).get_opcodes():
        if op == "equal":
            rows += [AlignedStep("same", b, c) for b, c in zip(baseline[b1:b2], candidate[c1:c2], strict=True)]
            continue
        left, right = baseline[b1:b2], candidate[c1:c2]
        for n in range(max(len(left), len(right))):
            b, c = (left[n] if n < len(left) else None), (right[n] if n < len(right) else None)
            rows.append(
                AlignedStep("changed" if b is not None and c is not None else ("removed" if c is None else "added"), b, c)
            )
    return rows


@dataclass(frozen=True)
class Piece:
    """A run of words of one side of a text diff; `changed`: not in the other side."""

    text: str
    changed: bool


_WORDS = re.compile(r"\s+|\S+\s*")  # a word with the space after it: spaces alone never pair two runs up


def word_diff(baseline: str, candidate: str) -> tuple[list[Piece], list[Piece]]:
    """Each side as pieces, marked where it differs from the other."""
    left, right = _WORDS.findall(baseline), _WORDS.findall(candidate)
    left_pieces: list[Piece] = []
    right_pieces: list[Piece] = []
    for op, b1, b2, c1, c2 in SequenceMatcher(a=left, b=right, autojunk=False).get_opcodes():
        if b2 > b1:
            left_pieces.append(Piece("".join(left[b1:b2]), op != "equal"))
        if c2 > c1:
            right_pieces.append(Piece("".join(right[c1:c2]), op != "equal"))
    return left_pieces, right_pieces
