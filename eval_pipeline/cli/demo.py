"""`eval-pipeline demo`: the whole pipeline on the bundled sample days, offline."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, date_argument

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--last-day",
        type=date_argument,
        help="the last of the three sample days when writing them (default: yesterday, UTC)",
    )


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.cli.run import check_partitions, evaluate
    from eval_pipeline.episodes.samples import sample_days, write_samples, written_days
    from eval_pipeline.runner import RunRequest

    if settings.source_is_store:
        raise UsageError("the demo runs on sample files; unset EVAL_EPISODE_SOURCE (it points at a store)")
    source = Path(settings.episode_source)
    days = written_days(source) if source.is_dir() else None
    if days is None:
        if source.is_dir() and any(source.iterdir()):
            raise UsageError(f"the demo writes its sample files into an empty directory; {source} holds other files")
        days = sample_days(args.last_day or datetime.now(UTC).date() - timedelta(days=1))
        check_partitions(list(days), settings)  # before writing: days older than the partitions write nothing
        written = write_samples(source, days)
        print(f"wrote {len(written)} sample files to {source}, dated {days[0]} to {days[-1]}")
    elif args.last_day and args.last_day != days[-1]:
        raise UsageError(f"{source} already holds the sample days up to {days[-1]}; `make clean` first to date them anew")
    evaluate(settings, RunRequest(list(days)))
    _print_findings(settings, list(days))
    print(
        "\nnext:\n"
        f"  {_command()} report --date {days[1]} --open    # the HTML report of the day with injected regressions\n"
        f'  {_command()} query "SELECT agent_id, dimension, severity, message FROM findings ORDER BY ALL"\n'
        f"  make ui    # the Dagster UI at http://127.0.0.1:3000, with these runs, and the viewer at {settings.viewer_base_url}"
    )
    return EXIT_OK


def _print_findings(settings: Settings, days: list[date]) -> None:
    """Every finding of `days`, one line per task and dimension, and the agents without any."""
    from eval_pipeline.warehouse.reports import agents_seen, findings_digest

    warehouse = settings.warehouse()
    digest = findings_digest(warehouse, days)
    print("\nfindings:")
    for f in digest.itertuples():
        count = "aggregate" if not f.episodes else f"{f.episodes} episode" + ("s" if f.episodes > 1 else "")
        print(f"  {f.partition_date:%Y-%m-%d}  {f.severity.upper():<8} {f.agent_id:<16} {f.task_id:<40} {count:<11} {f.message}")
    clean = sorted(set(agents_seen(warehouse, days)) - set(digest["agent_id"]))
    for agent in clean:
        print(f"  no findings for {agent}")


def _command() -> str:
    """How to call this command again from here: `.venv/bin/eval-pipeline` when it is not on PATH."""
    invoked = Path(sys.argv[0]).resolve()
    if invoked.name == "eval-pipeline" and shutil.which("eval-pipeline") != str(invoked):
        return os.path.relpath(invoked) if invoked.is_relative_to(Path.cwd()) else str(invoked)
    return "eval-pipeline"


COMMAND = Command(
    "demo",
    "write the sample episodes (three days ending yesterday) if missing and evaluate every sample day",
    _arguments,
    _run,
    ("demo", "demo --last-day 2026-11-03"),
)
