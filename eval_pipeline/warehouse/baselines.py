"""Baselines: maintained one partition at a time, looked up (never recomputed) when scoring.

A live replay's baseline is its own recording; a dry one's comes from history.

Rows come from runs (`origin = 'run'`, replaced when their day re-runs) or from people
(`promote`, `pin`: pinned rows that stay until removed by hand).

Each partition contributes rows: its pinned episodes (`metadata.baseline = true`, valid from
that day) and, under policy `first`, the earliest successful episode of a task no earlier day
has one for; under `rolling`, the latest successful episode of every task (both valid from the
next day). A row snapshots what scoring compares, so a lookup never scans episode history, and
`valid_from` means a later pin or promotion never rewrites the past.

Scoring looks them up in `scores.py` (by `PRECEDENCE`); a task first seen on an evaluated day gets one from the
source's earlier days in `history_baselines.py`.
"""

from __future__ import annotations

from datetime import date, timedelta

from eval_pipeline.errors import UserInputError
from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, of_agent
from eval_pipeline.warehouse.rows import Rows, one_row

SNAPSHOT = "status, final_output, tools, total_cost_usd, total_duration_ms, total_tokens, step_count, error_steps"

_CONTRIBUTIONS = f"""
WITH today AS (
    SELECT * FROM episodes WHERE {DAY_OF_AGENT}
), chosen AS (  -- ranked by their ids alone: ranking whole rows sorted the day's texts (1,000,000 episodes: 2.0 s against 0.45 s)
    SELECT episode_id FROM today WHERE status = 'success'
    QUALIFY row_number() OVER (
        PARTITION BY agent_id, task_id
        ORDER BY CASE WHEN $policy = 'rolling' THEN epoch(started_at) ELSE -epoch(started_at) END DESC, episode_id
    ) = 1
)
SELECT agent_id, task_id, episode_id, true AS pinned, $day AS valid_from, {SNAPSHOT}
FROM today WHERE pinned_baseline
UNION ALL
SELECT agent_id, task_id, episode_id, false AS pinned, $day + 1 AS valid_from, {SNAPSHOT}
FROM today s
WHERE episode_id IN (SELECT episode_id FROM chosen) AND ($policy = 'rolling' OR NOT EXISTS (
    SELECT 1 FROM baselines b
    WHERE NOT b.pinned AND b.agent_id = s.agent_id AND b.task_id = s.task_id AND b.valid_from <= $day
))
"""


UNCOVERED = f"""
SELECT DISTINCT agent_id, task_id FROM episodes e
WHERE {DAY_OF_AGENT} AND NOT EXISTS (
    SELECT 1 FROM baselines b
    WHERE b.agent_id = e.agent_id AND b.task_id = e.task_id AND b.valid_from <= $day
)
"""


def days_to_look_back(warehouse: Warehouse, day: date, lookback_days: int, agent_id: str | None = None) -> list[date]:
    """The days before `day` (newest first, at most `lookback_days`) the warehouse has not evaluated for every agent
    with a task of `day` that has no baseline yet; none when there is no such task. Only those days can hold a baseline
    we do not know of: a day run for one agent (`run --agent`) holds no other agent's runs, a day read in part
    (`run --model`, `--limit`: `partial_days`) not the runs it left out."""
    if not lookback_days:
        return []
    with warehouse.connect(read_only=True) as con:
        params = {"day": day, "agent": agent_id}
        if not one_row(con, f"SELECT count(*) FROM ({UNCOVERED})", params)[0]:
            return []
        evaluated = {
            row[0]
            for row in con.execute(
                f"""WITH agents AS (SELECT DISTINCT agent_id FROM ({UNCOVERED}))
                SELECT partition_date FROM episodes e WHERE partition_date BETWEEN $day - $n AND $day - 1
                    AND agent_id IN (SELECT agent_id FROM agents)
                    AND NOT EXISTS (
                        SELECT 1 FROM partial_days p WHERE p.partition_date = e.partition_date AND p.agent_id = e.agent_id
                    )
                GROUP BY partition_date HAVING count(DISTINCT agent_id) = (SELECT count(*) FROM agents)""",
                {**params, "n": lookback_days},
            ).fetchall()
        }
    return [d for d in (day - timedelta(days=n) for n in range(1, lookback_days + 1)) if d not in evaluated]


