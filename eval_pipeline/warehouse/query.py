"""Users' own SQL over the warehouse, on a read-only connection."""

from __future__ import annotations

from eval_pipeline.errors import UserInputError
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.rows import Rows


def run_read_only(warehouse: Warehouse, sql: str) -> Rows:
    """Run one statement over the warehouse and nothing else: DuckDB's read-only mode refuses writes to it,
    and with external access off (and locked) the SQL cannot read or write other files either
    (`COPY ... TO`, `read_csv`, `ATTACH`, extensions)."""
    with warehouse.connect(read_only=True, private=True) as con:
        con.execute("SET enable_external_access = false")
        con.execute("SET lock_configuration = true")
        result = con.execute(sql)
        if result is None:  # DuckDB's answer to text without a statement (empty, blank, only comments)
            raise UserInputError("no SQL statement to run: give one, e.g. SELECT * FROM agent_daily")
        return Rows.fetched(result)
