"""Helpers of the warehouse tests."""

from pathlib import Path

import duckdb

from eval_pipeline.warehouse.schema import MIGRATIONS


def warehouse_of_version(path: Path, version: int) -> duckdb.DuckDBPyConnection:
    """A warehouse file as a release of schema `version` left it (its first `version` migrations), open to fill."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
    for number, migration in enumerate(MIGRATIONS[:version], 1):
        con.execute(migration)
        con.execute("INSERT INTO schema_version VALUES (?, now())", [number])
    return con
