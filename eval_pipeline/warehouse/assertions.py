"""What case assertions and deterministic checks read (each candidate run and its steps) and write."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from eval_pipeline.episodes.model import StepType
from eval_pipeline.scoring.assessments import Reading
from eval_pipeline.scoring.trajectory import Summaries
from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, frame_of, of_agent, replace_partition
from eval_pipeline.warehouse.ingest import tool_names_sql
from eval_pipeline.warehouse.replays import candidate_parts, replay_failed, sort_into_parts

CHECK_BATCH_ROWS = 2_000  # candidates (with their steps) read into Python at a time
# Tool outputs read into Python at a time: ten times CHECK_BATCH_ROWS, fewer of them when they are long (two tool results
# of 10 KB an episode: read 20,000 at a time, the assertions step of 100,000 episodes peaked at 3,335 MiB)
CHECK_OUTPUT_BYTES = 64 << 20
CHECK_PART_EPISODES = 50_000  # candidates whose steps DuckDB gathers at a time (an ordered list aggregate cannot spill)

_DECLARED_TOOLS = ", ".join(tool_names_sql(f"e.metadata -> '$.{key}'") for key in ("available_tools", "tools"))

_CANDIDATES = f"""
SELECT r.episode_id, r.agent_id, e.task_id, r.status, r.final_output, r.tools, r.total_duration_ms, r.mode,
       CAST(e.expected AS VARCHAR) AS expected, CAST(e.metadata -> '$.grader' AS VARCHAR) AS grader,
       list_concat({_DECLARED_TOOLS}) AS declared_tools
FROM replays r JOIN episodes e USING (episode_id, partition_date)
WHERE r.partition_date = $day AND r.status <> 'running' AND {of_agent("r.agent_id")}
  AND NOT {replay_failed("r")}
"""

_STEPS = f"""
SELECT episode_id, step_index, step_type, tool_name, input, output, error, agent, offered_tools
FROM episode_steps WHERE {DAY_OF_AGENT}
"""
# A tool call's or result's step: where a tool's output and failure are recorded
_TOOL_STEP = f"step_type IN ('{StepType.TOOL_CALL.value}', '{StepType.TOOL_RESULT.value}')"
# Only the steps of the episodes the checks asked to read (`check_chosen`, when read through `Summaries`)
_CHOSEN_STEPS = _STEPS + "AND episode_id IN (SELECT episode_id FROM check_chosen WHERE steps)"

# As `Episode.available_tools`: those the episode declares (`c`), and those offered to its LLM calls (`s`)
_AVAILABLE_TOOLS = "list_distinct(list_concat(c.declared_tools, coalesce(s.offered_tools, [])))"

_CHECK_INPUTS = f"""
SELECT c.* EXCLUDE (part, declared_tools), s.steps, {_AVAILABLE_TOOLS} AS available_tools{{bits}}
FROM check_candidates c
LEFT JOIN (
    SELECT episode_id,
           list({{{{'step_type': step_type, 'tool_name': tool_name, 'input': input, 'output': output, 'error': error,
                 'agent': agent}}}} ORDER BY step_index) AS steps,
           flatten(list(offered_tools)) AS offered_tools
    FROM check_steps WHERE part = $part GROUP BY episode_id
) s USING (episode_id)
{{chosen}}
WHERE c.part = $part
ORDER BY c.episode_id
"""
_ALL_INPUTS = _CHECK_INPUTS.format(bits="", chosen="")
_CHOSEN_INPUTS = _CHECK_INPUTS.format(bits=", k.check_bits", chosen="JOIN check_chosen k USING (episode_id)")

# What `Summaries` counts of each episode's steps, as `scoring.trajectory.trajectory` reads them: the plain counts in
# one aggregate over the day's steps (which DuckDB spills past its limit) into narrow rows, sorted into parts; what
# takes a DISTINCT or a list (repeated calls, agents, offered tools) a part at a time (`_STEP_DISTINCTS`), from only the
# steps that have any of it. Counted over the whole day, every episode's distinct calls and offered tools were held
# at once: the day's size set the memory, and a day of 2,000,000 episodes ran out of a 512 MB limit.
_STEP_COUNTS = f"""
SELECT episode_id,
       count(*) FILTER (step_type = 'llm_call') AS llm_calls,
       count(*) FILTER (step_type = 'tool_call') AS tool_calls,
       count(*) FILTER ({_TOOL_STEP} AND coalesce(error, '') <> '') AS failed_tool_steps,
       count(*) FILTER (step_type = 'error' OR coalesce(error, '') <> '') AS errored_steps
