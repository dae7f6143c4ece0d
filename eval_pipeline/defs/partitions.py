"""Daily partitions by the episode's start date (UTC), from `EVAL_HISTORY_START` to today.

Today is included, for late-day reruns; the first day bounds how far back a backfill can go.
"""

from datetime import date

import dagster as dg

from eval_pipeline.defs.loaded import SETTINGS

HISTORY_START = SETTINGS.history_start

daily_partitions = dg.DailyPartitionsDefinition(start_date=HISTORY_START.isoformat(), timezone="UTC", end_offset=1)


def partition_days(context: dg.AssetExecutionContext) -> list[date]:
    """The days this run covers, oldest first: one for a nightly run, a range for a backfill."""
    return sorted(date.fromisoformat(key) for key in context.partition_keys)
