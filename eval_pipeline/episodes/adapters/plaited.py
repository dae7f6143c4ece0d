"""plaited agent-eval-harness JSONL: `CaptureResult` (one run) and `TrialResult` (k runs of one case).

A capture becomes one episode and each trial of a trial result one episode, the case `id` as
the task, its `input` (a prompt or a multi-turn list) and `hint` kept in metadata. The grader's
verdict (`score.pass` / `pass`) becomes `metadata.reward` (1 or 0), so trials are judged by it;
its 0..1 score and reasoning are kept as `metadata.grader_score` and `grader_reasoning`.
Trajectory steps map to ours: message → llm_call, thought and plan → decision, tool_call → a
tool call followed by its result (an error when its status says it failed); `trajectory` maps
ours back, for graders written for plaited and for the export (`to_capture`).

plaited writes a step's `timestamp` as milliseconds since the run started (`timing.start`, epoch
milliseconds); absolute epoch times are read as such too. A record with no absolute time at all (a
TrialResult has no `timing`) starts at midnight of the day it is read for: the day `run --date`
names, else the day its file was first seen, never 1970.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime, time, timedelta
from typing import Annotated, Any, Literal, TypeGuard

from pydantic import Field

from eval_pipeline.episodes.adapters.base import MAX_EPOCH_MS, Amount, Count, Open, as_text, parse, parse_object, rejection
from eval_pipeline.episodes.records import RawRecord

NAME = "plaited"
FAILED_STATUSES = {"failed", "error", "errored", "failure"}
EXPORTED = "eval_pipeline"  # `metadata.source` of the captures `to_capture` writes
_SCORED_TAGS = ("baseline", "expected", "label")  # an episode's metadata tags that decide its verdict or its selection
ABSOLUTE_FROM_MS = 1e11  # 1973-03-03 in epoch ms: an earlier "time" is an offset from the run's start
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


Millis = Annotated[float, Field(ge=0, le=MAX_EPOCH_MS, allow_inf_nan=False)]  # since the run started, or the epoch


class TrajectoryStep(Open):
    type: Literal["thought", "message", "tool_call", "plan"]
    content: str | None = None
    name: str | None = None
    status: str | None = None
    input: Any = None
    output: Any = None
    entries: list[Any] | None = None
    duration: Amount | None = None
    timestamp: Millis | None = None  # milliseconds since the run started (plaited's), or epoch milliseconds


class GraderResult(Open):
    pass_: bool = Field(alias="pass")
    score: float = Field(allow_inf_nan=False)
    reasoning: str | None = None


class Timing(Open):
    start: Millis
    end: Millis
    total: Amount
    sessionCreation: Amount | None = None
    inputTokens: Count | None = None
    outputTokens: Count | None = None


class CaptureResult(Open):
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


class TrialEntry(Open):
    trialNum: Count
    output: str
    trajectory: list[TrajectoryStep]
    duration: Amount
    pass_: bool | None = Field(None, alias="pass")
    score: float | None = Field(None, allow_inf_nan=False)
    reasoning: str | None = None


class TrialResult(Open):
    id: str
    input: str | list[str]
    hint: str | None = None
    k: Count
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


def _verdict(passed: bool | None, score: float | None, reasoning: str | None) -> dict:
    verdict = {"reward": None if passed is None else float(passed), "grader_score": score, "grader_reasoning": reasoning}
    return {key: value for key, value in verdict.items() if value is not None}


def to_episode(record: dict, agent_id: str, day: date) -> dict:
    capture = CaptureResult.model_validate(record)
    graded = capture.score
    verdict = _verdict(graded.pass_, graded.score, graded.reasoning) if graded else {}
    # an export of ours (`to_capture`) carries what plaited has no field for; a user's prompt metadata is theirs
    ours = capture.metadata if capture.metadata.get("source") == EXPORTED else {}
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
        **({"total_cost_usd": ours["total_cost_usd"]} if ours.get("total_cost_usd") is not None else {}),
        "steps": _steps(capture.input, capture.trajectory, start),
        "metadata": {
            **capture.metadata,
            "task_id": capture.id,
            "input": capture.input,
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
        verdict = _verdict(trial.pass_, trial.score, trial.reasoning)
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
                    "input": result.input,
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
            parsed = parse_object(record.raw)
            trials = "trials" in parsed
            episodes = trial_episodes(parsed, agent_id, day) if trials else [to_episode(parsed, agent_id, day)]
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        if not trials:  # the line is the capture's own; a TrialResult's holds all its trials, each an episode
            yield RawRecord(record.source, record.locator, json.dumps(episodes[0]), day, given=record.raw)
            continue
        for number, episode in enumerate(episodes):
            yield RawRecord(record.source, f"{record.locator} trial {number + 1}", json.dumps(episode), day)


def _epoch_ms(timestamp: str | datetime) -> float:
    moment = timestamp if isinstance(timestamp, datetime) else datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return (moment - _EPOCH) / timedelta(milliseconds=1)


def _parsed(text: str | None) -> Any:
    try:
        return json.loads(text) if text else text
    except ValueError:
        return text


def _result_of(steps: list[dict], call: int, claimed: set[int]) -> dict:
    """The first later result of the same tool not yet paired with a call (parallel calls have theirs in order): a
    `tool_result`, or the `error` step naming the tool, as an AIR recording has a failed call's."""
    name = steps[call].get("tool_name")
    for index in range(call + 1, len(steps)):
        step, kind = steps[index], steps[index].get("step_type")
        answers = kind == "tool_result" and step.get("tool_name") in (name, None)
        if index not in claimed and (answers or (kind == "error" and name is not None and step.get("tool_name") == name)):
            claimed.add(index)
            return step
    return {}