FROM ({_STEPS}) GROUP BY episode_id
"""
# The steps with a tool call's name and arguments, the agent that acted, or the tools an LLM call was offered
_STEP_FACTS = f"""
SELECT * FROM (
    SELECT episode_id, tool_name, CASE WHEN step_type = 'tool_call' THEN input END AS arguments, nullif(agent, '') AS agent,
           CASE WHEN len(offered_tools) > 0 THEN offered_tools END AS offered_tools
    FROM ({_STEPS})
) WHERE arguments IS NOT NULL OR agent IS NOT NULL OR offered_tools IS NOT NULL
"""
_STEP_DISTINCTS = """
SELECT episode_id,
       count(arguments) - count(DISTINCT {'name': coalesce(tool_name, ''), 'arguments': arguments}) FILTER (arguments IS NOT NULL)
           AS repeated_calls,
       count(DISTINCT agent) AS agents,
       flatten(list(offered_tools) FILTER (offered_tools IS NOT NULL)) AS offered_tools
FROM check_step_facts WHERE part = $part GROUP BY episode_id
"""

# What `Summaries` holds of each candidate of a part (a live replay's calls are its tool names, without arguments,
# results or agents).
_SUMMARIES = f"""
SELECT c.episode_id, c.agent_id, c.task_id, c.final_output, coalesce(c.expected, '') <> '' AS with_expected,
       coalesce(c.grader, '') <> '' AS with_grader, coalesce(c.total_duration_ms, 'NaN') AS duration_ms,
       coalesce(n.llm_calls, 0) AS llm_calls,
       CASE WHEN live THEN len(coalesce(c.tools, [])) ELSE coalesce(n.tool_calls, 0) END AS tool_calls,
       CASE WHEN live THEN 0 ELSE coalesce(n.failed_tool_steps, 0) END AS failed_tool_steps,
       CASE WHEN live THEN 0 ELSE coalesce(s.repeated_calls, 0) END AS repeated_calls,
       coalesce(n.errored_steps, 0) AS errored_steps,
       CASE WHEN live THEN 0 ELSE coalesce(s.agents, 0) END AS agents,
       len({_AVAILABLE_TOOLS}) AS available_tools
