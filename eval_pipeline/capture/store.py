"""Where a day's capture is kept: canonical episode JSONL beside the warehouse, one file per day.

Stored, a capture is reused when the day is evaluated again, so re-scoring never re-runs the
agent unless asked (`--recapture`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import date
from pathlib import Path

from eval_pipeline import jsonout
from eval_pipeline.episodes.files import iter_file_records
from eval_pipeline.episodes.records import RawRecord


def captures_directory(duckdb_path: Path) -> Path:
    return duckdb_path.parent / "captures"


def write_capture(path: Path, episodes: list[dict]) -> None:
    """All of a day's episodes, or none: written aside, then moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".partial")
    partial.write_text("".join(jsonout.dumps(episode) + "\n" for episode in episodes))
    os.replace(partial, path)


def captured_records(directory: Path, day: date) -> Iterator[RawRecord]:
    """The day's stored capture as raw records (nothing when the day has none)."""
    path = directory / f"{day.isoformat()}.jsonl"
    if path.exists():
        yield from (RawRecord(str(path), f"{path}:{r.line}", r.raw, day) for r in iter_file_records(path))
