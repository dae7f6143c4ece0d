"""Other projects' record formats, turned into canonical episode JSON as files are read.

A file's format is told from its first record; each adapter module has a `NAME`, `detect(record)`
and `to_episode(record, agent_id, day)`, raising its `Rejected` for a record it cannot convert
(the record then lands in quarantine with that reason). Adding a format is one module here.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from types import ModuleType

from eval_pipeline.episodes.adapters import openai_transcript
from eval_pipeline.episodes.records import RawRecord

ADAPTERS: tuple[ModuleType, ...] = (openai_transcript,)


def detect_format(first_raw: str) -> ModuleType | None:
    """The adapter for a file whose first record is `first_raw`; None for canonical episodes."""
    try:
        record = json.loads(first_raw)
    except ValueError:
        return None
    return next((adapter for adapter in ADAPTERS if adapter.detect(record)), None)


def adapt(adapter: ModuleType, records: Iterator[RawRecord], path: Path, agent_id: str | None, day: date) -> Iterator[RawRecord]:
    """Each record as canonical episode JSON for partition `day`, or rejected with the reason (raw kept as read)."""
    agent = agent_id or path.stem
    for record in records:
        try:
            episode = adapter.to_episode(json.loads(record.raw), agent, day)
        except ValueError as exc:  # invalid JSON, or the adapter's Rejected
            reason = "invalid JSON" if isinstance(exc, json.JSONDecodeError) else f"{adapter.NAME}: {exc}"
            yield RawRecord(record.source, record.locator, record.raw, day, rejected=reason)
            continue
        yield RawRecord(record.source, record.locator, json.dumps(episode), day)