FROM (SELECT *, coalesce(mode = 'live', false) AS live FROM check_candidates WHERE part = $part) c
LEFT JOIN (SELECT * FROM check_step_counts WHERE part = $part) n USING (episode_id)
LEFT JOIN ({_STEP_DISTINCTS}) s USING (episode_id)
ORDER BY c.episode_id
"""

# The tool calls' and results' outputs an RE2 expression finds a match in (`Summaries.tool_outputs`), screened by
# DuckDB in one pass over the day's steps: only those are sorted into parts and read into Python. Copied into parts
# whole, a day of 100,000 episodes with two tool results of 10 KB took 7.6 s to sort (and failed, past the limit) and
# 13 s to read, of its checks' 25 s.
_SCREENED_OUTPUTS = f"""
SELECT episode_id, output FROM ({_STEPS})
WHERE {_TOOL_STEP} AND output IS NOT NULL AND regexp_matches(output, $matching)
"""
_OUTPUT_BYTES = "SELECT coalesce(avg(strlen(output)), 0) FROM {outputs} WHERE part = $part"
_TOOL_OUTPUTS = """
SELECT s.episode_id, s.output
FROM {outputs} s JOIN check_candidates c USING (episode_id)
WHERE s.part = $part AND c.part = $part AND coalesce(c.mode, '') <> 'live'
"""


class _ScreenedOutputs:
    """The day's tool outputs each RE2 expression a check asks for finds a match in, sorted into parts: a temp table
    per expression, made when it is first asked for."""

    def __init__(self, con: duckdb.DuckDBPyConnection, params: dict[str, object], parts: int):
        self.con, self.params, self.parts = con, params, parts
        self.tables: dict[str, str] = {}

    def table(self, matching: str) -> str:
        if matching not in self.tables:
            self.tables[matching] = name = f"check_outputs_{len(self.tables)}"
            sort_into_parts(self.con, name, _SCREENED_OUTPUTS, {**self.params, "matching": matching}, self.parts)
        return self.tables[matching]


_SUMMARY_ARRAYS = ("with_expected", "with_grader", "duration_ms", "llm_calls", "tool_calls", "failed_tool_steps",
                   "repeated_calls", "errored_steps", "agents", "available_tools")  # fmt: skip


def _summaries(con: duckdb.DuckDBPyConnection, part: int, screened: _ScreenedOutputs) -> Summaries:
    """A part's `Summaries` (of `check_candidates`, `check_step_counts` and `check_step_facts`); its tool outputs are read
    when asked for."""
    table = con.execute(_SUMMARIES, {"part": part}).to_arrow_table()
    ids = table["episode_id"]

    def tool_outputs(matching: str = "") -> Iterator[tuple[np.ndarray, np.ndarray, list[str]]]:
        outputs = screened.table(matching)
        ((average,),) = con.execute(_OUTPUT_BYTES.format(outputs=outputs), {"part": part}).fetchall()
        rows = max(1, min(CHECK_BATCH_ROWS * 10, int(CHECK_OUTPUT_BYTES // max(average, 1))))
        for batch in con.execute(_TOOL_OUTPUTS.format(outputs=outputs), {"part": part}).to_arrow_reader(rows):
            entries = pc.index_in(batch.column("episode_id"), value_set=ids).to_numpy(zero_copy_only=False)
            distinct = pc.dictionary_encode(batch.column("output"))
            yield entries, distinct.indices.to_numpy(zero_copy_only=False), distinct.dictionary.to_pylist()

    def counts(name: str) -> np.ndarray:
        return table[name].to_numpy()

    return Summaries(
        episode_ids=ids.to_pylist(),
        agent_ids=table["agent_id"].to_pylist(),
        task_ids=table["task_id"].to_pylist(),
        final_outputs=table["final_output"].to_pylist(),
        **{name: counts(name) for name in _SUMMARY_ARRAYS},
        tool_outputs=tool_outputs,
    )


def check_inputs(
    warehouse: Warehouse, day: date, agent_id: str | None = None, read: Callable[[Summaries], Reading] | None = None
) -> Iterator[dict]:
    """The day's finished candidates (`episode_id, agent_id, task_id, status, final_output, tools,
    total_duration_ms, mode, expected, grader, available_tools`), each with its recorded `steps` in order (None
    without). With `read`, as it says from each part's `Summaries`: only the episodes it gives a check (`check_bits`)
    or steps to read, and the steps of only those it says.

    Read in parts of about CHECK_PART_EPISODES episodes (by a hash of their ids, each part in id order: see
    `sort_into_parts`) and streamed in Arrow batches of CHECK_BATCH_ROWS, so neither DuckDB nor the checks hold a
    whole day's trajectories; the connection stays open until the last is read. With `read`, every part is read
    before any candidate is given, so that only the chosen episodes' steps are copied into parts."""
    params: dict[str, object] = {"day": day, "agent": agent_id}
    with warehouse.connect(read_only=warehouse.exists()) as con:
        parts = candidate_parts(con, day, agent_id, CHECK_PART_EPISODES)
        sort_into_parts(con, "check_candidates", _CANDIDATES, params, parts)
        query = _ALL_INPUTS
        if read is not None:
            sort_into_parts(con, "check_step_counts", _STEP_COUNTS, params, parts)
            sort_into_parts(con, "check_step_facts", _STEP_FACTS, params, parts)
            screened = _ScreenedOutputs(con, params, parts)
            con.register(
                "check_chosen", pa.concat_tables([_chosen(_summaries(con, part, screened), read) for part in range(parts)])
            )
            query = _CHOSEN_INPUTS
        sort_into_parts(con, "check_steps", _STEPS if read is None else _CHOSEN_STEPS, params, parts)
        for part in range(parts):
            for batch in con.execute(query, {"part": part}).to_arrow_reader(CHECK_BATCH_ROWS):
                yield from batch.to_pylist()  # nested rows straight to Python: twice as fast as via pandas


def _chosen(summaries: Summaries, read: Callable[[Summaries], Reading]) -> pa.Table:
    """The episodes of a part that `read` gives a check (`check_bits`) or steps to read (`steps`)."""
    how = read(summaries)
    chosen = (how.checks != 0) | how.steps
    ids = pa.array(summaries.episode_ids, pa.string()).filter(pa.array(chosen))
    return pa.table({"episode_id": ids, "check_bits": how.checks[chosen], "steps": how.steps[chosen]})


_DAY_ISSUES = f"""
SELECT * FROM issues
WHERE {DAY_OF_AGENT} AND ($checks IS NULL OR list_contains($checks, "check"))
"""


def sort_issues_into_parts(
    con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, parts: int, checks: tuple[str, ...] | None = None
) -> None:
    """The day's `issues` rows (one agent's, when scoped; of `checks` only, when given) sorted into `parts`
    (`sort_into_parts`) on `con`, for `issues_in_part`."""
    params: dict[str, object] = {"day": day, "agent": agent_id, "checks": list(checks) if checks is not None else None}
    sort_into_parts(con, "part_issues", _DAY_ISSUES, params, parts)


def issues_in_part(con: duckdb.DuckDBPyConnection, part: int) -> pd.DataFrame:
    """The `issues` rows of one part of a day's episodes, as the steps after `assertions` read them beside the same
    part's candidates or scores (after `sort_issues_into_parts` on `con`)."""
    return frame_of(con.execute("SELECT * EXCLUDE (part) FROM part_issues WHERE part = $part", {"part": part}))


def write_checks(warehouse: Warehouse, day: date, assertions: pd.DataFrame, issues: pd.DataFrame, agent_id: str | None) -> None:
    with warehouse.transaction() as con:
        replace_partition(con, "assertions", day, assertions, agent_id)
        replace_partition(con, "issues", day, issues, agent_id)
