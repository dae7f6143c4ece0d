"""`eval-pipeline demo`: the whole pipeline on the bundled sample days, offline."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, no_arguments

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.cli.run import evaluate
    from eval_pipeline.episodes.samples import SAMPLE_DAYS, write_samples
    from eval_pipeline.runner import RunRequest

    if settings.source_is_store:
        raise UsageError("the demo runs on sample files; unset EVAL_EPISODE_SOURCE (it points at a store)")
    source = Path(settings.episode_source)
    if not (source.is_dir() and any(source.iterdir())):
        written = write_samples(source)
        print(f"wrote {len(written)} sample files to {source}")
    evaluate(settings, RunRequest(list(SAMPLE_DAYS)))
    _print_findings(settings, list(SAMPLE_DAYS))
    print(
        "\nnext:\n"
        f"  {_command()} report --date {SAMPLE_DAYS[1]} --open    # the HTML report of the day with injected regressions\n"
        f'  {_command()} query "SELECT agent_id, dimension, severity, message FROM findings ORDER BY ALL"\n'
        "  make ui    # the Dagster UI at http://127.0.0.1:3000, with these runs"
    )
    return EXIT_OK


def _print_findings(settings: Settings, days: list[date]) -> None:
    """Every finding of `days`, one line per task and dimension, and the agents without any."""
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.reports import agents_seen, findings_digest

    warehouse = Warehouse(settings.duckdb_path)
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


COMMAND = Command("demo", "write the sample episodes if missing and evaluate every sample day", no_arguments, _run, ("demo",))
