"""Baselines: maintained one partition at a time, looked up (never recomputed) when scoring.

A live replay's baseline is its own recording; a dry one's comes from history.

Rows come from runs (`origin = 'run'`, replaced when their day re-runs) or from people
(`promote`, `pin`: pinned rows that stay until removed by hand).

Each partition contributes rows: its pinned episodes (`metadata.baseline = true`, valid from
that day) and, under policy `first`, the earliest successful episode of a task no earlier day
has one for; under `rolling`, the latest successful episode of every task (both valid from the
next day). A row snapshots what scoring compares, so a lookup never scans episode history, and
`valid_from` means a later pin or promotion never rewrites the past.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import date, timedelta

import duckdb
import pandas as pd

from eval_pipeline.episodes.records import RawRecord
from eval_pipeline.warehouse.assertions import issues_in_part, sort_issues_into_parts
from eval_pipeline.warehouse.connection import Warehouse, clear_partition, insert_rows, second_cursor
from eval_pipeline.warehouse.ingest import canonical_episodes, drop_canonical
from eval_pipeline.warehouse.replays import candidate_parts, sort_into_parts
from eval_pipeline.warehouse.rows import one_row

_SNAPSHOT = "status, final_output, tools, total_cost_usd, total_duration_ms, total_tokens, step_count, error_steps"

_CONTRIBUTIONS = f"""
WITH today AS (
    SELECT * FROM episodes WHERE partition_date = $day AND ($agent IS NULL OR agent_id = $agent)
), ranked_successes AS (
    SELECT *, row_number() OVER (
        PARTITION BY agent_id, task_id
        ORDER BY CASE WHEN $policy = 'rolling' THEN epoch(started_at) ELSE -epoch(started_at) END DESC, episode_id
    ) AS rank
    FROM today WHERE status = 'success'
)
SELECT agent_id, task_id, episode_id, true AS pinned, $day AS valid_from, {_SNAPSHOT}
FROM today WHERE pinned_baseline
UNION ALL
SELECT agent_id, task_id, episode_id, false AS pinned, $day + 1 AS valid_from, {_SNAPSHOT}
FROM ranked_successes s
WHERE rank = 1 AND ($policy = 'rolling' OR NOT EXISTS (
    SELECT 1 FROM baselines b
    WHERE NOT b.pinned AND b.agent_id = s.agent_id AND b.task_id = s.task_id AND b.valid_from <= $day
))
"""


_UNCOVERED = """
SELECT DISTINCT agent_id, task_id FROM episodes e
WHERE partition_date = $day AND ($agent IS NULL OR agent_id = $agent) AND NOT EXISTS (
    SELECT 1 FROM baselines b
    WHERE b.agent_id = e.agent_id AND b.task_id = e.task_id AND b.valid_from <= $day
)
"""


def days_to_look_back(warehouse: Warehouse, day: date, lookback_days: int, agent_id: str | None = None) -> list[date]:
    """The days before `day` (newest first, at most `lookback_days`) the warehouse has not evaluated, when some
    task of `day` has no baseline yet; none otherwise. Only those days can hold a baseline we do not know of."""
    if not lookback_days:
        return []
    with warehouse.connect(read_only=True) as con:
        params = {"day": day, "agent": agent_id}
        if not one_row(con, f"SELECT count(*) FROM ({_UNCOVERED})", params)[0]:
            return []
        evaluated = {
            row[0]
            for row in con.execute(
                "SELECT DISTINCT partition_date FROM episodes WHERE partition_date BETWEEN $day - $n AND $day - 1 "
                "AND ($agent IS NULL OR agent_id = $agent)",
                {**params, "n": lookback_days},
            ).fetchall()
        }
    return [d for d in (day - timedelta(days=n) for n in range(1, lookback_days + 1)) if d not in evaluated]


def write_history_baselines(
    warehouse: Warehouse,
    day: date,
    history: Iterable[tuple[date, Iterable[RawRecord]]],
    policy: str,
    agent_id: str | None = None,
) -> int:
    """Baselines (`origin = 'history'`, valid from `day`) for `day`'s tasks that have none, from the source's
    earlier days: the earliest successful run of each in `history` (`rolling`: the latest). Those days are
    read, never written or scored. Replaces what `day` established this way before; returns how many."""
    with warehouse.transaction() as con:
        con.execute(
            "DELETE FROM baselines WHERE partition_date = $day AND origin = 'history' AND ($agent IS NULL OR agent_id = $agent)",
            {"day": day, "agent": agent_id},
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE _uncovered AS {_UNCOVERED}", {"day": day, "agent": agent_id})
        con.execute(f"CREATE OR REPLACE TEMP TABLE _history AS SELECT agent_id, task_id, episode_id, started_at, {_SNAPSHOT} "
                    "FROM episodes LIMIT 0")  # fmt: skip
        for earlier, records in history:
            canonical_episodes(con, earlier, records, agent_id)
            con.execute(
                f"INSERT INTO _history SELECT agent_id, task_id, episode_id, started_at, {_SNAPSHOT} FROM _canonical "
                "WHERE status = 'success' AND (agent_id, task_id) IN (SELECT (agent_id, task_id) FROM _uncovered)"
            )
        added = one_row(
            con,
            f"""INSERT INTO baselines BY NAME
            SELECT agent_id, task_id, episode_id, false AS pinned, $day AS valid_from, $day AS partition_date,
                   $policy AS policy, 'history' AS origin, {_SNAPSHOT}
            FROM _history
            QUALIFY row_number() OVER (
                PARTITION BY agent_id, task_id
                ORDER BY CASE WHEN $policy = 'rolling' THEN epoch(started_at) ELSE -epoch(started_at) END DESC, episode_id
            ) = 1""",
            {"day": day, "policy": policy},
        )[0]
        con.execute("DROP TABLE _history; DROP TABLE _uncovered")
        drop_canonical(con)
    return int(added)


def write_baselines(warehouse: Warehouse, day: date, policy: str, agent_id: str | None = None) -> int:
    """Replace the baseline rows `day` contributes; return how many it contributes."""
    rows = f"""
        SELECT *, $day AS partition_date, $policy AS policy
        FROM ({_CONTRIBUTIONS})
    """
    with warehouse.transaction() as con:
        con.execute(
            "DELETE FROM baselines WHERE partition_date = $day AND origin = 'run' AND ($agent IS NULL OR agent_id = $agent)",
            {"day": day, "agent": agent_id},
        )
        return one_row(con, f"INSERT INTO baselines BY NAME {rows}", {"day": day, "agent": agent_id, "policy": policy})[0]


# Which baseline row wins for a candidate: a pin (or promotion) over an automatic row, the
# latest pin first; among automatic rows the earliest (`first`) or the latest (`rolling`).
_PRECEDENCE = """b.pinned DESC,
    CASE WHEN b.pinned OR $policy = 'rolling' THEN b.valid_from END DESC NULLS LAST,
    b.valid_from, b.established_at DESC"""


def promote(warehouse: Warehouse, agent_id: str, day: date) -> int:
    """Make the day's successful runs of `agent_id` its baselines from `day` on (earliest run per task)."""
    rows = f"""
        SELECT agent_id, task_id, episode_id, true AS pinned, $day AS valid_from, $day AS partition_date,
               'promote' AS policy, 'promote' AS origin, {_SNAPSHOT}
        FROM episodes WHERE partition_date = $day AND agent_id = $agent AND status = 'success'
        QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY started_at, episode_id) = 1
    """
    with warehouse.transaction() as con:
        return one_row(con, f"INSERT INTO baselines BY NAME {rows}", {"day": day, "agent": agent_id})[0]


