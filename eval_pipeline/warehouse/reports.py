"""What the day's report reads, and the `reports` row it leaves."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition


def report_inputs(warehouse: Warehouse, day: date) -> dict[str, Any]:
    with warehouse.connect(read_only=True) as con:
        params = {"day": day}
        scores = con.execute(
            "SELECT s.*, e.category FROM scores s JOIN episodes e USING (episode_id, partition_date) "
            "WHERE s.partition_date = $day",
            params,
        ).df()
        findings = con.execute("SELECT * FROM findings WHERE partition_date = $day", params).df()
        statuses = con.execute(
            "SELECT status, count(*) FROM episodes WHERE partition_date = $day GROUP BY ALL", params
        ).fetchall()
        quarantined = con.execute("SELECT count(*) FROM quarantine WHERE partition_date = $day", params).fetchone()[0]
        judgements = con.execute("SELECT * FROM judgements WHERE partition_date = $day", params).df()
        pairwise = con.execute("SELECT * FROM pairwise_judgements WHERE partition_date = $day", params).df()
        pass_at_k = con.execute("SELECT * FROM pass_at_k WHERE partition_date = $day", params).df()
        task_trials = con.execute("SELECT * FROM task_trials WHERE partition_date = $day", params).df()
    return {
        "scores": scores,
        "findings": findings,
        "status_counts": dict(statuses),
        "quarantined": int(quarantined),
        "judgements": judgements,
        "pairwise": pairwise,
        "pass_at_k": pass_at_k,
        "task_trials": task_trials,
    }


def write_report_row(warehouse: Warehouse, day: date, json_path: Path, markdown_path: Path, report: dict[str, Any]) -> None:
    row = pd.DataFrame(
        [
            {
                "partition_date": day,
                "json_path": str(json_path),
                "markdown_path": str(markdown_path),
                "html_path": None,
                "summary": json.dumps(report["summary"]),
                "config_version": report["config_version"],
            }
        ]
    )
    with warehouse.transaction() as con:
        replace_partition(con, "reports", day, row)


def report_rows(warehouse: Warehouse, days: list[date]) -> pd.DataFrame:
    return warehouse.read_frame(
        "SELECT * FROM reports WHERE list_contains($days, partition_date) ORDER BY partition_date", {"days": days}
    )


def severity_counts(warehouse: Warehouse, days: list[date]) -> dict[str, int]:
    rows = warehouse.read_frame(
        "SELECT severity, count(*) AS n FROM findings WHERE list_contains($days, partition_date) GROUP BY ALL", {"days": days}
    )
    return dict(zip(rows["severity"], rows["n"].astype(int), strict=False))


def findings_digest(warehouse: Warehouse, days: list[date]) -> pd.DataFrame:
    """Findings grouped by day, severity, agent, task and dimension, with one message each."""
    return warehouse.read_frame(
        """
        SELECT partition_date, severity, agent_id, coalesce(task_id, '(all episodes)') AS task_id, dimension,
               count(episode_id) AS episodes, min(message) AS message
        FROM findings WHERE list_contains($days, partition_date)
        GROUP BY partition_date, severity, agent_id, task_id, dimension
        ORDER BY partition_date, severity, agent_id, task_id, dimension
        """,
        {"days": days},
    )


def agents_seen(warehouse: Warehouse, days: list[date]) -> list[str]:
    frame = warehouse.read_frame(
        "SELECT DISTINCT agent_id FROM episodes WHERE list_contains($days, partition_date) ORDER BY 1", {"days": days}
    )
    return list(frame["agent_id"])
