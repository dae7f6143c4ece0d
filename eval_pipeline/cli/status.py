"""`eval-pipeline status`: where things live, source health, partitions in the warehouse, the latest run."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import (
    EXIT_OK,
    Command,
    add_store_url,
    print_other_policy,
    print_outdated,
    print_table,
    with_store_url,
)

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings
    from eval_pipeline.warehouse.rows import Rows


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_store_url(parser)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline import plugins
    from eval_pipeline.config import load_config
    from eval_pipeline.episodes.source import open_source, source_health, source_index_path
    from eval_pipeline.warehouse.outdated import other_policy_days, outdated_days
    from eval_pipeline.warehouse.partitions import days_read_in_part, partition_counts

    settings = with_store_url(settings, args.store_url)
    print(f"episode source   {settings.episode_source}")
    warehouse = settings.warehouse()
    print(f"warehouse        {warehouse.shown}")
    print(f"reports          {settings.reports_dir}")
    print(f"config           {settings.config_path or '(built-in defaults)'}")
    print(f"DAGSTER_HOME     {settings.dagster_home}")
    config = load_config(settings.config_path)
    index = Path(source_index_path(str(settings.duckdb_path)))
    case_set = config.capture.case_set
    readers = plugins.adapters(config, settings.config_path)  # the run's own, so the day index reads files as it does
    health = source_health(open_source(settings.episode_source, index, config.sources, required=not case_set, adapters=readers))
    print(
        f"\nsource health    {jsonout.dumps(health.get('health', {k: v for k, v in health.items() if k != 'episodes_per_day'}))}"
    )
    if health.get("exists") is False:  # allowed only beside a case set; a mistyped EVAL_EPISODE_SOURCE looks the same
        print(
            f"                 {health['path']} does not exist: no recorded episodes, only the runs of the case set "
            f"{case_set}; set EVAL_EPISODE_SOURCE if recorded episodes should be there"
        )
    for day, count in health.get("episodes_per_day", {}).items():
        print(f"  {day}  {count} records")
    evaluated: set[str] = set()
    if warehouse.exists():
        with warehouse.session(read_only=True):  # one connection for the warehouse's part
            counts = partition_counts(warehouse)
            evaluated = {f"{day:%Y-%m-%d}" for day in counts.column("partition_date")}
            print_table(counts, "partitions in the warehouse")
            _print_read_in_part(days_read_in_part(warehouse))
            print_outdated(outdated_days(warehouse, config.baseline.policy))
            print_other_policy(other_policy_days(warehouse, config.baseline.policy), config.baseline.policy)
    else:
        print("\nno warehouse yet: run `eval-pipeline demo` or `eval-pipeline run --date D`")
    _print_missing_history(sorted(set(health.get("episodes_per_day", {})) - evaluated), config.baseline.lookback_days)
    _print_latest_run(settings)
    return EXIT_OK


def _print_read_in_part(days: Rows) -> None:
    """Days a run narrowed with `--model` or `--limit`: they look evaluated, yet hold only part of the source's runs."""
    if not days.values:
        return
    listed = ", ".join(
        f"{day} ({agent}: {' '.join(f'--{flag} {v}' for flag, v in (('model', model), ('limit', limit)) if v)})"
        for day, agent, model, limit in days.values
    )
    first, last = days.values[0][0], days.values[-1][0]
    again = f"--date {first}" if first == last else f"--start {first} --end {last}"
    print(
        f"\nread in part     {listed}: what was left out is in no table and no figure; to read them whole: "
        f"eval-pipeline run {again}"
    )


def _print_missing_history(unevaluated: list[str], lookback_days: int) -> None:
    """Days the source holds that the warehouse has not evaluated: their runs are no baselines until read."""
    if not unevaluated:
        return
    first, last = unevaluated[0], unevaluated[-1]
    print(
        f"\nhistory missing  {len(unevaluated)} day(s) in the source are not evaluated ({first}..{last}). A task first seen "
        f"there gets its baseline from the source's last {lookback_days} days ([baseline] lookback_days); to evaluate "
        f"them too: eval-pipeline run --start {first} --end {last}"
    )


def _print_latest_run(settings: Settings) -> None:
    from eval_pipeline.warehouse.run_history import LatestRun, UnknownStorage, latest_run, partitions_of

    if not (settings.dagster_home / "dagster.yaml").exists():
        return
    try:
        run = latest_run(settings.dagster_home)  # read without Dagster, which takes a second to import
    except UnknownStorage:
        from eval_pipeline.runner import open_instance

        with open_instance(settings) as instance:
            runs = instance.get_runs(limit=1)
            run = LatestRun(runs[0].run_id, runs[0].job_name, runs[0].status.value, partitions_of(runs[0].tags)) if runs else None
    if run:
        print(f"\nlatest run       {run.run_id} {run.job_name} partition {run.partitions}: {run.status}")
        print(f"                 {settings.ui_base_url}/runs/{run.run_id}")


COMMAND = Command(
    "status",
    "source health, partitions in the warehouse, latest run",
    _arguments,
    _run,
    ("status", "status --store-url http://localhost:8100"),
)
