"""The floor `eval-pipeline run` is measured against: plain DuckDB doing a day's essential work on the same file.

    .venv/bin/python benchmarks/duckdb_floor.py baseline PREVIOUS_DAY.jsonl --out FLOOR.duckdb   # untimed setup
    .venv/bin/python benchmarks/duckdb_floor.py day DAY.jsonl --out FLOOR.duckdb                 # the floor

`baseline` keeps, per (agent, task), the median cost and duration and the tool sequence of the previous day's
successful episodes, as the warehouse holds the day before. `day` is the floor itself: `read_json` of the day's
JSONL (the AIR episode-store shape the benchmark generates), per-episode cost, duration and tool aggregates over
the steps, the join against the baseline table, all written to the DuckDB file. run_throughput.py times `day` as
a whole process, as it times `run`, so the ratio of the two says what the pipeline costs beyond this.
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["baseline", "day"])
    parser.add_argument("jsonl", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="the DuckDB file written")
    args = parser.parse_args(argv)
    with duckdb.connect(str(args.out)) as con:
        if args.action == "baseline":
            con.execute(_BASELINE, [str(args.jsonl)])
            rows = {"baseline": con.execute("SELECT count(*) FROM baseline").fetchone()}
        else:
            con.execute(_EPISODES, [str(args.jsonl)])
            con.execute(_COMPARED)
            rows = {"episodes": con.execute("SELECT count(*) FROM compared").fetchone()}
    print(json.dumps({name: count[0] if count else 0 for name, count in rows.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
