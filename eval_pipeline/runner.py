"""Materialize the graph for a list of days in this process, recorded in the Dagster instance.

This is how cron and CI run the pipeline without a daemon: each day is one run of the
`evaluate_partition` job, visible in the UI like any launched from there.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from datetime import date, timedelta

import dagster as dg

from eval_pipeline.defs.pipeline.jobs import EVALUATE_JOB
from eval_pipeline.settings import Settings, ensure_dagster_home

ASSET_NAMES = ("episodes", "baselines", "replays", "scores", "regression_findings")


class RunFailed(Exception):
    """A partition's run failed; the message is the root cause, in one line."""

    def __init__(self, day: date, run_id: str, cause: str):
        super().__init__(f"run for {day} failed: {cause}")
        self.day, self.run_id = day, run_id


@dataclass(frozen=True)
class PartitionRun:
    day: date
    run_id: str


def days_between(start: date, end: date) -> list[date]:
    return [start + timedelta(days=offset) for offset in range((end - start).days + 1)]


def _run_config(agent_id: str | None) -> dict:
    ops = {name: {"config": {"agent_id": agent_id}} for name in ASSET_NAMES} if agent_id else {}
    return {"ops": ops, "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _root_cause(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
                error = error.cause  # unwrap Dagster's step wrapper down to our own exception
            message = error.message.strip().splitlines()[0] if error.message.strip() else ""
            prefix, _, rest = message.partition(": ")
            return rest if prefix.endswith(error.cls_name or "\0") and rest else message or error.cls_name
    return "the run failed without a step error (see the run in the UI)"


def run_days(settings: Settings, days: list[date], agent_id: str | None = None) -> list[PartitionRun]:
    """Run each day in order (baselines flow forward); stop at the first failure."""
    from eval_pipeline.definitions import defs

    ensure_dagster_home(settings.dagster_home)
    runs = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        job = defs().resolve_job_def(EVALUATE_JOB)
        with dg.DagsterInstance.get() as instance:
            for day in days:
                result = job.execute_in_process(
                    partition_key=day.isoformat(),
                    instance=instance,
                    run_config=_run_config(agent_id),
                    tags={"eval_pipeline/launched_by": "cli", **({"eval_pipeline/agent": agent_id} if agent_id else {})},
                    raise_on_error=False,
                )
                if not result.success:
                    raise RunFailed(day, result.run_id, _root_cause(result))
                runs.append(PartitionRun(day, result.run_id))
    return runs
