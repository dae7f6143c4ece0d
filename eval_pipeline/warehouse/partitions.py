"""Whole-partition reads and writes of the pipeline's tables."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from typing import TYPE_CHECKING

from eval_pipeline.warehouse.connection import Warehouse, day_scope, frames_of
from eval_pipeline.warehouse.rows import Rows

if TYPE_CHECKING:
    import pandas as pd

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
    return warehouse.read_rows("SELECT min(partition_date) AS first FROM episodes").values[0][0]


def read_partition(warehouse: Warehouse, table: str, day: date, agent_id: str | None = None) -> pd.DataFrame:
    if table not in PIPELINE_TABLES:
        raise ValueError(f"unknown table {table}")
    scope, params = day_scope(day, agent_id)
    return warehouse.read_frame(f"SELECT * FROM {table} WHERE {scope}", params)


PARTITION_BATCH_ROWS = 50_000  # rows of the day a run of one agent reads of the others at a time


def other_agents_rows(warehouse: Warehouse, table: str, day: date, agent_id: str) -> Iterator[pd.DataFrame]:
    """`day`'s rows of `table` but `agent_id`'s, PARTITION_BATCH_ROWS at a time: what a run of one agent counts of the
    day's others, in memory set by the batch, not by the day (read whole, the others of a day of 200,000 episodes took
    a run of one agent's scores step to 749 MiB; a batch at a time, to 560 MiB)."""
    if table not in PIPELINE_TABLES:
        raise ValueError(f"unknown table {table}")
    with warehouse.connect(read_only=warehouse.exists()) as con:
        sql = f"SELECT * FROM {table} WHERE partition_date = $day AND agent_id <> $agent"
        yield from frames_of(con, sql, {"day": day, "agent": agent_id}, PARTITION_BATCH_ROWS)


def partition_counts(warehouse: Warehouse) -> Rows:
    """Rows per partition in each table (0 where it has none), for `status`."""
    unions = " UNION ALL ".join(
        f"SELECT '{table}' AS table_name, partition_date, count(*) AS n FROM {table} GROUP BY ALL" for table in PIPELINE_TABLES
    )
    pivot = f"PIVOT ({unions}) ON table_name IN {PIPELINE_TABLES} USING sum(n)::BIGINT GROUP BY partition_date"
    return warehouse.read_rows(
        f"SELECT partition_date, coalesce(COLUMNS(* EXCLUDE partition_date), 0) FROM ({pivot}) ORDER BY partition_date"
    )


def days_read_in_part(warehouse: Warehouse) -> Rows:
    """Per day and agent a run read in part (`run --model`, `--limit`): partition_date, agent_id, model, episode_limit."""
    return warehouse.read_rows("SELECT partition_date, agent_id, model, episode_limit FROM partial_days ORDER BY ALL")


def read_in_part(warehouse: Warehouse, day: date) -> bool:
    """Whether a run kept only part of what it read of `day` for some agent (`partial_days`)."""
    return bool(warehouse.read_rows("SELECT count(*) FROM partial_days WHERE partition_date = $day", {"day": day}).values[0][0])
