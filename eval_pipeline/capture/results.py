"""plaited results as its views (`summarize`, `calibrate`) read them: a CaptureResult or TrialResult JSONL file
of the user's, or our stored runs as the plaited export writes them. Each run is one `Result`; each trial of
a TrialResult is one of its own."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eval_pipeline.episodes.adapters.base import reason
from eval_pipeline.episodes.adapters.plaited import CaptureResult, TrajectoryStep, TrialResult
from eval_pipeline.episodes.files import iter_file_records
from eval_pipeline.errors import UserInputError


class ResultsError(UserInputError):
    """The results file cannot be read; the message says which line and why."""


@dataclass(frozen=True)
class Result:
    """One run as plaited's views show it."""

    id: str
    input: str | list[str]
    output: str
    hint: str | None
    trajectory: list[dict[str, Any]]  # plaited TrajectorySteps
    metadata: dict[str, Any]
    duration_ms: float
    tool_errors: bool
    score: dict[str, Any] | None  # the run's own grader's GraderResult, {pass, score, reasoning}
    trial: int | None = None

    @property
    def verdict(self) -> dict[str, Any] | None:
        """The run's own grader's verdict, else ours where it is one of our stored runs (`metadata.eval_pipeline`)."""
        if self.score is not None:
            return self.score
        ours = self.metadata.get("eval_pipeline") or {}
        if ours.get("passed") is None:
            return None
        passed, weighted = bool(ours["passed"]), ours.get("weighted_score")
        reason = ours.get("verdict_reason") or ("passed" if passed else "failed")
        return {"pass": passed, "score": float(passed) if weighted is None else weighted, "reasoning": f"eval_pipeline: {reason}"}

    def grader_input(self, cwd: Path) -> dict[str, Any]:
        """What a plaited grader reads on stdin about this run (a result carries no reference)."""
        return {
            "input": self.input,
            "output": self.output,
            "hint": self.hint,
            "reference": None,
            "trajectory": self.trajectory,
            "metadata": self.metadata,
            "cwd": str(cwd),
        }


def _steps(trajectory: list[TrajectoryStep]) -> list[dict[str, Any]]:
    return [step.model_dump(exclude_none=True) for step in trajectory]


def _of_capture(capture: CaptureResult) -> Result:
    trial = capture.metadata.get("trial")
    return Result(
        id=capture.id,
        input=capture.input,
        output=capture.output,
        hint=capture.hint,
        trajectory=_steps(capture.trajectory),
        metadata=capture.metadata,
        duration_ms=capture.timing.total,
        tool_errors=capture.toolErrors,
        score=capture.score.model_dump(by_alias=True, exclude_none=True) if capture.score else None,
        trial=trial if isinstance(trial, int) else None,
    )


def _of_trials(result: TrialResult) -> list[Result]:
    return [
        Result(
            id=result.id,
            input=result.input,
            output=trial.output,
            hint=result.hint,
            trajectory=_steps(trial.trajectory),
            metadata={},
            duration_ms=trial.duration,
            tool_errors=any(step.type == "tool_call" and step.status == "failed" for step in trial.trajectory),
            score=None
            if trial.pass_ is None
            else {
                "pass": trial.pass_,
                "score": float(trial.pass_) if trial.score is None else trial.score,
                **({"reasoning": trial.reasoning} if trial.reasoning else {}),
            },
            trial=trial.trialNum,
        )
        for trial in result.trials
    ]


def read_results(path: Path) -> list[Result]:
    """Every run of a CaptureResult or TrialResult file (JSONL or a JSON array), in order."""
    if not path.is_file():
        raise ResultsError(f"results file {path} does not exist")
    results: list[Result] = []
    for record in iter_file_records(path):
        where = f"results file {path}:{record.line}"
        if record.undecodable:
            raise ResultsError(f"{where}: {record.undecodable}")
        try:
            parsed = json.loads(record.raw)
        except ValueError:
            raise ResultsError(f"{where}: invalid JSON") from None
        trials = isinstance(parsed, dict) and "trials" in parsed
        try:
            results += (
                _of_trials(TrialResult.model_validate(parsed)) if trials else [_of_capture(CaptureResult.model_validate(parsed))]
            )
        except ValidationError as exc:
            raise ResultsError(f"{where}: {reason('TrialResult' if trials else 'CaptureResult', exc)}") from None
    return results


def results_of_captures(captures: Iterable[dict[str, Any]]) -> Iterator[Result]:
    """CaptureResults as `to_capture` writes our stored runs, each as it comes (a day's runs are read a part at a time)."""
    return (_of_capture(CaptureResult.model_validate(capture)) for capture in captures)
