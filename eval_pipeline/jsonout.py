"""JSON as every output of ours writes it: strict RFC 8259, so any parser reads it (Node's `JSON.parse` too).

Python's `json` writes NaN and Infinity, which strict parsers reject. Here an undefined number (NaN,
pandas' NA and NaT) and an unbounded one (±inf, an interval without a finite bound) are `null`, and
numpy scalars and arrays, dates and timestamps become their JSON equivalents.
"""

from __future__ import annotations

import json
import math
from datetime import date, datetime
from typing import Any

import numpy as np
import pandas as pd


def plain(value: Any) -> Any:
    """`value` with only what strict JSON holds: finite numbers, strings, booleans, null, lists and objects."""
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [plain(item) for item in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, datetime | date | pd.Timestamp):
        return None if pd.isna(value) else value.isoformat()
    if value is pd.NA or value is pd.NaT:
        return None
    return value


def dumps(value: Any, **options: Any) -> str:
    """`json.dumps` of `plain(value)`, refusing anything non-finite that slipped through."""
    return json.dumps(plain(value), allow_nan=False, **options)
