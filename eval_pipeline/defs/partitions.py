"""Daily partitions by the episode's start date (UTC), from `Settings.partition_start` to today.

Today is included, for late-day reruns; the first day bounds how far back a backfill can go.
"""

from datetime import UTC, date, datetime

import dagster as dg

from eval_pipeline.defs.loaded import SETTINGS

daily_partitions = dg.DailyPartitionsDefinition(
    start_date=SETTINGS.partition_start(datetime.now(UTC).date()).isoformat(), timezone="UTC", end_offset=1
)


def partition_days(context: dg.AssetExecutionContext) -> list[date]:
    """The days this run covers, oldest first: one for a nightly run, a range for a backfill."""
    return sorted(date.fromisoformat(key) for key in context.partition_keys)
