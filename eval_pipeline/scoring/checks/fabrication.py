"""Numeric fabrication: every number (≥ 1) the answer states must come from a tool or the user.

A number matches when some number in a tool's output or the user's own input is within the
tolerance (5 % relative by default). Currency signs, thousands separators and K/M/B (or
thousand/million/billion) suffixes are read; dates, times, years and list numbering are not
claims, nor are digits inside identifiers (A-10482, version 3.15.0) or ranges (5-7). Each number that matches
nothing is an issue, and a regression finding (critical by default: `[policies] finding_severity`).
"""

from __future__ import annotations

import re
from bisect import bisect_left

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory

_MONTH = r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?"
_NOT_CLAIMS = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}(?:[t ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?z?)?\b"  # ISO dates and times
    r"|\b\d{1,2}[/.]\d{1,2}[/.]\d{2,4}\b"  # 11/05/2026, 05.11.2026
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\s*(?:[ap]\.?m\.?)?"  # 10:30, 9:05 pm
    rf"|\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+\d{{4}})?\b"  # November 5, 2026
    rf"|\b\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}(?:,?\s+\d{{4}})?"  # 5th of November 2026
    r"|(?m:^[^\S\n]*\d{1,3}[.)](?=\s))",  # list numbering (indent within its line: \s* would rescan every blank line)
    re.IGNORECASE,
)
# Digits inside identifiers (A-10482, INV-2026-0412, rf-8817) or ranges (5-7) are not claims.
_NUMBER = re.compile(
    r"(?P<currency>[$€£¥])?\s?(?<![\w.\-/#])(?P<number>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?:\s?(?P<suffix>[kmb]|thousand|million|billion|bn)(?![a-z]))?(?P<percent>\s?%)?(?![\w\-/]|\.\d)",
    re.IGNORECASE,
)
_DIGIT = re.compile(r"\d")
_SCALE = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "bn": 1e9, "billion": 1e9}


def numbers(text: str, *, claims_only: bool = False) -> list[tuple[str, float]]:
    """(as written, value) of each number in `text`; with `claims_only`, dates, times, list numbering
    and bare years are left out."""
    if claims_only:
        text = _NOT_CLAIMS.sub(" ", text)
    found = []
    for match in _NUMBER.finditer(text):
        value = float(match["number"].replace(",", "")) * _SCALE.get((match["suffix"] or "").lower(), 1.0)
        bare = not (match["currency"] or match["suffix"] or match["percent"] or "." in match["number"])
        if claims_only and bare and 1900 <= value <= 2100 and match["number"].isdigit():
            continue  # a year
        found.append((match.group(0).strip(), value))
    return found


def _supported(value: float, index: list[float], tolerance: float) -> bool:
    """Whether a source in `index` (distinct, positive, sorted) is within `tolerance` of `value`. The ones that match
    lie from value / (1 + tolerance) up, so a bisection finds the first (with a neighbour each side, for a bound that
    rounds either way) instead of a scan of every source for every claim, which made an answer full of numbers
    quadratic."""
    nearest = bisect_left(index, value / (1 + tolerance))
    return any(abs(value - source) <= tolerance * source for source in index[max(nearest - 1, 0) : nearest + 2])


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    if not _DIGIT.search(trajectory.final_output or ""):
        return []  # most answers state no number: skip the costlier parse
    claims = [(text, value) for text, value in numbers(trajectory.final_output or "", claims_only=True) if value >= 1]
    if not claims:
        return []
    texts = [call.output or "" for call in trajectory.calls] + [call.arguments or "" for call in trajectory.calls]
    sources = [value for text in texts + trajectory.user_inputs for _, value in numbers(text) if value]
    sources += [value * 100 for value in sources if value < 1]  # a rate of 0.15 stated as 15 %
    index = sorted(set(sources))
    return [
        ("error", f"{text!r} in the answer matches no number in the tool outputs or the user's input")
        for text, value in claims
        if not _supported(value, index, config.fabrication_tolerance)
    ]


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.per_answer(lambda text: _DIGIT.search(text or "") is not None, bool)


CHECK = Check("numeric_fabrication", run, may_find)
