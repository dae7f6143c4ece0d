"""Agents run on a case set (a command, an HTTP endpoint, a Python callable), each run an episode.

A command agent is one process per case, trial and turn (see `process` for how it is started
safely). A multi-turn case runs as one session: each turn's process gets the conversation so far
in its prompt. Its stdout is read as our episode JSON, as a plaited `CaptureResult`, or else as
the plain-text answer. An HTTP or callable agent gets the whole case and keeps its own session.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Literal

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.grader import grade, reference_failure
from eval_pipeline.capture.headless import HeadlessAgent, load_schema
from eval_pipeline.capture.process import History, Run, directory_name, prepared, spawn
from eval_pipeline.capture.runs import CaptureRun
from eval_pipeline.config import CaptureAgent
from eval_pipeline.episodes.adapters import plaited
from eval_pipeline.imports import import_beside

PROMPT_VARIABLE = "EVAL_PROMPT"
STDERR_KEPT = 4000  # characters of stderr quoted in a failed run's error step


@dataclass(frozen=True)
class CommandAgent:
    command: tuple[str, ...]
    prompt_via: Literal["stdin", "env", "argv"] = "stdin"
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        """Each turn in a new process; the case's timeout bounds the whole session."""
        errors = prepared(workdir)
        budget = case.timeout_seconds or self.timeout_seconds
        history, outputs, prompts = History(), [], []
        started = time.perf_counter()
        exit_code: int | None = 0
        with errors.open("w") as stderr:
            for turn in case.turns:
                prompt = history.prompt(turn)
                argv = [*self.command, prompt] if self.prompt_via == "argv" else list(self.command)
                env = {**os.environ, PROMPT_VARIABLE: prompt} if self.prompt_via == "env" else None
                stdin = prompt if self.prompt_via == "stdin" else None
                finished = spawn(argv, workdir, env, stdin, budget - (time.perf_counter() - started), stderr)
                outputs.append(finished.stdout)
                prompts.append(prompt)
                exit_code = finished.exit_code
                if exit_code != 0:
                    break
                history.add(turn, _parsed(finished.stdout, prompt)["metadata"].get("final_output") or "")
        return Run(
            case, trial, workdir, exit_code, tuple(outputs), errors, (time.perf_counter() - started) * 1000, tuple(prompts)
        )


@dataclass(frozen=True)
class HttpAgent:
    """An agent behind a URL: the case is POSTed as JSON, the answer is read like a command's stdout."""

    url: str
    timeout_seconds: float = 300.0
    concurrency: int = 4

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        import httpx

        errors = prepared(workdir)
        body = {"id": case.id, "input": case.input, "hint": case.hint, "metadata": case.metadata, "trial": trial}
        started = time.perf_counter()
        try:
            response = httpx.post(self.url, json=body, timeout=case.timeout_seconds or self.timeout_seconds)
            errors.write_text("" if response.is_success else f"HTTP {response.status_code}: {response.text[:STDERR_KEPT]}")
            code: int | None = 0 if response.is_success else 1
            text = response.text if response.is_success else ""
        except httpx.TimeoutException:
            errors.write_text("timed out")
            code, text = None, ""
        except httpx.HTTPError as exc:
            errors.write_text(f"{type(exc).__name__}: {exc}")
            code, text = 1, ""
        return Run(case, trial, workdir, code, (text,), errors, (time.perf_counter() - started) * 1000)


@dataclass(frozen=True)
class CallableAgent:
    """A Python function (`module:function`) given the case as a dict; it returns our episode, a
    plaited CaptureResult or the answer text. A timeout is recorded; the call cannot be killed."""

    target: str
    timeout_seconds: float = 300.0
    concurrency: int = 4
    home: Path | None = None  # the config's directory, where the module is looked for first

    def run(self, case: CaseSpec, trial: int, workdir: Path) -> Run:
        import traceback
        from concurrent.futures import TimeoutError as Timeout

        errors = prepared(workdir)
        module, _, name = self.target.partition(":")
        function = getattr(import_beside(module, self.home), name)
        started = time.perf_counter()
        single = ThreadPoolExecutor(max_workers=1)
        future = single.submit(function, {**case.model_dump(), "trial": trial, "cwd": str(workdir)})
        try:
            result = future.result(timeout=case.timeout_seconds or self.timeout_seconds)
            text, code = (result if isinstance(result, str) else json.dumps(result)), 0
            errors.write_text("")
        except Timeout:
            text, code = "", None
            errors.write_text("timed out")
        except Exception:  # the agent's own failure: recorded like a crashed process
            text, code = "", 1
            errors.write_text(traceback.format_exc())
        finally:
            single.shutdown(wait=False)  # a call past its timeout is abandoned, not waited for
        return Run(case, trial, workdir, code, (text,), errors, (time.perf_counter() - started) * 1000)


Agent = CommandAgent | HttpAgent | CallableAgent | HeadlessAgent


def anchored(argv: list[str], relative: Callable[[str], Path]) -> tuple[str, ...]:
    """`argv` with each element that names a file beside the config made absolute: every run works in a
    directory of its own, so `["python", "my_agent.py"]` must not depend on where it runs."""
    return tuple(
        str(relative(part)) if part and not part.startswith("-") and not Path(part).is_absolute() and relative(part).is_file()
        else part
        for part in argv
    )  # fmt: skip


