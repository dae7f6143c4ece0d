"""Values written into SQL text, for what DuckDB cannot bind (`ATTACH`, `LOAD`, secrets) or should not: binding a
Python value makes DuckDB 1.5 import pandas, numpy and pyarrow, a third of a second a read-only command need not pay.
Only types whose text cannot carry SQL are written; anything else is refused."""

from __future__ import annotations

from datetime import date, datetime


def sql_literal(text: str) -> str:
    """A string literal: quotes doubled, and no backslash escapes exist in DuckDB's plain strings."""
    if "\x00" in text:
        raise ValueError("a SQL string cannot hold a NUL character")
    return "'" + text.replace("'", "''") + "'"


def sql_value(value: object) -> str:
    """`value` as a literal of its own type, for a prepared statement's EXECUTE (which types it as a bound
    parameter): NULL, a boolean, an integer, a string, a DATE, or a list of these."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(int(value))
    if isinstance(value, str):
        return sql_literal(value)
    if isinstance(value, date) and not isinstance(value, datetime):
        return f"DATE '{value.isoformat()}'"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(map(sql_value, value)) + "]"
    raise TypeError(f"no SQL literal for a {type(value).__name__}; bind it as a parameter")
