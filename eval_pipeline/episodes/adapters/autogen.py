"""AutoGen AgentChat event logs: JSONL of each event's own `model_dump()` (`type`, `source`, `models_usage`).

A run starts at a `TextMessage` from the user after other events; each run is one episode and
each step keeps the agent that produced it (`metadata.agent`). A `TextMessage` from an agent is an
LLM call, a `ToolCallRequestEvent` an LLM call deciding on tools, and each of its calls is paired
with its `ToolCallExecutionEvent` result by call id (`is_error` makes it an error). Summaries,
handoffs and stop messages are decisions. Times come from `created_at` where the log has them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from eval_pipeline.episodes.adapters.base import as_text, reason, rejected
from eval_pipeline.episodes.records import RawRecord

NAME = "autogen"
EVENTS = {
    "TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage", "HandoffMessage",
    "StopMessage", "ThoughtEvent", "MultiModalMessage", "UserInputRequestedEvent", "ModelClientStreamingChunkEvent",
}  # fmt: skip
USER = "user"


def detect(record: Any) -> bool:
    return isinstance(record, dict) and record.get("type") in EVENTS and "source" in record


def days(raw: str) -> set[date]:
    """The UTC day an event was created on, where the log has `created_at`, for the file index."""
    try:
        stamp = datetime.fromisoformat(str(json.loads(raw)["created_at"]).replace("Z", "+00:00"))
    except (ValueError, KeyError, TypeError):
        return set()
    return {(stamp.astimezone(UTC) if stamp.tzinfo else stamp).date()}


def _tokens(event: dict) -> int:
    usage = event.get("models_usage") or {}
    return int(usage.get("prompt_tokens") or 0) + int(usage.get("completion_tokens") or 0)


def _episode(run: list[dict], number: int, agent_id: str, day: date, stem: str) -> dict:
    steps: list[dict] = []
    requested: dict[str, dict] = {}
    pending, final, failed = None, None, False
    for event in run:
        kind, source = event["type"], event.get("source")
        who = {"metadata": {"agent": source}}
        if kind == "TextMessage" and source == USER:
            pending = as_text(event.get("content"))
        elif kind in ("TextMessage", "MultiModalMessage"):
            text = as_text(event.get("content"))
            steps.append(
                {"step_type": "llm_call", "input_summary": pending, "output_summary": text, "tokens": _tokens(event), **who}
            )
            pending, final = None, text
        elif kind == "ToolCallRequestEvent":
            calls = [c for c in event.get("content") or [] if isinstance(c, dict)]
            steps.append({"step_type": "llm_call", "input_summary": pending, "tokens": _tokens(event),
                          "output_summary": f"call {', '.join(c.get('name', '?') for c in calls)}", **who})  # fmt: skip
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
    stamps = [e["created_at"] for e in run if e.get("created_at")]
    return {
        "episode_id": f"{agent_id}:{stem}:{number}",
        "agent_id": agent_id,
        "status": "success",
        "started_at": min(stamps) if stamps else f"{day.isoformat()}T00:00:00Z",
        **({"ended_at": max(stamps)} if stamps else {}),
        "steps": [{"step_index": i, **step} for i, step in enumerate(steps)],
        "metadata": {
            key: value for key, value in {"final_output": final, "format": NAME, "tool_errors": failed}.items() if value
        },
    }


def convert(records: Iterator[RawRecord], agent_id: str, day: date) -> Iterator[RawRecord]:
    """Events in file order, split into runs at each new user task."""
    runs: list[tuple[RawRecord, list[dict]]] = []
    for record in records:
        try:
            event = json.loads(record.raw)
            if not isinstance(event, dict) or not isinstance(event.get("type"), str) or "source" not in event:
                raise ValueError("an event without `type` and `source`")
        except ValueError as exc:
            yield rejected(record, day, "invalid JSON" if isinstance(exc, json.JSONDecodeError) else reason(NAME, exc))
            continue
        starts_run = (
            event["type"] == "TextMessage" and event["source"] == USER and (not runs or runs[-1][1][-1]["source"] != USER)
        )
        if starts_run or not runs:
            runs.append((record, []))
        runs[-1][1].append(event)
    for number, (first, events) in enumerate(runs, 1):
        episode = _episode(events, number, agent_id, day, Path(first.source).stem)
        yield RawRecord(first.source, f"{first.locator} run {number}", json.dumps(episode), day)
