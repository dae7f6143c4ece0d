"""Daily partitions by the episode's start date (UTC); today is included, for late-day reruns."""

from datetime import date

import dagster as dg

HISTORY_START = "2025-01-01"

daily_partitions = dg.DailyPartitionsDefinition(start_date=HISTORY_START, timezone="UTC", end_offset=1)


def partition_day(context: dg.AssetExecutionContext) -> date:
    return date.fromisoformat(context.partition_key)