def pin(warehouse: Warehouse, episode_id: str, valid_from: date | None) -> dict | None:
    """Pin one episode as its task's baseline from `valid_from` (default: its own day); None if unknown."""
    rows = f"""
        SELECT agent_id, task_id, episode_id, true AS pinned, coalesce($valid_from, partition_date) AS valid_from,
               partition_date, 'pin' AS policy, 'pin' AS origin, {_SNAPSHOT}
        FROM episodes WHERE episode_id = $episode LIMIT 1
    """
    params = {"episode": episode_id, "valid_from": valid_from}
    with warehouse.transaction() as con:
        if not one_row(con, f"INSERT INTO baselines BY NAME {rows}", params)[0]:
            return None
        found = one_row(con, "SELECT agent_id, task_id, valid_from FROM baselines WHERE episode_id = $episode AND origin = 'pin' "
                             "ORDER BY established_at DESC LIMIT 1", {"episode": episode_id})  # fmt: skip
    return {"agent_id": found[0], "task_id": found[1], "valid_from": found[2]}


def effective_baselines(warehouse: Warehouse, as_of: date, policy: str, agent_id: str | None = None) -> pd.DataFrame:
    """The baseline each (agent, task) is compared with on `as_of`."""
    return warehouse.read_frame(
        f"""
        SELECT agent_id, task_id, episode_id, pinned, origin, valid_from, status, total_cost_usd, total_duration_ms
        FROM baselines b
        WHERE valid_from <= $day AND ($agent IS NULL OR agent_id = $agent)
        QUALIFY row_number() OVER (PARTITION BY agent_id, task_id ORDER BY {_PRECEDENCE}) = 1
        ORDER BY agent_id, task_id
        """,
        {"day": as_of, "policy": policy, "agent": agent_id},
    )


