"""`eval-pipeline export`: a day's episodes, with their verdicts, in another tool's format."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import Command, date_argument, emit, finished_episodes

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", choices=["plaited"], required=True)
    parser.add_argument("--date", type=date_argument, required=True)
    parser.add_argument("--agent", help="only this agent's episodes")
    parser.add_argument("--output", type=Path, help="write to this file instead of printing")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.episodes.adapters.plaited import to_capture

    lines = (jsonout.dumps(to_capture(episode)) + "\n" for episode in finished_episodes(settings, args.date, args.agent))
    return emit(lines, args.output)  # written as they are read: a day's export holds a part of it at a time


COMMAND = Command(
    "export",
    "write a day's episodes in another tool's format (with their grader's verdict and ours)",
    _arguments,
    _run,
    ("export --format plaited --date 2026-11-02 --output results.jsonl",),
)
