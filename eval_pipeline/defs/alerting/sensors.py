"""Alerts that deliver themselves under the daemon: regressions from the outbox, and failed runs."""

import dagster as dg

from eval_pipeline.alerts.delivery import destination
from eval_pipeline.alerts.messages import run_failure_alert
from eval_pipeline.defs.resources import AlertsResource, EvalConfigResource, WarehouseResource
from eval_pipeline.run_health import run_partitions


@dg.sensor(
    minimum_interval_seconds=30,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Posts each new WARNING and CRITICAL finding once (outbox + delivered ledger: files beside the "
    "single-file warehouse, or a lake's tables).",
)
def regression_alerts(alerts: AlertsResource, warehouse: WarehouseResource, eval_config: EvalConfigResource) -> dg.SkipReason:
    report = alerts.deliver(warehouse, eval_config.load().policies.secret_patterns)
    where = destination(alerts.outbox(warehouse), alerts.webhook_url)
    problems = f"; webhook failed, retried next tick: {report.errors[0]}" if report.errors else ""
    return dg.SkipReason(f"delivered {report.delivered} alert(s) to {where}, {report.pending} pending{problems}")


@dg.run_failure_sensor(
    monitor_all_code_locations=True,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="One alert per failed run, launched from anywhere (UI, schedule, CLI).",
)
def run_failure_alerts(
    context: dg.RunFailureSensorContext, alerts: AlertsResource, warehouse: WarehouseResource, eval_config: EvalConfigResource
) -> None:
    run = context.dagster_run
    error = context.failure_event.message or "failed"
    secret_patterns = eval_config.load().policies.secret_patterns
    alert = run_failure_alert(run.run_id, run.job_name, run_partitions(run), error)
    alerts.outbox(warehouse).enqueue([alert], name=f"run-failed-{run.run_id}", secret_patterns=secret_patterns)
    report = alerts.deliver(warehouse, secret_patterns)
    if report.errors:
        context.log.warning(f"alert webhook failed, the regression_alerts sensor retries: {report.errors[0]}")
