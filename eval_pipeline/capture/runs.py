"""A capture run's identity: an id of its own and a label saying what ran (agent, model, revision).

The label is what `compare --a label=X --b label=Y` selects, so a run after a prompt change can
be set against the run before it.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from eval_pipeline.config import CaptureAgent


@dataclass(frozen=True)
class CaptureRun:
    run_id: str  # short and unique: the episodes of a run are `<agent>:<run id>:<case>:<trial>`
    label: str


def source_revision(directory: Path) -> str | None:
    """`git describe --always --dirty` of the repository holding `directory`; None outside one."""
    try:
        described = subprocess.run(
            ["git", "-C", str(directory), "describe", "--always", "--dirty"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return described.stdout.strip() or None if described.returncode == 0 else None


def run_label(agent: CaptureAgent, revision: str | None, given: str | None = None) -> str:
    """`given` (`run --label`), else the agent, its model and the revision of the project it runs in."""
    if given:
        return given
    return agent.agent_id + (f"/{agent.model}" if agent.model else "") + (f"@{revision}" if revision else "")
