"""Days evaluated at once by separate processes, as workers on several hosts would: each an `eval-pipeline run`
of its own, all recording in one Dagster instance on Postgres and writing one DuckLake warehouse whose catalog is
on Postgres (both on the session's throwaway server). Then once more, with one worker killed mid-day and its day run
again. And a backfill launched from `eval-pipeline ui`, whose daemon runs a day per run at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path

import dagster as dg
import httpx
import pytest
from dagster import DagsterEventType, DagsterRunStatus
from dagster._core.storage.tags import BACKFILL_ID_TAG

from eval_pipeline.defs.pipeline.day_order import EARLIER_DAYS_DONE
from eval_pipeline.episodes.samples import SAMPLE_DAYS, write_samples
from eval_pipeline.run_health import run_partitions, run_process
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline.warehouse.lake import Lake
from eval_pipeline_tests.conftest import project_environment
from eval_pipeline_tests.postgres import PostgresServer, lake_on
from eval_pipeline_tests.snapshots import Row, warehouse_rows
from eval_pipeline_tests.test_run_faults import instance_of, serial_reference, start_run
from eval_pipeline_tests.test_ui import ask, running_ui
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


def reading_times(root: Path, run_id: str) -> dict[str, tuple[float, float]]:
    """For each step of the run that reads earlier days: when it began reading them (its log line saying no earlier
    run has the step to do; a waiting step says it on its last try) and when it succeeded."""
    reads, succeeded = {}, {}
    with instance_of(root) as instance:
        for entry in instance.all_logs(run_id):
            if entry.dagster_event is None and EARLIER_DAYS_DONE in entry.user_message:
                reads[entry.step_key] = entry.timestamp
            elif entry.dagster_event and entry.dagster_event.event_type == DagsterEventType.STEP_SUCCESS:
                succeeded[entry.step_key] = entry.timestamp
    return {step: (reads[step], succeeded[step]) for step in STEPS_READING_EARLIER_DAYS}


@dataclass(frozen=True)
class SerialRun:
    rows: dict[str, list[Row]]
    finding_ids: list[str]  # the alerts its webhook received


@pytest.fixture(scope="module")
def serial(tmp_path_factory) -> SerialRun:
    """The reference: the sample days run one after the other on the single file, its webhook recording the alerts."""
    samples = tmp_path_factory.mktemp("samples")
    write_samples(samples / "episodes")
    with pytest.MonkeyPatch.context() as patch, WebhookReceiver() as webhook:
        for name, value in project_environment(samples).items():
            patch.setenv(name, value)
        patch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
        rows = serial_reference(tmp_path_factory.mktemp("serial"), samples, DAYS)
    assert webhook.finding_ids
    return SerialRun(rows, webhook.finding_ids)


@contextmanager
def lake_project(root: Path, server: PostgresServer, instance_db: str, monkeypatch, webhook: WebhookReceiver) -> Iterator[Lake]:
    """`root` set up as the README's Production says: Dagster's instance on Postgres (`deploy/dagster-lake.yaml`), the
    warehouse a lake whose catalog is another database of the same server; alerts to `webhook`."""
    for name, value in server.environment(instance_db).items():
        monkeypatch.setenv(name, value)
    (root / "dagster_home").mkdir()
    shutil.copy(LAKE_INSTANCE, root / "dagster_home" / "dagster.yaml")
    with server.database(f"{instance_db}_lake") as lake_db:
        lake = lake_on(server, lake_db, root)
        monkeypatch.setenv("EVAL_WAREHOUSE", f"ducklake:{lake.catalog}")
        monkeypatch.setenv("EVAL_WAREHOUSE_DATA", lake.data_path)
        monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
        yield lake


def assert_days_in_order(root: Path, run_ids: list[str]) -> None:
    """Runs of consecutive days: each ran its steps that read earlier days only after the day before's finished."""
    times = [reading_times(root, run_id) for run_id in run_ids]
    for earlier, later in pairwise(times):
        assert all(later[step][0] > earlier[step][1] for step in STEPS_READING_EARLIER_DAYS), times


