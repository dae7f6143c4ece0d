"""Raw records: one source record's text and where it came from, before validation.

Every source (files, the episode store, adapters) produces these; the warehouse validates and
canonicalizes them a whole partition at a time, and quarantines what fails with its locator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

_STARTED_AT_VALUE = r'"started_at"\s*:\s*"([^"]+)"'
_STARTED_AT = re.compile(_STARTED_AT_VALUE)
# The same values in a file's bytes: no decoding (a day is ASCII; a quote byte is never part of a multi-byte character)
STARTED_AT_BYTES = re.compile(_STARTED_AT_VALUE.encode())

# The timestamps we read: ISO 8601 as both Python's `fromisoformat` and DuckDB's cast read it alike (a day, a
# time to the minute or finer, `Z` or an offset below a day). Anything else ("... UTC", a zone name, a leading space,
# the end of a day written 24:00, which DuckDB reads as the next day's midnight and Python not at all) is rejected the
# same way by the file index and the warehouse, so a record is never indexed on one day and parsed onto another.
_HOUR = r"(?:[01]\d|2[0-3])"  # an hour of a day, 00 to 23
ISO_TIMESTAMP = rf"\d{{4}}-\d{{2}}-\d{{2}}(?:[T ]{_HOUR}:\d{{2}}(?::\d{{2}}(?:\.\d+)?)?)?(?:Z|[+-]{_HOUR}(?::?\d{{2}})?)?"
EARLIEST_DAY = date(2000, 1, 1)  # before any agent ran: a record dated earlier (1970, 0001) has a broken clock
_ONE_DAY = timedelta(days=1)  # made once: indexing a new file reads each record's days in 2.9 us, 3.4 us making it each time


_ISO = re.compile(ISO_TIMESTAMP)


def is_iso_timestamp(text: str) -> bool:
    return _ISO.fullmatch(text) is not None


def latest_day() -> date:
    """The latest day a record may start on (tomorrow, UTC: clocks drift); later (9999) is a broken clock."""
    return datetime.now(UTC).date() + _ONE_DAY


def plausible_day(day: date, latest: date | None = None) -> bool:
    """From EARLIEST_DAY to `latest` (when None, `latest_day()`)."""
    return EARLIEST_DAY <= day <= (latest or latest_day())


_EPISODE_ID = re.compile(r'"episode_id"\s*:\s*"([^"]+)"')


@dataclass(frozen=True, slots=True)
class RawRecord:
    source: str  # the file or store it came from
    locator: str  # where exactly: path:line, or the store's episode id
    raw: str  # the record's JSON text, unparsed
    fallback_day: date | None  # partition for a record whose own day cannot be read
    rejected: str | None = None  # why an adapter could not convert it: quarantined with this reason
    source_records: int = 1  # records of the source it was made from (an adapter's run of many lines): what health counts
    given: str | None = None  # the source's own text where an adapter made `raw` of it one for one: what quarantine keeps


@dataclass(frozen=True, slots=True)
class RecordLines:
    """Many records of one file of lines at once, as Arrow arrays: each is what a RawRecord located `source:line`
    would be. A day's million lines are read in blocks this way, without a Python object per line (one by one, making
    and staging the benchmark's million records took 6.4 s of Python holding the GIL; in blocks, 3.4 s, most of it in
    Arrow, which releases it)."""

    source: str  # the file
    lines: pa.Array  # int64: the line each record is on, from 1
    raws: pa.Array  # string: each record's text, unparsed
    fallback_day: date  # partition for a record whose own day cannot be read
    rejected: pa.Array | None = None  # string: why a record is no text (`RawRecord.rejected`), where some are not


# What a source gives: single records, or a file's lines many at a time.
RawRecords = RawRecord | RecordLines


def record_days(raw: str) -> set[date]:
    """UTC days a record's `started_at` values name, read cheaply without parsing the JSON.

    Used to index files by day; the warehouse parses `started_at` properly, so an extra day
    here costs a file read, never a wrong partition.
    """
    latest = latest_day()
    return {day for value in _STARTED_AT.findall(raw) if (day := started_day(value, latest)) is not None}


def started_day(value: str, latest: date) -> date | None:
    """The UTC day a `started_at` value names: None unless it is an ISO 8601 timestamp of a day from EARLIEST_DAY to
    `latest`."""
    if not is_iso_timestamp(value):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    day = (parsed.astimezone(UTC) if parsed.tzinfo else parsed).date()
    return day if plausible_day(day, latest) else None


def record_episode_id(raw: str) -> str | None:
    match = _EPISODE_ID.search(raw)
    return match.group(1) if match else None


SURROGATES = range(0xD800, 0xE000)  # UTF-16's halves of a pair: no character alone
# in a string JSON was read into: half of a pair alone (pairs are joined)
_SURROGATE = re.compile(f"[{chr(SURROGATES.start)}-{chr(SURROGATES.stop - 1)}]")
_ESCAPED_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")  # what JSON text needs to hold one: most records have none


def unpaired_surrogate(raw: str) -> str | None:
    """Why a record DuckDB cannot parse is no text, when that is why: one of its strings escapes half of a UTF-16
    surrogate pair alone (`"\\ud83c"`), as JavaScript's `JSON.stringify` writes a string `slice` cut between the two
    halves of an emoji. It is JSON (Python's parser reads it), but no character: rejected, naming the field."""
    if _ESCAPED_SURROGATE.search(raw) is None:
        return None
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    for path, text in _strings(value, "the record"):
        found = _SURROGATE.search(text)
        if found:
            return (
                f"{path} holds half of a UTF-16 surrogate pair alone (\\u{ord(found.group()):04x}), no character: a text "
                "cut between the two halves (as JavaScript's slice cuts one)"
            )
    return None


def _strings(value: object, path: str) -> Iterator[tuple[str, str]]:
    """Each string of a JSON value and where it is (`steps[0].output_summary`), keys too, in document order."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield f"a key of {path}", key
            yield from _strings(item, key if path == "the record" else f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")
