"""One agent doing all the work of a multi-agent run: more than `max_agent_share` of the steps.

Counted over the steps that name their agent (`episode_steps.agent`), in runs where at least two
agents acted; a team whose other members never act shows as one agent and is not judged.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check
from eval_pipeline.scoring.trajectory import Summaries, Trajectory


def run(trajectory: Trajectory, config: ChecksConfig) -> list[tuple[str, str]]:
    steps = Counter(step.agent for step in trajectory.agent_steps)
    if len(steps) < 2:
        return []
    (busiest, taken), total = steps.most_common(1)[0], steps.total()
    if taken / total <= config.max_agent_share:
        return []
    others = ", ".join(f"{agent} {count}" for agent, count in steps.most_common()[1:])
    return [("warning", f"{busiest} took {taken} of {total} steps ({taken / total:.0%}; {others})")]


def may_find(summaries: Summaries, config: ChecksConfig) -> np.ndarray:
    return summaries.agents >= 2


CHECK = Check("agent_imbalance", run, may_find)
