"""The nightly sweep: yesterday's partition, every night, without a click."""

from datetime import UTC, timedelta

import dagster as dg

from eval_pipeline.defs.loaded import CONFIG
from eval_pipeline.defs.pipeline.jobs import evaluate_partition


@dg.schedule(
    job=evaluate_partition,
    cron_schedule=CONFIG.automation.nightly_cron,
    execution_timezone="UTC",
    default_status=dg.DefaultScheduleStatus.RUNNING,
    description="Evaluates the day before, every night (automation.nightly_cron in eval.toml).",
)
def nightly_sweep(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:
    day = (context.scheduled_execution_time.astimezone(UTC) - timedelta(days=1)).date()
    return dg.RunRequest(
        run_key=f"nightly-{day}-{CONFIG.version}",  # a config change makes a new key, so its re-run is never dropped
        partition_key=day.isoformat(),
        tags={"eval_pipeline/launched_by": "schedule"},
    )
