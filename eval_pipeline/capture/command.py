"""Agents run on a case set (a command, an HTTP endpoint, a Python callable), each run an episode.

A command agent is one process per case and trial, run safely.

The prompt reaches the process through stdin, an environment variable or its own argv element,
never through a shell: metacharacters arrive verbatim and run nothing. Each run gets its own
working directory (agents that write files cannot see each other), a timeout that kills its
whole process group, and its stderr kept beside it. Its stdout is read as our episode JSON, as a
plaited `CaptureResult`, or else as the plain-text answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.grader import grade
from eval_pipeline.episodes.adapters import plaited

PROMPT_VARIABLE = "EVAL_PROMPT"
STDERR_KEPT = 4000  # characters of stderr quoted in a failed run's error step


@dataclass(frozen=True)
class CommandAgent:
    command: tuple[str, ...]
    prompt_via: Literal["stdin", "env", "argv"] = "stdin"
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        return run_one(self, case, trial, workdir)


@dataclass(frozen=True)
class HttpAgent:
    """An agent behind a URL: the case is POSTed as JSON, the answer is read like a command's stdout."""

    url: str
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        import httpx

        errors = _prepared(workdir)
        body = {"id": case.id, "input": case.input, "hint": case.hint, "metadata": case.metadata, "trial": trial}
        started = time.perf_counter()
        try:
            response = httpx.post(self.url, json=body, timeout=case.timeout or self.timeout_seconds)
            errors.write_text("" if response.is_success else f"HTTP {response.status_code}: {response.text[:STDERR_KEPT]}")
            code: int | None = 0 if response.is_success else 1
            text = response.text if response.is_success else ""
        except httpx.TimeoutException:
            errors.write_text("timed out")
            code, text = None, ""
        except httpx.HTTPError as exc:
            errors.write_text(f"{type(exc).__name__}: {exc}")
            code, text = 1, ""
        return Run(case, trial, workdir, code, text, errors, (time.perf_counter() - started) * 1000)


@dataclass(frozen=True)
class CallableAgent:
    """A Python function (`module:function`) given the case as a dict; it returns our episode, a
    plaited CaptureResult or the answer text. A timeout is recorded; the call cannot be killed."""

    target: str
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        import importlib
        import traceback
        from concurrent.futures import TimeoutError as Timeout

        errors = _prepared(workdir)
        module, _, name = self.target.partition(":")
        function = getattr(importlib.import_module(module), name)
        started = time.perf_counter()
        with ThreadPoolExecutor(max_workers=1) as single:
            future = single.submit(function, {**case.model_dump(), "trial": trial, "cwd": str(workdir)})
            try:
                result = future.result(timeout=case.timeout or self.timeout_seconds)
                text, code = (result if isinstance(result, str) else json.dumps(result)), 0
                errors.write_text("")
            except Timeout:
                text, code = "", None
                errors.write_text("timed out")
            except Exception:  # the agent's own failure: recorded like a crashed process
                text, code = "", 1
                errors.write_text(traceback.format_exc())
        return Run(case, trial, workdir, code, text, errors, (time.perf_counter() - started) * 1000)


Agent = CommandAgent | HttpAgent | CallableAgent


@dataclass(frozen=True)
class Run:
    """One case's trial as it ran: exit code (None when killed at its timeout), output and timings."""

    case: CaseSpec
    trial: int
    workdir: Path
    exit_code: int | None
    stdout: str
    stderr_path: Path
    duration_ms: float


def _prepared(workdir: Path) -> Path:
    """The run's own working directory, created; the path its errors (stderr) are kept at, beside it."""
    workdir.mkdir(parents=True, exist_ok=True)
    return workdir.parent / f"{workdir.name}.stderr"


def _prompt(case: CaseSpec) -> str:
    return case.input if isinstance(case.input, str) else "\n".join(case.input)


