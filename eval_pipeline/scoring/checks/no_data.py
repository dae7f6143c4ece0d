"""Tool calls that came back empty ("No data returned", `[]`): an answer built on them has nothing under it.

A call that failed is `tool_failures`'; this is a call that worked and found nothing, told by
`[checks] no_data_patterns` (regular expressions, case-insensitive, anywhere in the output).
"""

from __future__ import annotations

import re
from functools import cache

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.regex_screen import screen
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


@cache
def _no_data(patterns: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile("|".join(f"(?:{pattern})" for pattern in patterns), re.IGNORECASE)


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    if not config.no_data_patterns:
        return []
    no_data = _no_data(tuple(config.no_data_patterns))
    empty = [call for call in trajectory.calls if call.output is not None and not call.failed and no_data.search(call.output)]
    if not empty:
        return []
    examples = "; ".join(f"{call.name}: {(call.output or '').strip()[:60]!r}" for call in empty[:3])
    return [("warning", f"{len(empty)} of {len(trajectory.calls)} tool calls returned no data ({examples})")]


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    """Episodes with a tool output that matches: the calls' outputs are among them (each distinct text searched, of
    those RE2 did not rule out in bulk: `screen`)."""
    found = np.zeros(len(summaries), dtype=bool)
    if not config.no_data_patterns:
        return found
    no_data = _no_data(tuple(config.no_data_patterns))
    for entries, codes, texts in summaries.tool_outputs(screen(no_data)):
        matched = np.array([no_data.search(text) is not None for text in texts], dtype=bool)
        found[entries[matched[codes]]] = True
    return found


CHECK = Check("no_data", run, may_find)
