"""`eval-pipeline baseline`: promote, pin or list the baselines runs are compared with."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, date_argument, existing_warehouse, print_table

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True)
    promote = actions.add_parser("promote", help="make a day's successful runs of an agent its baselines from that day on")
    promote.add_argument("--agent", required=True)
    promote.add_argument("--date", type=date_argument, required=True)
    pin = actions.add_parser("pin", help="pin one episode as its task's baseline")
    pin.add_argument("episode_id")
    pin.add_argument("--from", dest="valid_from", type=date_argument, help="first day it applies to (default: its own day)")
    listing = actions.add_parser("list", help="the baseline of every task on a day (default today)")
    listing.add_argument("--agent")
    listing.add_argument("--date", type=date_argument)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from datetime import UTC, datetime

    from eval_pipeline.config import load_config
    from eval_pipeline.warehouse import baselines

    warehouse = existing_warehouse(settings)
    if args.action == "promote":
        promoted = baselines.promote(warehouse, args.agent, args.date)
        if not promoted:
            raise UsageError(f"{args.agent} has no successful episode on {args.date}")
        print(f"promoted {promoted} baseline(s) of {args.agent} from {args.date} on; re-run later days to compare with them")
    elif args.action == "pin":
        pinned = baselines.pin(warehouse, args.episode_id, args.valid_from)
        if pinned is None:
            raise UsageError(f"no episode {args.episode_id} in the warehouse")
        print(f"pinned {args.episode_id} for {pinned['agent_id']} / {pinned['task_id']} from {pinned['valid_from']} on")
    else:
        as_of = args.date or datetime.now(UTC).date()
        config = load_config(settings.config_path)
        rows = baselines.effective_baselines(warehouse, as_of, config.baseline.policy, args.agent)
        if rows.values:
            print_table(rows, secret_patterns=config.policies.secret_patterns)
        elif args.agent and args.agent not in (agents := baselines.agents(warehouse)):  # a typo is not a quiet agent
            raise UsageError(f"no agent {args.agent} in the warehouse; agents there: {', '.join(agents) or 'none'}")
        else:
            print(f"no baselines{f' of {args.agent}' if args.agent else ''} on {as_of}")
    return EXIT_OK


COMMAND = Command(
    "baseline",
    "promote, pin or list the baselines runs are compared with",
    _arguments,
    _run,
    ("baseline promote --agent support-bot --date 2026-11-03", "baseline pin EPISODE_ID", "baseline list --agent support-bot"),
)
