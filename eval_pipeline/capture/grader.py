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
