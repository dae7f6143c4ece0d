"""LangGraph checkpoints saved as JSON (`MemorySaver`, `SqliteSaver`, any checkpointer): one thread, one episode.

A record is one checkpoint in any of the shapes users save: a `CheckpointTuple` as `checkpointer.list(config)`
or `get_tuple` returns it (`{config, checkpoint: {id, ts, channel_values}, metadata, pending_writes}`), a
`StateSnapshot` of `graph.get_state_history(config)` (`{values, config, metadata, created_at, tasks}`), a bare
`Checkpoint` (`{id, ts, channel_values}`), or agent-eval's `{"checkpoints": [{checkpoint_id, timestamp,
channel_values, metadata}]}`; a file holds them as JSONL, a JSON list or indented JSON, newest or oldest first.

Checkpoints are grouped by `thread_id` (without one, a file is one thread); subgraphs' checkpoints (a
`checkpoint_ns`) are left to their parent's. A thread's latest checkpoint (by time, then `metadata.step`, then
order) holds its whole conversation: `messages` as `dumpd`, `model_dump()` or `{role, content}` dicts, read as
chat transcripts are (each AI turn an LLM call with its `usage_metadata` tokens and model, each tool call
paired with its ToolMessage; `status: "error"` marks a failed tool). The run lasts from the thread's first
checkpoint to its latest; an `__error__` write or a task's error fails it.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from pydantic import model_validator

from eval_pipeline.episodes.adapters.base import Open, Rejected, Timestamp, moment, parse, parse_object, rejection, timed, usage
from eval_pipeline.episodes.adapters.langgraph import ModelMessage, message_dict
from eval_pipeline.episodes.adapters.openai_transcript import chat_steps
from eval_pipeline.episodes.records import RawRecord

NAME = "langgraph-checkpoint"
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}  # LangChain message types
_UNTIMED = datetime.min.replace(tzinfo=UTC)


def detect(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    return (
        isinstance(record.get("checkpoints"), list)
        or isinstance((record.get("checkpoint") or {}).get("channel_values"), dict)
        or (isinstance(record.get("values"), dict) and isinstance(record.get("config"), dict))
        or isinstance(record.get("channel_values"), dict)
    )


class Configurable(Open):
    thread_id: str | int | None = None
    checkpoint_ns: str | None = None
    checkpoint_id: str | None = None


class Config(Open):
    configurable: Configurable | None = None


class Saved(Open):
    """The fields any saved shape of a checkpoint may carry, checked by type (the shapes are told apart by `detect`)."""

    config: Config | None = None
    metadata: dict[str, Any] | None = None
    pending_writes: list[list[Any]] | None = None
    tasks: list[Any] | None = None
    id: str | None = None
    checkpoint_id: str | None = None
    ts: Timestamp | None = None
    created_at: Timestamp | None = None
    timestamp: Timestamp | None = None


class CheckpointMessage(ModelMessage):
    """A message of a thread's state: a LangChain message (its `type`) or a chat message (its `role`)."""

    type: str | None = None
    role: str | None = None

    @model_validator(mode="after")
    def _typed(self) -> CheckpointMessage:
        if self.type is None and self.role is None:
            raise ValueError("a message with neither `type` nor `role`")
        return self


def _checked(record: dict, checkpoint: Any, values: Any) -> list:
    """The checkpoint's record checked whole; its messages."""
    if not isinstance(checkpoint, dict):
        raise Rejected("`checkpoint` is no object")
    Saved.model_validate(record)
    Saved.model_validate(checkpoint)
    if not isinstance(values, dict):
        raise Rejected("`channel_values` (or `values`) is no object")
    messages = values.get("messages") or []
    if not isinstance(messages, list):
        raise Rejected("`messages` is not a list")
    for message in messages:
        if not isinstance(message, dict):
            raise Rejected(f"a message that is no object: {str(message)[:80]}")
        CheckpointMessage.model_validate(message_dict(message))
    return messages


@dataclass(frozen=True)
class _Checkpoint:
    thread: str | None
    id: str | None
    at: datetime | None
    step: int | None
    messages: list
    error: str | None  # what failed the run, where the checkpoint says


def _error(record: dict) -> str | None:
    """A pending `__error__` write of a CheckpointTuple, or a StateSnapshot task's error (a PregelTask dumped
    as a dict, or as the list `json.dumps` makes of a named tuple: id, name, path, error, ...)."""
    writes = [w for w in record.get("pending_writes") or [] if isinstance(w, list) and len(w) == 3 and w[1] == "__error__"]
    tasks = [
        t.get("error") if isinstance(t, dict) else t[3] if isinstance(t, list) and len(t) > 3 else None
        for t in record.get("tasks") or []
    ]
    return next((str(error) for error in [*(w[2] for w in writes), *tasks] if error), None)


