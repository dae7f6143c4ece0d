"""`eval-pipeline summarize`: plaited's compact view of runs, from a results file or the runs stored for a day."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import Command, add_results, emit, results

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_results(parser)
    parser.add_argument("--markdown", action="store_true", help="Markdown with step ids for an LLM judge, not JSONL")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.reports.plaited_views import summary, summary_markdown

    runs, _ = results(args, settings)
    return emit(summary_markdown(runs) if args.markdown else (jsonout.dumps(summary(run)) + "\n" for run in runs), args.output)


COMMAND = Command(
    "summarize",
    "plaited's SummaryResult JSONL (id, input, output, toolCalls, duration), or Markdown, of each run",
    _arguments,
    _run,
    (
        "summarize results.jsonl -o summary.jsonl",
        "summarize results.jsonl --markdown -o results.md",
        "summarize --date 2026-11-02 --agent support-bot",
    ),
)
