"""Replays: the candidate run of each episode, as `scores` compares it with a baseline."""

from __future__ import annotations

from datetime import date

from eval_pipeline.warehouse.connection import Warehouse, replace_partition

# Dry replay: the recording itself is the candidate. Running episodes wait until they finish.
_DRY = """
SELECT episode_id, partition_date, agent_id, 'dry' AS mode, model, status, final_output, tools,
       total_cost_usd, total_duration_ms, total_tokens, step_count, error_steps, NULL AS error
FROM episodes
WHERE partition_date = $day AND status <> 'running' AND ($agent IS NULL OR agent_id = $agent)
"""


def write_dry_replays(warehouse: Warehouse, day: date, agent_id: str | None = None) -> int:
    with warehouse.transaction() as con:
        return replace_partition(con, "replays", day, _DRY, agent_id, {"day": day, "agent": agent_id})
