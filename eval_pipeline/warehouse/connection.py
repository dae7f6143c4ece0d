"""The warehouse: one DuckDB file, opened briefly, by one process at a time.

DuckDB admits one writing process per file, and even read-only opens fail while
another process holds it. Every opener in every process (run workers, checks, the CLI's
`query`) therefore takes one file lock first, with a bounded wait and a plain "warehouse
busy" error after it (DESIGN §6). Connections are closed in `finally`.

Each connection holds DuckDB to EVAL_DUCKDB_MEMORY_LIMIT (1 GiB unless set): past it DuckDB spills temp
tables, sorts, joins and windows to `<warehouse>.tmp`. What DuckDB cannot spill (an ordered list aggregate, a
result handed over in one piece) is only ever a part of a day of a fixed number of episodes, so the limit
holds whatever the day's size.

With a `Lake` (EVAL_WAREHOUSE=ducklake:...), the warehouse is a DuckLake instead (`lake.py`): no file lock, any
number of writers on any host; `rerun_on_conflict` runs a day's work again when another writer's commit won.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, closing, contextmanager
from datetime import date
from pathlib import Path
from tempfile import TemporaryDirectory
from typing import TYPE_CHECKING, TypeVar

import duckdb
from filelock import FileLock, Timeout

from eval_pipeline.errors import InfrastructureError
from eval_pipeline.warehouse.lake import Lake, with_conflict_retries
from eval_pipeline.warehouse.literals import sql_value
from eval_pipeline.warehouse.rows import Rows, one_row
from eval_pipeline.warehouse.schema import MIGRATIONS, migrate, schema_version
from eval_pipeline.warehouse.transactions import atomically

if TYPE_CHECKING:  # frames are imported by what reads or writes them: read-only commands print without pandas
    import pandas as pd
    import pyarrow as pa

T = TypeVar("T")


# How long `Warehouse.held` leaves the file's lock free: two of a waiting opener's polls of it (filelock's 50 ms)
TURN_SECONDS = 0.1


class WarehouseBusy(InfrastructureError):
    """Another process held the warehouse longer than the configured wait."""


class Warehouse:
    def __init__(
        self, path: Path, lock_timeout_seconds: float = 300.0, memory_limit: str | None = None, lake: Lake | None = None
    ):
        self.path = Path(path)  # the single file; with a lake, only where this host keeps its local state beside it
        self.lake = lake
        self.lock_timeout_seconds = lock_timeout_seconds
        self.memory_limit = memory_limit
        self._migrated = False
        self._session: duckdb.DuckDBPyConnection | None = None

    def waiting_at_most(self, seconds: float) -> Warehouse:
        """The same warehouse, its openers waiting at most `seconds` for the file's lock."""
        return Warehouse(self.path, seconds, self.memory_limit, self.lake)

    def spool(self, prefix: str) -> TemporaryDirectory[str]:
        """A private directory for what a step sets aside rather than hold in memory, removed after: beside the warehouse
        file, on the disk DuckDB spills to, not in the host's temporary directory, which may be memory (tmpfs)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return TemporaryDirectory(prefix=prefix, dir=self.path.parent)

    @property
    def shared_directory(self) -> Path:
        """Where files that belong with the warehouse go (captured runs): beside the single file, or in a lake's data
        directory, which every host shares (a lake on object storage: beside the file, on this host only)."""
        if self.lake is not None and "://" not in self.lake.data_path:
            return Path(self.lake.data_path)
        return self.path.parent

    @property
    def shown(self) -> str:
        """Where the warehouse is, as logs and `status` may say it (a lake's catalog password hidden)."""
        return self.lake.shown if self.lake else str(self.path)

    def exists(self) -> bool:
        """Whether there is a warehouse to read yet (a lake's catalog is made by its first attach)."""
        return self.lake is not None or self.path.exists()

    @contextmanager
    def session(self, *, read_only: bool = False) -> Iterator[None]:
        """Hold one connection (and the lock) across several operations, such as one asset's day, or a command's
        reads (`read_only`).

        Opening a DuckDB file costs tens of milliseconds; a session pays it once. Keep sessions
        short: every other process waits for the lock meanwhile.
        """
        if self._session is not None:
            yield
            return
        with self.connect(read_only=read_only) as con:
            self._session = con
            try:
                yield
            finally:
                self._session = None

    @contextmanager
    def held(self, seconds: float) -> Iterator[Callable[[], None]]:
        """One connection across many short sessions in a row, such as a backfill's days of one step: opening and
        closing the file took 0.3 s of a day of two episodes (a checkpoint at each close). The `between` it yields, called
        between sessions, closes it once it has been held `seconds` and opens it again after TURN_SECONDS, so that a
        process waiting for the lock (a nightly run, the viewer) gets a turn as it did between days: closed and opened
        again at once every half second, none came in 3 s. A lake keeps a connection per session: its conflict retries
        run each attempt on one of their own."""
        if self.lake is not None or self._session is not None:
            yield lambda: None
            return
        with ExitStack() as stack:
            opened = time.monotonic()
            stack.enter_context(self.session())

            def between() -> None:
                nonlocal opened
                if time.monotonic() - opened >= seconds:
                    stack.close()
                    time.sleep(TURN_SECONDS)
                    stack.enter_context(self.session())
                    opened = time.monotonic()

            yield between

    def rerun_on_conflict(self, what: str, work: Callable[[], T], *, one_connection: bool = True) -> T:
        """`work` (which replaces what it writes, so a rerun writes the same rows), on one connection unless it waits
        on something else between its reads and writes (an LLM); on a lake, run again from its start while another
        writer's commit wins, with jittered backoff."""

        def attempt() -> T:
            if not one_connection:
                return work()
            with self.session():
                return work()

        return with_conflict_retries(what, attempt) if self.lake and self._session is None else attempt()

    @contextmanager
    def connect(self, *, read_only: bool = False, private: bool = False) -> Iterator[duckdb.DuckDBPyConnection]:
        """A connection, closed after; a `private` one shares no settings with the process's others (a lake's
        connections are otherwise cursors of one DuckDB instance), for users' SQL."""
        if self._session is not None and not private:
            yield self._session
            return
        with self._turn():
            # once per object (a run's steps share one), and again when the file is gone (a sensor's lives for days)
            if not self.exists() or (not self._migrated and (not read_only or self._version() < len(MIGRATIONS))):
                self._migrate()
            con = self._open(read_only, private)
            try:
                yield con
            finally:
                con.close()

    @contextmanager
    def _turn(self) -> Iterator[None]:
        """The file's lock: DuckDB admits one process per file. A lake needs none."""
        if self.lake is not None:
            yield
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = FileLock(f"{self.path}.lock", timeout=self.lock_timeout_seconds)
        try:
            lock.acquire()
        except Timeout:
            raise WarehouseBusy(
                f"warehouse busy: {self.path} was held by another process for over {self.lock_timeout_seconds:.0f}s"
            ) from None
        try:
            yield
        finally:
            lock.release()

    def _version(self) -> int:
        return schema_version(self.path) if self.lake is None else 0  # a lake's version is read by `migrate` itself

    def _migrate(self) -> None:
        """Bring an older (or new) warehouse up to date first; on a lake, two first writers may race to it."""

        def migrated() -> None:
            if self.lake is None and not self.path.exists():
                self._create()
                return
            with closing(self._open(read_only=False)) as con:
                if migrate(con) and self.lake is None:
                    # DuckDB 1.5.5 cannot replay a WAL holding an ADD COLUMN on a table with a `DEFAULT current_timestamp`
                    # column (migrations, new dimensions): a process killed before the next checkpoint would leave a
                    # warehouse nothing can open. Written to the file now, the WAL never holds one.
                    con.execute("CHECKPOINT")

        with_conflict_retries("migrating the warehouse", migrated) if self.lake else migrated()
        self._migrated = True

    def _create(self) -> None:
        """A new warehouse file, made beside its path and moved there once migrated and checkpointed: a process
        killed between the migrations' commit and their checkpoint (a Ctrl-C as a run's first step began) left a
        file whose WAL held them, which DuckDB 1.5.5 cannot replay (see `_migrate`); now it leaves none."""
        making = self.path.with_name(f"{self.path.name}.new")
        for leftover in (making, making.with_name(f"{making.name}.wal")):  # of a process killed while making it
            leftover.unlink(missing_ok=True)
        with closing(duckdb.connect(str(making))) as con:
            con.execute("SET TimeZone = 'UTC'")
            migrate(con)
            con.execute("CHECKPOINT")
        os.replace(making, self.path)

    def _open(self, read_only: bool, private: bool = False) -> duckdb.DuckDBPyConnection:
        limit = {"memory_limit": self.memory_limit} if self.memory_limit else {}
        if self.lake is None:
            con = duckdb.connect(str(self.path), read_only=read_only, config=dict(limit))
        else:  # spills stay on this host, as the file's do
            con = self.lake.connect({**limit, "temp_directory": f"{self.path}.tmp"}, read_only=read_only, private=private)
        con.execute("SET TimeZone = 'UTC'")
        return con

    @contextmanager
    def transaction(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A write connection inside BEGIN/COMMIT: all of a partition's rows land, or none."""
        with self.connect() as con, atomically(con):
            yield con

    def read_frame(self, sql: str, params: list | dict | None = None) -> pd.DataFrame:
        with self.connect(read_only=self.exists()) as con:
            return frame_of(con.execute(sql, params or []))

    def read_rows(self, sql: str, params: list | dict | None = None) -> Rows:
        """As `read_frame`, without pandas: for what a command prints. The statement is prepared and its parameters
        given to EXECUTE as literals (`sql_value`), typed as bound ones would be: binding them from Python would
        import pandas (see `literals`)."""
        with self.connect(read_only=self.exists()) as con:
            if not params:
                return Rows.fetched(con.execute(sql))
            con.execute(f"PREPARE read_rows AS {sql}")
            if isinstance(params, dict):
                arguments = ", ".join(f"{name} := {sql_value(value)}" for name, value in params.items())
            else:
                arguments = ", ".join(map(sql_value, params))
            return Rows.fetched(con.execute(f"EXECUTE read_rows({arguments})"))


@contextmanager
def second_cursor(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """Another cursor on `con`'s database (to read while `con` writes), closed after. A cursor starts in the
    process's default database, so it is pointed at the one `con` uses: a lake is an attached one."""
    with closing(con.cursor()) as cursor:
        cursor.execute(f'USE "{one_row(con, "SELECT current_database()")[0]}"')
        yield cursor


def of_agent(agent_id: str = "agent_id", agent: str = "$agent") -> str:
    """SQL true for a row of the agent a statement is scoped to (`run --agent`, a viewer filter), or for every row
    when that agent is NULL: the one way the warehouse narrows a read or a write to one agent."""
    return f"({agent} IS NULL OR {agent_id} = {agent})"


# One day's rows of the agent `$agent` (every agent's, when NULL).
DAY_OF_AGENT = f"partition_date = $day AND {of_agent()}"


def day_scope(day: date, agent_id: str | None) -> tuple[str, dict[str, object]]:
    """The condition for one day's rows (one agent's, when scoped) and its parameters; a table of no agent's rows
    (`reports`) is asked only without an agent."""
    if not agent_id:
        return "partition_date = $day", {"day": day}
    return DAY_OF_AGENT, {"day": day, "agent": agent_id}


def clear_partition(
    con: duckdb.DuckDBPyConnection,
    table: str,
    day: date,
    agent_id: str | None = None,
    within: tuple[str, list[str]] | None = None,
) -> None:
    """Delete one partition's rows (only one agent's, when scoped; only those whose column `within[0]` is one of
    `within[1]`, when given)."""
    scope, params = day_scope(day, agent_id)
    if within:
        scope, params["within"] = f"{scope} AND list_contains($within, {within[0]})", within[1]
    con.execute(f"DELETE FROM {table} WHERE {scope}", params)


def frame_of(result: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """The pending result on `result` as its `.df()` gives it, every column of text, number, truth value or date read
    through Arrow: `.df()` makes a Python object of each text, which pandas then turns into Arrow again, holding the
    GIL the steps' other threads wait on (a part of 50,000 scoring rows: 0.19 s against 0.30-0.37 s when all but its
    lists went through `.df()`), and each list of text into a numpy array twice as slowly as Arrow. Any other kind of
    column (a struct, a list of numbers, which `.df()` gives as a masked array) is still converted by DuckDB."""
    return _frame(result, result.to_arrow_table())


def frames_of(con: duckdb.DuckDBPyConnection, sql: str, params: dict, rows: int) -> Iterator[pd.DataFrame]:
    """`sql`'s result as `frame_of` gives it, `rows` at a time: what holds them is set by `rows`, not by the result."""
    import pyarrow as pa

    with closing(con.cursor()) as converter:  # a query on `con` would end the result it streams
        for batch in con.execute(sql, params).to_arrow_reader(rows):
            yield _frame(converter, pa.Table.from_batches([batch]))


def _frame(con: duckdb.DuckDBPyConnection, table: pa.Table) -> pd.DataFrame:
    import pandas as pd

    columns = {name: _as_df_gives(column) for name, column in zip(table.column_names, table.columns, strict=True)}
    others = [name for name, values in columns.items() if values is None]
    if others:
        converted = con.from_arrow(table.select(others)).df()
        columns.update({name: converted[name] for name in others})
    return pd.DataFrame(columns, index=pd.RangeIndex(table.num_rows))


def _as_df_gives(column: pa.ChunkedArray) -> pd.Series | None:
    """`column` as `.df()` converts it (None for a kind of column left to `.df()`): numbers and truth values with a
    NULL in a masked array, without one in numpy; dates as timestamps; decimals as floats; a NULL list as NA; a column
    of text that is all NULL, or has no rows, as Python objects."""
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.types as kind

    of, nulls, rows = column.type, column.null_count, len(column)
    if kind.is_string(of) or kind.is_large_string(of):
        if nulls == rows:
            return pd.Series(np.full(rows, None, dtype=object))
        # copied out of DuckDB's memory, which a frame would hold while DuckDB allocates the next (the scoring step of a
        # million episodes peaked at 1,760 MiB against 1,590 MiB so, in the same time)
        return pa.chunked_array([pa.concat_arrays([chunk]) for chunk in column.chunks], of).to_pandas()
    if kind.is_integer(of) or kind.is_boolean(of):
        if not nulls:
            return pd.Series(column.to_numpy())
        values = column.fill_null(False if kind.is_boolean(of) else 0).to_numpy()
        mask = column.is_null().to_numpy()
        masked = pd.arrays.BooleanArray(values, mask) if kind.is_boolean(of) else pd.arrays.IntegerArray(values, mask)
        return pd.Series(masked)
    if kind.is_floating(of) or kind.is_timestamp(of):
        return column.to_pandas()
    if kind.is_decimal(of):
        return column.cast(pa.float64()).to_pandas()
    if kind.is_date32(of):
        return column.cast(pa.timestamp("us")).to_pandas()
    if kind.is_list(of) and kind.is_string(of.value_type):
        values = column.to_pandas()
        return values.where(values.notna(), pd.NA)
    return None


def insert_rows(
    con: duckdb.DuckDBPyConnection, table: str, incoming: pd.DataFrame | pa.Table, constants: dict[str, object] | None = None
) -> int:
    """Append `incoming` to `table`, columns matched by name, with a column per name of `constants` holding its value
    in every row. DuckDB reads `incoming` by this parameter's name (a replacement scan): a registered view would be a
    catalog entry that an open transaction keeps, rows and all, until COMMIT. A frame goes in as Arrow: DuckDB's scan of
    a frame's object columns (lists above all) took twice as long (50,000 `scores` rows: 0.50 s against 0.22 s)."""
    import pyarrow as pa

    if not isinstance(incoming, pa.Table):
        incoming = pa.Table.from_pandas(incoming, preserve_index=False)
    constants = constants or {}
    columns = "".join(f", ${name} AS {name}" for name in constants)
    con.execute(f"INSERT INTO {table} BY NAME SELECT *{columns} FROM incoming", constants)
    return len(incoming)


def replace_partition(
    con: duckdb.DuckDBPyConnection,
    table: str,
    day: date,
    rows: pd.DataFrame | str,
    agent_id: str | None = None,
    params: list | dict | None = None,
    within: tuple[str, list[str]] | None = None,
) -> int:
    """Replace one partition's rows (only one agent's, when scoped; only those whose column `within[0]`
    is one of `within[1]`, when given) with `rows`.

    `rows` is a DataFrame or a SELECT over the connection; columns are matched by name, never
    by position. Call inside `Warehouse.transaction()`.
    """
    clear_partition(con, table, day, agent_id, within)
    if isinstance(rows, str):
        return one_row(con, f"INSERT INTO {table} BY NAME {rows}", params or [])[0]
    return insert_rows(con, table, rows) if len(rows) else 0
