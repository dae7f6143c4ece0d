"""Materialize the graph for a day or a range of days in this process, recorded in the instance.

This is how cron and CI run the pipeline without a daemon: one run of the `evaluate_partition`
job over the whole range, visible in the UI like any run launched from there.
"""

from __future__ import annotations

import ctypes
import os
import sys
import threading
import time
import uuid
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TypeVar

import dagster as dg
from dagster import DagsterEventType
from dagster._core.errors import DagsterExecutionInterruptedError
from filelock import FileLock, Timeout

from eval_pipeline.alerts.delivery import alerts_directory
from eval_pipeline.alerts.messages import run_failure_alert
from eval_pipeline.config import load_config
from eval_pipeline.defs.pipeline.jobs import AGENTS_READ, EVALUATE_JOB
from eval_pipeline.defs.pools import create_pools, release_slots_of_ended_runs
from eval_pipeline.errors import InfrastructureError
from eval_pipeline.run_health import HOST_TAG, THIS_HOST, fail_dead_runs, process_alive, run_partitions
from eval_pipeline.settings import Settings, ensure_dagster_home
from eval_pipeline.warehouse.alerts import open_outbox

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
    no_cache: bool = False  # live replays call the candidate afresh (`run --no-cache`)

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
        if self.no_cache:
            ops.setdefault("replays", {"config": dict(scope)})["config"]["no_cache"] = True
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


@dataclass(frozen=True)
class RunDone:
    """A finished run: its id, its gateway calls answered only after retries (`llm_calls_retried` in its steps'
    metadata: no table has a column for them), and, narrowed to an agent, every agent its days' records held
    (`AGENTS_READ`: only the agent's were written)."""

    run_id: str
    retried_calls: int
    agents_read: frozenset[str] = frozenset()


def _retried_calls(result: dg.ExecuteInProcessResult) -> int:
    counts = [event.materialization.metadata.get("llm_calls_retried") for event in result.get_asset_materialization_events()]
    return sum(count.value or 0 for count in counts if isinstance(count, dg.IntMetadataValue))


def _agents_read(result: dg.ExecuteInProcessResult) -> frozenset[str]:
    read = [event.materialization.metadata.get(AGENTS_READ) for event in result.get_asset_materialization_events()]
    return frozenset(agent for value in read if isinstance(value, dg.JsonMetadataValue) for agent in value.data or ())


_T = TypeVar("_T")
Progress = Callable[[int, int, str], None]  # (steps finished, steps in all, what the run does now: "scores done")


class _StepWatcher(threading.Thread):
    """Reports each finished step of a run as it lands in the instance's event log, and each step that waits for
    earlier days (the only retries our steps request, `day_order`), which can last as long as another day's run.

    Reads through its own instance handle: the run's own stays with the thread executing it."""

    def __init__(self, home: Path, run_id: str, total: int, progress: Progress):
        super().__init__(daemon=True)
        self.home, self.run_id, self.total, self.progress = home, run_id, total, progress
        self.stop = threading.Event()

    def run(self) -> None:
        finished: set[str] = set()
        waiting: set[str] = set()
        kinds = {DagsterEventType.STEP_SUCCESS, DagsterEventType.STEP_FAILURE, DagsterEventType.STEP_UP_FOR_RETRY}
        with dg.DagsterInstance.from_config(str(self.home)) as instance:
            while True:
                last_look = self.stop.is_set()  # read before the last look, so no step is missed
                for record in instance.get_records_for_run(self.run_id, of_type=kinds).records:
                    step = record.event_log_entry.step_key or "?"
                    event = record.event_log_entry.dagster_event
                    if step in finished:
                        continue
                    if event and event.event_type == DagsterEventType.STEP_UP_FOR_RETRY:
                        if step not in waiting:
                            waiting.add(step)
                            self.progress(len(finished), self.total, f"{step} waits for earlier days")
                    else:
                        finished.add(step)
                        self.progress(len(finished), self.total, f"{step} done")
                if last_look:
                    return
                self.stop.wait(0.5)


def _definitions_for(settings: Settings) -> dg.Definitions:
    """The project's graph, bound to this command's settings (`--store-url`) rather than the process environment's.

    Its assets and checks are read from the modules under `defs/`, as the code location's `load_from_defs_folder`
    finds them, without what that adds for Dagster's component tooling (a scan of the installed packages' entry
    points and a JSON schema of each component type: 0.15-0.3 s of every run's start, for nothing a run executes)."""
    import eval_pipeline.defs
    from eval_pipeline.defs.pipeline.jobs import evaluate_partition
    from eval_pipeline.defs.resources import resources_for

    return dg.Definitions(
        assets=dg.load_assets_from_package_module(eval_pipeline.defs),
        asset_checks=dg.load_asset_checks_from_package_module(eval_pipeline.defs),
        jobs=[evaluate_partition],
        resources=resources_for(settings),
        executor=dg.in_process_executor,
    )


