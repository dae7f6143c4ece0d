"""JSON as every output of ours writes it: strict RFC 8259, so any parser reads it (Node's `JSON.parse` too).

Python's `json` writes NaN and Infinity, which strict parsers reject. Here an undefined number (NaN,
pandas' NA and NaT) and an unbounded one (±inf, an interval without a finite bound) are `null`, and
numpy scalars and arrays, decimals, dates, times, intervals and UUIDs become their JSON equivalents.
"""

from __future__ import annotations

import json
import math
import re
import sys
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any
from uuid import UUID

_AS_THEY_ARE = frozenset({str, int, bool, type(None)})  # exactly these types, not numpy's or a subclass of them


def plain(value: Any) -> Any:
    """`value` with only what strict JSON holds: finite numbers, strings, booleans, null, lists and objects.

    numpy and pandas values exist only where those are loaded, so they are looked up, not imported: a small command
    writing JSON does not pay for importing pandas."""
    if type(value) in _AS_THEY_ARE:
        return value  # most values of a report or an alert: nothing to look up
    np, pd = sys.modules.get("numpy"), sys.modules.get("pandas")
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple) or (np is not None and isinstance(value, np.ndarray)):
        return [plain(item) for item in value]
    if np is not None and isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if pd is not None and (value is pd.NA or value is pd.NaT):
        return None
    if isinstance(value, datetime | date):  # pandas' Timestamp among them
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value) if value.is_finite() else None
    if isinstance(value, time | timedelta | UUID):  # SQL's TIME, INTERVAL and UUID, as they read
        return str(value)
    return value


def dumps(value: Any, indented: bool = False) -> str:
    """`json.dumps` of `plain(value)`, refusing anything non-finite that slipped through; `indented` by two spaces.

    Indented text is written by orjson (json's indenting encoder is pure Python: 1.1 s of the 36 MB report of a
    million episodes, orjson's 0.05 s), with json's text: characters past ASCII (and DEL) escaped as json escapes
    them; only a number may be written otherwise (`0.00001`, not `1e-05`). What orjson refuses (an integer past 64
    bits, a lone surrogate) is written by json."""
    plain_value = plain(value)
    if not indented:
        return json.dumps(plain_value, allow_nan=False)
    import orjson  # here: a small command that prints a line of JSON does not load it

    try:
        text = orjson.dumps(plain_value, option=orjson.OPT_INDENT_2).decode()
    except orjson.JSONEncodeError:
        return json.dumps(plain_value, allow_nan=False, indent=2)
    return text if text.isascii() and "\x7f" not in text else _PAST_ASCII.sub(_escaped, text)


_PAST_ASCII = re.compile(r"[^\x00-\x7e]+")  # only ever inside a string: orjson writes the rest in ASCII


def _escaped(run: re.Match[str]) -> str:
    """A run of characters past ASCII as json escapes them (`\\u00e9`; a surrogate pair past the BMP)."""
    return json.dumps(run.group())[1:-1]
