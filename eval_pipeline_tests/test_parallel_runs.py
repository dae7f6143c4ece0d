"""Days evaluated at once by separate processes, as workers on several hosts would: each an `eval-pipeline run`
of its own, all recording in one Dagster instance on Postgres and writing one DuckLake warehouse whose catalog is
on Postgres (both on the session's throwaway server). Then once more, with one worker killed mid-day and its day run
again."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from itertools import pairwise
from pathlib import Path

import pytest
from dagster import DagsterEventType, DagsterRunStatus

from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline.run_health import run_process
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline_tests.postgres import PostgresServer, lake_on
from eval_pipeline_tests.snapshots import warehouse_rows
from eval_pipeline_tests.test_run_faults import instance_of, serial_reference, start_run
from eval_pipeline_tests.webhook_receiver import WebhookReceiver

pytestmark = pytest.mark.slow

LAKE_INSTANCE = PROJECT_ROOT / "deploy" / "dagster-lake.yaml"
DAYS = [day.isoformat() for day in SAMPLE_DAYS]
ALERT_TABLES = ("alert_outbox", "alerts_delivered", "alert_delivery_lease")  # the file keeps its outbox in files


def start_in_day_order(root: Path, days: list[str]) -> tuple[list[subprocess.Popen], dict[int, str]]:
    """`eval-pipeline run --date` for each day, each started once the day before's run exists (its pid is in the
    event log), as a backfill creates its runs: before that moment nothing can know an earlier day is coming. The
    processes, and each one's run id."""
    processes: list[subprocess.Popen] = []
    run_ids: dict[int, str] = {}
    for day in days:
        process = start_run(root, day)
        processes.append(process)
        deadline = time.monotonic() + 120
        while process.pid not in run_ids:
            with instance_of(root) as instance:
                pids = {recorded[0]: run.run_id for run in instance.get_runs() if (recorded := run_process(instance, run.run_id))}
            if process.pid in pids:
                run_ids[process.pid] = pids[process.pid]
                break
            assert process.poll() is None and time.monotonic() < deadline, f"{day}'s run never began: {process.communicate()}"
            time.sleep(0.05)
    return processes, run_ids


def overlapped(root: Path, run_ids: list[str]) -> bool:
    """Whether each run began before the one before it ended: they executed at once."""
    with instance_of(root) as instance:
        records = [instance.get_run_record_by_id(run_id) for run_id in run_ids]
    return all(later.start_time < earlier.end_time for earlier, later in pairwise(records))


def rows_without_alert_tables(rows: dict) -> dict:
    return {name: table for name, table in rows.items() if name not in ALERT_TABLES}


STEPS_READING_EARLIER_DAYS = ("baselines", "regression_findings", "eval_report")


def step_times(root: Path, run_id: str) -> dict[str, tuple[float, float]]:
    """When each step of the run last started (a waiting step is restarted) and when it succeeded."""
    kinds = {DagsterEventType.STEP_START, DagsterEventType.STEP_RESTARTED, DagsterEventType.STEP_SUCCESS}
    with instance_of(root) as instance:
        records = instance.get_records_for_run(run_id, of_type=kinds).records
    started, succeeded = {}, {}
    for record in records:
        entry = record.event_log_entry
        kind = entry.dagster_event.event_type if entry.dagster_event else None
        (succeeded if kind == DagsterEventType.STEP_SUCCESS else started)[entry.step_key] = entry.timestamp
    return {step: (started[step], succeeded[step]) for step in succeeded}


def test_days_run_at_once_on_a_lake_then_with_a_worker_killed_and_rerun_equal_a_serial_file_run(
    sample_root, postgres_server: PostgresServer, postgres_db, tmp_path, monkeypatch
):
    with WebhookReceiver() as serial_webhook:
        monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", serial_webhook.url)
        serial = serial_reference(tmp_path, sample_root, DAYS)  # one day after the other, the single file
    assert serial_webhook.finding_ids

    for name, value in postgres_server.environment(postgres_db).items():
        monkeypatch.setenv(name, value)
    (sample_root / "dagster_home").mkdir()
    shutil.copy(LAKE_INSTANCE, sample_root / "dagster_home" / "dagster.yaml")  # as the README's Production says
    with postgres_server.database(f"{postgres_db}_lake") as lake_db, WebhookReceiver() as webhook:
        lake = lake_on(postgres_server, lake_db, sample_root)
        monkeypatch.setenv("EVAL_WAREHOUSE", f"ducklake:{lake.catalog}")
        monkeypatch.setenv("EVAL_WAREHOUSE_DATA", lake.data_path)
        monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)

        together, run_ids = start_in_day_order(sample_root, DAYS)
        for process in together:
            assert process.wait(timeout=300) in (0, 1), process.communicate()  # 1: critical regressions, on purpose
        assert overlapped(sample_root, [run_ids[process.pid] for process in together])
        times = [step_times(sample_root, run_ids[process.pid]) for process in together]
        for earlier, later in ((times[0], times[1]), (times[1], times[2])):  # a day's step began after the day before's
            assert all(later[step][0] >= earlier[step][1] for step in STEPS_READING_EARLIER_DAYS), times
        assert rows_without_alert_tables(warehouse_rows(sample_root, lake)) == rows_without_alert_tables(serial)

        (first, killed, last), run_ids = start_in_day_order(sample_root, DAYS)  # again, and one worker dies
        assert killed.poll() is None, "the middle day's run ended before it could be killed"
        killed.kill()
        killed.wait()
        query = subprocess.run(
            [sys.executable, "-m", "eval_pipeline.cli", "query", "SELECT count(*) AS episodes FROM episodes", "--format", "csv"],
            cwd=sample_root, env=dict(os.environ), capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert query.returncode == 0 and query.stdout.startswith("episodes\n"), query.stderr  # users read meanwhile

        first_out, first_err = first.communicate(timeout=300)
        assert first.returncode in (0, 1), first_err
        last_out, last_err = last.communicate(timeout=300)
        assert last.returncode == 3 and f"run {run_ids[killed.pid]} of {DAYS[1]} lost its process" in last_err, last_err
        assert postgres_server.password not in first_out + first_err + last_out + last_err

        rerun = subprocess.run(
            [sys.executable, "-m", "eval_pipeline.cli", "run", "--start", DAYS[1], "--end", DAYS[2]],
            cwd=sample_root, env=dict(os.environ), capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert rerun.returncode in (0, 1), rerun.stderr

        with instance_of(sample_root) as instance:
            statuses = {run.run_id: run.status for run in instance.get_runs()}
        assert statuses[run_ids[first.pid]] == DagsterRunStatus.SUCCESS
        assert statuses[run_ids[killed.pid]] == DagsterRunStatus.FAILURE  # marked by the re-run, which announced it
        assert statuses[run_ids[last.pid]] == DagsterRunStatus.FAILURE
        assert not (sample_root / "eval.duckdb").exists()
        assert rows_without_alert_tables(warehouse_rows(sample_root, lake)) == rows_without_alert_tables(serial)
        failed_runs = sorted(i.removeprefix("run-failed:") for i in webhook.finding_ids if i.startswith("run-failed:"))
        assert failed_runs == sorted(run_ids[process.pid] for process in (killed, last))  # each announced once
        findings = [i for i in webhook.finding_ids if not i.startswith("run-failed:")]
        assert sorted(findings) == sorted(serial_webhook.finding_ids)  # every finding's alert, once over both rounds
