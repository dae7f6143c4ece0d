"""What every adapter shares: the rejection it raises, and conversion one record at a time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from pydantic import ValidationError

from eval_pipeline.episodes.records import RawRecord


def as_text(value: Any) -> str | None:
    """A step's input or output as the text column holds it: strings as they are, anything else as JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


class Rejected(ValueError):
    """A record that cannot become an episode; the message says why (it lands in quarantine with it)."""


def rejected(record: RawRecord, day: date, reason: str) -> RawRecord:
    return RawRecord(record.source, record.locator, record.raw, day, rejected=reason)


def reason(name: str, error: ValueError) -> str:
    """One line saying why: a validation error's first field and message, else the error's text."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "record"
        return f"{name}: {where}: {first['msg']}"
    return f"{name}: {error}"


def one_by_one(
    name: str, to_episode: Callable[[dict, str, date], dict]
) -> Callable[[Iterator[RawRecord], str, date], Iterator[RawRecord]]:
    """A `convert` for formats where each record is one episode."""

    def convert(records: Iterator[RawRecord], agent_id: str, day: date) -> Iterator[RawRecord]:
        for record in records:
            try:
                episode = to_episode(json.loads(record.raw), agent_id, day)
            except json.JSONDecodeError:
                yield rejected(record, day, "invalid JSON")
            except ValueError as exc:  # the adapter's Rejected, a validation error, or a value it could not read
                yield rejected(record, day, reason(name, exc))
            else:
                yield RawRecord(record.source, record.locator, json.dumps(episode), day)

    return convert
