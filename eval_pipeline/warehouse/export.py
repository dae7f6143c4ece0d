"""What an export reads: a day's finished episodes with their metadata and steps (canonical names, in order), and
their scores."""

from __future__ import annotations

import json
from datetime import date

from eval_pipeline.warehouse.connection import Warehouse, of_agent

_EPISODES = f"""
SELECT e.episode_id, e.agent_id, e.task_id, e.trial, e.status, e.category,
       strftime(e.started_at, '%Y-%m-%dT%H:%M:%S.%fZ') AS started_at, e.total_duration_ms, e.total_tokens,
       e.total_cost_usd, e.model,
       e.final_output, CAST(e.metadata AS VARCHAR) AS metadata, s.passed, s.verdict_reason, s.weighted_score, st.steps
FROM episodes e
LEFT JOIN scores s USING (episode_id, partition_date)
LEFT JOIN (
    SELECT episode_id,
           list({{'step_type': step_type, 'tool_name': tool_name, 'input_summary': input, 'output_summary': output,
                 'error': error, 'duration_ms': duration_ms,
                 'timestamp': CASE WHEN timestamp IS NULL THEN NULL ELSE strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%fZ') END}}
                ORDER BY step_index) AS steps
    FROM episode_steps WHERE partition_date = $day GROUP BY episode_id
) st USING (episode_id)
WHERE e.partition_date = $day AND e.status <> 'running' AND {of_agent("e.agent_id")}
ORDER BY e.task_id, e.episode_id
"""


def export_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> list[dict]:
    with warehouse.connect(read_only=warehouse.exists()) as con:
        episodes = con.sql(_EPISODES, params={"day": day, "agent": agent_id}).to_arrow_table().to_pylist()
    return [{**episode, "metadata": json.loads(episode["metadata"] or "{}")} for episode in episodes]
