"""The warehouse as a DuckLake with its catalog on a real Postgres: writers of different days at once, conflicts."""

from __future__ import annotations

import logging
import multiprocessing
from datetime import date, timedelta
from multiprocessing.queues import SimpleQueue
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from eval_pipeline.settings import Settings, SettingsError
from eval_pipeline.warehouse import schema
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.lake import ConflictBackoff, ConflictRetriesExhausted, Lake, with_conflict_retries
from eval_pipeline.warehouse.s3 import S3Access
from eval_pipeline_tests.postgres import lake_on

pytestmark = pytest.mark.slow

DAY = date(2026, 11, 1)
LOCAL = Path("unused.duckdb")  # a lake warehouse keeps nothing in its file


@pytest.fixture
def lake(postgres_server, postgres_db, tmp_path) -> Lake:
    return lake_on(postgres_server, postgres_db, tmp_path)


def _replace_reports(warehouse: Warehouse, day: date, summary: str) -> None:
    with warehouse.transaction() as con:
        con.execute("DELETE FROM reports WHERE partition_date = ?", [day])
        con.execute("INSERT INTO reports (partition_date, summary) VALUES (?, to_json(?::VARCHAR))", [day, summary])


def _write_days(lake: Lake, first: int, rounds: int, together: Barrier, reruns: SimpleQueue) -> None:
    """A writer process: its own day, replaced `rounds` times, each a whole transaction rerun while others win;
    it tells how many reruns it logged."""
    logged: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = logged.append  # type: ignore[method-assign]
    logging.getLogger("eval_pipeline.warehouse.lake").addHandler(handler)
    warehouse = Warehouse(LOCAL, lake=lake)
    day = DAY + timedelta(days=first)
    warehouse.rerun_on_conflict("warming up", lambda: None)  # the extensions loaded and the schema read, then all at once
    together.wait(60)
    for round_ in range(rounds):
        warehouse.rerun_on_conflict(f"day {day}", lambda round_=round_: _replace_reports(warehouse, day, f"round {round_}"))
    reruns.put(sum("another writer committed first" in record.getMessage() for record in logged))


def test_writers_of_different_days_at_once_all_land(lake):
    """Four processes replace their own day 5 times each: DuckLake reports conflicts at commit even between days, and
    every one of them is rerun until it lands; the table ends with exactly one row per day, the last round's."""
    Warehouse(LOCAL, lake=lake).rerun_on_conflict("migrating", lambda: None)  # the schema, before the race
    context = multiprocessing.get_context("spawn")
    together, reruns = context.Barrier(4), context.SimpleQueue()
    writers = [context.Process(target=_write_days, args=(lake, first, 5, together, reruns)) for first in range(4)]
    for writer in writers:
        writer.start()
    for writer in writers:
        writer.join(120)
    assert [writer.exitcode for writer in writers] == [0, 0, 0, 0]
    assert sum(reruns.get() for _ in writers) > 0  # they did collide: the reruns are what made every day land
    with Warehouse(LOCAL, lake=lake).connect(read_only=True) as con:
        rows = con.execute("SELECT partition_date, summary ->> '$' FROM reports ORDER BY 1").fetchall()
    assert rows == [(DAY + timedelta(days=first), "round 4") for first in range(4)]


def test_a_writer_that_keeps_losing_fails_loudly_with_nothing_written(lake):
    """Another writer commits between this one's writes and its COMMIT, every time: after its attempts it raises,
    and nothing of its day is in the lake."""
    warehouse, other = Warehouse(LOCAL, lake=lake), Warehouse(LOCAL, lake=lake)
    _replace_reports(other, DAY, "before")
    attempts = []

    def losing() -> None:
        attempts.append(1)
        with warehouse.transaction() as con:
            con.execute("DELETE FROM reports WHERE partition_date = ?", [DAY + timedelta(days=1)])
            con.execute("INSERT INTO reports (partition_date, summary) VALUES (?, to_json('mine'))", [DAY + timedelta(days=1)])
            _replace_reports(other, DAY, f"theirs {len(attempts)}")  # commits first

    with pytest.raises(ConflictRetriesExhausted, match="conflicted 3 times; nothing of it was written"):
        with_conflict_retries("the losing day", losing, ConflictBackoff(attempts=3, base_seconds=0.01), sleep=lambda _: None)
    assert len(attempts) == 3
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT partition_date, summary ->> '$' FROM reports").fetchall() == [(DAY, "theirs 3")]


