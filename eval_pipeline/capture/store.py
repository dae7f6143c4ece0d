"""Where captures are kept: canonical episode JSONL beside the warehouse, one file per run of an agent.

`captures/<day>/<agent>/<run id>.jsonl`: every run stays, so several runs of a day, several agents
on one case set and a re-run after a prompt change sit side by side. A day's stored runs are
reused when it is evaluated again, so re-scoring never re-runs an agent unless asked (`--recapture`,
which adds a run and keeps the earlier ones).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from datetime import date
from pathlib import Path

from eval_pipeline import jsonout
from eval_pipeline.capture.process import directory_name
from eval_pipeline.durable import replace_whole
from eval_pipeline.episodes.files import iter_file_records
from eval_pipeline.episodes.records import RawRecord


def captures_directory(shared: Path) -> Path:
    """Where captured runs are kept: under the warehouse's `shared_directory`, which every host of a lake sees."""
    return shared / "captures"


def agent_directory(directory: Path, day: date, agent_id: str) -> Path:
    return directory / day.isoformat() / directory_name(agent_id)


def _adopt_single_file(directory: Path, day: date) -> None:
    """Move a capture kept the earlier way (`captures/D.jsonl`, one agent's run of the day) to where runs live now."""
    earlier = directory / f"{day.isoformat()}.jsonl"
    if not earlier.exists():
        return
    with earlier.open() as lines:
        first = next((line for line in lines if line.strip()), "{}")
    try:
        agent_id = str(json.loads(first).get("agent_id") or "agent")
    except (ValueError, AttributeError):
        agent_id = "agent"
    target = agent_directory(directory, day, agent_id) / "earlier.jsonl"
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(earlier, target)


def stored_runs(directory: Path, day: date, agent_id: str) -> list[Path]:
    """The agent's stored runs of the day, oldest first."""
    _adopt_single_file(directory, day)
    runs = agent_directory(directory, day, agent_id).glob("*.jsonl")
    return sorted(runs, key=lambda path: (path.stat().st_mtime_ns, path.name))


def write_capture(path: Path, episodes: list[dict]) -> None:
    """All of a run's episodes, or none: written aside, then moved into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_whole(path, "".join(jsonout.dumps(episode) + "\n" for episode in episodes))


def captured_records(directory: Path, day: date) -> Iterator[RawRecord]:
    """Every stored run of the day, of every agent, as raw records (nothing when the day has none)."""
    _adopt_single_file(directory, day)
    for path in sorted((directory / day.isoformat()).glob("*/*.jsonl")):
        yield from (RawRecord(str(path), f"{path}:{r.line}", r.raw, day) for r in iter_file_records(path))
