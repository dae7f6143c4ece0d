"""The warehouse as a DuckLake: a catalog in Postgres, the data as Parquet files on a path every host shares.

Several processes on several hosts may write at once; each day's writes are one transaction. DuckLake finds
conflicts at COMMIT ("Transaction conflict - attempting to insert into table ... but another transaction has
deleted from it"), even between writers of different days, and then the transaction is gone: the day's whole
work is retried with jittered backoff (`with_conflict_retries`), and a writer that exhausts its retries fails
with nothing of the day written.

The extensions come from the pinned wheels (`duckdb-extension-ducklake`, `duckdb-extension-postgres-scanner`, and
`duckdb-extension-httpfs` for data on object storage), loaded by path: no network, no DuckDB extension directory.
"""

from __future__ import annotations

import logging
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import TypeVar

import duckdb

from eval_pipeline.errors import InfrastructureError
from eval_pipeline.warehouse.literals import sql_literal as _literal
from eval_pipeline.warehouse.s3 import S3Access

T = TypeVar("T")
_log = logging.getLogger(__name__)
_INSTANCES: dict[tuple[Lake, tuple[tuple[str, str], ...]], duckdb.DuckDBPyConnection] = {}  # per lake and config
_INSTANCES_LOCK = threading.Lock()

SCHEME = "ducklake:"
ATTACHED_AS = "warehouse"
READ_ONLY_AS = "warehouse_read"  # the same lake, attached read-only for readers
_CONFLICT = "conflict"  # DuckLake's commit-time error: "Transaction conflict - ..."


class LakeUnavailable(InfrastructureError):
    """The lake's extensions are not installed, or its catalog cannot be attached."""


class ConflictRetriesExhausted(InfrastructureError):
    """Other writers kept committing first; nothing of this work was written."""


@dataclass(frozen=True)
class Lake:
    """Where a DuckLake warehouse lives: `catalog` follows `ducklake:` (`postgres:host=... dbname=...`, or a DuckDB
    file for a single host), `data_path` is a directory every writer shares or an object store URL (`s3://...`)."""

    catalog: str
    data_path: str
    s3: S3Access | None = None  # for a data path on object storage

    @classmethod
    def parse(cls, setting: str, data_path: str, s3: S3Access | None = None) -> Lake:
        if not setting.startswith(SCHEME) or not setting[len(SCHEME) :].strip():
            raise ValueError(f"expected {SCHEME}<catalog>, e.g. {SCHEME}postgres:host=db.internal dbname=eval")
        if not data_path:
            raise ValueError("a lake needs a data path every writer shares: a directory or an s3:// URL")
        return cls(catalog=setting[len(SCHEME) :].strip(), data_path=data_path, s3=s3)

    @property
    def shown(self) -> str:
        """The location as logs and `status` may show it: a password in the catalog's connection string hidden."""
        return f"{SCHEME}{_without_password(self.catalog)} (data {self.data_path})"

    def attach(self, con: duckdb.DuckDBPyConnection, *, read_only: bool) -> None:
        """Load the extensions, attach the lake (its catalog is created on the first attach; a reader's attachment
        is read-only) and make it the default."""
        modules = ["duckdb_extension_postgres_scanner"] if self.catalog.startswith("postgres:") else []
        modules += ["duckdb_extension_httpfs"] if self.s3 else []
        for module in [*modules, "duckdb_extension_ducklake"]:
            con.execute(f"LOAD {_literal(str(_extension_file(module)))}")
        if self.s3:
            self.s3.create_secret(con)
        name, options = (READ_ONLY_AS, ", READ_ONLY") if read_only else (ATTACHED_AS, "")
        try:
            con.execute(f"ATTACH {_literal(SCHEME + self.catalog)} AS {name} (DATA_PATH {_literal(self.data_path)}{options})")
        except duckdb.Error as exc:
            raise LakeUnavailable(f"cannot attach the warehouse lake {self.shown}: {_without_password(str(exc))}") from None
        con.execute(f"USE {name}")

    def connect(self, config: Mapping[str, str], *, read_only: bool, private: bool = False) -> duckdb.DuckDBPyConnection:
        """A new connection to the lake: a cursor of this process's one DuckDB instance that has it attached, for
        writing and (read-only) for reading. Attaching costs about a quarter of a second (two extensions, the
        catalog's Postgres connection); a cursor costs nothing, and each has its own transactions. A `private` one
        is an instance of its own, for a connection whose settings must not reach any other (users' SQL)."""
        if private:
            own = duckdb.connect(config=dict(config))
            self.attach(own, read_only=read_only)
            return own
        key = (self, tuple(sorted(config.items())))
        with _INSTANCES_LOCK:
            instance = _INSTANCES.get(key)
            if instance is None:
                instance = duckdb.connect(config=dict(config))
                self.attach(instance, read_only=False)  # first: it creates the catalog of a new lake
                self.attach(instance, read_only=True)
                _INSTANCES[key] = instance
        cursor = instance.cursor()
        cursor.execute(f"USE {READ_ONLY_AS if read_only else ATTACHED_AS}")
        return cursor


def is_conflict(error: BaseException) -> bool:
    """Whether `error` is a commit another writer won: the work is worth retrying from its start."""
    return isinstance(error, duckdb.TransactionException) and _CONFLICT in str(error).lower()


@dataclass(frozen=True)
class ConflictBackoff:
    attempts: int = 8
    base_seconds: float = 0.2
    max_seconds: float = 10.0

    def delay(self, attempt: int) -> float:
        """Full jitter: writers that collided spread out instead of colliding again."""
        return random.uniform(0, min(self.max_seconds, self.base_seconds * 2**attempt))


def with_conflict_retries(
    what: str,
    work: Callable[[], T],
    backoff: ConflictBackoff = ConflictBackoff(),
    sleep: Callable[[float], None] = time.sleep,
) -> T:
    """Run `work` (which must write all it writes in transactions that replace, so a rerun writes the same rows);
    run it again from the start while another writer's commit wins. Each rerun is logged as a warning."""
    for attempt in range(backoff.attempts):
        try:
            return work()
        except duckdb.TransactionException as exc:
            if not is_conflict(exc):
                raise
            if attempt + 1 == backoff.attempts:
                raise ConflictRetriesExhausted(
                    f"{what}: other writers' commits conflicted {backoff.attempts} times; nothing of it was written ({exc})"
                ) from exc
            delay = backoff.delay(attempt)
            _log.warning(
                "%s: another writer committed first; rerun %d of %d in %.2fs", what, attempt + 1, backoff.attempts - 1, delay
            )
            sleep(delay)
    raise AssertionError("unreachable")


def _extension_file(module: str) -> Path:
    """The extension binary a pinned wheel ships for this DuckDB."""
    try:
        package = import_module(module)
    except ImportError:
        raise LakeUnavailable(f"the lake needs the Python package {module.replace('_', '-')} (pip install it)") from None
    found = sorted(Path(next(iter(package.__path__))).glob(f"extensions/v{duckdb.__version__}/*.duckdb_extension"))
    if not found:
        raise LakeUnavailable(f"{module} ships no extension for duckdb {duckdb.__version__}: pin the same version of both")
    return found[0]


def _without_password(message: str) -> str:
    return re.sub(r"(password\s*=\s*)\S+", r"\1***", message)
