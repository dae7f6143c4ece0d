"""What case assertions and deterministic checks read (each candidate run and its steps) and write."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition


def _records(frame: pd.DataFrame) -> list[dict]:
    return frame.astype(object).where(frame.notna(), None).to_dict("records")


def check_inputs(warehouse: Warehouse, day: date, agent_id: str | None = None) -> tuple[list[dict], list[dict]]:
    """The day's finished candidates (`episode_id, agent_id, task_id, status, final_output, tools,
    total_duration_ms, mode, expected`) and their recorded steps, both in episode order."""
    params = {"day": day, "agent": agent_id}
    with warehouse.session():
        candidates = warehouse.read_frame(
            """
            SELECT r.episode_id, r.agent_id, e.task_id, r.status, r.final_output, r.tools, r.total_duration_ms, r.mode,
                   CAST(e.expected AS VARCHAR) AS expected
            FROM replays r JOIN episodes e USING (episode_id, partition_date)
            WHERE r.partition_date = $day AND r.status <> 'running' AND ($agent IS NULL OR r.agent_id = $agent)
            ORDER BY r.episode_id
            """,
            params,
        )
        steps = warehouse.read_frame(
            """
            SELECT s.episode_id, s.step_index, s.step_type, s.tool_name, s.input, s.output, s.error
            FROM episode_steps s JOIN replays r USING (episode_id, partition_date)
            WHERE s.partition_date = $day AND r.status <> 'running' AND ($agent IS NULL OR s.agent_id = $agent)
            ORDER BY s.episode_id, s.step_index
            """,
            params,
        )
    return _records(candidates), _records(steps)


def write_checks(warehouse: Warehouse, day: date, assertions: pd.DataFrame, issues: pd.DataFrame, agent_id: str | None) -> None:
    with warehouse.transaction() as con:
        replace_partition(con, "assertions", day, assertions, agent_id)
        replace_partition(con, "issues", day, issues, agent_id)
