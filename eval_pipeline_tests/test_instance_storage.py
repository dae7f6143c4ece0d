"""The instance's SQLite storage (dagster.yaml `instance_class`): Dagster's files, one engine per file."""

from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline import instance_storage
from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow

DAGSTER_DEFAULT = "telemetry:\n  enabled: false\n"  # an instance file without `instance_class`: Dagster's own storage


def _instance_file(home: Path, text: str) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "dagster.yaml").write_text(text)


def _runs(home: Path) -> list[tuple[str, int]]:
    """Each run of the instance at `home`, oldest first, with how many materializations its event log holds."""
    with dg.DagsterInstance.from_config(str(home)) as instance:
        return [
            (run.run_id, len(instance.get_records_for_run(run.run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION).records))
            for run in reversed(instance.get_runs())
        ]


def test_an_instance_keeps_its_history_from_dagsters_storage_to_the_projects_and_back(sample_root):
    home, day = sample_root / "dagster_home", SAMPLE_DAYS[0].isoformat()
    _instance_file(home, DAGSTER_DEFAULT)
    assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    (before,) = _runs(home)
    assert before[1] > 0

    _instance_file(home, (PROJECT_ROOT / "dagster.yaml").read_text())
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert isinstance(instance, instance_storage.Instance)
        assert isinstance(instance.event_log_storage, instance_storage.SqliteEventLogStorage)
    assert _runs(home) == [before]  # the run Dagster's storage recorded, events and all
    assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    both = _runs(home)
    assert both[0] == before and len(both) == 2 and both[1][1] == before[1]

    _instance_file(home, DAGSTER_DEFAULT)
    assert _runs(home) == both  # and Dagster's storage reads what this one wrote


def test_a_run_builds_an_engine_per_database_file_not_per_event(sample_root, monkeypatch):
    built: list[str] = []
    create_engine = instance_storage.create_engine

    def counted(url, **options):
        built.append(str(url))
        return create_engine(url, **options)

    monkeypatch.setattr(instance_storage, "create_engine", counted)
    assert main(["run", "--date", SAMPLE_DAYS[0].isoformat(), "--fail-on", "never"]) == 0
    with dg.DagsterInstance.get() as instance:
        (run,) = instance.get_runs()
        events = len(instance.all_logs(run.run_id))
    # the runs, schedules and index files, and the run's own event file: each engine built once
    assert len(built) == len(set(built)) <= 4 and events > 100


def test_the_events_of_a_run_are_committed_to_write_ahead_logs_without_waiting_on_the_disk(sample_root):
    """Each of a run's events (108 for a 10-episode day) is a commit: with SQLite's default `synchronous=FULL`, each waited on
    an fsync."""
    assert main(["run", "--date", SAMPLE_DAYS[0].isoformat(), "--fail-on", "never"]) == 0
    engines = list(instance_storage._ENGINES._kept.items())
    assert any("runs.db" in url for url, _ in engines) and any(url.endswith(".db") and "/runs/" in url for url, _ in engines)
    for url, engine in engines:
        with engine.connect() as connection:
            modes = (
                connection.exec_driver_sql("PRAGMA journal_mode").scalar(),
                connection.exec_driver_sql("PRAGMA synchronous").scalar(),
            )
        assert modes == ("wal", 1), url  # 1: NORMAL, which SQLite holds safe in WAL mode (a power cut loses the last commits)


def _held(home: Path) -> list[str]:
    """The database files under `home` this process holds open between uses: a pooled connection idle."""
    return [url for url, engine in instance_storage._ENGINES._kept.items() if engine.pool.checkedin() and str(home) in url]


def test_a_runs_files_are_let_go_when_its_instance_is_disposed_and_before_a_wipe_deletes_them(sample_root):
    home, day = sample_root / "dagster_home", SAMPLE_DAYS[0].isoformat()
    assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    assert _held(home) == []  # the run's instance was disposed
    assert not list(home.rglob("*.db-wal"))  # each file's last connection folded its log into it
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance, instance_storage.Instance)
        (run,) = instance.get_runs()
        assert len(instance.all_logs(run.run_id)) > 100
        assert any(f"{run.run_id}.db" in url for url in _held(home))  # read twice: held between the reads
        # with its log open: a connection closing after a read or write is not the last, which folds the log in
        assert (home / "history" / "runs" / f"{run.run_id}.db-wal").is_file()
        instance.wipe()
        assert not [path.name for path in (home / "history" / "runs").glob("*.db*") if not path.name.startswith("index.")]
        assert instance.get_runs() == [] and instance.all_logs(run.run_id) == []


def test_a_files_connections_are_pooled_and_as_many_as_are_asked_at_once_are_given(tmp_path):
    """A webserver's threads may each read the runs file at once: none waits for another's connection to come back
    (before pooling, each use opened a connection of its own), and the pool keeps some open for the next uses."""
    engine = instance_storage._engine(f"sqlite:///{tmp_path / 'runs.db'}", {"timeout": 1})
    held = [engine.connect() for _ in range(20)]  # past SQLAlchemy's default of 5 kept and 10 more, the 16th waited 30 s
    assert [connection.exec_driver_sql("PRAGMA synchronous").scalar() for connection in held] == [1] * len(held)
    for connection in held:
        connection.close()
    assert engine.pool.checkedin() == engine.pool.size()
    engine.dispose()
