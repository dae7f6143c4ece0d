"""LangGraph `astream_events(version="v2")` dumps: a JSON list of events, or `{"events": [...]}`.

Events of one invocation share the root run (the first of their `parent_ids`, or their own
`run_id` at the root); each root run is one episode. `on_chat_model_end` is an LLM call (its
`usage_metadata` the tokens), `on_tool_start` / `on_tool_end` (or `on_tool_error`) a tool call
and its result; an error at the root fails the run. Messages are read as users save them:
`langchain_core.load.dumpd` output (`{"lc": 1, "kwargs": {...}}`) or plain `model_dump()` dicts.
The format has no timestamps: the episode lands in the day the run names (`run --date`) or the
day the file was first seen.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import date
from typing import Any

from pydantic import Field

from eval_pipeline.episodes.adapters.base import Count, Open, Rejected, as_text, parse_object, rejection
from eval_pipeline.episodes.adapters.base import usage as token_split
from eval_pipeline.episodes.records import RawRecord

NAME = "langgraph"


class TokenUsage(Open):
    input_tokens: Count | None = None
    output_tokens: Count | None = None
    total_tokens: Count | None = None


class ModelMessage(Open):
    """A chat model's answer, as `message_dict` reads it."""

    content: str | list[Any] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    usage_metadata: TokenUsage | None = None


class LangGraphEvent(Open):
    """One LangGraph `astream_events(version="v2")` event; a file is a JSON list of them or `{"events": [...]}`."""

    event: str = Field(pattern=r"^on_", description="on_chat_model_start|end, on_tool_start|end, on_chain_start|end, ...")
    name: str | None = None
    run_id: str
    parent_ids: list[str] = Field(default_factory=list, description="outermost first: the root run is parent_ids[0]")
    data: dict[str, Any] = Field(default_factory=dict, description="input / output; messages as dumpd() or model_dump()")
    tags: list[str] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)


def checked_event(event: Any) -> dict:
    """An event checked whole: its fields, a model's answer and the messages it was sent (ValueError otherwise)."""
    if not isinstance(event, dict):
        raise Rejected(f"an event that is no object: {str(event)[:80]}")
    LangGraphEvent.model_validate(event)
    data = event.get("data") or {}
    messages = (data.get("input") or {}).get("messages") if isinstance(data.get("input"), dict) else None
    if messages is not None and not isinstance(messages, list):
        raise Rejected("data.input.messages is no list")
    if event["event"] == "on_chat_model_end":
        if not isinstance(data.get("output"), dict):
            raise Rejected("data.output of on_chat_model_end is no message")
        ModelMessage.model_validate(message_dict(data["output"]))
    return event


def detect(record: Any) -> bool:
    if isinstance(record, dict) and isinstance(record.get("events"), list):
        return True
    return isinstance(record, dict) and str(record.get("event", "")).startswith("on_") and "run_id" in record


def message_dict(value: Any) -> dict:
    """A message as a plain dict with a `type`, from dumpd output or model_dump()."""
    if isinstance(value, dict) and value.get("lc") == 1 and isinstance(value.get("kwargs"), dict):
        kind = value["kwargs"].get("type") or str(value.get("id", [""])[-1]).removesuffix("Message").lower()
        return {**value["kwargs"], "type": kind}
    return value if isinstance(value, dict) else {"type": "unknown", "content": value}


def _content(message: dict) -> str | None:
    content = message.get("content")
    if isinstance(content, list):  # content parts
        return "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    return content


def _last_human(data: dict) -> str | None:
    batches = (data.get("input") or {}).get("messages") or []
    messages = [m for batch in batches for m in (batch if isinstance(batch, list) else [batch])]
    humans = [message_dict(m) for m in messages if message_dict(m).get("type") == "human"]
    return _content(humans[-1]) if humans else None


def _root(event: dict) -> str:
    parents = event.get("parent_ids") or []
    return parents[0] if parents else event["run_id"]


def _episode(root: str, events: list[dict], agent_id: str, day: date) -> dict:
    steps: list[dict] = []
    final, model, failed, asked = None, None, False, None
    for event in events:
        kind, data = event["event"], event.get("data") or {}
        node = (event.get("metadata") or {}).get("langgraph_node")
        who = {"agent": node} if node else {}  # the graph node that acted: the agent of a multi-agent graph
        if kind == "on_chat_model_end":
            output = message_dict(data.get("output"))
            usage = output.get("usage_metadata") or {}
            text = _content(output)
            meta = event.get("metadata") or {}
            call_model = meta.get("ls_model_name") or event.get("name")
            model = model or call_model
            human = _last_human(data)
            tokens = usage.get("total_tokens") or (usage.get("input_tokens") or 0) + (usage.get("output_tokens") or 0)
            steps.append({"step_type": "llm_call", "model": call_model, "input_summary": human if human != asked else None,
                          "output_summary": text, "tokens": tokens,
                          "metadata": {**token_split(usage.get("input_tokens"), usage.get("output_tokens")), **who}})  # fmt: skip
            asked = human if human is not None else asked
            if text and not output.get("tool_calls"):
                final = text
        elif kind == "on_tool_start":
            steps.append(
                {"step_type": "tool_call", "tool_name": event.get("name"), "input_summary": json.dumps(data.get("input")),
                 "metadata": who}
            )  # fmt: skip
        elif kind in ("on_tool_end", "on_tool_error"):
            output = message_dict(data.get("output")) if data.get("output") is not None else {}
            error = (
                str(data.get("error")) if kind == "on_tool_error" else ("tool error" if output.get("status") == "error" else None)
            )
            text = _content(output) if output.get("type") != "unknown" else output.get("content")
            steps.append(
                {
                    "step_type": "tool_result",
                    "tool_name": event.get("name"),
                    "output_summary": as_text(text),
                    "error": error,
                    "metadata": who,
                }
            )
        elif kind == "on_chain_error" and event["run_id"] == root:
            failed = True
            steps.append({"step_type": "error", "error": str(data.get("error"))})
    return {
        "episode_id": f"{agent_id}:{root}",
        "agent_id": agent_id,
        "status": "failure" if failed else "success",
        "started_at": f"{day.isoformat()}T00:00:00Z",
        "steps": [{"step_index": i, **step} for i, step in enumerate(steps)],
        "metadata": {key: value for key, value in {"final_output": final, "model": model, "format": NAME}.items() if value},
    }


def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
    """Every event of the file grouped by root run, in order; one episode per root run."""
    runs: dict[str, list[dict]] = defaultdict(list)
    origin: dict[str, RawRecord] = {}
    read: dict[str, set[int]] = defaultdict(set)  # the records each run was read from
    for position, record in enumerate(records):
        try:
            parsed = parse_object(record.raw)
            events = parsed.get("events", [parsed])
            if not isinstance(events, list):
                raise Rejected("events is no list")
            for event in events:
                checked_event(event)
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        for event in events:
            runs[_root(event)].append(event)
            origin.setdefault(_root(event), record)
            read[_root(event)].add(position)
    for root, events in runs.items():
        source, episode = origin[root], json.dumps(_episode(root, events, agent_id, day))
        yield RawRecord(source.source, f"{source.locator} run {root}", episode, day, source_records=len(read[root]))
