"""Runs whose process is gone: found by the pid Dagster recorded, marked failed so the queue moves.

Dagster records the pid of every run's process in the event log (an engine event with a `pid`
entry: the run worker a launcher started, or the process that executed `eval-pipeline run`), but
its `DefaultRunLauncher` cannot tell run monitoring whether that process still lives. A run killed
with `kill -9` would then stay STARTED for ever and, with one run at a time, hold every queued run.
`LocalProcessRunLauncher` answers run monitoring (dagster.yaml `run_monitoring`) from that pid, and
`fail_dead_runs` applies the same rule where no daemon runs: before `eval-pipeline run` starts one.

A pid means something only on its own machine, so every run is tagged with the host its process runs
on (`HOST_TAG`: `eval-pipeline run` tags its runs, the launcher the runs it starts), and a run of
another host is never judged here: that host's next run, or its daemon, judges it. Nor is a run
without the tag (another launcher's, such as Kubernetes', whose own monitoring judges it).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Self

import dagster as dg
from dagster import DagsterEventType, DagsterInstance, DagsterRun, DagsterRunStatus
from dagster._core.launcher import CheckRunHealthResult, LaunchRunContext, WorkerStatus
from dagster._serdes import ConfigurableClassData

from eval_pipeline.defs.pools import create_pools

HOST_TAG = "eval_pipeline/host"  # the machine a run's process runs on
THIS_HOST = socket.gethostname()
_START_SLACK_SECONDS = 2.0  # /proc's boot time is whole seconds: a process this much younger than its record is another


def run_process(instance: DagsterInstance, run_id: str) -> tuple[int, float] | None:
    """The pid of the run's process and when it was recorded (epoch seconds); None before it is recorded."""
    records = instance.get_records_for_run(run_id, of_type=DagsterEventType.ENGINE_EVENT).records
    for record in records:
        event = record.event_log_entry.dagster_event
        metadata = getattr(event.event_specific_data, "metadata", None) if event else None
        if metadata and "pid" in metadata:
            return int(str(metadata["pid"].value)), record.event_log_entry.timestamp
    return None


def process_alive(pid: int, since: float) -> bool:
    """Whether `pid` is a live process that already ran at `since` (not a zombie, not a later one given the same pid)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # another user's process: it exists
    stat = Path(f"/proc/{pid}/stat")
    try:
        fields = stat.read_text().rpartition(")")[2].split()
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines() if line.startswith("btime"))
    except (OSError, StopIteration):
        return True  # no /proc (not Linux): the pid exists, which is all we can tell
    state, start_ticks = fields[0], int(fields[19])
    started = boot + start_ticks / os.sysconf("SC_CLK_TCK")
    return state not in ("Z", "X") and started <= since + _START_SLACK_SECONDS


def worker_status(instance: DagsterInstance, run: DagsterRun) -> CheckRunHealthResult:
    host = run.tags.get(HOST_TAG)
    if host != THIS_HOST:  # another host's, or launched where no pid is ours to judge (a Kubernetes pod)
        return CheckRunHealthResult(WorkerStatus.UNKNOWN, f"its process runs on {host or 'a host it did not record'}")
    recorded = run_process(instance, run.run_id)
    if recorded is None:
        return CheckRunHealthResult(WorkerStatus.RUNNING, "no process recorded yet")
    pid, since = recorded
    if process_alive(pid, since):
        return CheckRunHealthResult(WorkerStatus.RUNNING, f"process {pid} is running")
    return CheckRunHealthResult(WorkerStatus.FAILED, f"the run's process (pid {pid}) ended without finishing the run")


class LocalProcessRunLauncher(dg.DefaultRunLauncher):
    """Dagster's default launcher, plus the worker health check run monitoring asks for."""

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> Self:
        return cls(inst_data=inst_data)

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def launch_run(self, context: LaunchRunContext) -> None:
        create_pools(self._instance)  # before the run worker's first claim, which could race another run's
        self._instance.add_run_tags(context.dagster_run.run_id, {HOST_TAG: THIS_HOST})
        super().launch_run(context)

    def check_run_worker_health(self, run: DagsterRun) -> CheckRunHealthResult:
        return worker_status(instance=self._instance, run=run)


def fail_dead_runs(instance: DagsterInstance) -> list[DagsterRun]:
    """Mark failed every STARTED run of this host whose process has ended; return them (their failure alerts are the
    caller's)."""
    failed = []
    for run in instance.get_runs(dg.RunsFilter(statuses=[DagsterRunStatus.STARTED], tags={HOST_TAG: THIS_HOST})):
        health = worker_status(instance, run)
        if health.status == WorkerStatus.FAILED:
            instance.report_run_failed(run, f"{health.msg}; marked failed before the next run started")
            instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)  # else its pool slot stays taken
            failed.append(run)
    return failed


def run_partitions(run: DagsterRun) -> str:
    """The day or range of days a run covers, as its tags name them ("-" for none)."""
    tags = run.tags
    span = tags.get("dagster/partition") or "..".join(
        filter(None, [tags.get("dagster/asset_partition_range_start"), tags.get("dagster/asset_partition_range_end")])
    )
    return span or "-"
