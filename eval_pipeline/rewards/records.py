"""A day's `rewards` rows: every named reward of every scored episode, with its breakdown as JSON."""

from __future__ import annotations

import orjson
import pandas as pd

from eval_pipeline.rewards.functions import RewardBook
from eval_pipeline.rewards.inputs import reward_inputs

REWARD_COLUMNS = ["episode_id", "agent_id", "reward_name", "value", "breakdown"]


def reward_records(scored: pd.DataFrame, book: RewardBook, names: list[str]) -> pd.DataFrame:
    """`scored` as `warehouse.rewards.reward_inputs_frame` reads it; one row per episode and name, in that order."""
    rows = []
    for agent_id, episode in zip(scored["agent_id"], reward_inputs(scored), strict=True):
        for name, reward in book.evaluate_all(names, episode).items():
            rows.append(
                (
                    episode.episode_id,
                    agent_id,
                    name,
                    reward.value,
                    orjson.dumps(reward.breakdown, option=orjson.OPT_SORT_KEYS).decode(),
                )
            )
    return pd.DataFrame(rows, columns=REWARD_COLUMNS).astype({"value": float})
