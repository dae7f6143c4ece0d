"""Whole-partition reads and writes of the pipeline's tables."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse

PIPELINE_TABLES = (
    "episodes",
    "episode_steps",
    "quarantine",
    "baselines",
    "replays",
    "scores",
    "findings",
    "reports",
    "judgements",
    "pairwise_judgements",
    "assertions",
    "issues",
    "pass_at_k",
    "task_trials",
    "rewards",
)


def first_evaluated_day(warehouse: Warehouse) -> date | None:
    """The oldest day the warehouse holds episodes of, None before the first run."""
    value = warehouse.read_frame("SELECT min(partition_date) AS first FROM episodes")["first"].iloc[0]
    return None if pd.isna(value) else pd.Timestamp(value).date()


def read_partition(warehouse: Warehouse, table: str, day: date, agent_id: str | None = None) -> pd.DataFrame:
    if table not in PIPELINE_TABLES:
        raise ValueError(f"unknown table {table}")
    scope = " AND agent_id = $agent" if agent_id else ""
    params = {"day": day, "agent": agent_id} if agent_id else {"day": day}
    return warehouse.read_frame(f"SELECT * FROM {table} WHERE partition_date = $day{scope}", params)


def read_days(warehouse: Warehouse, table: str, first: date, last: date, agent_id: str | None = None) -> pd.DataFrame:
    """Rows of `table` from `first` to `last` (inclusive), one agent's when scoped."""
    if table not in PIPELINE_TABLES:
        raise ValueError(f"unknown table {table}")
    return warehouse.read_frame(
        f"SELECT * FROM {table} WHERE partition_date BETWEEN $first AND $last AND ($agent IS NULL OR agent_id = $agent)",
        {"first": first, "last": last, "agent": agent_id},
    )


def partition_counts(warehouse: Warehouse) -> pd.DataFrame:
    """Rows per partition in each table, for `status`."""
    unions = " UNION ALL ".join(
        f"SELECT '{table}' AS table_name, partition_date, count(*) AS n FROM {table} GROUP BY ALL" for table in PIPELINE_TABLES
    )
    return warehouse.read_frame(
        f"PIVOT ({unions}) ON table_name IN {PIPELINE_TABLES} USING sum(n) GROUP BY partition_date ORDER BY partition_date"
    )
