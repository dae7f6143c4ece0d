"""Graders as executables (the plaited protocol): any program that reads the run as JSON on stdin
(`{input, output, hint, reference, trajectory, metadata, cwd}`, the trajectory in plaited's step
shape, so a grader written for plaited works unchanged) and prints `{pass, score, reasoning}` on
stdout. Its verdict becomes an assertion of the episode; a non-zero exit, a timeout, or output that
is not that JSON is a recorded grader error, never a pass.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.process import directory_name
from eval_pipeline.capture.results import Result
from eval_pipeline.episodes.adapters import plaited
from eval_pipeline.llm.gateway import first_line


class GraderVerdict(BaseModel):
    passed: bool = Field(alias="pass")
    score: float = Field(ge=0, le=1)
    reasoning: str | None = None


def grade(command: tuple[str, ...], case: CaseSpec, episode: dict, workdir: Path, timeout: float) -> dict:
    """The grader's verdict on one of our episodes of `case` (see `run_grader`)."""
    payload = {
        "input": case.input,
        "output": (episode.get("metadata") or {}).get("final_output") or "",
        "hint": case.hint,
        "reference": case.reference,
        "trajectory": plaited.trajectory(episode.get("steps", []), episode.get("started_at")),
        "metadata": case.metadata,
        "cwd": str(workdir),
    }
    return run_grader(command, payload, workdir, timeout)


def run_grader(command: tuple[str, ...], payload: dict, workdir: Path, timeout: float) -> dict:
    """`{"pass", "score", "reasoning"}` from the grader given `payload`, or `{"error": ...}` saying why there is none."""
    try:
        done = subprocess.run(
            list(command), input=json.dumps(payload), capture_output=True, text=True, timeout=timeout, cwd=workdir
        )
    except subprocess.TimeoutExpired:
        return {"error": f"grader timed out after {timeout:g} s"}
    except OSError as exc:
        return {"error": f"grader could not start: {exc}"}
    if done.returncode != 0:
        return {"error": f"grader exited {done.returncode}: {done.stderr.strip()[:500] or '(no stderr)'}"}
    try:
        verdict = GraderVerdict.model_validate(json.loads(done.stdout))
    except (ValueError, ValidationError) as exc:
        return {"error": f"grader output is not {{pass, score, reasoning}}: {first_line(exc)}"}
    return {"pass": verdict.passed, "score": verdict.score, "reasoning": verdict.reasoning}


def reference_verdicts(command: tuple[str, ...], cases: list[CaseSpec], timeout: float, root: Path) -> dict[str, dict]:
    """Each case's reference graded as if an agent had answered it (plaited's validate-refs).

    A grader that fails the known-good answer cannot judge an agent on that case.
    """
    verdicts = {}
    for case in cases:
        if case.reference:
            workdir = root / directory_name(case.id)
            workdir.mkdir(parents=True, exist_ok=True)
            answered = {"metadata": {"final_output": case.reference}, "steps": []}
            verdicts[case.id] = grade(command, case, answered, workdir, timeout)
    return verdicts


def reference_failure(verdict: dict) -> str | None:
    """Why a reference did not pass its grader, or None when it passed."""
    if "error" in verdict:
        return f"the grader could not grade the reference: {verdict['error']}"
    if not verdict["pass"]:
        return f"the reference does not pass its own grader: {verdict.get('reasoning') or 'no reasoning given'}"
    return None


def validation_lines(cases: list[CaseSpec], verdicts: dict[str, dict]) -> list[dict]:
    """plaited's validation.jsonl, one line per case with a reference: `{id, input, reference, pass, score,
    reasoning}`; a grader that could not grade it is a failure saying why."""
    return [
        {"id": case.id, "input": case.input, "reference": case.reference, **_validated(verdicts[case.id])}
        for case in cases
        if case.id in verdicts
    ]


def _validated(verdict: dict) -> dict:
    if "error" in verdict:
        return {"pass": False, "score": 0.0, "reasoning": f"grader error: {verdict['error']}"}
    return {"pass": verdict["pass"], "score": verdict["score"], "reasoning": verdict.get("reasoning")}


def regrade(command: tuple[str, ...], results: list[Result], timeout: float, root: Path) -> list[dict]:
    """Another grader's verdict on each of `results` (plaited's `calibrate --grader`), each run in a directory of
    its own under `root`, in order."""
    verdicts = []
    for number, result in enumerate(results):
        workdir = root / f"{number}-{directory_name(result.id)}"
        workdir.mkdir(parents=True, exist_ok=True)
        verdicts.append(run_grader(command, result.grader_input(workdir), workdir, timeout))
    return verdicts
