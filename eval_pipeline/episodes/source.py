"""The episode source named by `EVAL_EPISODE_SOURCE`: an episode store URL, or files."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from eval_pipeline.config import Price, SourcesConfig
from eval_pipeline.episodes.adapters import ADAPTERS, Adapter
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.episodes.records import RawRecords
from eval_pipeline.settings import is_store

if TYPE_CHECKING:
    from eval_pipeline.episodes.store import EpisodeStore


def source_index_path(duckdb_path: str) -> str:
    """The source's file index lives beside the warehouse it feeds."""
    return str(Path(duckdb_path).with_name("episode_source_index.json"))


class EpisodeSource(Protocol):
    def records_for(self, day: date, undated_day: date | None = None) -> Iterator[RawRecords]: ...


def open_source(
    location: str,
    index_path: Path,
    sources: SourcesConfig | None = None,
    prices: dict[str, Price] | None = None,
    required: bool = True,
    adapters: tuple[Adapter, ...] = ADAPTERS,
) -> FileSource | EpisodeStore:
    """The store at a URL, else files; `prices` cost the steps of records in other formats (traces), `adapters`
    read them (`plugins.adapters` adds the user's own). Files not `required` (a case set is configured) may be
    missing: there are no recorded episodes yet."""
    if is_store(location):
        from eval_pipeline.episodes.store import EpisodeStore  # with httpx: 0.1 s more to start, for a store only

        return EpisodeStore(location, spool_directory=index_path.parent)  # a day's answer beside the warehouse, not in memory
    sources = sources or SourcesConfig()
    return FileSource(
        Path(location),
        index_path,
        sources.transcript_agent_id,
        sources.formats,
        sources.trace_quiet_seconds,
        prices,
        required,
        agents=sources.agents,
        adapters=adapters,
    )


def source_health(source: FileSource | EpisodeStore) -> dict[str, Any]:
    """What `status` shows: the store's own health answer, or file and record counts per day."""
    if not isinstance(source, FileSource):
        return {"kind": "store", "url": source.base_url, "health": source.health()}
    index = source.refresh_index()
    per_day: dict[str, int] = {}
    for entry in index.files.values():
        for day, count in entry.days.items():
            per_day[day.isoformat()] = per_day.get(day.isoformat(), 0) + count
    return {
        "kind": "files",
        "path": str(source.root),
        "exists": source.root.exists(),
        "files": len(index.files),
        "episodes_per_day": dict(sorted(per_day.items())),
    }
