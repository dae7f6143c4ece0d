"""Faults that must not wedge a run, met as the red team met them: real `eval-pipeline run` processes on the
sample days, killed with SIGKILL or interrupted with SIGINT, or started together, in a tmp DAGSTER_HOME."""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster import DagsterEventType, DagsterRunStatus
from dagster._daemon.monitoring.run_monitoring import monitor_started_run

from eval_pipeline.cli import main
from eval_pipeline.defs.alerting.sensors import run_failure_alerts
from eval_pipeline.defs.pools import LLM_POOL, POOLS, WAREHOUSE_POOL, create_pools
from eval_pipeline.defs.resources import resources_for
from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline.run_health import LocalProcessRunLauncher, run_process
from eval_pipeline.runner import open_instance
from eval_pipeline.settings import Settings
from eval_pipeline_tests.snapshots import Row, warehouse_rows

pytestmark = pytest.mark.slow

DAY, NEXT_DAY = SAMPLE_DAYS[0].isoformat(), SAMPLE_DAYS[1].isoformat()


def start_run(env_root: Path, day: str) -> subprocess.Popen:
    """`eval-pipeline run --date day` as a user starts it from a terminal: SIGINT does what Ctrl-C does."""
    environment = {**os.environ, **_paths(env_root)}
    return subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline.cli", "run", "--date", day],
        cwd=env_root,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # not inherited as ignored under make
    )


def _paths(root: Path) -> dict[str, str]:
    return {"EVAL_EPISODE_SOURCE": str(root / "episodes"), "EVAL_DUCKDB_PATH": str(root / "eval.duckdb"),
            "EVAL_REPORTS_DIR": str(root / "reports"), "DAGSTER_HOME": str(root / "dagster_home")}  # fmt: skip


def settings_of(root: Path) -> Settings:
    return Settings.from_environment({**os.environ, **_paths(root)}, cwd=root)


def instance_of(root: Path) -> dg.DagsterInstance:
    """The instance the runs under `root` record in, opened as `run` opens it (never while a run creates it)."""
    return open_instance(settings_of(root))


def wait_until_executing(root: Path, process: subprocess.Popen) -> str:
    """The id of the process's run once its steps execute (its pid is in the event log)."""
    while process.poll() is None:
        with instance_of(root) as instance:
            for run in instance.get_runs(dg.RunsFilter(statuses=[DagsterRunStatus.STARTED])):
                if run_process(instance, run.run_id) is not None:
                    return run.run_id
        time.sleep(0.05)
    raise AssertionError(f"the run ended first: {process.communicate()}")


def kill_mid_run(root: Path) -> str:
    process = start_run(root, DAY)
    run_id = wait_until_executing(root, process)
    process.kill()
    process.wait()
    with instance_of(root) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.STARTED  # as the red team found it
    return run_id


def serial_reference(tmp_path: Path, sample_root: Path, days: list[str]) -> dict[str, list[Row]]:
    """The tables after running `days` one after the other in a fresh project."""
    root = tmp_path / "serial"
    root.mkdir()
    shutil.copytree(sample_root / "episodes", root / "episodes")
    for day in days:
        process = start_run(root, day)
        assert process.wait() in (0, 1), process.communicate()
    return warehouse_rows(root)


def test_two_consecutive_days_started_together_give_the_serial_warehouse_rows(sample_root, tmp_path):
    """The later day is started once the earlier run has announced itself (its ticket), not later: before that
    moment nothing can know an earlier day is coming, and the later day is scored as a run alone would be."""
    earlier = start_run(sample_root, DAY)
    tickets = Path(f"{sample_root / 'eval.duckdb'}.runs")
    deadline = time.monotonic() + 120
    while not (tickets.is_dir() and any(ticket.name.startswith(f"{DAY}.") for ticket in tickets.iterdir())):
        assert earlier.poll() is None and time.monotonic() < deadline, "the earlier run never announced itself"
        time.sleep(0.05)
    later = start_run(sample_root, NEXT_DAY)
    errors = []
    for process in (later, earlier):
        errors.append(process.communicate()[1])
        assert process.returncode in (0, 1), errors[-1]
    assert warehouse_rows(sample_root) == serial_reference(tmp_path, sample_root, [DAY, NEXT_DAY])
    assert sum("waiting for another run of this warehouse" in error for error in errors) == 1


def test_run_monitoring_marks_a_killed_run_failed_and_the_failure_alert_fires(sample_root):
    monitor_and_alert(sample_root, kill_mid_run(sample_root))


