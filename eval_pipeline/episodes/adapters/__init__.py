"""Other projects' record formats, turned into canonical episode JSON as files are read.

A file's format is told from its first record (a JSON line, or the JSON a log line carries after its
formatter's prefix), or named in config (`[sources] formats`). Each
adapter is one module here with a `NAME`, `detect(record)` and `convert(records, agent_id, day,
**options)` (the source passes every adapter the same options, such as `quiet_seconds`; each takes
what it needs), which yields canonical episode records, or the source's records rejected with a reason (they
land in quarantine, never dropped). A dated format also has `days(raw)`, the UTC days a record
holds, so the file index can find them. A format whose run may be spread over files (a trace exported over
several) sets `JOINS_FILES = True`: the files a day reads are then converted together, each record falling back
on its own file's day (`RawRecord.fallback_day`). Adding a format is one module and one line below; a
plug-in adapter (`eval_pipeline.plugins`) is a module or object of the same shape, from the
user's own package.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol, runtime_checkable

from eval_pipeline.episodes.adapters import (
    autogen,
    autogen_events,
    langgraph,
    langgraph_checkpoint,
    openai_transcript,
    otlp,
    plaited,
)
from eval_pipeline.episodes.adapters.base import log_message
from eval_pipeline.episodes.records import RawRecord


@runtime_checkable
class Adapter(Protocol):
    """What an adapter declares (`days(raw)` is optional): a module here, or a plug-in."""

    @property
    def NAME(self) -> str: ...  # a module constant

    def detect(self, record: Any, /) -> bool: ...

    @property
    def convert(self) -> Callable[..., Iterator[RawRecord]]: ...  # (records, agent_id, day, **options)


ADAPTERS: tuple[Adapter, ...] = (otlp, openai_transcript, plaited, langgraph, langgraph_checkpoint, autogen, autogen_events)
CANONICAL = "episode"  # the name that forces a file to be read as canonical episodes


def detect_format(first_raw: str, adapters: tuple[Adapter, ...] = ADAPTERS) -> Adapter | None:
    """The first of `adapters` for a file whose first record is `first_raw`; None for canonical episodes."""
    try:
        record, _ = log_message(first_raw)
    except ValueError:
        return None
    return next((adapter for adapter in adapters if adapter.detect(record)), None)
