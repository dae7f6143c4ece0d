import multiprocessing
import subprocess
import sys
import time

import duckdb
import pytest

from eval_pipeline.warehouse.connection import Warehouse, WarehouseBusy
from eval_pipeline.warehouse.partitions import PIPELINE_TABLES
from eval_pipeline.warehouse.schema import MIGRATIONS
from eval_pipeline_tests.warehouse import warehouse_of_version


def _hold(path, seconds, ready):
    warehouse = Warehouse(path)
    with warehouse.connect():
        ready.set()
        time.sleep(seconds)


def test_tables_are_created_and_versioned_once(warehouse):
    for _ in range(2):
        with Warehouse(warehouse.path, lake=warehouse.lake).connect() as con:
            tables = {
                row[0]
                for row in con.execute(
                    "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database()"
                ).fetchall()
            }
            versions = con.execute("SELECT version FROM schema_version ORDER BY 1").fetchall()
    assert {*PIPELINE_TABLES, "llm_cache", "labels", "alert_outbox", "alerts_delivered", "alert_delivery_lease"} <= tables
    assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]
    assert warehouse.path.exists() == (warehouse.lake is None)  # a lake keeps nothing in the file


def test_a_second_process_waits_then_reports_busy(tmp_path):
    path = tmp_path / "eval.duckdb"
    ready = multiprocessing.Event()
    holder = multiprocessing.Process(target=_hold, args=(path, 3.0, ready))
    holder.start()
    try:
        assert ready.wait(20)
        with (
            pytest.raises(WarehouseBusy, match="warehouse busy"),
            Warehouse(path, lock_timeout_seconds=0.3).connect(read_only=True),
        ):
            pass
        # a patient opener gets in once the holder is done, instead of failing on DuckDB's own lock
        with Warehouse(path, lock_timeout_seconds=30).connect(read_only=True) as con:
            assert con.execute("SELECT count(*) FROM episodes").fetchone() == (0,)
    finally:
        holder.join(30)


def _sessions_in_a_row(path, seconds, held_for, ready, opened):
    """Short sessions in a row, as a backfill's step does its days, on one connection `held_for` seconds at a time."""
    warehouse = Warehouse(path)
    opens = warehouse._open

    def counted(*args, **kwargs):
        opened.value += 1
        return opens(*args, **kwargs)

    warehouse._open = counted
    with warehouse.held(held_for) as between:
        ready.set()
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            with warehouse.session(), warehouse.transaction() as con:
                con.execute("SELECT count(*) FROM episodes").fetchall()
            between()


def test_a_step_holds_one_connection_across_a_ranges_days_and_lets_a_waiting_process_in_between(tmp_path):
    path = tmp_path / "eval.duckdb"
    Warehouse(path).connect().__enter__().close()  # made and migrated
    ready, opened = multiprocessing.Event(), multiprocessing.Value("i", 0)
    runner = multiprocessing.Process(target=_sessions_in_a_row, args=(path, 4.0, 0.5, ready, opened))
    runner.start()
    try:
        assert ready.wait(20)
        started = time.monotonic()
        # another process (a nightly run's step, the viewer) waits less than the hold and its poll before it gets in
        with Warehouse(path, lock_timeout_seconds=3).connect(read_only=True) as con:
            assert con.execute("SELECT count(*) FROM episodes").fetchone() == (0,)
        assert time.monotonic() - started < 3
    finally:
        runner.join(30)
    assert runner.exitcode == 0
    assert 2 <= opened.value <= 4.0 / 0.5 + 1  # hundreds of sessions, a connection every half second at most


def test_a_failed_transaction_rolls_back(warehouse):
    with warehouse.transaction() as con:
        con.execute("INSERT INTO reports (partition_date, summary) VALUES (DATE '2026-11-01', '{}')")
    with pytest.raises(RuntimeError), warehouse.transaction() as con:
        con.execute("DELETE FROM reports")
        raise RuntimeError("crash mid-partition")
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT count(*) FROM reports").fetchone() == (1,)
        with pytest.raises(duckdb.Error, match=r"read-only|read only"):  # a reader cannot write by mistake
            con.execute("DELETE FROM reports")


def test_an_older_warehouse_is_migrated_in_place_even_by_a_reader(tmp_path):
    path = tmp_path / "eval.duckdb"
    con = warehouse_of_version(path, 1)
    con.execute("INSERT INTO baselines (agent_id, task_id, episode_id, pinned, valid_from, partition_date) "
                "VALUES ('a', 't', 'e', false, DATE '2026-11-02', DATE '2026-11-01')")  # fmt: skip
    con.close()
    with Warehouse(path).connect(read_only=True) as reader:
        assert reader.execute("SELECT episode_id, origin FROM baselines").fetchall() == [("e", "run")]
        assert reader.execute("SELECT max(version) FROM schema_version").fetchone() == (len(MIGRATIONS),)


