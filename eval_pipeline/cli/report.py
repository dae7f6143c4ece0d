"""`eval-pipeline report`: print, write or open the report a run wrote for a day."""

from __future__ import annotations

import argparse
import os
import sys
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, date_argument, emit, print_outdated

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("saved", nargs="?", type=Path, help="a JSON report written earlier (--output, --format json)")
    parser.add_argument("--date", type=date_argument, help="the day whose report to show")
    parser.add_argument("--format", choices=["md", "json", "html"], default="md")
    parser.add_argument("--output", type=Path, help="write to this file instead of printing")
    parser.add_argument("--open", action="store_true", help="print the HTML report's path and open it where a browser can")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.warehouse.report_files import report_files

    if (args.saved is None) == (args.date is None):
        raise UsageError("give a day (--date D) or a saved JSON report (FILE.json), one of them")
    if args.saved is not None:
        return emit(_rendered(args.saved, args.format), args.output)
    warehouse = settings.warehouse()
    found = report_files(warehouse, [args.date]) if warehouse.exists() else []
    if not found:
        raise UsageError(f"no report for {args.date}; run `eval-pipeline run --date {args.date}` first")
    files = found[0]
    if args.open:
        if not files.html_path:
            raise UsageError(f"the report of {args.date} predates HTML reports; run `eval-pipeline run --date {args.date}` again")
        html = Path(files.html_path)
        print(html)
        if sys.platform == "darwin" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
            import webbrowser

            webbrowser.open(html.resolve().as_uri())
        return EXIT_OK
    path = {"md": files.markdown_path, "json": files.json_path, "html": files.html_path}[args.format]
    if not path:
        raise UsageError(f"no {args.format} report for {args.date}; run `eval-pipeline run --date {args.date}` again")
    _tell_if_outdated(settings, args.date)
    return emit(Path(path).read_text(), args.output)


def _tell_if_outdated(settings: Settings, day: date) -> None:
    """The report is the one the day's run wrote: when earlier days changed since, say so beside it (stderr, so a
    report piped on stays the report)."""
    from eval_pipeline.warehouse.outdated import first_changed_day, outdated_days
    from eval_pipeline.warehouse.rows import Rows

    first = first_changed_day(settings.warehouse())
    if first is None or first > day:  # nothing changed under the day: no need to read the configuration's policy
        return
    from eval_pipeline.config import load_config

    days = outdated_days(settings.warehouse(), load_config(settings.config_path).baseline.policy, after=day - timedelta(days=1))
    print_outdated(Rows(days.columns, days.numeric, [row for row in days.values if row[0] == day]), file=sys.stderr)


def _rendered(saved: Path, format: str) -> str:
    """A report saved as JSON, rendered again as Markdown or HTML (or checked and given back as JSON): a day's, or the
    list of a range's days that `run --start --end --output` writes, day by day."""
    import json

    from eval_pipeline.reports.daily import render_markdown, report_html

    text = saved.read_text()
    try:
        report = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{saved}: not a JSON report: {exc}") from None
    days = report if isinstance(report, list) else [report]
    if not days or not all(isinstance(day, dict) and {"partition_date", "summary"} <= day.keys() for day in days):
        raise UsageError(
            f"{saved}: not a daily report (no partition_date and summary) nor a list of them; `run --output` writes one"
        )
    if format == "json":
        return text
    if format == "html":
        if len(days) > 1:
            raise UsageError(
                f"{saved} holds the reports of {days[0]['partition_date']}..{days[-1]['partition_date']} (run --output of a "
                "range); an HTML report is of one day: report --date D --format html"
            )
        return report_html(days[0])
    return "\n".join(render_markdown(day) for day in days)


COMMAND = Command(
    "report",
    "print or write the day's report",
    _arguments,
    _run,
    (
        "report --date 2026-11-02",
        "report --date 2026-11-02 --format json --output report.json",
        "report --date 2026-11-02 --open",
        "report results.json                     # a JSON report saved earlier, as Markdown",
    ),
)
