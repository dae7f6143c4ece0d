"""The floor `eval-pipeline run` is measured against: plain DuckDB doing a day's essential work on the same file.

    .venv/bin/python benchmarks/duckdb_floor.py baseline PREVIOUS_DAY.jsonl --out FLOOR.duckdb   # untimed setup
    .venv/bin/python benchmarks/duckdb_floor.py day DAY.jsonl --out FLOOR.duckdb                 # the floor
    .venv/bin/python benchmarks/duckdb_floor.py load DAY.jsonl --out LOAD.duckdb                 # the day stored whole

`baseline` keeps, per (agent, task), the median cost and duration and the tool sequence of the previous day's
successful episodes, as the warehouse holds the day before. `day` is the floor itself: `read_json` of the day's
JSONL (the AIR episode-store shape the benchmark generates), per-episode cost, duration and tool aggregates over
the steps, the join against the baseline table, all written to the DuckDB file. run_throughput.py times `day` as
a whole process, as it times `run`, so the ratio of the two says what the pipeline costs beyond this.

`load` is no floor but a second reference: every field of every episode and step typed and written to two tables, as
the warehouse keeps a day (the floor reads only the fields it aggregates, and keeps no step). It checks nothing and
keeps no raw text or line of a record, so it says what storing the day costs before any of the pipeline's work;
it streams the file twice (once per table), so its memory does not grow with the day.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import duckdb

# Per episode: its task, outcome, and what its steps add up to.
_AGGREGATES = """
SELECT
    episode_id,
    agent_id,
    metadata.task_id AS task_id,
    status,
    len(steps) AS steps,
    list_sum(list_transform(steps, lambda s: s.cost_usd)) AS cost_usd,
    list_sum(list_transform(steps, lambda s: s.duration_ms)) AS duration_ms,
    list_sum(list_transform(steps, lambda s: s.tokens)) AS tokens,
    len(list_filter(steps, lambda s: s.step_type = 'tool_call')) AS tool_calls,
    list_transform(list_filter(steps, lambda s: s.step_type = 'tool_call'), lambda s: s.tool_name) AS tool_sequence
FROM read_json(?, format = 'newline_delimited')
"""

_EPISODES = f"CREATE OR REPLACE TABLE episode_aggregates AS {_AGGREGATES}"
_BASELINE = f"""
CREATE OR REPLACE TABLE baseline AS
WITH day AS ({_AGGREGATES})
SELECT agent_id, task_id, median(cost_usd) AS cost_usd, median(duration_ms) AS duration_ms,
       any_value(tool_sequence) AS tool_sequence
FROM day WHERE status = 'success' GROUP BY agent_id, task_id
"""

# Each episode against its task's baseline: the ratios and the tool-sequence match the findings are made of.
_COMPARED = """
CREATE OR REPLACE TABLE compared AS
SELECT e.*,
       e.cost_usd / b.cost_usd AS cost_ratio,
       e.duration_ms / b.duration_ms AS duration_ratio,
       e.tool_sequence = b.tool_sequence AS same_tools
FROM episode_aggregates e LEFT JOIN baseline b USING (agent_id, task_id)
"""


# Every field the warehouse keeps of an episode and of its steps, typed as its ingest reads them.
_STEP = (
    "STRUCT(step_index BIGINT, step_type VARCHAR, tool_name VARCHAR, model VARCHAR, provider VARCHAR, "
    "input_summary VARCHAR, output_summary VARCHAR, tokens BIGINT, cost_usd DOUBLE, duration_ms DOUBLE, "
    "timestamp VARCHAR, error VARCHAR, metadata JSON)"
)
_DAY = f"""read_json(?, format = 'newline_delimited', columns = {{
    episode_id: 'VARCHAR', agent_id: 'VARCHAR', status: 'VARCHAR', started_at: 'VARCHAR', ended_at: 'VARCHAR',
    total_tokens: 'BIGINT', total_cost_usd: 'DOUBLE', total_duration_ms: 'DOUBLE', metadata: 'JSON', steps: '{_STEP}[]'
}})"""
_LOAD = (
    f"""CREATE OR REPLACE TABLE episodes AS
    SELECT episode_id, agent_id, metadata ->> '$.task_id' AS task_id, status, started_at::TIMESTAMPTZ AS started_at,
           ended_at::TIMESTAMPTZ AS ended_at, total_tokens, total_cost_usd, total_duration_ms,
           list_transform(list_filter(steps, lambda s: s.step_type = 'tool_call'), lambda s: s.tool_name) AS tools,
           metadata ->> '$.final_output' AS final_output, len(steps) AS step_count, metadata
    FROM {_DAY}""",
    f"""CREATE OR REPLACE TABLE episode_steps AS
    SELECT episode_id, agent_id, s.step_index, s.step_type, s.tool_name, s.model, s.provider, s.input_summary AS input,
           s.output_summary AS output, s.tokens, s.cost_usd, s.duration_ms, s.timestamp::TIMESTAMPTZ AS timestamp,
           s.error
    FROM (SELECT episode_id, agent_id, unnest(steps) AS s FROM {_DAY})""",
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["baseline", "day", "load"])
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the DuckDB file written")
    args = parser.parse_args(argv)
    with duckdb.connect(str(args.out)) as con:
        if args.action == "baseline":
            con.execute(_BASELINE, [str(args.jsonl)])
            rows = {"baseline": con.execute("SELECT count(*) FROM baseline").fetchone()}
        elif args.action == "load":
            con.execute("BEGIN")
            for statement in _LOAD:
                con.execute(statement, [str(args.jsonl)])
            con.execute("COMMIT")
            rows = {table: con.execute(f"SELECT count(*) FROM {table}").fetchone() for table in ("episodes", "episode_steps")}
        else:
            con.execute(_EPISODES, [str(args.jsonl)])
            con.execute(_COMPARED)
            rows = {"episodes": con.execute("SELECT count(*) FROM compared").fetchone()}
    print(json.dumps({name: count[0] if count else 0 for name, count in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
