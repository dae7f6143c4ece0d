"""What findings read (a day's scores that may find something, a part at a time; per-task summaries of the days around
it) and write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pandas as pd

from eval_pipeline.regression.findings import FindingScreen
from eval_pipeline.warehouse.assertions import issues_in_part, sort_issues_into_parts
from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, frame_of, of_agent, replace_partition
from eval_pipeline.warehouse.replays import candidate_parts, sort_into_parts

FINDING_PART_EPISODES = 50_000  # scored episodes whose findings are found at a time

_SCREENED_SCORES = f"""
SELECT * FROM scores
WHERE {DAY_OF_AGENT}
    AND (case_passed = false OR {{breaches}} OR episode_id IN (SELECT episode_id FROM part_issues))
"""
_PART_SCORES = "SELECT * EXCLUDE (part) FROM part_scores WHERE part = $part ORDER BY episode_id"


def screened_scores_in_parts(
    warehouse: Warehouse, day: date, agent_id: str | None, screen: FindingScreen
) -> Iterator[tuple[pd.DataFrame, pd.DataFrame]]:
    """The day's `scores` rows (one agent's, when scoped) that pass `screen`, with the `issues` rows of its checks of
    the same episodes, in as many parts as the day's episodes fill at FINDING_PART_EPISODES (by a hash of their ids:
    `sort_into_parts`), each in id order: a day's findings never hold the whole day, even when every episode passes
    the screen."""
    breaches = [f'"{b.column}" {">" if b.above else "<"} $limit{i}' for i, b in enumerate(screen.breachable)]
    params: dict[str, object] = {"day": day, "agent": agent_id}
    params |= {f"limit{i}": b.limit for i, b in enumerate(screen.breachable)}
    sql = _SCREENED_SCORES.format(breaches=" OR ".join(breaches) or "false")
    with warehouse.connect(read_only=warehouse.exists()) as con:
        parts = candidate_parts(con, day, agent_id, FINDING_PART_EPISODES)
        sort_issues_into_parts(con, day, agent_id, parts, screen.checks)  # the screen reads them too
        sort_into_parts(con, "part_scores", sql, params, parts)
        for part in range(parts):
            scores = frame_of(con.execute(_PART_SCORES, {"part": part}))
            yield scores, issues_in_part(con, part)


def task_summaries_sql(columns: list[str]) -> str:
    """Per agent, task and day of `scores` between $first and $last (one agent's when $agent is not NULL), superseded
    runs left out: the mean of each of `columns` (`passed` as 1.0 / 0.0, no verdict left out), `graded` (episodes
    with a verdict) and `passes`; ordered by agent, task and day."""
    means = ", ".join(f'avg("{column}"::DOUBLE) AS "{column}"' for column in columns)
    return f"""
    SELECT agent_id, task_id, partition_date, {means}, count(passed) AS graded, count(*) FILTER (passed) AS passes
    FROM scores
    WHERE partition_date BETWEEN $first AND $last AND {of_agent()}
        AND NOT coalesce(superseded, false)
    GROUP BY agent_id, task_id, partition_date
    ORDER BY agent_id, task_id, partition_date
    """


def task_summaries(warehouse: Warehouse, first: date, last: date, agent_id: str | None, columns: list[str]) -> pd.DataFrame:
    """`task_summaries_sql` over the warehouse: one row per task and day, however many episodes the days hold."""
    return warehouse.read_frame(task_summaries_sql(columns), {"first": first, "last": last, "agent": agent_id})


def write_findings(warehouse: Warehouse, day: date, findings: pd.DataFrame, agent_id: str | None) -> int:
    """Replace the day's findings (one agent's, when scoped) in one transaction."""
    with warehouse.transaction() as con:
        return replace_partition(con, "findings", day, findings, agent_id)
