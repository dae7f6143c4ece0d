"""The runs a head-to-head comparison reads: finished episodes matching a selector, with their scores."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import duckdb
import pandas as pd

from eval_pipeline.regression.compare import Selector, SelectorError
from eval_pipeline.warehouse.connection import frame_of, of_agent

# A selector's finished runs (`$task`'s alone, when given), each with its replay's figures where it was replayed live.
# ->> is parenthesized wherever it meets another operator: DuckDB 1.5 parses it looser than =, <>, AND, IS
_SELECTED = f"""
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
  AND ($task IS NULL OR e.task_id = $task)
"""

_RUNS = f"{_SELECTED} ORDER BY e.task_id, e.episode_id"

# Per task, what a head to head reads of its runs (`regression.compare.TASK_SUMS`): a comparison holds a row per task,
# not per run, whatever the selection spans. Sums are compensated (fsum), as pandas' means are.
_TASKS = f"""
SELECT task_id, count(*) AS trials, count(passed) AS judged, count(*) FILTER (WHERE passed) AS passes,
       fsum(weighted_score) AS score_sum, count(weighted_score) AS scored,
       fsum(total_cost_usd) AS cost_sum, count(total_cost_usd) AS costed,
       fsum(total_duration_ms) AS latency_sum, count(total_duration_ms) AS timed
FROM ({_SELECTED}) GROUP BY task_id ORDER BY task_id
"""


def _params(selector: Selector, task_id: str | None) -> dict:
    return {**selector.model_dump(), "task": task_id}


def selected_runs(con: duckdb.DuckDBPyConnection, selector: Selector, task_id: str | None = None) -> pd.DataFrame:
    """The selector's runs, one row each: what a task's page lists of its trials."""
    return frame_of(con.execute(_RUNS, _params(selector, task_id)))


def selected_tasks(
    con: duckdb.DuckDBPyConnection, sides: tuple[Selector, Selector], task_id: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both sides' runs summed per task (`task_id`'s alone, when given), indexed by task; SelectorError naming the side
    that selects none (the same words in the CLI and the viewer)."""
    tasks = tuple(frame_of(con.execute(_TASKS, _params(side, task_id))).set_index("task_id") for side in sides)
    for side, name, frame in zip(sides, "ab", tasks, strict=True):
        if frame.empty and (task_id is None or _selects_none(con, side)):
            raise SelectorError(f"--{name} {side} selects no finished episode")
    return tasks[0], tasks[1]


def _selects_none(con: duckdb.DuckDBPyConnection, selector: Selector) -> bool:
    return con.execute(f"SELECT NOT EXISTS ({_SELECTED})", _params(selector, None)).fetchone() == (True,)


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