def monitor_and_alert(sample_root: Path, run_id: str) -> None:
    """Dagster's own monitoring rule (what the daemon runs each poll), against the instance `run` recorded in, marks
    the killed run failed; the run-failure sensor then delivers its alert."""
    with instance_of(sample_root) as instance:
        assert isinstance(instance.run_launcher, LocalProcessRunLauncher) and instance.run_monitoring_enabled
        record = instance.get_run_records(dg.RunsFilter(run_ids=[run_id]))[0]
        monitor_started_run(instance, None, record, logging.getLogger("test"))  # type: ignore[arg-type]  # no resume: no workspace
        run = instance.get_run_by_id(run_id)
        assert run.status == DagsterRunStatus.FAILURE
        assert not instance.get_runs(dg.RunsFilter(statuses=[DagsterRunStatus.STARTED]))  # the queue may move
        failure = instance.get_records_for_run(run_id, of_type=DagsterEventType.RUN_FAILURE).records[0]
        project = resources_for(settings_of(sample_root))  # the resources the daemon's sensor gets
        resources = {name: project[name] for name in ("alerts", "warehouse", "eval_config")}
        context = dg.build_run_status_sensor_context(
            sensor_name="run_failure_alerts",
            dagster_event=failure.event_log_entry.dagster_event,
            dagster_instance=instance,
            dagster_run=run,
            resources=resources,
        ).for_run_failure()
        run_failure_alerts(context)
    delivered = [json.loads(line) for line in (sample_root / "alerts" / "alerts.jsonl").read_text().splitlines()]
    assert any(f"run-failed:{run_id}" in json.dumps(alert) for alert in delivered)


def test_the_next_run_marks_a_killed_run_failed_and_announces_it(sample_root, capsys):
    run_id = kill_mid_run(sample_root)
    assert main(["run", "--date", NEXT_DAY, "--fail-on", "never"]) == 0
    with instance_of(sample_root) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.FAILURE
    assert f"run-failed:{run_id}" in (sample_root / "alerts" / "alerts.jsonl").read_text()


def test_ctrl_c_cancels_the_run_with_one_line_and_no_alert_and_a_rerun_matches_a_clean_run(sample_root, tmp_path):
    process = start_run(sample_root, DAY)
    run_id = wait_until_executing(sample_root, process)
    process.send_signal(signal.SIGINT)
    err = process.communicate()[1]
    assert process.returncode == 130
    assert err.splitlines() == [f"eval-pipeline: interrupted: run {run_id} canceled; run {DAY} again to evaluate it"]
    with instance_of(sample_root) as instance:
        assert instance.get_run_by_id(run_id).status == DagsterRunStatus.CANCELED
        assert not instance.get_records_for_run(run_id, of_type=DagsterEventType.RUN_FAILURE).records
    assert not list((sample_root / "alerts" / "outbox").glob("run-failed-*"))
    rerun = start_run(sample_root, DAY)
    assert rerun.wait(timeout=300) in (0, 1), rerun.communicate()
    assert warehouse_rows(sample_root) == serial_reference(tmp_path, sample_root, [DAY])


def test_a_pool_slot_an_ended_run_left_taken_does_not_block_the_next_run(sample_root):
    """Met in CI: the canceled run's `episodes` claimed the file's one `warehouse` slot as Ctrl-C ended the run, and
    the re-run waited for it for ever."""
    with instance_of(sample_root) as instance:
        create_pools(instance)
        canceled = instance.create_run_for_job(job_def=dg.GraphDefinition("canceled").to_job(), status=DagsterRunStatus.CANCELED)
        assert instance.event_log_storage.claim_concurrency_slot(WAREHOUSE_POOL, canceled.run_id, "episodes").is_claimed
    rerun = start_run(sample_root, DAY)
    assert rerun.wait(timeout=300) in (0, 1), rerun.communicate()
    with instance_of(sample_root) as instance:
        assert canceled.run_id not in instance.event_log_storage.get_concurrency_info(WAREHOUSE_POOL).active_run_ids


def test_a_run_after_dagster_run_wipe_runs_and_keeps_a_pools_own_limit(sample_root, tmp_path):
    """`dagster run wipe` (Dagster's CLI: `instance.wipe()`) deletes the pools' slots of a SQLite instance but keeps
    their limits, so the next run's steps waited for ever for a slot that no longer existed."""
    first = start_run(sample_root, DAY)
    assert first.wait(timeout=300) in (0, 1), first.communicate()
    with instance_of(sample_root) as instance:
        instance.event_log_storage.set_concurrency_slots(LLM_POOL, 2)  # `dagster instance concurrency set llm 2`
    wiped = subprocess.run(
        [str(Path(sys.executable).with_name("dagster")), "run", "wipe", "--force"],
        env={**os.environ, **_paths(sample_root)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert wiped.returncode == 0, wiped.stderr
    rerun = start_run(sample_root, DAY)
    try:
        assert rerun.wait(timeout=120) in (0, 1), rerun.communicate()
    finally:
        rerun.kill()
    assert warehouse_rows(sample_root) == serial_reference(tmp_path, sample_root, [DAY])
    with instance_of(sample_root) as instance:
        slots = {pool: instance.event_log_storage.get_concurrency_info(pool).slot_count for pool in POOLS}
    assert slots == {LLM_POOL: 2, WAREHOUSE_POOL: 1}
