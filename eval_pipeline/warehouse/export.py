"""What an export reads: a day's finished episodes with their metadata and steps (canonical names, in order), and
their scores."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from itertools import pairwise

from eval_pipeline.warehouse.connection import Warehouse, of_agent

# What an export reads at a time, tasks whole, in its order (task, then id): episodes with their steps as lists, at most
# about EXPORT_PART_EPISODES of them or EXPORT_PART_BYTES of their steps' texts. A day's whole steps gathered at once ran
# out of DuckDB's 1 GiB at 200,000 episodes; counted in episodes alone, a part of long tool outputs would not fit either.
# Each part scans the day's steps for its own, so parts of the benchmark's million episodes (records of 2.5 KB) cost
# 100 scans in parts of 10,000 (47.8 s, 778 MB peak) and 20 in parts of 50,000 (26.4 s, 1,094 MB).
EXPORT_PART_EPISODES = 50_000
EXPORT_PART_BYTES = 64 << 20

# The day's finished episodes an export holds (the agent's, when scoped).
_FINISHED = f"partition_date = $day AND status <> 'running' AND {of_agent()}"
# The last task of each part: tasks in order, cut where their running count of episodes or of text passes a multiple of
# the part's size.
_PART_ENDS = f"""
WITH finished AS (SELECT episode_id, task_id FROM episodes WHERE {_FINISHED}),
texts AS (
    SELECT f.task_id, sum(coalesce(strlen(s.input), 0) + coalesce(strlen(s.output), 0)) AS bytes
    FROM episode_steps s JOIN finished f USING (episode_id) WHERE s.partition_date = $day GROUP BY f.task_id
)
SELECT max(task_id) FROM (
    SELECT task_id,
           greatest((sum(episodes) OVER running - 1) // $episodes, sum(coalesce(bytes, 0)) OVER running // $bytes) AS part
    FROM (SELECT task_id, count(*) AS episodes FROM finished GROUP BY task_id) LEFT JOIN texts USING (task_id)
    WINDOW running AS (ORDER BY task_id)
) GROUP BY part ORDER BY part
"""
# One part: the tasks after $after (from the first, when NULL) up to $last.
_IN_PART = f"{_FINISHED} AND ($after IS NULL OR task_id > $after) AND task_id <= $last"
_EPISODES = f"""
WITH part AS (SELECT * FROM episodes WHERE {_IN_PART})
SELECT e.episode_id, e.agent_id, e.task_id, e.trial, e.status, e.category,
       strftime(e.started_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS started_at, e.total_duration_ms, e.total_tokens,
       e.total_cost_usd, e.model,
       e.final_output, CAST(e.metadata AS VARCHAR) AS metadata, s.passed, s.verdict_reason, s.weighted_score, st.steps
FROM part e
LEFT JOIN (SELECT * FROM scores WHERE partition_date = $day) s USING (episode_id, partition_date)
LEFT JOIN (
    SELECT episode_id,
           list({{'step_type': step_type, 'tool_name': tool_name, 'input_summary': input, 'output_summary': output,
                 'error': error, 'duration_ms': duration_ms,
                 'timestamp': CASE WHEN timestamp IS NULL THEN NULL ELSE strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%fZ') END}}
                ORDER BY step_index) AS steps
    FROM episode_steps WHERE partition_date = $day AND episode_id IN (SELECT episode_id FROM part) GROUP BY episode_id
) st USING (episode_id)
ORDER BY e.task_id, e.episode_id
"""
_ROWS = 2_000  # episodes handed to Python at a time


def export_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> Iterator[dict]:
    """The day's finished episodes (`agent_id`'s, when given) with their steps and scores, by task and id; read a part
    at a time (`_PART_ENDS`), so an export's memory does not grow with the day.
    The connection stays open until the last is read."""
    params: dict[str, object] = {"day": day, "agent": agent_id}
    size = {"episodes": EXPORT_PART_EPISODES, "bytes": EXPORT_PART_BYTES}
    with warehouse.connect(read_only=warehouse.exists()) as con:
        ends = [last for (last,) in con.execute(_PART_ENDS, {**params, **size}).fetchall()]
        for after, last in pairwise([None, *ends]):
            for batch in con.execute(_EPISODES, {**params, "after": after, "last": last}).to_arrow_reader(_ROWS):
                for episode in batch.to_pylist():
                    yield {**episode, "metadata": json.loads(episode["metadata"] or "{}")}
