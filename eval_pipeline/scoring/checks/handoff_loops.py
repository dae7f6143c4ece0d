"""Agents talking past each other: handing the run back and forth without getting a tool call done.

A hand-off is a step by another agent than the step before; it goes *back* when that agent already
acted since the run last made tool progress (a tool call that succeeded). More than
`max_handoffs_back` such hand-offs in one stretch without progress is an error: the multi-agent
form of a stall. A relay (A to B to C) never goes back, however long.
"""

from __future__ import annotations

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    most, among = 0, ""  # the most hand-offs back in one stretch, and between whom
    back, previous = 0, None  # in the current stretch: hand-offs back to an agent in `acted`, those that acted
    acted: list[str] = []
    for step in trajectory.agent_steps:
        if step.agent != previous and step.agent in acted:
            back += 1
            if back > most:
                most, among = back, ", ".join(acted)
        elif step.agent not in acted:
            acted.append(step.agent)
        previous = step.agent
        if step.tool_progress:
            back, acted = 0, [step.agent]
    if most <= config.max_handoffs_back:
        return []
    return [("error", f"{most} hand-offs back and forth between {among} without a tool call that succeeded")]


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.agents >= 2  # a hand-off back needs two agents


CHECK = Check("handoff_loops", run, may_find)
