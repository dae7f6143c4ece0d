"""The `reports` table: where each day's report files are, and its summary. Read without pandas: `report` prints
a file it names, and starts fast."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_pipeline import jsonout
from eval_pipeline.warehouse.connection import Warehouse, replace_partition

if TYPE_CHECKING:
    from eval_pipeline.reports.document import Report


@dataclass(frozen=True)
class ReportFiles:
    """Where a day's report was written, and its summary (what `run` prints of it)."""

    day: date
    markdown_path: str
    json_path: str
    html_path: str | None  # None for a report written before HTML reports were
    summary: dict[str, Any]


def write_report_row(warehouse: Warehouse, day: date, paths: dict[str, Path], report: Report) -> None:
    """Replace the day's row: the paths of its files (`json`, `md`, `html`) and its summary."""
    row = """SELECT $day AS partition_date, $json AS json_path, $md AS markdown_path, $html AS html_path,
                    $summary::JSON AS summary, $version AS config_version"""
    params: dict[str, object] = {name: str(paths[name]) for name in ("json", "md", "html")}
    params |= {"day": day, "summary": jsonout.dumps(report["summary"]), "version": report["config_version"]}
    with warehouse.transaction() as con:
        replace_partition(con, "reports", day, row, params=params)


def report_files(warehouse: Warehouse, days: list[date]) -> list[ReportFiles]:
    """The reports of those of `days` that have one, oldest first."""
    rows = warehouse.read_rows(
        "SELECT partition_date, markdown_path, json_path, html_path, summary FROM reports "
        "WHERE list_contains($days, partition_date) ORDER BY partition_date",
        {"days": days},
    )
    return [ReportFiles(day, md, js, html, json.loads(summary)) for day, md, js, html, summary in rows.values]