_SCORE_CANDIDATES = """
-- ->> is parenthesized wherever it meets another operator: DuckDB 1.5 parses it looser than =, <>, AND, IS
WITH latest_runs AS (  -- each case-set agent's latest capture run of the day; its earlier ones are superseded
    SELECT agent_id, arg_max(metadata ->> '$.capture_run', coalesce(metadata ->> '$.captured_at', '')) AS capture_run
    FROM episodes WHERE partition_date = $day AND (metadata ->> '$.capture_run') IS NOT NULL GROUP BY agent_id
)
SELECT r.*, e.task_id, TRY_CAST(e.metadata ->> '$.reward' AS DOUBLE) AS recorded_reward,
       coalesce((e.metadata ->> '$.capture_run') <> l.capture_run, false) AS superseded
FROM replays r JOIN episodes e USING (episode_id, partition_date)
LEFT JOIN latest_runs l ON l.agent_id = e.agent_id
WHERE r.partition_date = $day AND r.status <> 'running' AND ($agent IS NULL OR r.agent_id = $agent)
"""

_SCORE_SNAPSHOTS = f"SELECT episode_id, {_SNAPSHOT} FROM episodes WHERE partition_date = $day"  # for live replays

_SCORE_JUDGEMENTS = """
SELECT episode_id, avg(normalized) AS judge_score FROM judgements
WHERE partition_date = $day AND status = 'judged' GROUP BY episode_id
"""

_SCORE_CASES = """
SELECT episode_id, avg(score) AS case_score, bool_and(passed) AS case_passed,
       string_agg(assertion || coalesce(': ' || nullif(detail, ''), ''), '; ' ORDER BY assertion) FILTER (NOT passed)
           AS failed_assertions
FROM assertions WHERE partition_date = $day GROUP BY episode_id
"""


def _sort_scoring_inputs(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, parts: int) -> None:
    """What `_SCORING_INPUT` reads of the day, each sorted into its `parts` (`sort_into_parts`)."""
    day_only = {"day": day, "parts": parts}
    sort_into_parts(con, "score_candidates", _SCORE_CANDIDATES, {**day_only, "agent": agent_id})
    sort_into_parts(con, "score_snapshots", _SCORE_SNAPSHOTS, day_only)
    sort_into_parts(con, "score_judgements", _SCORE_JUDGEMENTS, day_only)
    sort_into_parts(con, "score_cases", _SCORE_CASES, day_only)
    sort_issues_into_parts(con, day, agent_id, parts)


