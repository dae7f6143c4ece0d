"""Dagster's SQLite instance storage, keeping one SQLAlchemy engine per database file.

Dagster's SQLite storages build a new engine for every connection, and so compile every statement anew: a run writes
each of its events (108 for a 10-episode day) through a connection of its own. Keeping the engines made a 10-episode
run take 3.6 s instead of 4.3 s after its imports (medians of 5, alternated). Each engine pools its connections too
(SQLAlchemy's pool for a SQLite file): a use borrows an open one, where each event was a file opened, set up
(`_committed_without_sync`) and closed (a 10-episode run: 2.49 s against 2.65 s, medians of 5, alternated). An idle
pooled connection holds no lock; it holds the file open, which keeps its write-ahead log from being folded in and
deleted after every use. The pools are emptied before Dagster deletes the files (`wipe`) and when the instance is
disposed; the last connection closed folds the log in. The files and their layout are Dagster's default
(`history/runs.db`, `history/runs/*.db`, `schedules/schedules.db` under `$DAGSTER_HOME`): an instance keeps its history
whichever storage reads it.

`Instance` (dagster.yaml `instance_class`) makes `SqliteStorage` the storage of an instance whose dagster.yaml names
none; a `storage:` block (Postgres: deploy/dagster-postgres.yaml) still takes its place.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml
from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage as DagsterEventLogStorage
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage as DagsterRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage as DagsterScheduleStorage
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from dagster._core.storage.sqlite_storage import (
    DagsterSqliteStorage,
    _event_logs_directory,
    _runs_directory,
    _schedule_directory,
)
from dagster._serdes import ConfigurableClassData
from sqlalchemy import Engine, create_engine, event, make_url
from sqlalchemy.engine import Connection

ENGINES_KEPT = 16  # the index shard, the runs and schedules files, and the latest runs' event files a process reads


class _Engines:
    """Engines by database URL, the most recently used ENGINES_KEPT of them (a webserver reads many runs' files)."""

    def __init__(self) -> None:
        self._kept: OrderedDict[str, Engine] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, url: str, connect_args: Mapping[str, Any] | None = None) -> Engine:
        with self._lock:
            engine = self._kept.pop(url, None) or _engine(url, connect_args)
            self._kept[url] = engine
            while len(self._kept) > ENGINES_KEPT:
                self._kept.popitem(last=False)[1].dispose()
            return engine

    def release(self, under: str) -> None:
        """Close the pooled connections to the file `under`, or to the files under that directory (a later use opens
        them again)."""
        with self._lock:
            for url, engine in self._kept.items():
                path = make_url(url).database
                if path and Path(path).resolve().is_relative_to(Path(under).resolve()):
                    engine.dispose()


def _engine(url: str, connect_args: Mapping[str, Any] | None) -> Engine:
    # a file's engine pools its connections; past the pool's, as many more as are asked at once (a webserver's threads),
    # each closed when given back, as every connection was before: none waits for another to be given back
    engine = create_engine(url, connect_args=connect_args or {}, max_overflow=-1)
    event.listen(engine, "connect", _committed_without_sync)
    return engine


def _committed_without_sync(connection: Any, _record: Any) -> None:
    """Commits that write Dagster's write-ahead log without waiting for the disk (`synchronous=NORMAL`, SQLite's
    advice for WAL): a run commits its events one by one, and each waited on an fsync. A process that dies loses
    nothing committed; a power cut may lose the last events, never the file's consistency."""
    connection.execute("PRAGMA synchronous=NORMAL")


_ENGINES = _Engines()


@contextmanager
def _transaction(engine: Engine) -> Iterator[Connection]:
    with engine.connect() as connection, connection.begin():
        yield connection


class _KeptEngine:
    """`connect` of a storage of one file (`_conn_string`: Dagster's runs and schedules storages), its engine kept."""

    _conn_string: str

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with _transaction(_ENGINES.get(self._conn_string)) as connection:
            yield connection


class SqliteRunStorage(_KeptEngine, DagsterRunStorage):
    pass


class SqliteScheduleStorage(_KeptEngine, DagsterScheduleStorage):
    pass


class SqliteEventLogStorage(DagsterEventLogStorage):
    def wipe(self) -> None:
        """As Dagster's, which deletes the runs' files: none is held open meanwhile."""
        _ENGINES.release(self._base_dir)
        super().wipe()

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        """As Dagster's (one connection at a time, each shard's tables made on its first use), with the shard's engine
        kept."""
        with self._db_lock:
            engine = _ENGINES.get(self.conn_string_for_shard(shard), {"timeout": SQLITE_BUSY_TIMEOUT_SECONDS})
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with _transaction(engine) as connection:
                yield connection


class SqliteStorage(DagsterSqliteStorage):
    """Dagster's SQLite storage made of the storages above, in the same directories."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None):
        """As Dagster's `__init__`, with these storages in place of its own (which it would open, and migrate, too)."""
        self.base_dir = base_dir
        self._run_storage = SqliteRunStorage.from_local(_runs_directory(base_dir))
        self._event_log_storage = SqliteEventLogStorage(_event_logs_directory(base_dir))
        self._schedule_storage = SqliteScheduleStorage.from_local(_schedule_directory(base_dir))
        self._inst_data = inst_data
        super(DagsterSqliteStorage, self).__init__()

    @classmethod
    def from_config_value(cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]) -> SqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)


class Instance(DagsterInstance):
    """Dagster's instance, whose storage is `SqliteStorage` unless dagster.yaml names one."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}  # no settings beyond Dagster's

    @staticmethod
    def config_defaults(base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        storage = ConfigurableClassData(__name__, SqliteStorage.__name__, yaml.dump({"base_dir": base_dir}))
        return {**InstanceRef.config_defaults(base_dir), "storage": storage}

    def dispose(self) -> None:
        """As Dagster's, closing the pooled connections to the files under its home."""
        _ENGINES.release(self.root_directory)
        super().dispose()
