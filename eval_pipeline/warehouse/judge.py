"""What the judge reads (each candidate's first user message and answer) and its response cache."""

from __future__ import annotations

import json
from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition


def judge_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> pd.DataFrame:
    """`episode_id, agent_id, user_input, final_output` of the day's finished candidates."""
    return warehouse.read_frame(
        """
        SELECT r.episode_id, r.agent_id,
               first(s.input ORDER BY s.step_index) AS user_input, any_value(r.final_output) AS final_output
        FROM replays r
        LEFT JOIN episode_steps s
            ON s.partition_date = r.partition_date AND s.episode_id = r.episode_id AND s.step_type = 'llm_call'
        WHERE r.partition_date = $day AND ($agent IS NULL OR r.agent_id = $agent)
        GROUP BY r.episode_id, r.agent_id
        ORDER BY r.episode_id
        """,
        {"day": day, "agent": agent_id},
    )


def cached_answers(warehouse: Warehouse, keys: list[str]) -> dict[str, dict]:
    if not keys:
        return {}
    frame = warehouse.read_frame("SELECT cache_key, answer FROM llm_cache WHERE list_contains($keys, cache_key)", {"keys": keys})
    return {key: json.loads(answer) for key, answer in zip(frame["cache_key"], frame["answer"], strict=True)}


def write_judgements(warehouse: Warehouse, day: date, rows: pd.DataFrame, new_cache: pd.DataFrame, agent_id: str | None) -> int:
    """New cache entries and the day's judgements, in one transaction."""
    with warehouse.transaction() as con:
        if len(new_cache):
            con.register("_new_cache", new_cache)
            con.execute("INSERT OR IGNORE INTO llm_cache BY NAME SELECT * FROM _new_cache")
            con.unregister("_new_cache")
        return replace_partition(con, "judgements", day, rows, agent_id)
