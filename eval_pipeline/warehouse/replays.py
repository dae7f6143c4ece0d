"""Replays: the candidate run of each episode, as `scores` compares it with a baseline."""

from __future__ import annotations

from datetime import date

import duckdb
import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, of_agent, replace_partition
from eval_pipeline.warehouse.llm_cache import store_answers


def replay_failed(table: str = "") -> str:
    """SQL true for a live replay the gateway failed after its retries: no candidate run, so no checks, verdict or
    reward (as `scoring.dimensions.replay_failed`). `table`: the alias of a `replays` or `scores` row, if any."""
    at = f"{table}." if table else ""
    return f"coalesce({at}mode = 'live' AND {at}status = 'failure', false)"  # a row of no mode is no live replay


# Dry replay: the recording itself is the candidate. Running episodes wait until they finish.
_DRY = f"""
SELECT episode_id, partition_date, agent_id, 'dry' AS mode, model, status, final_output, tools,
       total_cost_usd, total_duration_ms, total_tokens, step_count, error_steps, NULL AS error
FROM episodes
WHERE partition_date = $day AND status <> 'running' AND {of_agent()}
"""


_FINISHED = f"""
SELECT count(*) FROM replays WHERE partition_date = $day AND status <> 'running' AND {of_agent()}
"""


def candidate_parts(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, part_episodes: int) -> int:
    """In how many parts of at most about `part_episodes` the steps after `replays` take the day's finished replays
    (split by `hash(episode_id) % parts`), so their memory does not grow with the day."""
    ((finished,),) = con.execute(_FINISHED, {"day": day, "agent": agent_id}).fetchall()
    return max(1, -(-int(finished) // part_episodes))


def sort_into_parts(con: duckdb.DuckDBPyConnection, name: str, rows_sql: str, params: dict[str, object], parts: int) -> None:
    """Temp table `name`: the rows of `rows_sql` (each with an `episode_id`) with their `part`, `hash(episode_id) %
    $parts`, sorted by it. A query of one part (`WHERE part = $part`) then reads that part's blocks only; filtering
    the day's tables by the hash instead scanned the whole day once per part, so a day cost its size times its parts.
    Dropped with the connection; past the memory limit DuckDB keeps it in its temp directory. One part is not sorted
    (a day of 20,000 episodes: 0.1-0.15 s of its steps' time). Nor are rows DuckDB cannot sort within its limit: it
    spills a sort of long texts too little (100,000 steps with outputs of 10 KB failed under 1 GB with 'failed to pin
    block', in DuckDB 1.5.5, 1.5.6 and 2.0.1 alike); they stay in the order they came, and each part reads them all."""
    sql = f"CREATE OR REPLACE TEMP TABLE {name} AS SELECT hash(episode_id) % $parts AS part, * FROM ({rows_sql})"
    if parts > 1:
        try:
            con.execute(f"{sql} ORDER BY part", {**params, "parts": parts})
            return
        except duckdb.OutOfMemoryException:
            pass  # its autocommitted statement undone, the connection goes on
    con.execute(sql, {**params, "parts": parts})


def write_dry_replays(warehouse: Warehouse, day: date, agent_id: str | None = None) -> int:
    with warehouse.transaction() as con:
        return replace_partition(con, "replays", day, _DRY, agent_id, {"day": day, "agent": agent_id})


def write_live_replays(
    warehouse: Warehouse, day: date, replays: pd.DataFrame, new_cache: pd.DataFrame, agent_id: str | None = None
) -> None:
    """The day's live replays and the new cached replays, in one transaction."""
    with warehouse.transaction() as con:
        store_answers(con, new_cache)
        replace_partition(con, "replays", day, replays, agent_id)


def recorded_steps(warehouse: Warehouse, day: date, agent_id: str | None = None) -> list[dict]:
    """The steps of the day's finished episodes, in order, with the episode's trial: what a live replay re-plays."""
    frame = warehouse.read_frame(
        f"""
        SELECT s.episode_id, s.agent_id, e.trial, s.step_index, s.step_type, s.tool_name, s.input, s.output, s.error, s.messages
        FROM episode_steps s JOIN episodes e USING (episode_id, partition_date)
        WHERE s.partition_date = $day AND e.status <> 'running' AND {of_agent("s.agent_id")}
        ORDER BY s.episode_id, s.step_index
        """,
        {"day": day, "agent": agent_id},
    )
    return frame.astype(object).where(frame.notna(), None).to_dict("records")
