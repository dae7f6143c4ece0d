"""What commands print is read without pandas (`read_rows`): its parameters are written as literals into a prepared
statement's EXECUTE, and must bind exactly as DuckDB's own binding does, hostile text included."""

from __future__ import annotations

from datetime import date, datetime

import pytest

from eval_pipeline.warehouse.literals import sql_value

HOSTILE = ("it's", "'; DROP TABLE episodes; --", "back\\slash\\'", "$day", "?", "新しい\u202e", "")

STATEMENT = """SELECT $text AS text, $day + 1 AS next_day, $agent IS NULL AS no_agent, $n * 2 AS doubled,
                      list_contains($days, DATE '2026-11-02') AS listed, $flag AS flag"""


@pytest.mark.parametrize("text", HOSTILE)
def test_read_rows_binds_as_parameters_do_on_each_backend(warehouse, text):
    with warehouse.connect():  # made, so both read it the same way
        pass
    params = {"text": text, "day": date(2026, 11, 2), "agent": None, "n": 21, "days": [date(2026, 11, 2)], "flag": True}
    rows = warehouse.read_rows(STATEMENT, params)
    frame = warehouse.read_frame(STATEMENT, params)
    assert rows.values == [(text, date(2026, 11, 3), True, 42, True, True)]
    assert list(frame.columns) == list(rows.columns) and frame.iloc[0]["text"] == text
    assert rows.numeric == (False, False, False, True, False, False)
    assert warehouse.read_rows("SELECT count(*) AS n FROM episodes").values == [(0,)]  # the statement alone, unprepared
    positional = warehouse.read_rows("SELECT ? AS a, ? AS b", [text, date(2026, 1, 1)])
    assert positional.values == [(text, date(2026, 1, 1))]


@pytest.mark.parametrize("value", [1.5, datetime(2026, 11, 2, 3, 4), b"bytes", {"a": 1}])
def test_only_types_whose_text_cannot_carry_sql_are_written(value):
    with pytest.raises(TypeError, match="bind it as a parameter"):
        sql_value(value)
    with pytest.raises(ValueError, match="NUL"):
        sql_value("a\x00b")
