"""Rows as plain Python values: the one row a statement always returns, and a whole answer a command prints."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import duckdb

if TYPE_CHECKING:
    import pandas as pd

_SIGNED = ("tinyint", "smallint", "integer", "bigint", "hugeint")
_NUMBERS = frozenset((*_SIGNED, *(f"u{name}" for name in _SIGNED), "float", "double", "decimal"))  # DuckDB's type ids


def one_row(con: duckdb.DuckDBPyConnection, sql: str, params: object = None) -> tuple[Any, ...]:
    row = con.execute(sql, params).fetchone()
    if row is None:
        raise LookupError(f"no row where one is certain: {sql}")
    return row


def _blob_text(value: bytes) -> str:
    """A BLOB as DuckDB writes it (`::VARCHAR`, its own shell): printable ASCII as it is, any other byte and the
    quotes and backslash as `\\xHH`; Python's `b'...'` is no SQL, and JSON has no bytes."""
    return "".join(chr(byte) if 32 <= byte <= 126 and byte not in b"\\'\"" else f"\\x{byte:02X}" for byte in value)


@dataclass(frozen=True)
class Rows:
    """A statement's whole answer as DuckDB gives it to Python (a DATE a `date`, NULL `None`), for the commands that
    print one: reading it into pandas would cost a read-only command a third of a second of imports."""

    columns: tuple[str, ...]
    numeric: tuple[bool, ...]  # whether each column holds numbers (aligned right on a terminal)
    values: list[tuple[Any, ...]]

    @classmethod
    def fetched(cls, result: duckdb.DuckDBPyConnection) -> Rows:
        """The rest of an executed statement's answer."""
        description = result.description or []
        values = result.fetchall()
        blobs = [at for at, column in enumerate(description) if column[1].id == "blob"]
        if blobs:
            values = [tuple(_blob_text(v) if at in blobs and v is not None else v for at, v in enumerate(row)) for row in values]
        return cls(
            tuple(column[0] for column in description),
            tuple(column[1].id in _NUMBERS for column in description),
            values,
        )

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Rows:
        return cls(
            tuple(str(column) for column in frame.columns),
            tuple(dtype.kind in "iuf" for dtype in frame.dtypes),
            list(frame.astype(object).itertuples(index=False, name=None)),
        )

    def column(self, name: str) -> list[Any]:
        at = self.columns.index(name)
        return [row[at] for row in self.values]

    def records(self) -> list[dict[str, Any]]:
        """Each row as an object: a name the answer repeats (`SELECT s.*, e.*`) gets `_1`, `_2`, ... as DuckDB's frames
        name it, since an object holds a key once and the later column would silently replace the earlier."""
        keys: list[str] = []
        taken: set[str] = set()  # DuckDB's names are case-insensitive
        for column in self.columns:
            key, number = column, 0
            while key.lower() in taken:
                number += 1
                key = f"{column}_{number}"
            keys.append(key)
            taken.add(key.lower())
        return [dict(zip(keys, row, strict=True)) for row in self.values]
