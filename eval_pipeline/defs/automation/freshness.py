"""A missed night shows in the UI: yesterday's report must exist by morning.

Judged on the newest partition itself; a per-asset freshness policy would be fooled by a
backfill of an old day.
"""

from datetime import UTC, date, datetime, timedelta

import dagster as dg

REPORT_DUE_HOUR = 6  # UTC: the morning check's hour, by which last night's report is due


def due_day(now: datetime) -> date:
    """The newest day whose report is due at `now`: yesterday from 06:00 UTC on, the day before until then. Every run
    of the evaluation job checks too (a backfill at 01:00, the new-episodes sensor's runs), and before the nightly
    sweep has run, yesterday's missing report is no missed night."""
    return (now.astimezone(UTC) - timedelta(hours=REPORT_DUE_HOUR)).date() - timedelta(days=1)


@dg.asset_check(asset="eval_report", description="Last night's partition of eval_report has been materialized (by 06:00 UTC).")
def last_night_reported(context: dg.AssetCheckExecutionContext) -> dg.AssetCheckResult:
    due = due_day(datetime.now(UTC)).isoformat()
    reported = context.instance.get_materialized_partitions(dg.AssetKey("eval_report"))
    return dg.AssetCheckResult(
        passed=due in reported,
        metadata={"expected_partition": due, "newest_reported": max(reported, default="none")},
    )


report_freshness = dg.define_asset_job("report_freshness", selection=dg.AssetSelection.checks(last_night_reported))


@dg.schedule(
    job=report_freshness,
    cron_schedule=f"0 {REPORT_DUE_HOUR} * * *",
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Every morning: did last night's sweep produce its report?",
)
def morning_report_check() -> dg.RunRequest:
    return dg.RunRequest()
