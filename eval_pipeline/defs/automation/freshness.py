"""A missed night shows in the UI: yesterday's report must exist by morning.

Judged on the newest partition itself; a per-asset freshness policy would be fooled by a
backfill of an old day.
"""

from datetime import UTC, datetime, timedelta

import dagster as dg


@dg.asset_check(asset="eval_report", description="Yesterday's partition of eval_report has been materialized.")
def last_night_reported(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    yesterday = (datetime.now(UTC) - timedelta(days=1)).date().isoformat()
    reported = context.instance.get_materialized_partitions(dg.AssetKey("eval_report"))
    return dg.AssetCheckResult(
        passed=yesterday in reported,
        metadata={"expected_partition": yesterday, "newest_reported": max(reported, default="none")},
    )


report_freshness = dg.define_asset_job("report_freshness", selection=dg.AssetSelection.checks(last_night_reported))


@dg.schedule(
    job=report_freshness,
    cron_schedule="0 6 * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every morning: did last night's sweep produce its report?",
)
def morning_report_check() -> dg.RunRequest:
    return dg.RunRequest()
