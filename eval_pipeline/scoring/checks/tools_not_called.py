"""Tools on offer, none called: the answer came from the model alone, where the run could have looked it up.

The tools available are `Episode.available_tools`: the episode's `metadata.available_tools` and
`metadata.tools`, and the tools each LLM call was offered (its `metadata.tools`, as an OpenAI
request's `tools`). Where the source recorded none, nothing is known and nothing is flagged.
"""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    available = sorted(trajectory.available_tools)
    if not available or len(trajectory.calls) >= config.min_tool_calls:
        return []
    made = f"{len(trajectory.calls)} tool calls (fewer than {config.min_tool_calls})" if trajectory.calls else "no tool called"
    offered = ", ".join(available[:5]) + (f" and {len(available) - 5} more" if len(available) > 5 else "")
    return [("error", f"{made}, with {len(available)} available: {offered}")]


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return (summaries.available_tools > 0) & (summaries.tool_calls < config.min_tool_calls)


CHECK = Check("tools_not_called", run, may_find)
