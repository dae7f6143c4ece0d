"""What every adapter shares: the rejection it raises, and conversion one record at a time."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, date, datetime
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, NonNegativeInt, ValidationError

from eval_pipeline.episodes.records import RawRecord
from eval_pipeline.llm.gateway import Tokens


class Open(BaseModel):
    """A record of another tool's format: its fields checked by type, strictly, as the canonical episode's are (the
    text "4000" is no number, "no" no boolean: rejected, never read as one), the ones we do not read kept as they are."""

    model_config = ConfigDict(extra="allow", strict=True)


def _whole(value: Any) -> Any:
    """A whole number written 5.0 is still a count, as in the canonical episode."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


Count = Annotated[NonNegativeInt, BeforeValidator(_whole)]  # tokens and the like: a whole number, not negative
Amount = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # durations, costs: finite, not negative
MAX_EPOCH_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z: a later time is a broken clock, and no datetime


def moment(stamp: Any) -> datetime | None:
    """An ISO 8601 time in UTC (naive ones taken as UTC); None when `stamp` is not one."""
    try:
        parsed = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _a_time(stamp: str) -> str:
    if moment(stamp) is None:
        raise ValueError(f"{stamp[:40]!r} is not an ISO 8601 time")
    return stamp


Timestamp = Annotated[str, AfterValidator(_a_time)]  # an ISO 8601 time, as `moment` reads it


def timed(stamps: list[datetime], day: date) -> dict:
    """A run's start, end and wall time (what latency deltas compare) from the times its records carry;
    midnight of `day`, untimed, without any."""
    if not stamps:
        return {"started_at": f"{day.isoformat()}T00:00:00Z"}
    started, ended = min(stamps), max(stamps)
    wall_ms = (ended - started).total_seconds() * 1000
    return {"started_at": started.isoformat(), "ended_at": ended.isoformat(), "total_duration_ms": wall_ms}


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON number")


def parse(raw: str) -> Any:
    """A record's JSON, as strict as the warehouse reads canonical records: NaN and Infinity are no JSON, and
    nesting past the parser's depth is refused (ValueError), never a RecursionError that stops the run."""
    try:
        return json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise ValueError("nested too deeply") from None


def parse_object(raw: str) -> dict:
    """A record that must be a JSON object (every format's records are)."""
    record = parse(raw)
    if not isinstance(record, dict):
        raise Rejected(f"not a JSON object: {raw.strip()[:80]}")
    return record


def log_message(raw: str) -> tuple[Any, str]:
    """The JSON a `logging` handler's line carries, and the formatter's prefix before it: a bare JSON line
    (the default formatter), or one after `2026-11-05 10:00:00,123 - autogen_core.events - INFO - `.
    ValueError when the line ends in no JSON object."""
    try:
        return parse(raw), ""
    except ValueError:
        start = raw.find("{")
        if start < 0:
            raise ValueError("no JSON object in the line") from None
        try:
            message, end = json.JSONDecoder(parse_constant=_no_constant).raw_decode(raw, start)
        except RecursionError:
            raise ValueError("nested too deeply") from None
        if raw[end:].strip():
            raise ValueError("text after the JSON object") from None
        return message, raw[:start]


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
    if isinstance(error, json.JSONDecodeError):
        return rejected(record, day, f"{name}: invalid JSON: {error.msg} at line {error.lineno} column {error.colno}")
    return rejected(record, day, reason(name, error))


def one_by_one(name: str, to_episode: Callable[[dict, str, date], dict]) -> Callable[..., Iterator[RawRecord]]:
    """A `convert` for formats where each record is one episode."""

    def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
        for record in records:
            try:
                episode = to_episode(parse_object(record.raw), agent_id, day)
            except ValueError as exc:  # not JSON, the adapter's Rejected, a validation error, or a value it could not read
                yield rejection(record, day, name, exc)
            else:
                yield RawRecord(record.source, record.locator, json.dumps(episode), day, given=record.raw)

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
