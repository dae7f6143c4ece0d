"""OpenAI chat transcripts, as tau-bench publishes its trajectories and most OpenAI-compatible agents log them.

A record is `{task_id, trial, reward, traj: [chat messages], info}`. It becomes one episode:
assistant turns are LLM calls, each tool call is followed by its own result (matched by
`tool_call_id`, so parallel calls stay paired), the final answer is the last assistant text, and
the run succeeded iff `reward >= 1`. The first LLM call keeps the full messages it was sent, so
live replay re-sends the real context. Transcripts carry no timestamps: the episode starts at
midnight UTC of the partition it is read for.
"""

from __future__ import annotations

import json
from datetime import date
from typing import Any

from pydantic import Field

from eval_pipeline.episodes.adapters.base import Open, one_by_one

NAME = "openai-transcript"


class ToolFunction(Open):
    name: str | None = None
    arguments: str | dict[str, Any] | None = None


class ToolCall(Open):
    id: str | None = None
    function: ToolFunction


class ChatMessage(Open):
    """An OpenAI chat message: system, user, assistant (with tool_calls) or tool (with its tool_call_id)."""

    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[ToolCall] | None = None
    tool_call_id: str | None = None
    name: str | None = None


class TranscriptRecord(Open):
    """An OpenAI chat transcript, as tau-bench publishes trajectories."""

    task_id: str | int
    trial: int = Field(0, ge=0)
    reward: float | None = Field(None, allow_inf_nan=False)
    traj: list[ChatMessage] = Field(description="OpenAI chat messages: system, user, assistant (with tool_calls), tool")
    info: dict[str, Any] | None = None


def detect(record: Any) -> bool:
    return isinstance(record, dict) and "traj" in record and "episode_id" not in record


def to_episode(record: dict, agent_id: str, day: date) -> dict:
    checked = TranscriptRecord.model_validate(record)
    reward, trial = checked.reward, checked.trial
    steps, final_output = chat_steps(record["traj"])
    metadata = {
        "task_id": str(record["task_id"]),
        "trial": trial,
        "reward": reward,
        "final_output": final_output,
        "format": NAME,
        "info": record.get("info"),
    }
    return {
        "episode_id": f"{agent_id}:{record['task_id']}:{trial}",
        "agent_id": agent_id,
        "status": "success" if (reward or 0) >= 1 else "failure",
        "started_at": f"{day.isoformat()}T00:00:00Z",
        "steps": steps,
        "metadata": {key: value for key, value in metadata.items() if value is not None},
    }


def _text(content: Any) -> str:
    """Message content as text: a string, or the text parts of a list of content parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return ""


def chat_steps(traj: list[dict]) -> tuple[list[dict], str | None]:
    """OpenAI chat messages as steps, and the final answer: each assistant turn an LLM call, each tool call
    followed by its own result."""
    results = {m.get("tool_call_id"): m for m in traj if m["role"] == "tool" and m.get("tool_call_id")}
    used: set[int] = set()
    steps: list[dict] = []
    pending_input, first_call, final_output = None, True, None

    def add(step: dict) -> None:
        steps.append({"step_index": len(steps), **step})

    for position, message in enumerate(traj):
        role, text = message["role"], _text(message.get("content"))
        if role == "user":
            pending_input = text
        elif role == "assistant":
            calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            llm_step: dict[str, Any] = {"step_type": "llm_call", "input_summary": pending_input, "output_summary": text or None}
            if first_call:
                llm_step["metadata"] = {"messages": traj[:position]}  # the full context the first call was sent
            add(llm_step)
            pending_input, first_call = None, False
            if text and not calls:
                final_output = text
            for call in calls:
                function = call.get("function") or {}
                name = function.get("name")
                add({"step_type": "tool_call", "tool_name": name, "input_summary": _arguments(function.get("arguments"))})
                result = results.get(call.get("id"))
                if result is not None:
                    used.add(id(result))
                    add(_tool_result(name, result))
        elif role == "tool" and id(message) not in used:  # a result no call asked for: kept, not paired
            add(_tool_result(message.get("name"), message))
    return steps, final_output


def _arguments(arguments: Any) -> str | None:
    if arguments is None or isinstance(arguments, str):
        return arguments
    return json.dumps(arguments, sort_keys=True)


def _tool_result(name: str | None, message: dict) -> dict:
    output = _text(message.get("content"))
    step = {"step_type": "tool_result", "tool_name": name or message.get("name"), "output_summary": output}
    if output.lstrip().lower().startswith("error") or message.get("status") == "error":  # tau-bench: "Error: ..."
        step["error"] = output
    return step


convert = one_by_one(NAME, to_episode)
