"""Tool failure rate: the share of tool calls whose call or result errored."""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    if not trajectory.calls:
        return []
    failed = sum(call.failed for call in trajectory.calls)
    rate = failed / len(trajectory.calls)
    detail = f"{failed} of {len(trajectory.calls)} tool calls failed ({rate:.0%})"
    if rate > config.tool_failure_error:
        return [("error", detail)]
    if rate > config.tool_failure_warning:
        return [("warning", detail)]
    return []


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.failed_tool_steps > 0


CHECK = Check("tool_failures", run, may_find)
