"""One candidate run as the per-episode scorers (case assertions, deterministic checks) read it."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: str | None  # JSON text as recorded; None when the source did not record it (live replays)
    output: str | None  # the recorded result
    failed: bool = False

    def parsed_arguments(self) -> dict[str, Any] | None:
        return _json_object(self.arguments)


@dataclass(frozen=True)
class AgentStep:
    """A step of a multi-agent run, by the agent that took it."""

    agent: str
    tool_progress: bool  # a tool call that succeeded: the run got something done


@dataclass(frozen=True)
class Trajectory:
    episode_id: str
    agent_id: str
    status: str
    final_output: str | None
    user_inputs: list[str]  # what the user said, in order
    calls: list[ToolCall]
    llm_calls: int
    error_outputs: list[str] = field(default_factory=list)  # error texts of errored steps
    duration_ms: float | None = None
    step_count: int = 0
    available_tools: frozenset[str] = frozenset()  # what the run could call (`Episode.available_tools`); empty: unknown
    agent_steps: list[AgentStep] = field(default_factory=list)  # the recorded steps that name their agent, in order


def _json_object(text: str | None) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def trajectory(candidate: dict) -> Trajectory:
    """A candidate run (episode_id, agent_id, status, final_output, tools, total_duration_ms, mode,
    available_tools, and its `steps`: step_type, tool_name, input, output, error, agent in order). A live
    replay's own steps are not recorded: its calls are its tool names, without arguments or results."""
    rows = candidate.get("steps") or []
    live = candidate.get("mode") == "live"
    calls = [ToolCall(name, None, None) for name in candidate["tools"] or []] if live else paired_calls(rows)
    return Trajectory(
        episode_id=candidate["episode_id"],
        agent_id=candidate["agent_id"],
        status=candidate["status"],
        final_output=candidate["final_output"],
        user_inputs=[r["input"] for r in rows if r["step_type"] == "llm_call" and r["input"]],
        calls=calls,
        llm_calls=sum(r["step_type"] == "llm_call" for r in rows),
        error_outputs=[r["error"] or r["output"] or "" for r in rows if r["step_type"] == "error" or r["error"]],
        duration_ms=candidate.get("total_duration_ms"),
        step_count=len(rows),
        available_tools=frozenset(candidate.get("available_tools") or ()),
        agent_steps=[] if live else agent_steps(rows),
    )


def agent_steps(rows: list[dict]) -> list[AgentStep]:
    """The steps of `rows` that name their agent. A tool result without an error is progress, and so is a
    call without one whose result was recorded on the call itself (no `tool_result` step follows)."""
    steps = []
    for index, row in enumerate(rows):
        if not row.get("agent"):
            continue
        following = rows[index + 1] if index + 1 < len(rows) else None
        answered_apart = following is not None and following["step_type"] == "tool_result"
        completes_call = row["step_type"] == "tool_result" or (row["step_type"] == "tool_call" and not answered_apart)
        steps.append(AgentStep(row["agent"], completes_call and not row["error"]))
    return steps


def paired_calls(rows: list[dict]) -> list[ToolCall]:
    """Each tool call of `rows` (step_type, tool_name, input, output, error in order) with the result that follows it."""
    calls = []
    for index, row in enumerate(rows):
        if row["step_type"] != "tool_call":
            continue
        following = rows[index + 1] if index + 1 < len(rows) else None
        result = following if following and following["step_type"] == "tool_result" else None
        output = result["output"] if result else row["output"]
        failed = bool(row["error"] or (result and result["error"]))
        calls.append(ToolCall(row["tool_name"] or "", row["input"], output, failed))
    return calls


class ToolOutputs(Protocol):
    def __call__(self, matching: str = "") -> Iterator[tuple[np.ndarray, np.ndarray, list[str]]]:
        """The recorded outputs of tool calls and results that the RE2 expression `matching` finds a match in (made by
        `regex_screen.screen`; all of them by default), a batch at a time: (entries, codes, texts), output i being
        texts[codes[i]] of entry entries[i], so that each distinct text of a batch is one string to read."""
        ...


@dataclass(frozen=True)
class Summaries:
    """A part of a day's candidates, an entry per episode in id order: what tells which of them a check could find an
    issue in without reading their steps (`Check.may_find`). The counts are over what `trajectory` would read."""

    episode_ids: list[str]
    agent_ids: list[str]
    task_ids: list[str]
    final_outputs: list[str | None]
    with_expected: np.ndarray  # the episode states its own expectations (`metadata.expected`)
    with_grader: np.ndarray  # an executable grader's verdict is recorded
    duration_ms: np.ndarray  # NaN where unknown
    llm_calls: np.ndarray
    tool_calls: np.ndarray  # len(Trajectory.calls)
    failed_tool_steps: np.ndarray  # tool calls and results with an error: every failed call is among them
    repeated_calls: np.ndarray  # tool calls whose name and (recorded) arguments an earlier call of the run had
    errored_steps: np.ndarray  # len(Trajectory.error_outputs)
    agents: np.ndarray  # distinct agents in Trajectory.agent_steps
    available_tools: np.ndarray  # len(Trajectory.available_tools)
    tool_outputs: ToolOutputs

    def __len__(self) -> int:
        return len(self.episode_ids)

    @cached_property
    def answers(self) -> tuple[np.ndarray, list[str | None]]:
        """(codes, distinct): entry i's final answer is distinct[codes[i]]. Trials of a task often answer alike."""
        positions: dict[str | None, int] = {}
        codes = [positions.setdefault(text, len(positions)) for text in self.final_outputs]
        return np.array(codes, dtype=np.int64), list(positions)

    def per_answer(self, of: Callable[[str | None], Any], dtype: type) -> np.ndarray:
        """`of` each entry's final answer, asked once per distinct answer."""
        codes, distinct = self.answers
        return np.array([of(text) for text in distinct], dtype=dtype)[codes]

    @cached_property
    def answer_lengths(self) -> np.ndarray:
        """The length of each final answer without the whitespace around it, as the answer checks measure it."""
        return self.per_answer(lambda text: len((text or "").strip()), np.int64)