def capture_agent(settings: CaptureAgent, relative: Callable[[str], Path]) -> Agent:
    """The agent `[capture]` names; a schema path is resolved with `relative` (against the config file)."""
    timeout, concurrency = settings.timeout_seconds, settings.concurrency
    if settings.url:
        return HttpAgent(settings.url, timeout_seconds=timeout, concurrency=concurrency)
    if settings.callable:
        return CallableAgent(settings.callable, timeout_seconds=timeout, concurrency=concurrency, home=relative(""))
    if settings.schema_path:
        schema = load_schema(relative(settings.schema_path))
        return HeadlessAgent(schema, settings.auto_approve, timeout_seconds=timeout, concurrency=concurrency)
    return CommandAgent(
        anchored(settings.command, relative), settings.prompt_via, timeout_seconds=timeout, concurrency=concurrency
    )


def run_all(agent: Agent, cases: list[CaseSpec], trials: int, root: Path) -> list[Run]:
    """Every case `trials` times, at most `concurrency` at once, each in `root/<case>/trial-<n>`."""
    jobs = [(case, trial) for case in cases for trial in range(trials)]
    with ThreadPoolExecutor(max_workers=agent.concurrency) as pool:
        return list(pool.map(lambda job: agent.run(job[0], job[1], root / directory_name(job[0].id) / f"trial-{job[1]}"), jobs))


def episode_of(run: Run, agent_id: str, day: date, now: datetime | None = None, capture: CaptureRun | None = None) -> dict:
    """The run as a canonical episode of partition `day`, whatever the clock says; within `capture`'s run when given."""
    clock = now or datetime.now(UTC)
    started = datetime.combine(day, clock.time(), UTC).isoformat().replace("+00:00", "Z")
    within = f"{capture.run_id}:" if capture else ""
    identity = {"episode_id": f"{agent_id}:{within}{run.case.id}:{run.trial}", "agent_id": agent_id, "started_at": started}
    metadata = {"task_id": run.case.id, "trial": run.trial, "category": run.case.metadata.get("category"), "hint": run.case.hint,
                "input": run.case.input, "format": "command",
                **({"expected": run.case.expectations} if run.case.expectations else {}),
                **({"capture_run": capture.run_id, "label": capture.label,
                    "captured_at": clock.isoformat().replace("+00:00", "Z")} if capture else {})}  # fmt: skip
    stderr = run.stderr_path.read_text(errors="replace")[-STDERR_KEPT:] if run.stderr_path.exists() else ""
    if run.exit_code is None:  # what it did before it was killed is kept for debugging; no answer counts
        before = _session(run)["steps"] if any(output.strip() for output in run.outputs) else []
        killed = {"step_type": "error", "error": f"killed after {run.duration_ms / 1000:.1f} s (timeout)"}
        steps = [{**step, "step_index": i} for i, step in enumerate([*before, killed])]
        kept = {k: v for k, v in metadata.items() if v is not None}
        return {**identity, "status": "timeout", "total_duration_ms": run.duration_ms, "steps": steps, "metadata": kept}
    episode = _session(run)
    if run.exit_code != 0:
        episode["status"] = "failure"
        episode["steps"].append({"step_index": len(episode["steps"]), "step_type": "error",
                                 "error": f"exit code {run.exit_code}: {stderr.strip() or '(no stderr)'}"})  # fmt: skip
    episode["metadata"] = {**{k: v for k, v in metadata.items() if v is not None}, **episode.get("metadata", {}),
                           "stderr_path": str(run.stderr_path), "workdir": str(run.workdir)}  # fmt: skip
    return {**episode, **identity, "total_duration_ms": episode.get("total_duration_ms") or run.duration_ms}


def _session(run: Run) -> dict:
    """The run's turns as one episode: their steps in order, the last turn's answer, summed tokens and cost."""
    prompts = run.prompts or ("\n".join(run.case.turns),)
    turns = [_parsed(output, prompt) for output, prompt in zip(run.outputs, prompts, strict=False)] or [_parsed("", prompts[0])]
    if len(turns) == 1:
        return turns[0]
    steps = [step for turn in turns for step in turn["steps"]]
    last = turns[-1]
    totals = {key: sum(turn.get(key) or 0 for turn in turns) for key in ("total_tokens", "total_cost_usd")}
    return {**last, **totals, "steps": [{**step, "step_index": i} for i, step in enumerate(steps)]}


def _parsed(text: str, prompt: str) -> dict:
    """Our episode JSON, a plaited CaptureResult, or the plain-text answer."""
    try:
        printed = json.loads(text)
    except ValueError:
        printed = None
    if isinstance(printed, dict) and isinstance(printed.get("steps"), list):
        return {**printed, "status": printed.get("status", "success"), "metadata": printed.get("metadata") or {}}
    if isinstance(printed, dict) and "trajectory" in printed:
        try:
            return plaited.to_episode(printed, "agent", date.min)  # identity and day are the run's, set by episode_of
        except ValueError:
            pass  # not a valid CaptureResult after all: keep it as text
    answer = text.strip()
    return {
        "status": "success",
        "steps": [{"step_index": 0, "step_type": "llm_call", "input_summary": prompt, "output_summary": answer}],
        "metadata": {"final_output": answer},
    }


def captured_episodes(
    runs: list[Run],
    agent_id: str,
    day: date,
    grader: tuple[str, ...] = (),
    grader_timeout: float = 60.0,
    references: dict[str, dict] | None = None,
    capture: CaptureRun | None = None,
) -> Iterator[dict]:
    """Each run as an episode (of the `capture` run); with a `grader`, its verdict in `metadata.grader` (or why there is none).

    `references` are the grader's verdicts on each case's reference: where it failed the
    reference, the grader is not trusted on that case and its trials get that error instead.
    """
    for run in runs:
        episode = episode_of(run, agent_id, day, capture=capture)
        if grader:
            untrusted = reference_failure((references or {}).get(run.case.id, {"pass": True}))
            verdict = {"error": untrusted} if untrusted else grade(grader, run.case, episode, run.workdir, grader_timeout)
            episode["metadata"]["grader"] = verdict
        yield episode
