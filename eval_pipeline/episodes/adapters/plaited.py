"""plaited agent-eval-harness JSONL: `CaptureResult` (one run) and `TrialResult` (k runs of one case).

A capture becomes one episode and each trial of a trial result one episode, the case `id` as
the task. The grader's verdict (`score.pass` / `pass`) becomes `metadata.reward` (1 or 0), so
trials are judged by it; the grader's 0..1 score is kept as `metadata.grader_score`.
Trajectory steps map to ours: message → llm_call, thought and plan → decision, tool_call → a
tool call followed by its result (an error when its status says it failed).

plaited writes a step's `timestamp` as milliseconds since the run started (`timing.start`, epoch
milliseconds); absolute epoch times are read as such too. A record with no absolute time at all (a
TrialResult has no `timing`) starts at midnight of the day it is read for: the day `run --date`
names, else the day its file was first seen, never 1970.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Any, Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.episodes.adapters.base import as_text, rejection
from eval_pipeline.episodes.records import RawRecord

NAME = "plaited"
FAILED_STATUSES = {"failed", "error", "errored", "failure"}
ABSOLUTE_FROM_MS = 1e11  # 1973-03-03 in epoch ms: an earlier "time" is an offset from the run's start
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class TrajectoryStep(_Open):
    type: Literal["thought", "message", "tool_call", "plan"]
    content: str | None = None
    name: str | None = None
    status: str | None = None
    input: Any = None
    output: Any = None
    entries: list[Any] | None = None
    duration: float | None = None
    timestamp: float | None = None  # milliseconds since the run started (plaited's), or epoch milliseconds


class GraderResult(_Open):
    pass_: bool = Field(alias="pass")
    score: float
    reasoning: str | None = None


class Timing(_Open):
    start: float
    end: float
    total: float
    sessionCreation: float | None = None
    inputTokens: int | None = None
    outputTokens: int | None = None


class CaptureResult(_Open):
    id: str
    input: str | list[str]
    output: str
    hint: str | None = None
    trajectory: list[TrajectoryStep]
    metadata: dict[str, Any] = Field(default_factory=dict)
    timing: Timing
    toolErrors: bool = False
    errors: list[str] | None = None
    score: GraderResult | None = None


class TrialEntry(_Open):
    trialNum: int
    output: str
    trajectory: list[TrajectoryStep]
    duration: float
    pass_: bool | None = Field(None, alias="pass")
    score: float | None = None
    reasoning: str | None = None


class TrialResult(_Open):
    id: str
    input: str | list[str]
    hint: str | None = None
    k: int
    trials: list[TrialEntry]


def detect(record: Any) -> bool:
    return isinstance(record, dict) and "id" in record and ("trajectory" in record or "trials" in record) and "input" in record


def _iso(epoch_ms: float) -> str:
    return (_EPOCH + timedelta(milliseconds=epoch_ms)).isoformat().replace("+00:00", "Z")


def _absolute(epoch_ms: float | None) -> TypeGuard[float]:
    return epoch_ms is not None and epoch_ms >= ABSOLUTE_FROM_MS


def _start_ms(stamps: Iterable[float | None], timing_start: float | None = None) -> float | None:
    """When the run started, in epoch ms: `timing.start`, else its earliest absolute step; None without an absolute time."""
    if _absolute(timing_start):
        return timing_start
    absolute = [stamp for stamp in stamps if _absolute(stamp)]
    return min(absolute) if absolute else None


def _anchor_ms(start: float | None, day: date) -> float:
    """The run's start, or midnight of the day it is read for when it has no absolute time."""
    return start if start is not None else (datetime.combine(day, time(), UTC) - _EPOCH) / timedelta(milliseconds=1)