def _checkpoints(record: Any) -> list[_Checkpoint]:
    if isinstance(record, dict) and isinstance(record.get("checkpoints"), list):
        return [checkpoint for held in record["checkpoints"] for checkpoint in _checkpoints(held)]
    if not detect(record):
        raise Rejected("not a checkpoint: none of `checkpoint.channel_values`, `values` with `config`, `channel_values`")
    checkpoint = record.get("checkpoint") or record
    values = record["values"] if isinstance(record.get("values"), dict) else (checkpoint or {}).get("channel_values")
    messages = _checked(record, checkpoint, values)
    configurable = (record.get("config") or {}).get("configurable") or {}
    if configurable.get("checkpoint_ns"):  # a subgraph's: its parent's checkpoints hold the conversation
        return []
    step = (record.get("metadata") or {}).get("step")
    return [
        _Checkpoint(
            thread=str(configurable["thread_id"]) if configurable.get("thread_id") is not None else None,
            id=configurable.get("checkpoint_id") or checkpoint.get("id") or checkpoint.get("checkpoint_id"),
            at=moment(checkpoint.get("ts") or record.get("created_at") or checkpoint.get("timestamp")),
            step=step if isinstance(step, int) else None,
            messages=messages,
            error=_error(record),
        )
    ]


def days(raw: str) -> set[date]:
    """The UTC days a record's checkpoints were taken on, for the file index."""
    try:
        return {checkpoint.at.date() for checkpoint in _checkpoints(parse(raw)) if checkpoint.at}
    except ValueError:
        return set()


def _chat_message(value: Any) -> dict:
    """A LangChain message (dumpd, model_dump) or a `{role, content}` dict as an OpenAI chat message."""
    message = message_dict(value)
    role = message.get("role") or ROLES.get(str(message.get("type")), str(message.get("type")))
    chat = {"role": role, "content": message.get("content"), "name": message.get("name")}
    if role == "assistant":
        calls = [call for call in message.get("tool_calls") or [] if isinstance(call, dict)]
        chat["tool_calls"] = [
            {
                "id": call.get("id"),
                "type": "function",
                "function": call.get("function") or {"name": call.get("name"), "arguments": call.get("args")},
            }
            for call in calls
        ]
    if role == "tool":
        chat |= {"tool_call_id": message.get("tool_call_id"), "status": message.get("status")}
    return chat


def _priced_turns(steps: list[dict], messages: list[dict], chat: list[dict]) -> None:
    """Each AI turn's LLM step gets its tokens (`usage_metadata`) and model (`response_metadata`)."""
    turns = [message for message, said in zip(messages, chat, strict=True) if said["role"] == "assistant"]
    calls = [step for step in steps if step["step_type"] == "llm_call"]
    for step, turn in zip(calls, turns, strict=True):
        spent = turn.get("usage_metadata") or {}
        prompt, completion = spent.get("input_tokens") or 0, spent.get("output_tokens") or 0
        step["tokens"] = spent.get("total_tokens") or prompt + completion
        step["metadata"] = {**step.get("metadata", {}), **(usage(prompt, completion) if spent else {})}
        answered_by = turn.get("response_metadata") or {}
        step["model"] = answered_by.get("model_name") or answered_by.get("model")


def _episode(thread: str | None, checkpoints: list[tuple[int, _Checkpoint]], agent_id: str, day: date, stem: str) -> dict:
    _, latest = max(checkpoints, key=lambda item: (item[1].at or _UNTIMED, item[1].step or -2, item[0]))
    messages = [message_dict(message) for message in latest.messages]
    chat = [_chat_message(message) for message in messages]
    steps, final = chat_steps(chat)
    _priced_turns(steps, messages, chat)
    if latest.error:
        steps.append({"step_index": len(steps), "step_type": "error", "error": latest.error})
    meta = {"final_output": final, "format": NAME, "thread_id": thread, "checkpoint_id": latest.id, "step": latest.step}
    return {
        "episode_id": f"{agent_id}:{thread or f'{stem}:{latest.id}'}",
        "agent_id": agent_id,
        "status": "failure" if latest.error else "success",
        **timed([checkpoint.at for _, checkpoint in checkpoints if checkpoint.at], day),
        "steps": steps,
        "metadata": {key: value for key, value in meta.items() if value is not None},
    }


def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
    """Every checkpoint of the file grouped by thread; one episode per thread, from its latest checkpoint."""
    threads: dict[str | None, list[tuple[int, _Checkpoint]]] = defaultdict(list)
    first: dict[str | None, RawRecord] = {}  # the record each thread was first read from
    for position, record in enumerate(records):
        try:
            held = _checkpoints(parse_object(record.raw))
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        for checkpoint in held:
            threads[checkpoint.thread].append((position, checkpoint))
            first.setdefault(checkpoint.thread, record)
    for thread, taken in threads.items():
        episode = _episode(thread, taken, agent_id, day, Path(first[thread].source).stem)
        locator = f"{first[thread].locator} thread {thread}" if thread else first[thread].locator
        read = len({position for position, _ in taken})
        yield RawRecord(first[thread].source, locator, json.dumps(episode), day, source_records=read)