def test_days_run_at_once_on_a_lake_then_with_a_worker_killed_and_rerun_equal_a_serial_file_run(
    serial: SerialRun, sample_root, postgres_server: PostgresServer, postgres_db, monkeypatch
):
    with WebhookReceiver() as webhook, lake_project(sample_root, postgres_server, postgres_db, monkeypatch, webhook) as lake:
        together, run_ids = start_in_day_order(sample_root, DAYS)
        for process in together:
            assert process.wait(timeout=300) in (0, 1), process.communicate()  # 1: critical regressions, on purpose
        assert overlapped(sample_root, [run_ids[process.pid] for process in together])
        assert_days_in_order(sample_root, [run_ids[process.pid] for process in together])
        assert rows_without_alert_tables(warehouse_rows(sample_root, lake)) == rows_without_alert_tables(serial.rows)

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
        assert rows_without_alert_tables(warehouse_rows(sample_root, lake)) == rows_without_alert_tables(serial.rows)
        failed_runs = sorted(i.removeprefix("run-failed:") for i in webhook.finding_ids if i.startswith("run-failed:"))
        assert failed_runs == sorted(run_ids[process.pid] for process in (killed, last))  # each announced once
        findings = [i for i in webhook.finding_ids if not i.startswith("run-failed:")]
        assert sorted(findings) == sorted(serial.finding_ids)  # every finding's alert, once over both rounds


LAUNCH_BACKFILL = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
  }
}
"""


def launch_backfill(base_url: str, assets: list[list[str]], first: str, last: str) -> str:
    """One backfill of these assets over the days `first`..`last`, as the UI launches it; its id.

    By range per asset: named by partition keys (`partitionNames`), Dagster 1.13's webserver refuses it in some of
    its processes ("Targeted subset must match between every key in a non-subsettable multi-asset", one process in
    four here, every time in that process: it depends on the process's hash order)."""
    days = {"range": {"start": first, "end": last}}
    params = {"partitionsByAssets": [{"assetKey": {"path": path}, "partitions": days} for path in assets]}
    answer = httpx.post(f"{base_url}/graphql", json={"query": LAUNCH_BACKFILL, "variables": {"params": params}}, timeout=60)
    launched = answer.json()["data"]["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    return launched["backfillId"]


def finished_backfill_runs(root: Path, backfill_id: str, runs: int) -> list[dg.DagsterRun]:
    """The backfill's runs, once it has created `runs` of them and every one has ended."""
    deadline = time.monotonic() + 300
    while True:
        with instance_of(root) as instance:
            found = instance.get_runs(dg.RunsFilter(tags={BACKFILL_ID_TAG: backfill_id}))
        if len(found) == runs and all(run.is_finished for run in found):
            return found
        assert time.monotonic() < deadline, f"{len(found)} run(s) of the backfill, {[r.status for r in found]}: {root / 'ui.log'}"
        time.sleep(1)


def test_a_backfill_from_the_ui_runs_a_day_per_run_at_once_on_a_lake_and_equals_a_serial_file_run(
    serial: SerialRun, sample_root, postgres_server: PostgresServer, postgres_db, monkeypatch
):
    """The daemon of `eval-pipeline ui` splits the backfill into runs of EVAL_BACKFILL_DAYS_PER_RUN days, starts them
    together, and its sensor delivers their alerts."""
    monkeypatch.setenv("EVAL_BACKFILL_DAYS_PER_RUN", "1")
    with WebhookReceiver() as webhook, lake_project(sample_root, postgres_server, postgres_db, monkeypatch, webhook) as lake:
        with running_ui(sample_root, dict(os.environ)) as base_url:
            graph = ask(base_url)
            assets = [node["assetKey"]["path"] for node in graph["assetNodes"] if node["groupName"] == "evaluation"]
            backfill_id = launch_backfill(base_url, assets, DAYS[0], DAYS[-1])
            runs = finished_backfill_runs(sample_root, backfill_id, len(DAYS))
            deadline = time.monotonic() + 120  # the alerts sensor's interval is 30 s
            while sorted(webhook.finding_ids) != sorted(serial.finding_ids):
                assert time.monotonic() < deadline, (webhook.finding_ids, serial.finding_ids)
                time.sleep(1)

        by_day = sorted(runs, key=run_partitions)
        assert [run_partitions(run) for run in by_day] == [f"{day}..{day}" for day in DAYS]  # a day per run
        assert [run.status for run in by_day] == [DagsterRunStatus.SUCCESS] * len(DAYS), [run.run_id for run in by_day]
        assert overlapped(sample_root, [run.run_id for run in by_day])
        assert_days_in_order(sample_root, [run.run_id for run in by_day])
        assert rows_without_alert_tables(warehouse_rows(sample_root, lake)) == rows_without_alert_tables(serial.rows)