def test_two_first_writers_of_a_new_lake_bring_its_schema_up_to_date_at_once(lake, monkeypatch):
    """A backfill from the UI started a new lake's days at once, and each run brings the lake's schema up to date
    first. One read the schema's version, the other then applied every migration, and the first failed its day:
    "Catalog Error: Column with name baseline_partition_date already exists!" (exit 3). A migration is applied only
    where, within its own transaction, it is still pending."""
    this_run, other_run = Warehouse(LOCAL, lake=lake), Warehouse(LOCAL, lake=lake)
    read, overtaken = schema.one_row, []

    def the_other_run_migrates_after_this_read(con, sql, *args):
        row = read(con, sql, *args)
        if "max(version)" in sql and not overtaken:
            overtaken.append(row[0])
            other_run.rerun_on_conflict("the other run", lambda: None)  # the whole schema, committed
        return row

    monkeypatch.setattr(schema, "one_row", the_other_run_migrates_after_this_read)
    this_run.rerun_on_conflict("this run", lambda: None)

    assert overtaken == [0]
    with this_run.connect(read_only=True) as con:
        versions = con.execute("SELECT version FROM schema_version ORDER BY version").fetchall()
    assert versions == [(version,) for version in range(1, len(schema.MIGRATIONS) + 1)]  # each applied once


def test_the_settings_name_a_lake_and_never_show_its_password(tmp_path):
    environ = {"EVAL_WAREHOUSE": "ducklake:postgres:host=db port=5432 password=s3cret dbname=eval",
               "EVAL_WAREHOUSE_DATA": "lake-data"}  # fmt: skip
    settings = Settings.from_environment(environ, cwd=tmp_path)
    warehouse = settings.warehouse()
    assert warehouse.lake == Lake("postgres:host=db port=5432 password=s3cret dbname=eval", f"{tmp_path / 'lake-data'}/")
    assert "s3cret" not in warehouse.shown and "password=***" in warehouse.shown
    assert warehouse.shared_directory == tmp_path / "lake-data"  # captured runs go where every host sees them
    assert settings.reports_dir == tmp_path / "lake-data" / "reports"  # and the report files, unless put elsewhere
    assert Settings.from_environment(environ | {"EVAL_REPORTS_DIR": "r"}, cwd=tmp_path).reports_dir == tmp_path / "r"
    assert "s3cret" not in repr(settings)
    assert settings.as_environment()["EVAL_WAREHOUSE"] == environ["EVAL_WAREHOUSE"]  # a child process gets it whole
    with pytest.raises(SettingsError, match="EVAL_WAREHOUSE"):
        Settings.from_environment({"EVAL_WAREHOUSE": "ducklake:postgres:dbname=eval"}, cwd=tmp_path)  # no data path
    with pytest.raises(SettingsError, match="EVAL_WAREHOUSE_DATA is set without"):
        Settings.from_environment({"EVAL_WAREHOUSE_DATA": "s3://bucket/lake/"}, cwd=tmp_path)


def test_a_lake_on_s3_takes_aws_variables_and_never_shows_the_secret(tmp_path):
    lake = {"EVAL_WAREHOUSE": "ducklake:postgres:host=db dbname=eval", "EVAL_WAREHOUSE_DATA": "s3://eval-lake/warehouse/"}
    with pytest.raises(SettingsError, match="s3:// needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"):
        Settings.from_environment(lake, cwd=tmp_path)
    aws = {"AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI", "AWS_ENDPOINT_URL": "http://minio:9000"}
    settings = Settings.from_environment(lake | aws, cwd=tmp_path)
    assert settings.lake_s3 == S3Access("AKIDEXAMPLE", "wJalrXUtnFEMI", "us-east-1", "minio:9000", use_ssl=False)
    assert "wJalrXUtnFEMI" not in repr(settings) and "wJalrXUtnFEMI" not in settings.warehouse().shown
    assert settings.as_environment() | aws == settings.as_environment()  # a child process reaches the same store
    assert settings.warehouse().shared_directory == tmp_path / "data"  # object storage holds no captured runs: beside the file
    assert settings.reports_dir == tmp_path / "data" / "reports"  # nor report files
    with pytest.raises(SettingsError, match="AWS_ENDPOINT_URL must be an http"):
        Settings.from_environment(lake | aws | {"AWS_ENDPOINT_URL": "minio:9000"}, cwd=tmp_path)
