"""`eval-pipeline reward-bench`: how well each configured reward ranks labelled runs (PPE metrics)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, add_days, days, existing_warehouse, print_table

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_days(parser)
    parser.add_argument("--k", type=int, help="best-of-K over K runs of a task (default: all of its runs that day)")
    parser.add_argument(
        "--labels", type=Path, help="human labels, JSONL of {episode_id, label} (over [rewards] labels and the viewer's labels)"
    )
    parser.add_argument("--format", choices=["table", "json"], default="table")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.cli.reward import require_scored_episodes
    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.rewards.benchmark import BenchmarkError, benchmark_rewards, benchmark_table, load_labels
    from eval_pipeline.rewards.inputs import scores_read
    from eval_pipeline.warehouse.labels import label_truth
    from eval_pipeline.warehouse.rewards import reward_inputs_in_parts

    selected = days(args)
    if args.k is not None and args.k < 1:
        raise UsageError("--k must be at least 1")
    config = load_config(settings.config_path)
    labels_path = args.labels or (beside_config(settings.config_path, config.rewards.labels) if config.rewards.labels else None)
    try:
        given = load_labels(labels_path) if labels_path else {}
    except BenchmarkError as exc:
        raise UsageError(str(exc)) from None
    warehouse = existing_warehouse(settings)
    labels = {**label_truth(warehouse, selected[0], selected[-1]), **given}  # a labels file given wins over the viewer's
    require_scored_episodes(warehouse, selected)
    scored = reward_inputs_in_parts(warehouse, selected[0], selected[-1], scores_read())
    result = benchmark_rewards(scored, config.rewards, labels, args.k)
    if not result["episodes"]:
        raise UsageError(
            f"no scored episode from {selected[0]} to {selected[-1]} has a ground truth: label some in the viewer's "
            "review queues, give human labels (--labels, or [rewards] labels), cases, or metadata.reward"
        )
    if args.format == "json":
        print(jsonout.dumps(result, indented=True))
        return EXIT_OK
    print_table(benchmark_table(result), f"reward benchmark, {selected[0]}..{selected[-1]}: {result['ground_truth']}")
    return EXIT_OK


COMMAND = Command(
    "reward-bench",
    "how well each configured reward ranks labelled runs (PPE metrics), per category",
    _arguments,
    _run,
    (
        "reward-bench --date 2026-11-02",
        "reward-bench --start 2026-11-01 --end 2026-11-03 --labels labels.jsonl --format json",
    ),
)
