"""Every warehouse table's rows as plain values: for tests that hold one warehouse to another, or to stored answers."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from eval_pipeline.warehouse.lake import Lake

CLOCKS = {"established_at", "created_at", "scored_at", "loaded_at", "quarantined_at", "computed_at", "judged_at",
          "applied_at", "labelled_at", "finding_id", "run_id"}  # fmt: skip  # when or by which run a row was written

Row = list[object]


def warehouse_rows(root: Path, lake: Lake | None = None) -> dict[str, list[Row]]:
    """Every table's and view's rows of `root/eval.duckdb` (or of `lake`) in a stable order, as JSON has them: the
    clock columns left out, `root` replaced by ROOT."""
    with duckdb.connect(":memory:" if lake else str(root / "eval.duckdb"), read_only=not lake) as con:
        if lake:
            lake.attach(con, read_only=True)
        ours = "table_catalog = current_database() AND table_schema = 'main'"  # not a lake's catalog's own tables
        names = [
            row[0] for row in con.execute(f"SELECT table_name FROM information_schema.tables WHERE {ours} ORDER BY 1").fetchall()
        ]
        tables = {}
        for name in names:
            query = (
                f"SELECT column_name FROM information_schema.columns WHERE {ours} AND table_name = ? ORDER BY ordinal_position"
            )
            columns = [row[0] for row in con.execute(query, [name]).fetchall() if row[0] not in CLOCKS]
            quoted = ", ".join(f'"{column}"' for column in columns)
            rows = con.execute(f"SELECT {quoted} FROM {name}").fetchall()
            tables[name] = sorted(json.loads(json.dumps(rows, default=str).replace(str(root), "ROOT")), key=_order)
    return tables


def _order(row: Row) -> str:
    """Sort key: the row with numbers rounded, so values that differ only below a test's tolerance sort alike."""
    return json.dumps([round(value, 6) if isinstance(value, float) else value for value in row], sort_keys=True)
