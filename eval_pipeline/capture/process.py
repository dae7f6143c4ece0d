"""One agent run on one case and trial, and the safe way to start an agent's process for it.

The prompt reaches a process through stdin, an environment variable or its own argv element,
never through a shell: metacharacters arrive verbatim and run nothing. A timeout kills the
process's whole group; stderr is kept beside the run's own working directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from eval_pipeline.capture.cases import CaseSpec

DEFAULT_TURN_FORMAT = "User: {{input}}\nAssistant: {{output}}"


@dataclass(frozen=True)
class Run:
    """One case's trial as it ran: exit code (None when killed at its timeout), what it printed
    (one output per turn of a multi-turn case, else one) and the prompt each turn was sent."""

    case: CaseSpec
    trial: int
    workdir: Path
    exit_code: int | None
    outputs: tuple[str, ...]
    stderr_path: Path
    duration_ms: float
    prompts: tuple[str, ...] = ()

    @property
    def stdout(self) -> str:
        """The last turn's output: the run's answer."""
        return self.outputs[-1] if self.outputs else ""


@dataclass(frozen=True)
class Finished:
    exit_code: int | None  # None: killed at its timeout
    stdout: str


def directory_name(case_id: str) -> str:
    """A case id made safe as one path component."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in case_id)


def prepared(workdir: Path) -> Path:
    """The run's own working directory, created; the path its errors (stderr) are kept at, beside it."""
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir.parent / f"{workdir.name}.stderr"


def spawn(argv: list[str], cwd: Path, env: dict[str, str] | None, stdin: str | None, timeout: float, stderr: IO) -> Finished:
    """Run `argv` in its own process group; past `timeout` seconds the whole group is killed."""
    if timeout <= 0:
        return Finished(None, "")
    try:
        process = subprocess.Popen(
            argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            text=True, start_new_session=True,  # its own process group: a timeout kills everything it started
        )  # fmt: skip
    except OSError as exc:
        stderr.write(f"could not start {argv[0]!r}: {exc}\n")
        return Finished(127, "")
    try:
        stdout, _ = process.communicate(stdin or "", timeout=timeout)
        return Finished(process.returncode, stdout or "")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, _ = process.communicate()
        return Finished(None, stdout or "")


class History:
    """A multi-turn conversation replayed into each new process's prompt (plaited's iterative mode):
    earlier turns formatted by the template, joined by blank lines, then `User: <turn>`."""

    def __init__(self, turn_format: str = DEFAULT_TURN_FORMAT, system: str | None = None):
        self.turn_format, self.system = turn_format, system
        self.turns: list[tuple[str, str]] = []  # (user turn, answer)

    def prompt(self, turn: str) -> str:
        if not self.turns:
            return turn
        earlier = "\n\n".join(self.turn_format.replace("{{input}}", i, 1).replace("{{output}}", o, 1) for i, o in self.turns)
        return "\n\n".join(part for part in (self.system, earlier, f"User: {turn}") if part)

    def add(self, turn: str, answer: str) -> None:
        self.turns.append((turn, answer))
