"""The one row a statement always returns: an aggregate, an INSERT's count, a row it just wrote."""

from __future__ import annotations

from typing import Any

import duckdb


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> tuple[Any, ...]:
    row = con.execute(sql, params).fetchone()
    if row is None:
        raise LookupError(f"no row where one is certain: {sql}")
    return row