def trajectory(steps: list[dict], started_at: str | datetime | None) -> list[dict]:
    """Our steps (canonical, in order) as plaited `TrajectoryStep`s, which graders written for plaited read:
    llm_call → message, decision and error → thought, a tool call → tool_call with its input, its output (its
    own, else its result's) and `failed` when either erred. Timestamps are milliseconds since `started_at`, as
    plaited writes them (0 for a step without a time)."""
    start = _epoch_ms(started_at) if started_at else None
    claimed: set[int] = set()
    converted: list[dict] = []
    for index, step in enumerate(steps):
        stamp = step.get("timestamp")
        at = {"timestamp": _epoch_ms(stamp) - start if stamp and start is not None else 0}
        kind = step.get("step_type")
        if kind == "llm_call":
            converted.append({"type": "message", "content": step.get("output_summary") or "", **at})
        elif kind in ("decision", "error") and index not in claimed:  # a tool's error is its call's failure
            converted.append({"type": "thought", "content": step.get("output_summary") or step.get("error") or "", **at})
        elif kind == "tool_call":
            own = step.get("output_summary")
            result = {} if own is not None else _result_of(steps, index, claimed)
            duration = step.get("duration_ms") or result.get("duration_ms")
            output = next((text for text in (own, result.get("output_summary"), result.get("error")) if text is not None), None)
            converted.append(
                {
                    "type": "tool_call",
                    "name": step.get("tool_name") or "",
                    "status": "failed" if step.get("error") or result.get("error") else "completed",
                    "input": _parsed(step.get("input_summary")),
                    "output": _parsed(output),
                    **({"duration": duration} if duration else {}),
                    **at,
                }
            )
    return converted


def grader_verdict(metadata: dict) -> dict | None:
    """The run's own grader's verdict as plaited's GraderResult, None without one: an executable grader's
    (`metadata.grader`), else the recorded reward (a plaited result's `pass`, with its score and reasoning)."""
    graded = metadata.get("grader") or {}
    if "pass" in graded:
        return {key: graded[key] for key in ("pass", "score", "reasoning") if graded.get(key) is not None}
    reward = metadata.get("reward")
    if reward is None:
        return None
    score = metadata.get("grader_score")
    verdict = {"pass": float(reward) >= 1, "score": min(max(float(reward), 0.0), 1.0) if score is None else score}
    return {**verdict, **({"reasoning": metadata["grader_reasoning"]} if metadata.get("grader_reasoning") else {})}


def to_capture(episode: dict) -> dict:
    """One of our stored episodes (as `warehouse.export` reads it) as a CaptureResult: its input (the case's list
    for a multi-turn one), hint and trajectory, the run's own grader's verdict as `score` where it has one, and
    our verdict beside it as `metadata.eval_pipeline`.

    What plaited has no field for (episode id, agent, trial, status, tokens, cost, model, and the tags scoring reads:
    a pin, case expectations, a label) rides in `metadata`, so importing the export gives the same episodes back,
    scored the same."""
    recorded, steps = episode.get("metadata") or {}, episode.get("steps") or []
    converted = trajectory(steps, episode["started_at"])
    first_prompt = next((step.get("input_summary") for step in steps if step["step_type"] == "llm_call"), None)
    start = _epoch_ms(episode["started_at"])
    graded = grader_verdict(recorded)
    grader_error = (recorded.get("grader") or {}).get("error")
    capture = {
        "id": episode["task_id"],
        "input": recorded.get("input") or first_prompt or "",
        "output": episode.get("final_output") or "",
        **({"hint": recorded["hint"]} if recorded.get("hint") else {}),
        "trajectory": converted,
        "metadata": {
            "episode_id": episode["episode_id"],
            "agent_id": episode["agent_id"],
            "trial": episode.get("trial"),
            "status": episode["status"],
            "total_tokens": episode.get("total_tokens"),
            "total_cost_usd": episode.get("total_cost_usd"),
            "model": episode.get("model"),
            "category": episode.get("category"),
            **{tag: recorded[tag] for tag in _SCORED_TAGS if recorded.get(tag) is not None},
            "source": EXPORTED,
            "eval_pipeline": {key: episode.get(key) for key in ("passed", "verdict_reason", "weighted_score")},
            **({"grader_error": grader_error} if grader_error else {}),
        },
        "timing": {
            "start": start,
            "end": start + (episode.get("total_duration_ms") or 0),
            "total": episode.get("total_duration_ms") or 0,
            "sessionCreation": 0,
        },
        "toolErrors": any(step["type"] == "tool_call" and step["status"] == "failed" for step in converted),
    }
    return {**capture, "score": graded} if graded else capture


def days(raw: str) -> set[date]:
    """UTC days a capture or a trial started on, for the file index; none for a record without an absolute time
    (its file then belongs to the day `run --date` names, or to the day it was first seen)."""
    try:
        record = parse(raw)
        runs = [(record, record["timing"].get("start"))] if "timing" in record else [(t, None) for t in record["trials"]]
        starts = [_start_ms((step.get("timestamp") for step in run["trajectory"]), start) for run, start in runs]
        return {(_EPOCH + timedelta(milliseconds=start)).date() for start in starts if start is not None}
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
        return set()
