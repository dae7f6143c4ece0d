"""BEGIN/COMMIT with a ROLLBACK that never hides why the transaction failed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextlib import contextmanager

import duckdb


@contextmanager
def atomically(con: duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """All of the block's writes, or none. A COMMIT that fails (a full disk: "Could not write file ...: No space
    left on device") has already ended the transaction, so the ROLLBACK after it would raise "cannot rollback -
    no transaction is active" over the real error; that one is raised instead."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield con
        con.execute("COMMIT")
    except BaseException:
        with contextlib.suppress(duckdb.TransactionException):
            con.execute("ROLLBACK")
        raise
