"""`eval-pipeline balance`: how a case set covers its categories, as plaited's balance.json."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import Command, UsageError, emit

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompts", type=Path, help="a case set: plaited's prompts.jsonl")
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of printing")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.capture.cases import CaseSetError, load_case_set
    from eval_pipeline.reports.plaited_views import balance_analysis

    try:
        cases = load_case_set(args.prompts)
    except CaseSetError as exc:
        raise UsageError(str(exc)) from None
    return emit(json.dumps(balance_analysis(cases), indent=2) + "\n", args.output)


COMMAND = Command(
    "balance",
    "a case set's categories, under-represented ones and positive vs negative cases (plaited's balance.json)",
    _arguments,
    _run,
    ("balance prompts.jsonl -o balance.json",),
)
