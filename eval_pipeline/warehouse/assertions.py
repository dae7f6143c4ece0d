"""What case assertions and deterministic checks read (each candidate run and its steps) and write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import duckdb
import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition
from eval_pipeline.warehouse.ingest import tool_names_sql
from eval_pipeline.warehouse.replays import candidate_parts, sort_into_parts

CHECK_BATCH_ROWS = 2_000  # candidates (with their steps) read into Python at a time
CHECK_PART_EPISODES = 50_000  # candidates whose steps DuckDB gathers at a time (an ordered list aggregate cannot spill)

_DECLARED_TOOLS = ", ".join(tool_names_sql(f"e.metadata -> '$.{key}'") for key in ("available_tools", "tools"))

_CANDIDATES = f"""
SELECT r.episode_id, r.agent_id, e.task_id, r.status, r.final_output, r.tools, r.total_duration_ms, r.mode,
       CAST(e.expected AS VARCHAR) AS expected, CAST(e.metadata -> '$.grader' AS VARCHAR) AS grader,
       list_concat({_DECLARED_TOOLS}) AS declared_tools
FROM replays r JOIN episodes e USING (episode_id, partition_date)
WHERE r.partition_date = $day AND r.status <> 'running' AND ($agent IS NULL OR r.agent_id = $agent)
"""

_STEPS = """
SELECT episode_id, step_index, step_type, tool_name, input, output, error, agent, offered_tools
FROM episode_steps WHERE partition_date = $day
"""

_CHECK_INPUTS = """
SELECT c.* EXCLUDE (part, declared_tools), s.steps,
       -- as `Episode.available_tools`: those the episode declares, and those offered to its LLM calls
       list_distinct(list_concat(c.declared_tools, coalesce(s.offered_tools, []))) AS available_tools
FROM check_candidates c
LEFT JOIN (
    SELECT episode_id,
           list({'step_type': step_type, 'tool_name': tool_name, 'input': input, 'output': output, 'error': error,
                 'agent': agent} ORDER BY step_index) AS steps,
           flatten(list(offered_tools)) AS offered_tools
    FROM check_steps WHERE part = $part GROUP BY episode_id
) s USING (episode_id)
WHERE c.part = $part
ORDER BY c.episode_id
"""


def check_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> Iterator[dict]:
    """The day's finished candidates (`episode_id, agent_id, task_id, status, final_output, tools,
    total_duration_ms, mode, expected, grader, available_tools`), each with its recorded `steps` in order (None
    without).

    Read in parts of about CHECK_PART_EPISODES episodes (by a hash of their ids, each part in id order: see
    `sort_into_parts`) and streamed in Arrow batches of CHECK_BATCH_ROWS, so neither DuckDB nor the checks hold a
    whole day's trajectories; the connection stays open until the last is read."""
    params: dict[str, object] = {"day": day, "agent": agent_id}
    with warehouse.connect(read_only=warehouse.exists()) as con:
        parts = candidate_parts(con, day, agent_id, CHECK_PART_EPISODES)
        sort_into_parts(con, "check_candidates", _CANDIDATES, {**params, "parts": parts})
        sort_into_parts(con, "check_steps", _STEPS, {"day": day, "parts": parts})
        for part in range(parts):
            reader = con.execute(_CHECK_INPUTS, {"part": part}).to_arrow_reader(CHECK_BATCH_ROWS)
            for batch in reader:
                yield from batch.to_pylist()  # nested rows straight to Python: twice as fast as via pandas


_DAY_ISSUES = "SELECT * FROM issues WHERE partition_date = $day AND ($agent IS NULL OR agent_id = $agent)"


def sort_issues_into_parts(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, parts: int) -> None:
    """The day's `issues` rows (one agent's, when scoped) sorted into `parts` (`sort_into_parts`) on `con`, for
    `issues_in_part`."""
    sort_into_parts(con, "part_issues", _DAY_ISSUES, {"day": day, "agent": agent_id, "parts": parts})


def issues_in_part(con: duckdb.DuckDBPyConnection, part: int) -> pd.DataFrame:
    """The `issues` rows of one part of a day's episodes, as the steps after `assertions` read them beside the same
    part's candidates or scores (after `sort_issues_into_parts` on `con`)."""
    return con.execute("SELECT * EXCLUDE (part) FROM part_issues WHERE part = $part", {"part": part}).df()


def write_checks(warehouse: Warehouse, day: date, assertions: pd.DataFrame, issues: pd.DataFrame, agent_id: str | None) -> None:
    with warehouse.transaction() as con:
        replace_partition(con, "assertions", day, assertions, agent_id)
        replace_partition(con, "issues", day, issues, agent_id)
