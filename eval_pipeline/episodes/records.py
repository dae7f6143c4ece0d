"""Raw records: one source record's text and where it came from, before validation.

Every source (files, the episode store, adapters) produces these; the warehouse validates and
canonicalizes them a whole partition at a time, and quarantines what fails with its locator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, date, datetime

_STARTED_AT = re.compile(r'"started_at"\s*:\s*"([^"]+)"')
_EPISODE_ID = re.compile(r'"episode_id"\s*:\s*"([^"]+)"')


@dataclass(frozen=True, slots=True)
class RawRecord:
    source: str  # the file or store it came from
    locator: str  # where exactly: path:line, or the store's episode id
    raw: str  # the record's JSON text, unparsed
    fallback_day: date | None  # partition for a record whose own day cannot be read
    rejected: str | None = None  # why an adapter could not convert it: quarantined with this reason
    source_records: int = 1  # records of the source it was made from (an adapter's run of many lines): what health counts


def record_days(raw: str) -> set[date]:
    """UTC days a record's `started_at` values name, read cheaply without parsing the JSON.

    Used to index files by day; the warehouse parses `started_at` properly, so an extra day
    here costs a file read, never a wrong partition.
    """
    days = set()
    for value in _STARTED_AT.findall(raw):
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            continue
        days.add((parsed.astimezone(UTC) if parsed.tzinfo else parsed).date())
    return days


def record_episode_id(raw: str) -> str | None:
    match = _EPISODE_ID.search(raw)
    return match.group(1) if match else None
