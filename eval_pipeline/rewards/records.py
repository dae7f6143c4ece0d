"""A day's `rewards` rows: every named reward of every scored episode, with its breakdown."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa

from eval_pipeline.rewards.functions import RewardBook
from eval_pipeline.rewards.inputs import reward_inputs


def reward_records(scored: pd.DataFrame, book: RewardBook, names: list[str]) -> list[pa.Table]:
    """`scored` as `warehouse.rewards.reward_inputs_frame` reads it; a table per name, a row per episode (`episode_id,
    agent_id, reward_name, value, breakdown`; value null where the reward has none). A reward's breakdowns are a struct
    of its kind's own fields, hence a table of its own; the warehouse writes them as JSON."""
    batch = reward_inputs(scored)
    computed = book.evaluate_batch(names, batch)
    episode_ids = pa.array(batch.episode_ids, pa.string())
    agent_ids = pa.array(scored["agent_id"].astype(str).tolist(), pa.string())
    return [
        pa.table(
            {
                "episode_id": episode_ids,
                "agent_id": agent_ids,
                "reward_name": pa.repeat(pa.scalar(name, pa.string()), len(batch)),
                "value": pa.array(rewards.values, pa.float64(), mask=np.isnan(rewards.values)),
                "breakdown": rewards.breakdowns,
            }
        )
        for name, rewards in computed.items()
    ]
