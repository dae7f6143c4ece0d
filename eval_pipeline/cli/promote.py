"""`eval-pipeline promote`: an episode into a case set, expecting what it did (the viewer's "Promote to a case")."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, date_argument, existing_warehouse

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("episode_id")
    parser.add_argument("--date", type=date_argument, required=True, help="the day the episode was evaluated")
    parser.add_argument("--to", type=Path, help="the case set to add it to (default: [review] case_set)")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.viewer.promote import promote_episode

    config = load_config(settings.config_path)
    case_set = args.to or beside_config(settings.config_path, config.review.case_set)
    with existing_warehouse(settings).connect(read_only=True) as con:
        case = promote_episode(con, args.date, args.episode_id, case_set, tuple(config.policies.secret_patterns))
    if case is None:
        raise UsageError(f"no episode {args.episode_id!r} on {args.date}")
    print(f"promoted {args.episode_id} to case {case['id']} in {case_set}:")
    print(jsonout.dumps(case, indented=True))
    return EXIT_OK


COMMAND = Command(
    "promote",
    "add an episode to a case set, expecting its recorded tools and a key phrase of its answer",
    _arguments,
    _run,
    ("promote ep-123 --date 2026-11-02", "promote ep-123 --date 2026-11-02 --to data/eval_cases.json"),
)
