"""The latest Dagster run, read from the instance's run storage with plain SQL.

`eval-pipeline status` is a read-only command that should answer in under a second; importing Dagster and opening
its instance costs about as much again. The run storage's `runs` and `run_tags` tables (SQLite under
`$DAGSTER_HOME/history`, or the Postgres database `dagster.yaml` names) are read directly instead. For any other
storage, `latest_run` answers None and the caller asks Dagster itself.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

_PARTITION_TAGS = ("dagster/partition", "dagster/asset_partition_range_start", "dagster/asset_partition_range_end")


@dataclass(frozen=True)
class LatestRun:
    run_id: str
    job_name: str
    status: str
    partitions: str  # one day, a range "FIRST...LAST", or "-" for a run without partitions


class UnknownStorage(Exception):
    """dagster.yaml configures a run storage this module does not read (the caller falls back to Dagster)."""


def latest_run(dagster_home: Path) -> LatestRun | None:
    """The most recently created run (as `instance.get_runs(limit=1)` orders them); None when there is none yet.

    Raises UnknownStorage for a storage other than the default SQLite or `storage: postgres:`."""
    config = yaml.safe_load((dagster_home / "dagster.yaml").read_text()) or {}
    storage = config.get("storage") or {}
    if "run_storage" in config or set(storage) - {"sqlite", "postgres"}:
        raise UnknownStorage(f"run storage {sorted(set(storage) | set(config) & {'run_storage'})}")
    if "postgres" in storage:
        return _postgres_latest(storage["postgres"] or {})
    base_dir = (storage.get("sqlite") or {}).get("base_dir")
    runs_db = (Path(_value(base_dir)) if base_dir else dagster_home) / "history" / "runs.db"
    if not runs_db.exists():
        return None
    with closing(sqlite3.connect(f"{runs_db.resolve().as_uri()}?mode=ro", uri=True)) as connection:
        return _read(connection.cursor(), "?")


def _postgres_latest(settings: Mapping[str, Any]) -> LatestRun | None:
    import psycopg2  # installed with dagster-postgres, the only way a `storage: postgres:` instance loads at all

    if "postgres_url" in settings:
        connection = psycopg2.connect(_value(settings["postgres_url"]))
    else:
        db = settings.get("postgres_db") or {}
        connection = psycopg2.connect(
            host=_value(db.get("hostname")),
            port=_value(db.get("port", 5432)),
            user=_value(db.get("username")),
            password=_value(db.get("password")),
            dbname=_value(db.get("db_name")),
            **{str(k): _value(v) for k, v in (db.get("params") or {}).items()},
        )
    with closing(connection), connection.cursor() as cursor:
        return _read(cursor, "%s")


def _value(setting: Any) -> str:
    """A dagster.yaml value: literal, or `{env: NAME}` read from the environment as Dagster does."""
    if isinstance(setting, Mapping) and set(setting) == {"env"}:
        value = os.environ.get(setting["env"])
        if value is None:
            raise UnknownStorage(f"environment variable {setting['env']} is not set")
        return value
    return str(setting)


def _read(cursor: Any, placeholder: str) -> LatestRun | None:
    cursor.execute("SELECT run_id, pipeline_name, status FROM runs ORDER BY id DESC LIMIT 1")
    row = cursor.fetchone()
    if row is None:
        return None
    run_id, job_name, status = row
    keys = ", ".join([placeholder] * len(_PARTITION_TAGS))
    tags = f"SELECT key, value FROM run_tags WHERE run_id = {placeholder} AND key IN ({keys})"
    cursor.execute(tags, (run_id, *_PARTITION_TAGS))
    return LatestRun(run_id, job_name, status, partitions_of(dict(cursor.fetchall())))


def partitions_of(tags: Mapping[str, str]) -> str:
    """The day a run evaluated, "FIRST...LAST" for a range, "-" for a run without partitions."""
    single, start, end = (tags.get(key) for key in _PARTITION_TAGS)
    return single or (f"{start}...{end}" if start and end else "-")
