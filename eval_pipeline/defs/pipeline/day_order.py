"""Runs of different days at once, each day still built on finished earlier days.

Three steps read what earlier days wrote: a day's baselines follow the baselines before it, its
findings compare it with the trailing days' scores and yesterday's findings, its report shows
the trend. Everything else reads its own day only. So runs of different days may execute
together (on a lake), and only these steps wait: a run's step waits while a run ordered before it
(by first day, then by when it was created) has not finished the same step. The order is total,
so no two runs wait on each other. The instance is the coordinator: it knows every run, its days
and its finished steps, on every host that shares its storage.

A wait is a Dagster retry of the step (`RetryRequested`), so a waiting step holds no pool slot:
the run it waits on can always get one. When the run waited on fails before the step (or its
process is gone), this run fails too, naming it: its days would otherwise read a half-built day.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime

import dagster as dg
from dagster import DagsterEventType, DagsterRunStatus
from dagster._core.launcher import WorkerStatus

from eval_pipeline.run_health import worker_status

_UNFINISHED = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
               DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]  # fmt: skip
_ENDED_BADLY = [DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED]
_LONGEST_WAIT_SECONDS = 4.0  # how late a waiting step may notice the run it waits on is done
EARLIER_DAYS_DONE = "reads earlier days: no run ordered before this one has this step still to do"
_MAX_WAITS = 20_000  # a day at the longest wait: a run waited on for longer is stuck, and this one fails with it


@dataclass(frozen=True)
class RunSpan:
    """The days a run covers, and where it stands in the order runs wait in."""

    run_id: str
    first: date
    last: date
    created: float

    @property
    def order(self) -> tuple[date, float, str]:
        return (self.first, self.created, self.run_id)

    @property
    def days(self) -> str:
        return self.first.isoformat() if self.first == self.last else f"{self.first}..{self.last}"


def run_span(record: dg.RunRecord) -> RunSpan | None:
    """The run's days, from the partition tags Dagster and `eval-pipeline run` give it; None for an unpartitioned run."""
    tags = record.dagster_run.tags
    first = tags.get("dagster/partition") or tags.get("dagster/asset_partition_range_start")
    last = tags.get("dagster/partition") or tags.get("dagster/asset_partition_range_end")
    if not first or not last:
        return None
    created = record.create_timestamp.timestamp()
    return RunSpan(record.dagster_run.run_id, date.fromisoformat(first), date.fromisoformat(last), created)


def _runs_step(run: dg.DagsterRun, step: str) -> bool:
    if run.asset_selection:  # empty for a run of the whole job
        return dg.AssetKey(step) in run.asset_selection
    return run.step_keys_to_execute is None or step in run.step_keys_to_execute


def _finished_step(instance: dg.DagsterInstance, run_id: str, step: str) -> bool:
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.STEP_SUCCESS).records
    return any(record.event_log_entry.step_key == step for record in records)


def earlier_runs_of_step(instance: dg.DagsterInstance, mine: RunSpan, step: str) -> tuple[list[RunSpan], list[str]]:
    """The runs ordered before `mine` that have `step` still to finish, and why this run cannot wait for some of
    them (they ended, or their process did, without finishing it)."""
    unfinished = instance.get_run_records(dg.RunsFilter(statuses=_UNFINISHED))
    ended = instance.get_run_records(
        dg.RunsFilter(statuses=_ENDED_BADLY, updated_after=datetime.fromtimestamp(mine.created, UTC))
    )
    pending, broken = [], []
    for record in [*unfinished, *ended]:
        span = run_span(record)
        run = record.dagster_run
        if span is None or span.order >= mine.order or not _runs_step(run, step) or _finished_step(instance, run.run_id, step):
            continue
        if run.status in _ENDED_BADLY:
            broken.append(f"run {run.run_id} of {span.days} ended {run.status.value} before its {step}")
        elif run.status == DagsterRunStatus.STARTED and worker_status(instance, run).status == WorkerStatus.FAILED:
            broken.append(f"run {run.run_id} of {span.days} lost its process before its {step}")
        else:
            pending.append(span)
    return pending, broken


def wait_for_earlier_days(context: dg.AssetExecutionContext) -> None:
    """Return once no run ordered before this one has this step still to do; until then, retry the step later.

    Called first by each step that reads earlier days."""
    step = context.op_def.name
    record = context.instance.get_run_record_by_id(context.run.run_id)
    mine = run_span(record) if record else None
    if mine is None:
        return
    pending, broken = earlier_runs_of_step(context.instance, mine, step)
    if broken:
        raise dg.Failure(f"{'; '.join(broken)}: this run's days read that step's earlier days; run those days again first")
    if pending:
        names = ", ".join(f"{span.run_id} ({span.days})" for span in pending)
        context.log.info(f"{step} of {mine.days} waits for the same step of earlier days in run {names}")
        wait = min(2.0**context.retry_number, _LONGEST_WAIT_SECONDS)
        raise dg.RetryRequested(max_retries=_MAX_WAITS, seconds_to_wait=wait)
    context.log.info(f"{step} of {mine.days} {EARLIER_DAYS_DONE}")  # from here on it reads them
