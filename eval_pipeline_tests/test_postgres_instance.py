"""Dagster instance storage on Postgres, as the README's Production section sets it up: the project's `dagster.yaml`
followed by `deploy/dagster-postgres.yaml`, the connection in the environment, against a real throwaway server."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pytest
from dagster_postgres import PostgresEventLogStorage, PostgresRunStorage, PostgresScheduleStorage

from eval_pipeline.cli import main
from eval_pipeline.run_health import LocalProcessRunLauncher
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline_tests.postgres import PostgresServer
from eval_pipeline_tests.snapshots import warehouse_rows
from eval_pipeline_tests.test_run_faults import (
    DAY,
    NEXT_DAY,
    kill_mid_run,
    monitor_and_alert,
    serial_reference,
    start_run,
    wait_until_executing,
)

POSTGRES_STORAGE = PROJECT_ROOT / "deploy" / "dagster-postgres.yaml"


def write_postgres_instance(home: Path) -> None:
    """`cat dagster.yaml deploy/dagster-postgres.yaml > "$DAGSTER_HOME/dagster.yaml"`, as the README says."""
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text((PROJECT_ROOT / "dagster.yaml").read_text() + POSTGRES_STORAGE.read_text())


@pytest.fixture
def postgres_project(sample_root: Path, postgres_env: PostgresServer) -> Path:
    """The sample project, its DAGSTER_HOME on Postgres."""
    write_postgres_instance(sample_root / "dagster_home")
    return sample_root


def recorded_runs(server: PostgresServer, db_name: str) -> list[tuple[str, str]]:
    """(day, status) of every run in the database's own `runs` table, read with SQL rather than through Dagster."""
    connection = server.connect(db_name)
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT partition, status FROM runs ORDER BY partition")
            return cursor.fetchall()
    finally:
        connection.close()


def test_the_production_instance_settings_load_on_postgres_with_the_secret_from_the_environment(
    tmp_path, postgres_env, postgres_db
):
    home = tmp_path / "dagster_home"
    write_postgres_instance(home)
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance.run_storage, PostgresRunStorage)
        assert isinstance(instance.event_log_storage, PostgresEventLogStorage)
        assert isinstance(instance.schedule_storage, PostgresScheduleStorage)
        assert isinstance(instance.run_launcher, LocalProcessRunLauncher) and instance.run_monitoring_enabled
        assert instance.get_runs() == []
    assert recorded_runs(postgres_env, postgres_db) == []  # Dagster created its tables in the database
    assert postgres_env.password not in (home / "dagster.yaml").read_text()
    assert sorted(path.name for path in home.iterdir()) == ["dagster.yaml"]  # no SQLite storage beside it


@pytest.mark.slow
def test_two_days_run_by_two_processes_at_once_are_recorded_in_postgres_and_give_the_serial_tables(
    postgres_project, postgres_env, postgres_db, tmp_path, capsys
):
    earlier = start_run(postgres_project, DAY)
    wait_until_executing(postgres_project, earlier)  # started together, a slow first process could queue second
    later = start_run(postgres_project, NEXT_DAY)
    errors = []
    for run in (earlier, later):
        out, err = run.communicate()
        assert run.returncode in (0, 1), err  # 1: the sample days hold critical regressions on purpose
        assert postgres_env.password not in out + err
        errors.append(err)
    assert "waiting for another run of this warehouse" in errors[1]  # it ran while the earlier day's run did
    assert recorded_runs(postgres_env, postgres_db) == [(DAY, "SUCCESS"), (NEXT_DAY, "SUCCESS")]
    assert not (postgres_project / "dagster_home" / "history").exists()  # nothing went to the embedded SQLite
    assert warehouse_rows(postgres_project) == serial_reference(tmp_path, postgres_project, [DAY, NEXT_DAY])
    with dg.DagsterInstance.from_config(str(postgres_project / "dagster_home")) as instance:
        latest = instance.get_runs(limit=1)[0]
    assert main(["status"]) == 0  # reads the run storage in Postgres without Dagster
    assert f"latest run       {latest.run_id} {latest.job_name} partition {NEXT_DAY}: SUCCESS\n" in capsys.readouterr().out


@pytest.mark.slow
def test_a_killed_run_on_postgres_storage_is_marked_failed_by_run_monitoring_and_alerted(
    postgres_project, postgres_env, postgres_db
):
    run_id = kill_mid_run(postgres_project)
    monitor_and_alert(postgres_project, run_id)
    assert recorded_runs(postgres_env, postgres_db) == [(DAY, "FAILURE")]
