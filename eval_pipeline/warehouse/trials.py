"""What repeated-trial statistics read (each scored trial's verdict sources) and write."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, of_agent, replace_partition


def trial_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> pd.DataFrame:
    """`agent_id, task_id, episode_id, passed` (the episode verdict) of the day's scored trials."""
    return warehouse.read_frame(
        f"""
        SELECT s.agent_id, s.task_id, s.episode_id, s.passed
        FROM current_scores s
        WHERE s.partition_date = $day AND {of_agent("s.agent_id")}
        ORDER BY s.agent_id, s.task_id, s.episode_id
        """,
        {"day": day, "agent": agent_id},
    )


def write_trials(warehouse: Warehouse, day: date, per_k: pd.DataFrame, per_task: pd.DataFrame, agent_id: str | None) -> None:
    with warehouse.transaction() as con:
        replace_partition(con, "pass_at_k", day, per_k, agent_id)
        replace_partition(con, "task_trials", day, per_task, agent_id)
