"""Dry replay: the recording itself is the candidate run, compared with a baseline from history."""

from __future__ import annotations

import pandas as pd

REPLAY_COLUMNS = [
    "episode_id",
    "partition_date",
    "agent_id",
    "model",
    "status",
    "final_output",
    "tools",
    "total_cost_usd",
    "total_duration_ms",
    "total_tokens",
    "step_count",
    "error_steps",
]


def dry_replays(episodes: pd.DataFrame) -> pd.DataFrame:
    """One replay per finished episode; running ones wait until they finish (DESIGN §4)."""
    finished = episodes.loc[episodes["status"] != "running", REPLAY_COLUMNS]
    return finished.assign(mode="dry", error=None)