def run_days(settings: Settings, request: RunRequest, progress: Progress | None = None) -> RunDone:
    """Materialize the request's assets for its days as one run.

    `progress` hears of each step as it finishes.

    One run pays Dagster's per-run overhead once, and each asset walks the days oldest first,
    so baselines flow forward as they would night after night. Runs of one warehouse file take turns
    (`_turn`); runs of a lake execute together, and only the steps that read earlier days wait for the
    runs of earlier days (`day_order`). Ctrl-C cancels the run (`RunInterrupted`) instead of failing it.
    """

    first, last = min(request.days), max(request.days)
    agent_id = request.agent_id
    tags = {"eval_pipeline/launched_by": "cli", HOST_TAG: THIS_HOST, **({"eval_pipeline/agent": agent_id} if agent_id else {})}
    partition_key = first.isoformat() if first == last else None  # a range is named by its tags
    if partition_key is None:
        tags |= {"dagster/asset_partition_range_start": first.isoformat(), "dagster/asset_partition_range_end": last.isoformat()}
    patterns = load_config(settings.config_path).policies.secret_patterns
    turn = nullcontext(lambda: None) if settings.lake() else _turn(settings.duckdb_path, first)
    with turn as take_turn, warnings.catch_warnings():
        warnings.simplefilter("ignore", category=dg.BetaWarning)
        warnings.simplefilter("ignore", category=dg.PreviewWarning)
        job = _definitions_for(settings).resolve_job_def(EVALUATE_JOB)
        selection = [dg.AssetKey(name) for name in request.assets] if request.assets is not None else None
        steps = len(request.assets) if request.assets is not None else len(job.graph.node_dict)
        run_id = str(uuid.uuid4())
        watcher = _StepWatcher(settings.dagster_home, run_id, steps, progress) if progress else None
        take_turn()
        with open_instance(settings) as instance:
            create_pools(instance)
            release_slots_of_ended_runs(instance)
            for dead in fail_dead_runs(instance):  # nothing else frees the queue from them without a daemon
                _announce_failure(settings, dead.run_id, dead.job_name, run_partitions(dead), "its process ended", patterns)
            if watcher:
                watcher.start()
            try:
                result = _execute_cancelably(
                    instance,
                    run_id,
                    lambda: job.execute_in_process(
                        instance=instance,
                        run_config=request.run_config(),
                        asset_selection=selection,
                        tags=tags,
                        raise_on_error=False,
                        run_id=run_id,
                        partition_key=partition_key,
                    ),
                )
            except KeyboardInterrupt:
                raise RunInterrupted(first, last, _canceled(instance, run_id)) from None
            finally:
                # a step stopped by Ctrl-C keeps its pool slot, and no later step of that pool, in any run, could start
                instance.event_log_storage.free_concurrency_slots_for_run(run_id)
                if watcher:
                    watcher.stop.set()
                    watcher.join(5)
    span = first.isoformat() if first == last else f"{first}..{last}"
    if not result.success:
        cause = _root_cause(result)
        failure = RunFailed(first, last, result.run_id, cause)
        try:
            _announce_failure(settings, result.run_id, EVALUATE_JOB, span, str(failure), patterns)
        except OSError as exc:  # a full disk fails both: the run's own cause is said first
            raise RunFailed(first, last, result.run_id, f"{cause}; its failure alert not kept: {exc}") from None
        raise failure
    return RunDone(result.run_id, _retried_calls(result), _agents_read(result))


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run: the run is canceled, each day's rows are those of its last finished step."""

    def __init__(self, first: date, last: date, run_id: str | None):
        span = first.isoformat() if first == last else f"{first}..{last}"
        where = f"run {run_id} canceled" if run_id else "no run started"
        super().__init__(f"interrupted: {where}; run {span} again to evaluate it")


def _announce_failure(settings: Settings, run_id: str, job_name: str, span: str, message: str, patterns: list[str]) -> None:
    """The run-failure alert, put in the outbox (the daemon's sensor puts the same id there: it goes out once)."""
    alert = run_failure_alert(run_id, job_name, span, message)
    open_outbox(settings.warehouse(), alerts_directory(settings.duckdb_path)).enqueue([alert], f"run-failed-{run_id}", patterns)


