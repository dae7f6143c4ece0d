"""Frames cross between DuckDB and pandas through Arrow where DuckDB's own conversion is slow (list columns): what
crosses must be what `.df()` and DuckDB's scan of a frame give, NULLs, empty lists and every column type of the
tables included."""

from __future__ import annotations

import duckdb
import numpy as np
import pandas as pd

from eval_pipeline.warehouse.connection import frame_of, insert_rows

ROWS = """
SELECT * FROM (VALUES
    ('e1', DATE '2026-11-02', ['a', NULL], [1, 2], [0.5, NULL]::DOUBLE[], true, 3, 1.5, TIMESTAMPTZ '2026-11-02 10:00:00+00'),
    ('e2', DATE '2026-11-03', NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    ('e3', NULL, [], [], [], false, -1, 'NaN'::DOUBLE, TIMESTAMPTZ '2026-11-03 23:59:59.5+00')
) t(episode_id, day, tools, counts, scores, passed, steps, cost, seen_at)
"""


def _same(expected: pd.DataFrame, actual: pd.DataFrame) -> None:
    assert list(actual.columns) == list(expected.columns)
    assert actual.dtypes.to_dict() == expected.dtypes.to_dict()
    for column in expected.columns:
        for want, got in zip(expected[column], actual[column], strict=True):
            if isinstance(want, np.ndarray):
                assert isinstance(got, np.ndarray) and got.dtype == want.dtype and want.tolist() == got.tolist()
            else:
                assert (pd.isna(want) and pd.isna(got) and type(want) is type(got)) or want == got, (column, want, got)


def test_frame_of_reads_what_df_reads():
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    _same(con.execute(ROWS).df(), frame_of(con.execute(ROWS)))
    scalars = "SELECT episode_id, passed, steps FROM (" + ROWS + ")"
    _same(con.execute(scalars).df(), frame_of(con.execute(scalars)))  # no list: `.df()` itself
    empty = ROWS + " WHERE false"
    _same(con.execute(empty).df(), frame_of(con.execute(empty)))


KINDS = """
SELECT * FROM (VALUES
    (1::TINYINT, 1::SMALLINT, 1::INTEGER, 1::BIGINT, 1::UBIGINT, 1::HUGEINT, 1.25::DECIMAL(10, 2), 1.5::FLOAT, true,
     'x', '{"a": [1]}'::JSON, NULL::VARCHAR, TIMESTAMP '2026-11-02 10:00:00', {'k': 1}, MAP {'k': 2}, 5::INTEGER),
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 6),
    (-2, -2, -2, -2, 2, -2, -0.5, 'NaN'::FLOAT, false, '', '[]', NULL, NULL, {'k': NULL}, MAP {}, 7)
) t(tiny, small, int, big, ubig, huge, dec, float, bool, text, json, no_text, ts, struct, map, never_null)
"""


def test_frame_of_reads_every_kind_of_column_as_df_reads_it():
    """With NULLs (masked arrays), without (numpy), all NULL (text as objects), and no rows at all."""
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    for rows in (KINDS, KINDS + " WHERE never_null <> 6", KINDS + " WHERE never_null = 6", KINDS + " WHERE false"):
        _same(con.execute(rows).df(), frame_of(con.execute(rows)))


def test_insert_rows_lands_a_frame_as_duckdb_scans_it():
    """Written from the frame `.df()` reads, the rows read back are those DuckDB's own scan of the frame writes (a NaN
    lands as NULL, as pandas means it)."""
    stored = "SELECT * EXCLUDE (counts, scores) FROM (" + ROWS + ")"  # lists of text: what the tables hold
    con = duckdb.connect()
    con.execute("SET TimeZone = 'UTC'")
    con.execute(f"CREATE TABLE t AS {stored} WHERE false")
    con.execute("CREATE TABLE scanned AS SELECT * FROM t")
    frame = con.execute(stored).df()
    con.execute("INSERT INTO scanned BY NAME SELECT * FROM frame")  # DuckDB's scan of the frame, as before
    assert insert_rows(con, "t", frame) == 3
    written = con.execute("SELECT * FROM t ORDER BY episode_id").fetchall()
    assert written == con.execute("SELECT * FROM scanned ORDER BY episode_id").fetchall()
    assert written[1][2:] == (None,) * 5 and written[2][2] == []


def test_every_list_the_tables_hold_is_of_text(warehouse):
    """A frame's list of numbers read by `.df()` is a masked array, whose masked values Arrow would write as numbers:
    `insert_rows` takes frames through Arrow because no table holds such a list. Adding one means changing that."""
    with warehouse.connect() as con:
        kinds = con.execute(
            "SELECT DISTINCT data_type FROM information_schema.columns "
            "WHERE data_type LIKE '%[]%' OR data_type LIKE 'STRUCT%' OR data_type LIKE 'MAP%'"
        ).fetchall()
    assert kinds == [("VARCHAR[]",)]
