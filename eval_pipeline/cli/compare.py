"""`eval-pipeline compare`: two runs of the same tasks head to head, with per-task winners and paired CIs."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import Command, UsageError, emit, existing_warehouse

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--a", required=True, help="the first side, e.g. date=2026-11-01,model=gpt-4o")
    parser.add_argument("--b", required=True, help="the second side, e.g. date=2026-11-01,model=gpt-4.1")
    parser.add_argument("--format", choices=["md", "json"], default="md")
    parser.add_argument("--output", type=Path, help="write to this file instead of printing")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.config import load_config
    from eval_pipeline.regression.compare import Selector, SelectorError, compare
    from eval_pipeline.reports.comparison import render_comparison
    from eval_pipeline.warehouse.compare import selected_tasks

    warehouse = existing_warehouse(settings)
    try:
        sides = (Selector.parse(args.a), Selector.parse(args.b))
        with warehouse.connect(read_only=True) as con:
            tasks = selected_tasks(con, sides)
    except SelectorError as exc:
        raise UsageError(str(exc)) from None
    comparison = compare(tasks[0], tasks[1], sides, load_config(settings.config_path).statistics)
    text = jsonout.dumps(comparison, indented=True) + "\n" if args.format == "json" else render_comparison(comparison)
    return emit(text, args.output)


COMMAND = Command(
    "compare",
    "head to head: two runs of the same tasks, per-task winners and paired CIs",
    _arguments,
    _run,
    (
        "compare --a date=2026-11-01,agent=support-bot --b date=2026-11-02,agent=support-bot",
        "compare --a label=prompt-v1 --b label=prompt-v2 --format json --output h2h.json",
    ),
    description="Selectors: comma-separated date=D or date=D1..D2, agent=, model=, label= (metadata.label). "
    "Example: eval-pipeline compare --a date=2026-11-01,agent=support-bot --b date=2026-11-02,agent=support-bot",
)
