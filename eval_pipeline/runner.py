"""Materialize the graph for a day or a range of days in this process, recorded in the instance.

This is how cron and CI run the pipeline without a daemon: one run of the `evaluate_partition`
job over the whole range, visible in the UI like any run launched from there.
"""

from __future__ import annotations

import threading
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
from dagster import DagsterEventType
from filelock import FileLock

from eval_pipeline.alerts.delivery import alerts_directory
from eval_pipeline.alerts.messages import run_failure_alert
from eval_pipeline.alerts.outbox import AlertOutbox
from eval_pipeline.config import load_config
from eval_pipeline.defs.pipeline.jobs import EVALUATE_JOB
from eval_pipeline.errors import InfrastructureError
from eval_pipeline.settings import Settings, ensure_dagster_home

SCOPED_STEPS = (
    "capture",
    "episodes",
    "baselines",
    "replays",
    "judgements",
    "assertions",
    "scores",
    "regression_findings",
    "pass_at_k",
    "eval_report",
)  # the steps `--agent` narrows (rewards are always recomputed for the whole day)


class RunFailed(InfrastructureError):
    """A run failed; the message is the root cause, in one line."""

    def __init__(self, first: date, last: date, run_id: str, cause: str):
        span = first.isoformat() if first == last else f"{first}..{last}"
        super().__init__(f"run for {span} failed: {cause}")
        self.run_id = run_id


def days_between(start: date, end: date) -> list[date]:
    return [start + timedelta(days=offset) for offset in range((end - start).days + 1)]


@dataclass(frozen=True)
class RunRequest:
    """What to materialize: which days (a contiguous range, oldest first), for whom, and which assets."""

    days: list[date]
    agent_id: str | None = None
    undated_day: date | None = None  # where records without a timestamp go (`run --date`)
    recapture: bool = False
    trials: int | None = None
    assets: tuple[str, ...] | None = None  # None: the whole graph
    rewards: tuple[str, ...] | None = None  # the rewards step recomputes only these (`reward --name`)
    label: str | None = None  # the label of the runs the capture step adds (`run --label`)
    model: str | None = None  # read only this model's episodes (`run --model`)
    limit: int | None = None  # read at most this many episodes a day (`run --limit`)
    checks: tuple[str, ...] | None = None  # the assertions step runs only these checks (`run --checks`)

    def run_config(self) -> dict:
        """The ops' `RunScope`s: only what differs from a whole-graph, all-agent run."""
        scope: dict[str, object] = {"agent_id": self.agent_id} if self.agent_id else {}
        ops: dict[str, dict[str, dict[str, object]]] = {name: {"config": dict(scope)} for name in SCOPED_STEPS} if scope else {}
        narrowed = {"undated_day": self.undated_day.isoformat() if self.undated_day else None, "model": self.model,
                    "limit": self.limit}  # fmt: skip
        if any(value is not None for value in narrowed.values()):
            episodes = ops.setdefault("episodes", {"config": dict(scope)})["config"]
            episodes.update({key: value for key, value in narrowed.items() if value is not None})
        if self.recapture or self.trials or self.label:
            capture = ops.setdefault("capture", {"config": dict(scope)})["config"]
            chosen = {"recapture": self.recapture, "trials": self.trials, "label": self.label}
            capture.update({key: value for key, value in chosen.items() if value})
        if self.rewards:
            ops["rewards"] = {"config": {"rewards": list(self.rewards)}}
        if self.checks is not None:
            ops.setdefault("assertions", {"config": dict(scope)})["config"]["checks"] = list(self.checks)
        if self.assets is not None:
            ops = {name: op for name, op in ops.items() if name in self.assets}
        return {"ops": ops, "loggers": {"console": {"config": {"log_level": "CRITICAL"}}}}


def _root_cause(result: dg.ExecuteInProcessResult) -> str:
    for event in result.all_events:
        if event.is_step_failure and event.step_failure_data and event.step_failure_data.error:
            error = event.step_failure_data.error
            while error.cause is not None and (error.cls_name or "").startswith("Dagster"):
                error = error.cause  # unwrap Dagster's step wrapper down to our own exception
            message = error.message.strip().splitlines()[0] if error.message.strip() else ""
            prefix, _, rest = message.partition(": ")
            return rest if prefix.endswith(error.cls_name or "\0") and rest else message or error.cls_name or "unknown error"
    return "the run failed without a step error (see the run in the UI)"


