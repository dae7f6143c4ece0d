"""AutoGen AgentChat event logs: JSONL of what `run_stream` yields, each item's own `model_dump(mode="json")`.

Checked against autogen-agentchat 0.7.5 (the tests produce a real team's logs). A line is an event
(`type`, `source`, `models_usage`, `created_at`, `content`) or the `TaskResult` that closes a run
(`{"messages": [...], "stop_reason": ...}`, no `type`). A TaskResult ends the run before it; one
with no events before it (`await team.run(task)` saved one a line) is a run of its own, read from
its `messages`. A new task (a `TextMessage` from the user after other events) also starts a run, so
logs saved without TaskResults split too; a user's reply within a run (a `UserProxyAgent` named
"user") follows its own `UserInputRequestedEvent` and stays in it. Each run is one episode, and
each step keeps the agent that produced it (`metadata.agent`) and its event's `created_at`.

A `TextMessage` from an agent is an LLM call, a `ToolCallRequestEvent` (`content`: FunctionCalls
`{id, name, arguments}`) an LLM call deciding on tools, and each call is paired with its result in
the `ToolCallExecutionEvent` (`content`: FunctionExecutionResults `{call_id, name, content,
is_error}`; `is_error` makes it an error). `models_usage` gives the tokens (prompt + completion,
the split kept). Thoughts, tool-call summaries, handoffs and stop messages are decisions; streamed
chunks repeat the message that follows them and are skipped. The episode's final output is the last
agent message or tool-call summary, and the TaskResult's `stop_reason` is kept in its metadata. The run
lasts from its first event's `created_at` to its last (its wall time, what latency deltas compare).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator

from eval_pipeline.episodes.adapters.base import (
    Count,
    Open,
    Rejected,
    Timestamp,
    as_text,
    moment,
    parse,
    parse_object,
    rejection,
    timed,
)
from eval_pipeline.episodes.adapters.base import usage as token_split
from eval_pipeline.episodes.records import RawRecord

NAME = "autogen"
EVENTS = {
    "TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage", "HandoffMessage",
    "StopMessage", "ThoughtEvent", "MultiModalMessage", "UserInputRequestedEvent", "ModelClientStreamingChunkEvent",
}  # fmt: skip
USER = "user"


class AutoGenUsage(Open):
    prompt_tokens: Count
    completion_tokens: Count


class FunctionCall(Open):
    id: str
    name: str
    arguments: str


class FunctionExecutionResult(Open):
    call_id: str
    content: str
    name: str | None = None
    is_error: bool | None = None


class AutoGenEvent(Open):
    """One AutoGen AgentChat event or message, its own `model_dump(mode="json")`, a JSONL line each."""

    type: str = Field(description=f"one of {', '.join(sorted(EVENTS))} (others are read and skipped)")
    source: str
    models_usage: AutoGenUsage | None = None
    content: str | list[FunctionCall] | list[FunctionExecutionResult] | list[str | dict[str, Any]] | dict[str, Any] | None = None
    created_at: Timestamp | None = None
    id: str | None = None
    metadata: dict[str, str] = Field(default_factory=dict)

    @field_validator("content", mode="wrap")
    @classmethod
    def _of_its_kind(cls, content: Any, handler: Any, info: Any) -> Any:
        """A tool call request's content is its FunctionCalls, an execution's their results."""
        kind = str((info.data or {}).get("type"))
        shapes: dict[str, type[Open]] = {"ToolCallRequestEvent": FunctionCall, "ToolCallExecutionEvent": FunctionExecutionResult}
        shape = shapes.get(kind)
        if shape is None:
            return handler(content)
        if not isinstance(content, list):
            raise ValueError(f"a {kind}'s content is a list of {shape.__name__}s")
        return [shape.model_validate(item) for item in content]


class AutoGenTaskResult(Open):
    """The `TaskResult` that closes a run (`run_stream`'s last item, or what `run()` returns)."""

    messages: list[AutoGenEvent]
    stop_reason: str | None = None


def _is_event(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("type"), str) and "source" in record


def _is_result(record: Any) -> bool:
    """A `TaskResult`: the run's messages and why it stopped."""
    return isinstance(record, dict) and isinstance(record.get("messages"), list) and "stop_reason" in record


def detect(record: Any) -> bool:
    if _is_result(record):
        return bool(record["messages"]) and detect(record["messages"][0])
    return _is_event(record) and record["type"] in EVENTS


def _day(stamp: Any) -> date | None:
    return at.date() if (at := moment(stamp)) else None


def days(raw: str) -> set[date]:
    """The UTC days of the events' `created_at` (a TaskResult's, of its messages), for the file index."""
    try:
        record = parse(raw)
    except ValueError:
        return set()
    events = record["messages"] if _is_result(record) else [record]
    return {day for event in events if isinstance(event, dict) and (day := _day(event.get("created_at")))}


def _usage(event: dict) -> tuple[int, dict]:
    usage = event.get("models_usage") or {}
    prompt, completion = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    return prompt + completion, token_split(prompt, completion) if usage else {}


def run_episode(run: list[dict], stop_reason: str | None, episode_id: str, agent_id: str, day: date) -> dict:
    """One run's events (what `run_stream` yields, without its TaskResult) as a canonical episode."""
    steps: list[dict] = []
    requested: dict[str | None, dict] = {}  # by call id
    pending, final, failed = None, None, False
    for event in run:
        kind, source = event["type"], event.get("source")
        tokens, split = _usage(event)
        at = {"timestamp": event.get("created_at")}
        who = {**at, "metadata": {"agent": source}}
        llm = {"step_type": "llm_call", "input_summary": pending, "tokens": tokens, **at, "metadata": {"agent": source, **split}}
        if kind == "TextMessage" and source == USER:
            pending = as_text(event.get("content"))
        elif kind in ("TextMessage", "MultiModalMessage"):
            text = as_text(event.get("content"))
            steps.append({**llm, "output_summary": text})
            pending, final = None, text
        elif kind == "ToolCallRequestEvent":
            calls = [c for c in event.get("content") or [] if isinstance(c, dict)]
            steps.append({**llm, "output_summary": f"call {', '.join(c.get('name', '?') for c in calls)}"})
            pending = None
            requested.update({c.get("id"): c for c in calls})
        elif kind == "ToolCallExecutionEvent":
            for result in event.get("content") or []:
                call = requested.pop(result.get("call_id"), {"name": result.get("name")})
                name = call.get("name") or result.get("name")
                failed = failed or bool(result.get("is_error"))
                steps.append(
                    {"step_type": "tool_call", "tool_name": name, "input_summary": as_text(call.get("arguments")), **who}
                )
                steps.append({"step_type": "tool_result", "tool_name": name, "output_summary": as_text(result.get("content")),
                              "error": as_text(result.get("content")) if result.get("is_error") else None, **who})  # fmt: skip
        elif kind in ("ToolCallSummaryMessage", "HandoffMessage", "StopMessage", "ThoughtEvent"):
            text = as_text(event.get("content"))
            steps.append({"step_type": "decision", "output_summary": text, **who})
            final = text if kind == "ToolCallSummaryMessage" else final
    stamps = [stamp for e in run if (stamp := moment(e.get("created_at")))]
    agents = list(dict.fromkeys(e.get("source") for e in run if e.get("source") != USER))
    meta = {"final_output": final, "format": NAME, "tool_errors": failed, "agents": agents, "stop_reason": stop_reason}
    return {
        "episode_id": episode_id,
        "agent_id": agent_id,
        "status": "success",
        **timed(stamps, day),
        "steps": [{"step_index": i, **step} for i, step in enumerate(steps)],
        "metadata": {key: value for key, value in meta.items() if value},
    }


def checked_event(event: Any) -> dict:
    """An event as AgentChat dumps it, checked whole (ValueError naming the first bad field otherwise)."""
    if not _is_event(event):
        raise Rejected("neither an event with `type` and `source` nor a TaskResult with `messages` and `stop_reason`")
    AutoGenEvent.model_validate(event)
    return event


def _read(record: RawRecord) -> dict:
    """One line: an event, or a TaskResult whose messages are events."""
    line = parse_object(record.raw)
    if _is_result(line):
        AutoGenTaskResult.model_validate(line)
        return line
    return checked_event(line)


@dataclass
class _Run:
    first: RawRecord
    events: list[dict] = field(default_factory=list)
    stop_reason: str | None = None
    lines: int = 0


def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
    """Lines in file order, split into runs at TaskResults and at each new user task."""
    runs: list[_Run] = []
    open_run = False  # the last run still takes events
    for record in records:
        try:
            line = _read(record)
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        if _is_result(line):
            if open_run:  # the stream's closing TaskResult: its messages repeat the events above
                runs[-1].stop_reason, runs[-1].lines = line["stop_reason"], runs[-1].lines + 1
            else:  # a TaskResult saved on its own
                runs.append(_Run(record, line["messages"], line["stop_reason"], lines=1))
            open_run = False
            continue
        # a user's reply inside a run (UserProxyAgent named "user") follows its own UserInputRequestedEvent
        new_task = line["type"] == "TextMessage" and line["source"] == USER
        if not open_run or (new_task and runs[-1].events[-1]["source"] != USER):
            runs.append(_Run(record))
            open_run = True
        runs[-1].events.append(line)
        runs[-1].lines += 1
    for number, run in enumerate(runs, 1):
        episode_id = f"{agent_id}:{Path(run.first.source).stem}:{number}"
        episode = run_episode(run.events, run.stop_reason, episode_id, agent_id, day)
        yield RawRecord(run.first.source, f"{run.first.locator} run {number}", json.dumps(episode), day, source_records=run.lines)