def run_one(agent: CommandAgent, case: CaseSpec, trial: int, workdir: Path) -> Run:
    stderr_path = _prepared(workdir)
    prompt = _prompt(case)
    argv = [*agent.command, prompt] if agent.prompt_via == "argv" else list(agent.command)
    env = {**os.environ, PROMPT_VARIABLE: prompt} if agent.prompt_via == "env" else dict(os.environ)
    started = time.perf_counter()
    with stderr_path.open("w") as stderr:
        process = subprocess.Popen(
            argv, cwd=workdir, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr,
            text=True, start_new_session=True,  # its own process group: a timeout kills everything it started
        )  # fmt: skip
        try:
            stdout, _ = process.communicate(
                prompt if agent.prompt_via == "stdin" else "", timeout=case.timeout or agent.timeout_seconds
            )
            exit_code: int | None = process.returncode
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            stdout, _ = process.communicate()
            exit_code = None
    return Run(case, trial, workdir, exit_code, stdout or "", stderr_path, (time.perf_counter() - started) * 1000)


def run_all(agent: Agent, cases: list[CaseSpec], trials: int, root: Path) -> list[Run]:
    """Every case `trials` times, at most `concurrency` at once, each in `root/<case>/trial-<n>`."""
    jobs = [(case, trial) for case in cases for trial in range(trials)]
    with ThreadPoolExecutor(max_workers=agent.concurrency) as pool:
        return list(pool.map(lambda job: agent.run(job[0], job[1], root / _safe(job[0].id) / f"trial-{job[1]}"), jobs))


def _safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in name)


def episode_of(run: Run, agent_id: str, day: date, now: datetime | None = None) -> dict:
    """The run as a canonical episode of partition `day`, whatever the clock says."""
    clock = now or datetime.now(UTC)
    started = datetime.combine(day, clock.time(), UTC).isoformat().replace("+00:00", "Z")
    identity = {"episode_id": f"{agent_id}:{run.case.id}:{run.trial}", "agent_id": agent_id, "started_at": started}
    metadata = {"task_id": run.case.id, "trial": run.trial, "category": run.case.metadata.get("category"), "hint": run.case.hint,
                "format": "command", **({"expected": run.case.expectations} if run.case.expectations else {})}  # fmt: skip
    stderr = run.stderr_path.read_text(errors="replace")[-STDERR_KEPT:] if run.stderr_path.exists() else ""
    if run.exit_code is None:
        killed = {"step_index": 0, "step_type": "error", "error": f"killed after {run.duration_ms / 1000:.1f} s (timeout)"}
        kept = {k: v for k, v in metadata.items() if v is not None}
        return {**identity, "status": "timeout", "total_duration_ms": run.duration_ms, "steps": [killed], "metadata": kept}
    episode = _parsed(run, agent_id, day)
    if run.exit_code != 0:
        episode["status"] = "failure"
        episode["steps"].append({"step_index": len(episode["steps"]), "step_type": "error",
                                 "error": f"exit code {run.exit_code}: {stderr.strip() or '(no stderr)'}"})  # fmt: skip
    episode["metadata"] = {**{k: v for k, v in metadata.items() if v is not None}, **episode.get("metadata", {}),
                           "stderr_path": str(run.stderr_path), "workdir": str(run.workdir)}  # fmt: skip
    return {**episode, **identity, "total_duration_ms": episode.get("total_duration_ms") or run.duration_ms}


def _parsed(run: Run, agent_id: str, day: date) -> dict:
    """Our episode JSON, a plaited CaptureResult, or the plain-text answer."""
    try:
        printed = json.loads(run.stdout)
    except ValueError:
        printed = None
    if isinstance(printed, dict) and isinstance(printed.get("steps"), list):
        return {**printed, "status": printed.get("status", "success")}
    if isinstance(printed, dict) and "trajectory" in printed:
        try:
            return plaited.to_episode(printed, agent_id, day)
        except ValueError:
            pass  # not a valid CaptureResult after all: keep it as text
    answer = run.stdout.strip()
    return {
        "status": "success",
        "steps": [{"step_index": 0, "step_type": "llm_call", "input_summary": _prompt(run.case), "output_summary": answer}],
        "metadata": {"final_output": answer},
    }


def captured_episodes(
    runs: list[Run], agent_id: str, day: date, grader: tuple[str, ...] = (), grader_timeout: float = 60.0
) -> Iterator[dict]:
    """Each run as an episode; with a `grader`, its verdict in `metadata.grader` (or why there is none)."""
    for run in runs:
        episode = episode_of(run, agent_id, day)
        if grader:
            episode["metadata"]["grader"] = grade(grader, run.case, episode, run.workdir, grader_timeout)
        yield episode