def open_instance(settings: Settings) -> dg.DagsterInstance:
    """The instance under DAGSTER_HOME; the first process to open a new one creates its storage alone.

    Two runs started together on a fresh DAGSTER_HOME would otherwise both create the same tables.
    """
    ensure_dagster_home(settings.dagster_home)
    with FileLock(str(settings.dagster_home / ".instance-init.lock"), timeout=300):
        return dg.DagsterInstance.from_config(str(settings.dagster_home))


Progress = Callable[[int, int, str], None]  # (steps finished, steps in all, the step that finished)


class _StepWatcher(threading.Thread):
    """Reports each finished step of a run as it lands in the instance's event log.

    Reads through its own instance handle: the run's own stays with the thread executing it."""

    def __init__(self, home: Path, run_id: str, total: int, progress: Progress):
        super().__init__(daemon=True)
        self.home, self.run_id, self.total, self.progress = home, run_id, total, progress
        self.stop = threading.Event()

    def run(self) -> None:
        seen: set[str] = set()
        kinds = {DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE}
        with dg.DagsterInstance.from_config(str(self.home)) as instance:
            while True:
                finished = self.stop.is_set()  # read before the last look, so no step is missed
                for record in instance.get_records_for_run(self.run_id, of_type=kinds).records:
                    step = record.event_log_entry.step_key or "?"
                    if step not in seen:
                        seen.add(step)
                        self.progress(len(seen), self.total, step)
                if finished:
                    return
                self.stop.wait(0.5)


def _definitions_for(settings: Settings) -> dg.Definitions:
    """The project's graph, bound to this command's settings (`--store-url`) rather than the process environment's."""
    from eval_pipeline.definitions import defs
    from eval_pipeline.defs.resources import resources_for

    loaded = defs()
    return dg.Definitions(
        assets=loaded.assets,
        asset_checks=loaded.asset_checks,
        jobs=loaded.jobs,
        resources=resources_for(settings),
        executor=dg.in_process_executor,
    )


def run_days(settings: Settings, request: RunRequest, progress: Progress | None = None) -> str:
    """Materialize the request's assets for its days as one run; return its id.

    `progress` hears of each step as it finishes.

    One run pays Dagster's per-run overhead once, and each asset walks the days oldest first,
    so baselines flow forward as they would night after night.
    """

    first, last = min(request.days), max(request.days)
    agent_id = request.agent_id
    tags = {"eval_pipeline/launched_by": "cli", **({"eval_pipeline/agent": agent_id} if agent_id else {})}
    partition_key = first.isoformat() if first == last else None  # a range is named by its tags
    if partition_key is None:
        tags |= {"dagster/asset_partition_range_start": first.isoformat(), "dagster/asset_partition_range_end": last.isoformat()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        job = _definitions_for(settings).resolve_job_def(EVALUATE_JOB)
        selection = [dg.AssetKey(name) for name in request.assets] if request.assets is not None else None
        steps = len(request.assets) if request.assets is not None else len(job.graph.node_dict)
        run_id = str(uuid.uuid4())
        watcher = _StepWatcher(settings.dagster_home, run_id, steps, progress) if progress else None
        with open_instance(settings) as instance:
            if watcher:
                watcher.start()
            try:
                result = job.execute_in_process(
                    instance=instance,
                    run_config=request.run_config(),
                    asset_selection=selection,
                    tags=tags,
                    raise_on_error=False,
                    run_id=run_id,
                    partition_key=partition_key,
                )
            finally:
                if watcher:
                    watcher.stop.set()
                    watcher.join(5)
    if not result.success:
        failure = RunFailed(first, last, result.run_id, _root_cause(result))
        span = first.isoformat() if first == last else f"{first}..{last}"
        alert = run_failure_alert(result.run_id, EVALUATE_JOB, span, str(failure))
        secret_patterns = load_config(settings.config_path).policies.secret_patterns
        AlertOutbox(alerts_directory(settings.duckdb_path)).enqueue([alert], f"run-failed-{result.run_id}", secret_patterns)
        raise failure
    return result.run_id