def write_baselines(warehouse: Warehouse, day: date, policy: str, agent_id: str | None = None) -> int:
    """Replace the baseline rows `day` contributes; return how many it contributes."""
    rows = f"""
        SELECT *, $day AS partition_date, $day AS recorded_on, $policy AS policy
        FROM ({_CONTRIBUTIONS})
    """
    with warehouse.transaction() as con:
        con.execute(
            f"DELETE FROM baselines WHERE partition_date = $day AND origin = 'run' AND {of_agent()}",
            {"day": day, "agent": agent_id},
        )
        return one_row(con, f"INSERT INTO baselines BY NAME {rows}", {"day": day, "agent": agent_id, "policy": policy})[0]


def itself(candidate_id: str, day: str = "$day") -> str:
    """Whether the baseline row `b` is the candidate `candidate_id` of `day` itself, which it is never compared with:
    the same id recorded that day (an id can come again on another day)."""
    return f"(b.episode_id = {candidate_id} AND b.recorded_on IS NOT DISTINCT FROM {day})"


# Which baseline row wins for a candidate: a pin (or promotion) over an automatic row, the
# latest pin first; among automatic rows the earliest (`first`) or the latest (`rolling`).
PRECEDENCE = """b.pinned DESC,
    CASE WHEN b.pinned OR $policy = 'rolling' THEN b.valid_from END DESC NULLS LAST,
    b.valid_from, b.established_at DESC"""


def promote(warehouse: Warehouse, agent_id: str, day: date) -> int:
    """Make the day's successful runs of `agent_id` its baselines from `day` on (earliest run per task)."""
    rows = f"""
        SELECT agent_id, task_id, episode_id, true AS pinned, $day AS valid_from, $day AS partition_date,
               $day AS recorded_on, 'promote' AS policy, 'promote' AS origin, {SNAPSHOT}
        FROM episodes WHERE partition_date = $day AND agent_id = $agent AND status = 'success'
        QUALIFY row_number() OVER (PARTITION BY task_id ORDER BY started_at, episode_id) = 1
    """
    with warehouse.transaction() as con:
        return one_row(con, f"INSERT INTO baselines BY NAME {rows}", {"day": day, "agent": agent_id})[0]


def pin(warehouse: Warehouse, episode_id: str, valid_from: date | None) -> dict | None:
    """Pin one episode as its task's baseline from `valid_from` (default: its own day); None if unknown. An id recorded
    on several days is its latest day's. A run still running is refused: its first half would be the yardstick of
    every later run of the task (as it is not scored, it is no baseline)."""
    latest = "FROM episodes WHERE episode_id = $episode ORDER BY partition_date DESC LIMIT 1"
    rows = f"""
        SELECT agent_id, task_id, episode_id, true AS pinned, coalesce($valid_from, partition_date) AS valid_from,
               partition_date, partition_date AS recorded_on, 'pin' AS policy, 'pin' AS origin, {SNAPSHOT} {latest}
    """
    params = {"episode": episode_id, "valid_from": valid_from}
    with warehouse.transaction() as con:
        if con.execute(f"SELECT status = 'running' {latest}", {"episode": episode_id}).fetchone() == (True,):
            raise UserInputError(f"{episode_id} is still running: a baseline is a finished run; pin it once it has ended")
        if not one_row(con, f"INSERT INTO baselines BY NAME {rows}", params)[0]:
            return None
        found = one_row(con, "SELECT agent_id, task_id, valid_from FROM baselines WHERE episode_id = $episode AND origin = 'pin' "
                             "ORDER BY established_at DESC LIMIT 1", {"episode": episode_id})  # fmt: skip
    return {"agent_id": found[0], "task_id": found[1], "valid_from": found[2]}


def agents(warehouse: Warehouse) -> list[str]:
    """Every agent the warehouse has episodes of."""
    return [str(agent) for agent in warehouse.read_rows("SELECT DISTINCT agent_id FROM episodes ORDER BY 1").column("agent_id")]


def effective_baselines(warehouse: Warehouse, as_of: date, policy: str, agent_id: str | None = None) -> Rows:
    """The baseline each (agent, task) is compared with on `as_of`."""
    return warehouse.read_rows(
        f"""
        SELECT agent_id, task_id, episode_id, pinned, origin, valid_from, status, total_cost_usd, total_duration_ms
        FROM baselines b
        WHERE valid_from <= $day AND {of_agent()}
        QUALIFY row_number() OVER (PARTITION BY agent_id, task_id ORDER BY {PRECEDENCE}) = 1
        ORDER BY agent_id, task_id
        """,
        {"day": as_of, "policy": policy, "agent": agent_id},
    )
