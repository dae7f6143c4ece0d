"""Asking a judge model many questions at once: cached answers cost nothing, each row records its calls.

A row (a rubric verdict, a pairwise comparison) is an `Item` decided by zero or more requests;
`ask_items` sends every uncached request of a partition concurrently, and `settle` turns an
item's outcomes into its row: judged, failed with the reason, or skipped when the budget ran out.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic

import pandas as pd
from pydantic import BaseModel

from eval_pipeline.config import Price
from eval_pipeline.llm.gateway import Answer, BudgetExhausted, Gateway, GatewayError, Tokens


def cache_key(model: str, purpose: str, messages: list[dict], **context: object) -> str:
    """Same model, rubric (and its version), messages and parameters: the same answer, so no second call.
    `context` is whatever else decides the answer (tools on offer, the endpoint, which sample it is)."""
    material = json.dumps({"model": model, "purpose": purpose, "messages": messages, "temperature": 0, **context})
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(frozen=True)
class Request(Generic[Answer]):
    key: str
    messages: list[dict[str, str]]
    schema: type[Answer]


@dataclass(frozen=True)
class Outcome(Generic[Answer]):
    """One request's answer (None when it failed or the budget ran out) and the tokens it took or saved."""

    answer: Answer | None
    tokens: Tokens
    cached: bool
    error: GatewayError | None = None


CACHE_COLUMNS = ["cache_key", "model", "answer", "prompt_tokens", "completion_tokens"]


def ask_all(
    gateway: Gateway, requests: list[Request[Any]], lookup: Callable[[list[str]], dict[str, dict]]
) -> tuple[list[Outcome[Any]], pd.DataFrame]:
    """Each request's outcome, in order, and the new cache rows.

    Answers already cached (looked up by `lookup`: key -> answer, prompt_tokens, completion_tokens)
    cost nothing; identical requests are asked once; the rest go out concurrently.
    """
    cached = lookup(list(dict.fromkeys(r.key for r in requests)))
    fresh = {r.key: r for r in requests if r.key not in cached}

    async def ask(request: Request[Any]) -> tuple[BaseModel, Tokens] | GatewayError:
        try:
            return await gateway.structured(request.messages, request.schema)
        except GatewayError as exc:
            return exc

    async def run() -> list[tuple[BaseModel, Tokens] | GatewayError]:
        try:
            return list(await asyncio.gather(*(ask(r) for r in fresh.values())))
        finally:
            await gateway.close()

    answered = dict(zip(fresh, asyncio.run(run()), strict=True)) if fresh else {}
    new_cache = [
        {"cache_key": key, "model": gateway.model, "answer": reply[0].model_dump_json(),
         "prompt_tokens": reply[1].prompt, "completion_tokens": reply[1].completion}
        for key, reply in answered.items()
        if not isinstance(reply, GatewayError)
    ]  # fmt: skip
    outcomes, used = [], set()
    for request in requests:
        if request.key in cached:
            hit = cached[request.key]
            tokens = Tokens(hit["prompt_tokens"] or 0, hit["completion_tokens"] or 0)
            outcomes.append(Outcome(request.schema.model_validate(hit["answer"]), tokens, cached=True))
        elif isinstance(reply := answered[request.key], GatewayError):
            outcomes.append(Outcome(None, Tokens(), cached=False, error=reply))
        else:  # the first row asking paid for the call; others with the same request saved it
            outcomes.append(Outcome(reply[0], reply[1], cached=request.key in used))
        used.add(request.key)
    return outcomes, pd.DataFrame(new_cache, columns=CACHE_COLUMNS)


def missing_reason(fields: dict[str, str | None]) -> str | None:
    absent = [name for name, value in fields.items() if not (value or "").strip()]
    return f"skipped: no {' or '.join(absent)}" if absent else None


@dataclass(frozen=True)
class Item(Generic[Answer]):
    """One row to be: its identity, and the requests that decide it (none when it is skipped or needs no judge)."""

    row: dict
    requests: tuple[Request[Answer], ...] = ()


def ask_items(
    gateway: Gateway, items: Sequence[Item[Any]], lookup: Callable[[list[str]], dict[str, dict]]
) -> tuple[list[list[Outcome[Any]]], pd.DataFrame]:
    """Every item's outcomes, asked all at once, and the new cache rows."""
    outcomes, new_cache = ask_all(gateway, [request for item in items for request in item.requests], lookup)
    grouped, at = [], 0
    for item in items:
        grouped.append(outcomes[at : at + len(item.requests)])
        at += len(item.requests)
    return grouped, new_cache


def settle(
    item: Item[Answer], outcomes: list[Outcome[Answer]], price: Price | None, decide: Callable[[list[Answer]], dict]
) -> dict:
    """An item's row: skipped as it is, failed or out of budget with the reason, else what `decide` makes of the answers."""
    if not item.requests:  # decided without asking: skipped (the row says why), or settled by the item itself
        return {"status": "skipped", "cached": False, **item.row}
    tokens = sum((o.tokens for o in outcomes), Tokens())
    row = {
        **item.row,
        "cached": all(o.cached for o in outcomes),
        "prompt_tokens": tokens.prompt,
        "completion_tokens": tokens.completion,
        "cost_usd": tokens.cost(price),
    }
    answers = [o.answer for o in outcomes if o.answer is not None]
    if len(answers) == len(outcomes):
        return {**row, "status": "judged", **decide(answers)}
    errors = [o.error for o in outcomes if o.error is not None]
    failure = next((error for error in errors if not isinstance(error, BudgetExhausted)), None)
    if failure is None:
        return {**row, "status": "skipped", "reasoning": f"skipped: {errors[0]}"}
    return {**row, "status": "failed", "reasoning": f"judge failed: {failure}"}
