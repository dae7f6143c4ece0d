"""Daily partitions by the episode's start date (UTC); today is included, for late-day reruns."""

from datetime import date

import dagster as dg

HISTORY_START = "2025-01-01"

daily_partitions = dg.DailyPartitionsDefinition(start_date=HISTORY_START, timezone="UTC", end_offset=1)


def partition_days(context: dg.AssetExecutionContext) -> list[date]:
    """The days this run covers, oldest first: one for a nightly run, a range for a backfill."""
    return sorted(date.fromisoformat(key) for key in context.partition_keys)
