"""Live replay: what would the candidate model do on yesterday's traffic?

Each recording's opening context goes to the candidate with the recording's tools on offer:
the first LLM call's full messages where the source recorded them (transcripts, traces), else
its input summary as the one user message (AIR episodes). Tool calls are answered with the
recorded results, in order, so no real tool runs; a call the recording has no result for ends
the replay as `diverged` (a tool-sequence difference, not a crash). The recording is then the baseline of its replay.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections import defaultdict, deque
from dataclasses import dataclass

from eval_pipeline.config import Price
from eval_pipeline.llm.gateway import Gateway, GatewayError, Tokens
from eval_pipeline.scoring.trajectory import paired_calls

EXTRA_TURNS = 2  # beyond one per recorded tool call, before a replay that never answers is cut


class _Diverged(Exception):
    """The candidate called a tool the recording has no (more) results for."""


@dataclass(frozen=True)
class Recording:
    episode_id: str
    agent_id: str
    opening: tuple[dict, ...]  # the messages the first LLM call was sent
    tool_results: tuple[tuple[str, str], ...]  # (tool name, recorded result) in call order


@dataclass(frozen=True)
class LiveReplay:
    episode_id: str
    agent_id: str
    model: str
    status: str  # success, diverged or failure
    final_output: str | None
    tools: list[str]
    total_tokens: int
    total_cost_usd: float | None
    total_duration_ms: float
    step_count: int
    error_steps: int
    error: str | None


LIVE_REPLAY_COLUMNS = list(LiveReplay.__dataclass_fields__)


def _tool_specs(recording: Recording) -> list[dict]:
    names = dict.fromkeys(name for name, _ in recording.tool_results)
    return [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object", "additionalProperties": True}}}
        for name in names
    ]


async def replay_one(gateway: Gateway, recording: Recording, price: Price | None) -> LiveReplay:
    results: dict[str, deque[str]] = defaultdict(deque)
    for name, result in recording.tool_results:
        results[name].append(result)
    messages = list(recording.opening)
    tools, calls_made, tokens = _tool_specs(recording), [], Tokens()
    status, final, error, steps = "diverged", None, None, 0
    started = time.perf_counter()
    try:
        for _ in range(len(recording.tool_results) + EXTRA_TURNS):
            body = await gateway.chat(messages, tools)
            steps += 1
            tokens += Tokens.of(body)
            message = body["choices"][0]["message"]
            tool_calls = message.get("tool_calls") or []
            if not tool_calls:
                status, final = "success", message.get("content") or ""
                break
            messages.append({"role": "assistant", "content": message.get("content"), "tool_calls": tool_calls})
            for call in tool_calls:
                name = call["function"]["name"]
                calls_made.append(name)
                steps += 2  # the call and its result, as a recording counts them
                if not results[name]:
                    raise _Diverged(f"called {name}, which the recording has no result for")
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": results[name].popleft()})
        else:
            error = f"no final answer within {len(recording.tool_results) + EXTRA_TURNS} turns"
    except _Diverged as exc:
        status, error = "diverged", str(exc)
    except (GatewayError, KeyError, IndexError, TypeError) as exc:
        status, error = "failure", f"{type(exc).__name__}: {exc}"
    return LiveReplay(
        episode_id=recording.episode_id,
        agent_id=recording.agent_id,
        model=gateway.model,
        status=status,
        final_output=final,
        tools=calls_made,
        total_tokens=tokens.total,
        total_cost_usd=tokens.cost(price),
        total_duration_ms=(time.perf_counter() - started) * 1000,
        step_count=steps,
        error_steps=int(status == "failure"),
        error=error,
    )


def replay_all(gateway: Gateway, recordings: list[Recording], price: Price | None) -> list[LiveReplay]:
    async def run() -> list[LiveReplay]:
        try:
            return list(await asyncio.gather(*(replay_one(gateway, r, price) for r in recordings)))
        finally:
            await gateway.close()

    return asyncio.run(run()) if recordings else []


def opening_messages(llm_call: dict | None) -> tuple[dict, ...]:
    """The recorded messages of an LLM call when they are chat messages, else its input as one user message."""
    recorded = json.loads(llm_call["messages"]) if llm_call and llm_call.get("messages") else None
    if isinstance(recorded, list) and recorded and all(isinstance(m, dict) and m.get("role") for m in recorded):
        return tuple(recorded)
    return ({"role": "user", "content": (llm_call or {}).get("input") or ""},)


def recordings_from_steps(steps: list[dict]) -> list[Recording]:
    """Recordings from `episode_steps` rows (episode_id, agent_id, step_index, step_type, tool_name, input, output,
    error, messages), ordered by episode and step: the first LLM call's context, and each tool call with the result that
    follows it."""
    by_episode: dict[str, list[dict]] = defaultdict(list)
    for step in steps:
        by_episode[step["episode_id"]].append(step)
    recordings = []
    for episode_id, rows in by_episode.items():
        first_call = next((r for r in rows if r["step_type"] == "llm_call" and (r["input"] or r.get("messages"))), None)
        pairs = [(call.name, call.output or json.dumps(None)) for call in paired_calls(rows) if call.name]
        recordings.append(Recording(episode_id, rows[0]["agent_id"], opening_messages(first_call), tuple(pairs)))
    return recordings