def _canceled(instance: dg.DagsterInstance, run_id: str) -> str | None:
    """Make sure the interrupted run ends CANCELED whatever point Ctrl-C reached; its id, None if it never started."""
    run = instance.get_run_by_id(run_id)
    if run is None:
        return None
    if not run.is_finished:
        instance.report_run_canceled(run, "Canceled by Ctrl-C")
    return run_id


def _execute_cancelably(instance: dg.DagsterInstance, run_id: str, execute: Callable[[], _T]) -> _T:
    """Run `execute` (the run) so that Ctrl-C cancels it: marked CANCELING before the interrupt reaches the run.

    Dagster takes an interrupt of a run nobody asked to cancel for a failure (and the failure sensor alerts),
    and on the main thread it handles SIGINT itself. So the run executes on a thread of its own, and Ctrl-C
    stays here: it records the cancellation, then raises Dagster's interrupt in the run's thread, which stops
    the step (its open transaction rolls back) and ends the run CANCELED. Raises `KeyboardInterrupt` after.
    """
    outcome: list[_T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(execute())
        except BaseException as exc:  # handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=target, name=f"run-{run_id}")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)  # short waits: the main thread runs the SIGINT handler between them
    except KeyboardInterrupt:
        run = instance.get_run_by_id(run_id)
        if run is not None and not run.is_finished:
            instance.report_run_canceling(run, "Ctrl-C: canceling the run")
        while worker.is_alive():
            interrupt = ctypes.py_object(DagsterExecutionInterruptedError)
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(worker.ident or 0), interrupt)
            worker.join(0.5)  # again if the first landed where Dagster caught it
        raise
    if failure:
        raise failure[0]
    return outcome[0]


@contextmanager
def _turn(warehouse_path: Path, first: date) -> Iterator[Callable[[], None]]:
    """One run of a warehouse at a time, and among runs waiting, the one starting on the earliest day first.

    A day's baselines (and its findings' history) come from the days before it: scored while an earlier day
    is being written, it would see that day half done. A run leaves its ticket (`<first day>.<pid>`) on entry
    and waits for its turn when it calls what this yields, as late as it can, so that runs started together
    have all left theirs; the lock holder gives way to a live run waiting with an earlier day. A killed run's
    lock is released by the system and its ticket ignored. The turn ends on exit.
    """
    directory = Path(f"{warehouse_path}.runs")
    directory.mkdir(parents=True, exist_ok=True)
    ticket = directory / f"{first.isoformat()}.{os.getpid()}"
    ticket.touch()
    lock = FileLock(str(directory / "lock"))

    def take() -> None:
        told = False
        while True:
            later_only = all(other > _ticket_day(ticket) for other in _other_runs_days(directory, ticket))
            try:
                lock.acquire(timeout=_GLANCE_SECONDS if later_only else 0)
            except Timeout:
                told = told or _say_waiting()
                lock.acquire()
            if not _earlier_runs(directory, ticket):
                return
            lock.release()
            told = told or _say_waiting()
            while _earlier_runs(directory, ticket):
                time.sleep(0.2)

    try:
        yield take
    finally:
        if lock.is_locked:
            lock.release()
        ticket.unlink(missing_ok=True)


_GLANCE_SECONDS = 2.0
"""How long a run waits for the lock before saying it waits, when every other run starts on a later day: such a run
holds the lock only while it finds this run's ticket, then gives way, and waiting out that look is no wait worth
announcing. A run of an earlier day or the same one holds it for its whole run: meeting that is said at once."""


def _other_runs_days(directory: Path, mine: Path) -> list[str]:
    """The first days (ISO) of the other live runs of the warehouse, from their tickets."""
    days = []
    for ticket in directory.iterdir():
        pid = ticket.name.partition(".")[2]
        if ticket.name != mine.name and pid.isdigit():
            try:
                since = ticket.stat().st_mtime
            except FileNotFoundError:
                continue
            if process_alive(int(pid), since):
                days.append(_ticket_day(ticket))
    return days


def _earlier_runs(directory: Path, mine: Path) -> bool:
    """Whether a live run starts on an earlier day than `mine`'s."""
    return any(other < _ticket_day(mine) for other in _other_runs_days(directory, mine))


def _ticket_day(ticket: Path) -> str:
    """The first day (ISO) of the run that left `ticket` (`<first day>.<pid>`)."""
    return ticket.name.partition(".")[0]


def _say_waiting() -> bool:
    print("eval-pipeline: waiting for another run of this warehouse to finish", file=sys.stderr)
    return True