_SCORING_INPUT = f"""
WITH candidates AS (
    SELECT * EXCLUDE (part) FROM score_candidates WHERE part = $part
), ranked AS (
    SELECT c.episode_id AS candidate_id, b.*, row_number() OVER (
        PARTITION BY c.episode_id
        ORDER BY {_PRECEDENCE}
    ) AS rank
    FROM candidates c
    JOIN baselines b ON b.agent_id = c.agent_id AND b.task_id = c.task_id
        AND b.valid_from <= $day AND b.episode_id <> c.episode_id
)
SELECT c.*,
       CASE WHEN c.mode = 'live' THEN c.episode_id ELSE b.episode_id END AS baseline_episode_id,
       {
    ", ".join(
        f"CASE WHEN c.mode = 'live' THEN e.{column} ELSE b.{column} END AS baseline_{column}" for column in _SNAPSHOT.split(", ")
    )
}
       , j.judge_score, a.case_score, a.case_passed, a.failed_assertions,
       coalesce(i.critical_issues, 0) AS critical_issues, coalesce(i.error_issues, 0) AS error_issues,
       coalesce(i.warning_issues, 0) AS warning_issues
FROM candidates c
LEFT JOIN ranked b ON b.candidate_id = c.episode_id AND b.rank = 1
LEFT JOIN (SELECT * FROM score_snapshots WHERE part = $part) e ON e.episode_id = c.episode_id
LEFT JOIN (SELECT * FROM score_judgements WHERE part = $part) j ON j.episode_id = c.episode_id
LEFT JOIN (SELECT * FROM score_cases WHERE part = $part) a ON a.episode_id = c.episode_id
LEFT JOIN (
    SELECT episode_id, count(*) FILTER (severity = 'critical') AS critical_issues,
           count(*) FILTER (severity = 'error') AS error_issues, count(*) FILTER (severity = 'warning') AS warning_issues
    FROM part_issues WHERE part = $part GROUP BY episode_id
) i ON i.episode_id = c.episode_id
ORDER BY c.episode_id
"""


def scoring_input(warehouse: Warehouse, day: date, policy: str, agent_id: str | None = None) -> pd.DataFrame:
    """Each finished candidate of `day` beside its baseline's snapshot (NULLs where none), with the
    mean of its normalized judge verdicts (`judge_score`, NULL when it was not judged), its case's
    mean assertion score, verdict and failed expectations (NULL without a case), the reward its own
    grader recorded (`metadata.reward`) and its checks' issues per severity."""
    with warehouse.connect(read_only=warehouse.exists()) as con:
        _sort_scoring_inputs(con, day, agent_id, 1)
        return con.execute(_SCORING_INPUT, {"day": day, "policy": policy, "part": 0}).df()


SCORE_PART_EPISODES = 50_000  # candidates scored at a time: the step's memory is set by this, not by the day's size


def write_scores(
    warehouse: Warehouse,
    day: date,
    policy: str,
    agent_id: str | None,
    score: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame],
) -> int:
    """Replace `day`'s `scores` rows (one agent's, when scoped) with `score(inputs, issues)` of each part of about
    SCORE_PART_EPISODES candidates (by a hash of their ids), in one transaction; return the rows written.

    `inputs`: the part's `scoring_input` rows; `issues`: the `issues` rows of the same episodes. A score depends on
    its own episode only, so the parts give the rows the whole day would. They are read on a second connection
    while the first writes."""
    written = 0
    with warehouse.transaction() as con, second_cursor(con) as reader:
        clear_partition(con, "scores", day, agent_id)
        parts = candidate_parts(reader, day, agent_id, SCORE_PART_EPISODES)
        _sort_scoring_inputs(reader, day, agent_id, parts)
        for part in range(parts):
            issues = issues_in_part(reader, part)
            inputs = reader.execute(_SCORING_INPUT, {"day": day, "policy": policy, "part": part}).df()
            written += insert_rows(con, "scores", score(inputs, issues))
    return written
