"""Live replay: what would the candidate model do on yesterday's traffic?

Each recording's opening context goes to the candidate with the recording's tools on offer:
the first LLM call's full messages where the source recorded them (transcripts, traces), else
its input summary as the one user message (AIR episodes). Tool calls are answered with the
recorded results, in order, so no real tool runs; a call the recording has no result for ends
the replay as `diverged` (a tool-sequence difference, not a crash). The recording is then the baseline of its replay.

A replay that ended (succeeded or diverged) is kept in `llm_cache` under `replay_key`, so a re-run of a day reuses it
and calls nothing; a failed one is asked again. Without a lookup (`run --no-cache`) every replay is called afresh and
its answer replaces the stored one.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import asdict, dataclass

import pandas as pd

from eval_pipeline.config import Price
from eval_pipeline.llm.asking import CACHE_COLUMNS, cache_key
from eval_pipeline.llm.gateway import OPENAI_BASE_URL, Gateway, GatewayError, Tokens
from eval_pipeline.scoring.trajectory import paired_calls

EXTRA_TURNS = 2  # beyond one per recorded tool call, before a replay that never answers is cut
REPLAY_VERSION = 2  # part of every replay's cache key: raise it when `replay_one` changes what a replay does
CACHED_STATUSES = ("success", "diverged")  # a failure (an API error, a malformed answer) is asked again next run


class _Diverged(Exception):
    """The candidate called a tool the recording has no (more) results for."""


@dataclass(frozen=True)
class Recording:
    episode_id: str
    agent_id: str
    opening: tuple[dict, ...]  # the messages the first LLM call was sent
    tool_results: tuple[tuple[str, str], ...]  # (tool name, recorded result) in call order
    trial: int | None = None  # the episode's trial of its case, None outside a case set


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
    cached: bool = False  # reused from the cache: no model call


LIVE_REPLAY_COLUMNS = list(LiveReplay.__dataclass_fields__)
_IDENTITY = ("episode_id", "agent_id", "model", "total_tokens", "total_cost_usd", "cached")  # not in a cached answer


def _tool_specs(recording: Recording) -> list[dict]:
    names = dict.fromkeys(name for name, _ in recording.tool_results)
    return [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object", "additionalProperties": True}}}
        for name in names
    ]


def _max_turns(recording: Recording) -> int:
    return len(recording.tool_results) + EXTRA_TURNS


def replay_key(gateway: Gateway, recording: Recording) -> str:
    """Everything that decides a replay: the endpoint (its URL, never its key), the model and its sampling
    parameters, the opening messages, the tools on offer, the recorded results that answer them, the turn limit,
    and which sample it is. Each trial of a case is its own sample (the k trials stay k independent samples, so
    pass@k does not collapse to one); recordings outside a case set (trial None) with the same contents share one."""
    return cache_key(
        gateway.model,
        f"live_replay@{REPLAY_VERSION}",
        list(recording.opening),
        base_url=gateway.base_url or OPENAI_BASE_URL,
        tools=_tool_specs(recording),
        tool_results=recording.tool_results,
        max_turns=_max_turns(recording),
        sample=recording.trial,
    )


async def replay_one(gateway: Gateway, recording: Recording, price: Price | None) -> tuple[LiveReplay, Tokens]:
    results: dict[str, deque[str]] = defaultdict(deque)
    for name, result in recording.tool_results:
        results[name].append(result)
    messages = list(recording.opening)
    tools, calls_made, tokens = _tool_specs(recording), [], Tokens()
    status, final, error, steps, seconds = "diverged", None, None, 0, 0.0
    try:
        for _ in range(_max_turns(recording)):
            body, answered_in = await gateway.chat(messages, tools)
            seconds += answered_in
            steps += 1
            tokens += Tokens.of(body)
            message = gateway.message(body)
            tool_calls = message.get("tool_calls") or []
            if not tool_calls:
                # a refusal comes in its own field, without content: it is what the candidate answered
                status, final = "success", message.get("content") or message.get("refusal") or ""
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
            error = f"no final answer within {_max_turns(recording)} turns"
    except _Diverged as exc:
        status, error = "diverged", str(exc)
    except (GatewayError, KeyError, IndexError, TypeError) as exc:
        status, error = "failure", f"{type(exc).__name__}: {exc}"
    replay = LiveReplay(
        episode_id=recording.episode_id,
        agent_id=recording.agent_id,
        model=gateway.model,
        status=status,
        final_output=final,
        tools=calls_made,
        total_tokens=tokens.total,
        total_cost_usd=tokens.cost(price),
        total_duration_ms=seconds * 1000,  # the candidate's answers: not the gateway's retries, nor a wait for a slot
        step_count=steps,
        error_steps=int(status == "failure"),
        error=error,
    )
    return replay, tokens


def _answer(replay: LiveReplay) -> dict:
    """What a cached replay keeps: what the candidate did, not whose recording it replayed or what it cost."""
    return {name: value for name, value in asdict(replay).items() if name not in _IDENTITY}


@dataclass(frozen=True)
class Replayed:
    """A day's replays, in the recordings' order, and the replays the cache did not hold yet."""

    replays: list[LiveReplay]
    new_cache: pd.DataFrame  # CACHE_COLUMNS

    @property
    def reused(self) -> int:
        return sum(r.cached for r in self.replays)

    @property
    def called(self) -> int:
        return len(self.replays) - self.reused


def replay_all(
    gateway: Gateway,
    recordings: list[Recording],
    price: Price | None,
    lookup: Callable[[list[str]], dict[str, dict]] | None,
) -> Replayed:
    """Each recording replayed: from the cache where `lookup` (key -> answer, prompt_tokens, completion_tokens)
    holds it, else through the gateway, each distinct replay once and all concurrently. Without `lookup` every
    replay is called afresh."""
    keys = [replay_key(gateway, r) for r in recordings]
    cached = lookup(list(dict.fromkeys(keys))) if lookup else {}
    fresh = {key: recording for key, recording in zip(keys, recordings, strict=True) if key not in cached}

    async def run() -> list[tuple[LiveReplay, Tokens]]:
        try:
            return list(await asyncio.gather(*(replay_one(gateway, r, price) for r in fresh.values())))
        finally:
            await gateway.close()

    answered = dict(zip(fresh, asyncio.run(run()), strict=True)) if fresh else {}
    outcomes = {key: (_answer(replay), tokens) for key, (replay, tokens) in answered.items()}
    for key, hit in cached.items():
        outcomes[key] = hit["answer"], Tokens(hit["prompt_tokens"] or 0, hit["completion_tokens"] or 0)
    replays, used = [], set()
    for key, recording in zip(keys, recordings, strict=True):
        answer, tokens = outcomes[key]
        replays.append(
            LiveReplay(
                **answer,
                episode_id=recording.episode_id,
                agent_id=recording.agent_id,
                model=gateway.model,
                total_tokens=tokens.total,
                total_cost_usd=tokens.cost(price),
                cached=key in cached or key in used,  # a second recording with the same key saved the call
            )
        )
        used.add(key)
    new_cache = [
        {"cache_key": key, "model": gateway.model, "answer": json.dumps(outcomes[key][0]),
         "prompt_tokens": tokens.prompt, "completion_tokens": tokens.completion}
        for key, (replay, tokens) in answered.items()
        if replay.status in CACHED_STATUSES
    ]  # fmt: skip
    return Replayed(replays, pd.DataFrame(new_cache, columns=CACHE_COLUMNS))


def opening_messages(llm_call: dict | None) -> tuple[dict, ...]:
    """The recorded messages of an LLM call when they are chat messages, else its input as one user message."""
    recorded = json.loads(llm_call["messages"]) if llm_call and llm_call.get("messages") else None
    if isinstance(recorded, list) and recorded and all(isinstance(m, dict) and m.get("role") for m in recorded):
        return tuple(recorded)
    return ({"role": "user", "content": (llm_call or {}).get("input") or ""},)


def recordings_from_steps(steps: list[dict]) -> list[Recording]:
    """Recordings from `episode_steps` rows (episode_id, agent_id, trial, step_index, step_type, tool_name, input, output,
    error, messages), ordered by episode and step: the first LLM call's context, and each tool call with the result that
    follows it."""
    by_episode: dict[str, list[dict]] = defaultdict(list)
    for step in steps:
        by_episode[step["episode_id"]].append(step)
    recordings = []
    for episode_id, rows in by_episode.items():
        first_call = next((r for r in rows if r["step_type"] == "llm_call" and (r["input"] or r.get("messages"))), None)
        pairs = [(call.name, call.output or json.dumps(None)) for call in paired_calls(rows) if call.name]
        first = rows[0]
        trial = None if first.get("trial") is None else int(first["trial"])
        recordings.append(Recording(episode_id, first["agent_id"], opening_messages(first_call), tuple(pairs), trial))
    return recordings
