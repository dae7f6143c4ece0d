"""What every adapter shares: the rejection it raises, and conversion one record at a time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import date
from typing import Any

from pydantic import ValidationError

from eval_pipeline.episodes.records import RawRecord
from eval_pipeline.llm.gateway import Tokens


def as_text(value: Any) -> str | None:
    """A step's input or output as the text column holds it: strings as they are, anything else as JSON."""
    return value if value is None or isinstance(value, str) else json.dumps(value)


class Rejected(ValueError):
    """A record that cannot become an episode; the message says why (it lands in quarantine with it)."""


def rejected(record: RawRecord, day: date, reason: str) -> RawRecord:
    return RawRecord(record.source, record.locator, record.raw, day, rejected=reason)


def reason(name: str, error: Exception) -> str:
    """One line saying why: a validation error's first field and message, else the error's text."""
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "record"
        return f"{name}: {where}: {first['msg']}"
    return f"{name}: {error}"


def rejection(record: RawRecord, day: date, name: str, error: Exception) -> RawRecord:
    """`record` quarantined: not JSON at all, or what the format's adapter could not read in it."""
    return rejected(record, day, "invalid JSON" if isinstance(error, json.JSONDecodeError) else reason(name, error))


def one_by_one(name: str, to_episode: Callable[[dict, str, date], dict]) -> Callable[..., Iterator[RawRecord]]:
    """A `convert` for formats where each record is one episode."""

    def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
        for record in records:
            try:
                episode = to_episode(json.loads(record.raw), agent_id, day)
            except ValueError as exc:  # not JSON, the adapter's Rejected, a validation error, or a value it could not read
                yield rejection(record, day, name, exc)
            else:
                yield RawRecord(record.source, record.locator, json.dumps(episode), day)

    return convert


def usage(prompt_tokens: Any, completion_tokens: Any) -> dict:
    """A step's token split, kept in its metadata so the episode can be priced per model."""
    return {"usage": {"prompt_tokens": int(prompt_tokens or 0), "completion_tokens": int(completion_tokens or 0)}}


def priced(episode: dict, prices: dict) -> dict:
    """The episode costed from each step's model and token split, all or nothing: a step whose
    model has no price leaves the whole episode unpriced rather than half counted."""
    split_steps = [step for step in episode.get("steps", []) if (step.get("metadata") or {}).get("usage")]
    costs = [Tokens.of(step["metadata"]).cost(prices.get(step.get("model") or "")) for step in split_steps]
    if not costs or None in costs:
        return episode
    for step, cost in zip(split_steps, costs, strict=True):
        step["cost_usd"] = cost
    episode["total_cost_usd"] = sum(costs)
    return episode
