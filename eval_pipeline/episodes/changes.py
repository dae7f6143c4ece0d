"""What changed in the episode source, day by day, told without reading the warehouse.

A fingerprint per day changes whenever that day's episodes do: for files, when a file holding
the day changes size or modification time, save a JSONL file that only gained whole dated lines (a
log appended to), which changes only the days that gained records in it; for a store, which has no ingestion-time filter
and updates `running` episodes in place, when the day's episode ids or statuses change.
"""

from __future__ import annotations

import hashlib
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.episodes.files import FileSource, logged_name

if TYPE_CHECKING:
    from eval_pipeline.episodes.store import EpisodeStore  # with httpx, imported for a store only


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest()[:16]


def day_fingerprints(source: FileSource | EpisodeStore, today: date, store_window_days: int) -> dict[str, str]:
    """{ISO day: fingerprint}: every day the files hold, or the store's trailing window up to today."""
    if not isinstance(source, FileSource):
        days = [today - timedelta(days=n) for n in range(store_window_days)]
        return {
            day.isoformat(): _digest([f"{s['episode_id']}:{s.get('status')}" for s in summaries])
            for day in days
            if (summaries := source.summaries(day))
        }
    files_by_day: dict[date, list[str]] = {}
    for name, entry in source.refresh_index(today).files.items():
        for day in {*entry.days, entry.fallback_day}:
            files_by_day.setdefault(day, []).append(f"{logged_name(Path(name))}:{entry.day_changed(day)}")  # as before a rotation
    return {day.isoformat(): _digest(files) for day, files in files_by_day.items()}


def days_to_evaluate(fingerprints: dict[str, str], seen: dict[str, str] | None, today: date, lookback_days: int) -> list[str]:
    """Finished days (before today) that are new or changed since `seen`; on a first look, recent ones only."""
    if seen is None:
        horizon = (today - timedelta(days=lookback_days)).isoformat()
        candidates = [day for day in fingerprints if day >= horizon]
    else:
        candidates = [day for day, fingerprint in fingerprints.items() if seen.get(day) != fingerprint]
    return sorted(day for day in candidates if day < today.isoformat())
