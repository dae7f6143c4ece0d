"""An episode promoted into a case set: the regression dataset built from what production actually did."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from eval_pipeline.capture.cases import case_from_recording, save_case
from eval_pipeline.redaction import redact
from eval_pipeline.warehouse.viewer import episode_records


def promote_episode(
    con: duckdb.DuckDBPyConnection, day: date, episode_id: str, case_set: Path, secret_patterns: tuple[str, ...]
) -> dict[str, Any] | None:
    """Add the episode to `case_set` as an eval-case expecting its recorded tools and a key phrase of its answer, its
    texts redacted first (a case set is shared); the case written, or None when the day has no such episode."""
    records = episode_records(con, day, episode_id)
    if records is None:
        return None
    steps = records.steps
    asked = steps.loc[steps["step_type"] == "llm_call", "input"].dropna() if len(steps) else steps
    tools = records.episode.get("tools")
    case = case_from_recording(
        episode_id,
        redact(str(asked.iloc[0]) if len(asked) else "", secret_patterns),
        [str(tool) for tool in tools] if tools is not None else [],
        redact(str(records.episode.get("answer") or ""), secret_patterns),
        str(records.episode["category"]) if isinstance(records.episode.get("category"), str) else None,
    )
    save_case(case_set, case)
    return case