def test_scores_made_before_their_baselines_day_was_kept_get_it_where_the_baselines_tell_it(tmp_path):
    """Migration 18: a live replay was compared with its own day's recording; a recording with the baseline row its day
    used, when every such row names one day (a harness reusing an id every night gives rows of several); else unknown."""
    path = tmp_path / "eval.duckdb"
    con = warehouse_of_version(path, 17)
    con.execute("""
        INSERT INTO baselines (agent_id, task_id, episode_id, pinned, valid_from, partition_date, recorded_on) VALUES
            ('a', 'once', 'e-1', false, DATE '2026-11-02', DATE '2026-11-01', DATE '2026-11-01'),
            ('a', 'nightly', 'case', false, DATE '2026-11-02', DATE '2026-11-01', DATE '2026-11-01'),
            ('a', 'nightly', 'case', true, DATE '2026-11-03', DATE '2026-11-03', DATE '2026-11-03'),
            ('a', 'history', 'e-0', false, DATE '2026-11-02', DATE '2026-11-02', NULL);
        INSERT INTO scores (episode_id, partition_date, agent_id, task_id, baseline_episode_id, mode, config_version) VALUES
            ('e-2', DATE '2026-11-04', 'a', 'once', 'e-1', 'dry', 'v'),
            ('case', DATE '2026-11-02', 'a', 'nightly', 'case', 'dry', 'v'),
            ('case', DATE '2026-11-04', 'a', 'nightly', 'case', 'dry', 'v'),
            ('e-3', DATE '2026-11-04', 'a', 'history', 'e-0', 'dry', 'v'),
            ('e-4', DATE '2026-11-04', 'a', 'live', 'e-4', 'live', 'v'),
            ('e-5', DATE '2026-11-04', 'a', 'new', NULL, 'dry', 'v');
    """)  # fmt: skip
    con.close()
    with Warehouse(path).connect(read_only=True) as reader:
        days = reader.execute("SELECT episode_id, partition_date::VARCHAR, baseline_partition_date::VARCHAR FROM scores "
                              "ORDER BY ALL").fetchall()  # fmt: skip
    assert days == [
        ("case", "2026-11-02", "2026-11-01"),  # only the first night's row was valid then
        ("case", "2026-11-04", None),  # the first night's or the pin of the third: not known which
        ("e-2", "2026-11-04", "2026-11-01"),
        ("e-3", "2026-11-04", None),  # a history row from before its day was kept
        ("e-4", "2026-11-04", "2026-11-04"),
        ("e-5", "2026-11-04", None),
    ]


def test_a_warehouse_deleted_under_a_long_lived_opener_is_made_again(tmp_path):
    """One object checks the schema once (a run's steps share it); a sensor's lives for days, and the file may go."""
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    with warehouse.connect() as con:
        con.execute("SELECT 1")
    warehouse.path.unlink()
    with warehouse.connect(read_only=True) as reader:
        assert reader.execute("SELECT max(version) FROM schema_version").fetchone() == (len(MIGRATIONS),)


def test_a_process_killed_while_creating_the_warehouse_leaves_none_or_one_that_opens(tmp_path):
    """Killed between the migrations' commit and their checkpoint (a Ctrl-C as the first step began, met in CI: the
    re-run failed "replaying WAL file ... GetDefaultDatabase"), a new warehouse's process left a file whose write-ahead
    log DuckDB 1.5.5 cannot replay. A new warehouse is made beside its path and moved there whole."""
    path = tmp_path / "eval.duckdb"
    creator = (
        "import os\nfrom pathlib import Path\nfrom eval_pipeline.warehouse import connection\n"
        "def migrate_then_die(con):\n"
        "    connection.migrate.__wrapped__(con)\n"
        "    os._exit(0)  # as SIGKILL would, before the checkpoint\n"
        "migrate_then_die.__wrapped__ = connection.migrate\n"
        "connection.migrate = migrate_then_die\n"
        f"connection.Warehouse(Path({str(path)!r})).connect().__enter__()\n"
    )
    subprocess.run([sys.executable, "-c", creator], check=True, timeout=120)
    with Warehouse(path).connect(read_only=True) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (len(MIGRATIONS),)


def test_a_process_killed_right_after_creating_the_warehouse_leaves_one_that_opens(tmp_path):
    """DuckDB 1.5.5 cannot replay a write-ahead log holding the migrations (ADD COLUMN on a table with a `DEFAULT
    current_timestamp` column): a run interrupted soon after it created the warehouse, while another connection of
    its process kept DuckDB from checkpointing at close, left a file nothing could open ("Failure while replaying
    WAL file ... GetDefaultDatabase", met in CI). The migrations are checkpointed into the file as they apply."""
    path = tmp_path / "eval.duckdb"
    creator = (
        "import os, duckdb\nfrom pathlib import Path\nfrom eval_pipeline.warehouse.connection import Warehouse\n"
        f"other = duckdb.connect({str(path)!r})  # open meanwhile: closing the migrating connection does not checkpoint\n"
        f"Warehouse(Path({str(path)!r})).connect().__enter__()\n"
        "os._exit(0)  # as SIGKILL would: nothing closed"
    )
    subprocess.run([sys.executable, "-c", creator], check=True, timeout=120)
    with Warehouse(path).connect(read_only=True) as con:
        assert con.execute("SELECT max(version) FROM schema_version").fetchone() == (len(MIGRATIONS),)
