"""The runs a head-to-head comparison reads: finished episodes matching a selector, with their scores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import duckdb
import pandas as pd

from eval_pipeline.regression.compare import Selector, SelectorError
from eval_pipeline.warehouse.connection import frame_of, of_agent

# ->> is parenthesized wherever it meets another operator: DuckDB 1.5 parses it looser than =, <>, AND, IS
_RUNS = f"""
SELECT e.episode_id, e.partition_date, e.agent_id, e.task_id, coalesce(r.model, e.model) AS model,
       e.metadata ->> '$.label' AS label, coalesce(r.status, e.status) AS status,
       coalesce(r.total_cost_usd, e.total_cost_usd) AS total_cost_usd,
       coalesce(r.total_duration_ms, e.total_duration_ms) AS total_duration_ms,
       s.weighted_score, s.correctness, s.passed
FROM episodes e
LEFT JOIN replays r USING (episode_id, partition_date)
LEFT JOIN scores s USING (episode_id, partition_date)
WHERE e.status <> 'running'
  AND ($first IS NULL OR e.partition_date BETWEEN $first AND $last)
  AND {of_agent("e.agent_id")}
  AND ($model IS NULL OR coalesce(r.model, e.model) = $model)
  AND ($label IS NULL OR (e.metadata ->> '$.label') = $label)
ORDER BY e.task_id, e.episode_id
"""


def selected_runs(con: duckdb.DuckDBPyConnection, selector: Selector) -> pd.DataFrame:
    return frame_of(con.execute(_RUNS, selector.model_dump()))


def selected_sides(con: duckdb.DuckDBPyConnection, sides: tuple[Selector, Selector]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sides' runs; SelectorError naming the side that selects none (the same words in the CLI and the viewer)."""
    runs = (selected_runs(con, sides[0]), selected_runs(con, sides[1]))
    for side, name, frame in zip(sides, "ab", runs, strict=True):
        if frame.empty:
            raise SelectorError(f"--{name} {side} selects no finished episode")
    return runs


@dataclass(frozen=True)
class SelectorChoices:
    """What a selector can name in this warehouse, for the viewer's form that builds one."""

    days: list[date]
    agents: list[str]
    models: list[str]
    labels: list[str]


def selector_choices(con: duckdb.DuckDBPyConnection) -> SelectorChoices:
    rows = con.execute(
        """
        SELECT DISTINCT 'day', CAST(e.partition_date AS VARCHAR) FROM episodes e WHERE e.status <> 'running'
        UNION SELECT DISTINCT 'agent', e.agent_id FROM episodes e WHERE e.status <> 'running'
        UNION SELECT DISTINCT 'model', coalesce(r.model, e.model) FROM episodes e
              LEFT JOIN replays r USING (episode_id, partition_date)
              WHERE e.status <> 'running' AND coalesce(r.model, e.model) IS NOT NULL
        UNION SELECT DISTINCT 'label', e.metadata ->> '$.label' FROM episodes e
              WHERE e.status <> 'running' AND (e.metadata ->> '$.label') IS NOT NULL
        ORDER BY ALL
        """
    ).fetchall()
    found: dict[str, list[str]] = {"day": [], "agent": [], "model": [], "label": []}
    for kind, value in rows:
        found[kind].append(value)
    return SelectorChoices([date.fromisoformat(d) for d in found["day"]], found["agent"], found["model"], found["label"])