def _steps(prompt: str | list[str], trajectory: list[TrajectoryStep], start_ms: float) -> list[dict]:
    turns = [prompt] if isinstance(prompt, str) else list(prompt)
    steps: list[dict] = []
    for step in trajectory:
        stamp = step.timestamp
        when = {} if stamp is None else {"timestamp": _iso(stamp if _absolute(stamp) else start_ms + stamp)}
        if step.type == "message":
            steps.append(
                {
                    "step_type": "llm_call",
                    "input_summary": turns.pop(0) if turns else None,
                    "output_summary": step.content,
                    **when,
                }
            )
        elif step.type in ("thought", "plan"):
            steps.append({"step_type": "decision", "output_summary": step.content or as_text(step.entries), **when})
        else:
            failed = (step.status or "").lower() in FAILED_STATUSES
            duration = {"duration_ms": step.duration} if step.duration is not None else {}
            steps.append(
                {"step_type": "tool_call", "tool_name": step.name, "input_summary": as_text(step.input), **when, **duration}
            )
            steps.append({"step_type": "tool_result", "tool_name": step.name, "output_summary": as_text(step.output),
                          "error": f"{step.name} {step.status}" if failed else None, **when})  # fmt: skip
    if turns and not any(s["step_type"] == "llm_call" for s in steps):  # a trajectory without messages: the prompt still counts
        steps.insert(0, {"step_type": "llm_call", "input_summary": turns[0]})
    return [{"step_index": i, **step} for i, step in enumerate(steps)]


def _verdict(passed: bool | None, score: float | None) -> dict:
    return {key: value for key, value in {"reward": None if passed is None else float(passed), "grader_score": score}.items()
            if value is not None}  # fmt: skip


def to_episode(record: dict, agent_id: str, day: date) -> dict:
    capture = CaptureResult.model_validate(record)
    verdict = _verdict(capture.score.pass_ if capture.score else None, capture.score.score if capture.score else None)
    ours = capture.metadata  # an export of ours carries what plaited has no field for
    status = ours.get("status") or ("failure" if capture.errors or verdict.get("reward") == 0.0 else "success")
    tokens = (capture.timing.inputTokens or 0) + (capture.timing.outputTokens or 0) or ours.get("total_tokens") or 0
    start = _anchor_ms(_start_ms((step.timestamp for step in capture.trajectory), capture.timing.start), day)
    end = capture.timing.end if _absolute(capture.timing.end) else start + capture.timing.total
    return {
        "episode_id": ours.get("episode_id") or f"{agent_id}:{capture.id}",
        "agent_id": ours.get("agent_id") or agent_id,
        "status": status,
        "started_at": _iso(start),
        "ended_at": _iso(end),
        "total_duration_ms": capture.timing.total,
        "total_tokens": tokens,
        "steps": _steps(capture.input, capture.trajectory, start),
        "metadata": {
            **capture.metadata,
            "task_id": capture.id,
            "final_output": capture.output,
            "hint": capture.hint,
            "format": NAME,
            **verdict,
        },
    }


def trial_episodes(record: dict, agent_id: str, day: date) -> list[dict]:
    result = TrialResult.model_validate(record)
    episodes = []
    for trial in result.trials:
        start = _anchor_ms(_start_ms(step.timestamp for step in trial.trajectory), day)
        verdict = _verdict(trial.pass_, trial.score)
        episodes.append(
            {
                "episode_id": f"{agent_id}:{result.id}:{trial.trialNum}",
                "agent_id": agent_id,
                "status": "failure" if verdict.get("reward") == 0.0 else "success",
                "started_at": _iso(start),
                "total_duration_ms": trial.duration,
                "steps": _steps(result.input, trial.trajectory, start),
                "metadata": {
                    "task_id": result.id,
                    "trial": trial.trialNum,
                    "final_output": trial.output,
                    "hint": result.hint,
                    "format": NAME,
                    **verdict,
                },
            }
        )
    return episodes


def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
    """Captures one by one; a trial result's trials each as an episode of their own."""
    for record in records:
        try:
            parsed = json.loads(record.raw)
            trials = isinstance(parsed, dict) and "trials" in parsed
            episodes = trial_episodes(parsed, agent_id, day) if trials else [to_episode(parsed, agent_id, day)]
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        for number, episode in enumerate(episodes):
            locator = f"{record.locator} trial {number + 1}" if trials else record.locator
            yield RawRecord(record.source, locator, json.dumps(episode), day)


