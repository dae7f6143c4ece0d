"""Users' own SQL over the warehouse, on a read-only connection."""

from __future__ import annotations

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse


def run_read_only(warehouse: Warehouse, sql: str) -> pd.DataFrame:
    """Run one statement; DuckDB's read-only mode refuses writes, whatever the SQL says."""
    with warehouse.connect(read_only=True) as con:
        return con.execute(sql).df()
