"""`eval-pipeline reward`: recompute rewards of scored days by materializing the graph's `rewards` asset."""

from __future__ import annotations

import argparse
from datetime import date
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, add_days, days, existing_warehouse, print_table

if TYPE_CHECKING:
    from eval_pipeline.config import EvalConfig
    from eval_pipeline.settings import Settings
    from eval_pipeline.warehouse.connection import Warehouse


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_days(parser)
    parser.add_argument("--name", action="append", help="only this reward (repeatable); default: every configured reward")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.cli.run import checked_inputs, launch
    from eval_pipeline.runner import RunRequest
    from eval_pipeline.warehouse.rewards import reward_summary

    selected = days(args)
    config, _ = checked_inputs(settings, selected)
    names = reward_names(args.name, config)
    warehouse = existing_warehouse(settings)
    require_scored_episodes(warehouse, selected)
    launch(settings, RunRequest(selected, assets=("rewards",), rewards=tuple(names)), config, "computing rewards of")
    summary = reward_summary(warehouse, selected[0], selected[-1], names)
    print_table(summary, f"rewards written ({summary['episodes'].sum()} rows, config {config.version})")
    return EXIT_OK


def reward_names(requested: list[str] | None, config: EvalConfig) -> list[str]:
    defined = list(config.rewards.define)
    unknown = [name for name in requested or [] if name not in defined]
    if unknown:
        raise UsageError(f"no reward {unknown[0]!r}; defined: {', '.join(defined)}")
    return list(dict.fromkeys(requested)) if requested else defined


def require_scored_episodes(warehouse: Warehouse, selected: list[date]) -> None:
    """A usage error when the days hold no scored episode."""
    from eval_pipeline.warehouse.rewards import scored_count

    if not scored_count(warehouse, selected[0], selected[-1]):
        raise UsageError(f"no scored episodes from {selected[0]} to {selected[-1]}; run `eval-pipeline run` for those days first")


COMMAND = Command(
    "reward",
    "compute the configured rewards of a day's scored episodes (writes `rewards`)",
    _arguments,
    _run,
    ("reward --date 2026-11-02", "reward --date 2026-11-02 --name safe_overall --name issues"),
)