def _epoch_ms(timestamp: Any) -> float:
    return datetime.fromisoformat(str(timestamp).replace("Z", "+00:00")).timestamp() * 1000


def _parsed(text: str | None) -> Any:
    try:
        return json.loads(text) if text else text
    except ValueError:
        return text


def _grader_result(episode: dict) -> dict | None:
    """The episode's one verdict as plaited's GraderResult; None for an episode without a verdict yet."""
    if episode.get("passed") is None:
        return None
    passed, weighted = bool(episode["passed"]), episode.get("weighted_score")
    reasoning = "passed" if passed else f"failed: {episode.get('verdict_reason') or 'see the report'}"
    if weighted is not None:
        reasoning += f" (weighted score {weighted:.3f})"
    return {
        "pass": passed,
        "score": weighted if weighted is not None else float(passed),
        "reasoning": f"eval_pipeline: {reasoning}",
    }


def to_capture(episode: dict) -> dict:
    """One of our episodes (with its `steps`, in order, and its verdict) as a CaptureResult, the verdict as its `score`.

    What plaited has no field for (episode id, agent, trial, status, tokens) rides in `metadata`,
    so importing the export gives the same episodes back."""
    steps, trajectory, prompt = episode.get("steps") or [], [], None
    for index, step in enumerate(steps):
        stamp = _epoch_ms(step["timestamp"]) if step.get("timestamp") else _epoch_ms(episode["started_at"])
        if step["step_type"] == "llm_call":
            prompt = prompt if prompt is not None else step.get("input")
            trajectory.append({"type": "message", "content": step.get("output") or "", "timestamp": stamp})
        elif step["step_type"] == "tool_call":
            following = steps[index + 1] if index + 1 < len(steps) else {}
            result = following if following.get("step_type") == "tool_result" else {}
            status = "failed" if step.get("error") or result.get("error") else "completed"
            call = {"type": "tool_call", "name": step.get("tool_name") or "", "status": status, "timestamp": stamp,
                    "input": _parsed(step.get("input")), "output": _parsed(result.get("output"))}  # fmt: skip
            trajectory.append({**call, "duration": step["duration_ms"]} if step.get("duration_ms") else call)
        elif step["step_type"] in ("decision", "error"):
            trajectory.append({"type": "thought", "content": step.get("output") or step.get("error") or "", "timestamp": stamp})
    start = _epoch_ms(episode["started_at"])
    capture = {
        "id": episode["task_id"],
        "input": prompt or "",
        "output": episode.get("final_output") or "",
        "trajectory": trajectory,
        "metadata": {
            "episode_id": episode["episode_id"],
            "agent_id": episode["agent_id"],
            "trial": episode.get("trial"),
            "status": episode["status"],
            "total_tokens": episode.get("total_tokens"),
            "category": episode.get("category"),
            "source": "eval_pipeline",
        },
        "timing": {
            "start": start,
            "end": start + (episode.get("total_duration_ms") or 0),
            "total": episode.get("total_duration_ms") or 0,
            "sessionCreation": 0,
        },
        "toolErrors": any(t["type"] == "tool_call" and t["status"] == "failed" for t in trajectory),
    }
    score = _grader_result(episode)
    if score is not None:
        capture["score"] = score
    return capture


def days(raw: str) -> set[date]:
    """UTC days a capture or a trial started on, for the file index; none for a record without an absolute time
    (its file then belongs to the day `run --date` names, or to the day it was first seen)."""
    try:
        record = json.loads(raw)
        runs = [(record, record["timing"].get("start"))] if "timing" in record else [(t, None) for t in record["trials"]]
        starts = [_start_ms((step.get("timestamp") for step in run["trajectory"]), start) for run, start in runs]
        return {(_EPOCH + timedelta(milliseconds=start)).date() for start in starts if start is not None}
    except (ValueError, KeyError, TypeError, AttributeError):
        return set()
