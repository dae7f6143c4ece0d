"""Retries with exponential backoff and full jitter, for every HTTP peer we depend on."""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")

RETRYABLE_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@dataclass(frozen=True)
class Backoff:
    attempts: int = 5
    base_seconds: float = 0.5
    max_seconds: float = 20.0

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        """Full jitter (AWS style), but never sooner than the server's own Retry-After (which may exceed the max:
        `with_retries` then gives up rather than ask again early)."""
        ceiling = min(self.max_seconds, self.base_seconds * 2**attempt)
        jittered = random.uniform(0, ceiling)
        return max(jittered, retry_after) if retry_after is not None else jittered


class RetriesExhausted(Exception):
    def __init__(self, what: str, attempts: int, last_error: str):
        super().__init__(f"{what} failed after {attempts} attempts: {last_error}")
        self.last_error = last_error


class RetryAfterTooLong(RetriesExhausted):
    """The server asked us to wait longer than we may (Backoff.max_seconds, or what is left before the deadline):
    asking again sooner would only be refused again, so we stop at once."""

    def __init__(self, what: str, last_error: str, retry_after: float):
        Exception.__init__(self, f"{what} answered {last_error} with Retry-After {retry_after:g} s, past what we may wait")
        self.last_error, self.retry_after = last_error, retry_after


def retry_after_seconds(response: httpx.Response) -> float | None:
    """The answer's Retry-After in seconds, from either form HTTP allows (a number, or a date); None if absent
    or unreadable."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp() - datetime.now(UTC).timestamp()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def with_retries(
    what: str,
    call: Callable[[], T],
    backoff: Backoff,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> T:
    """Run `call`; retry transport errors and retryable statuses (raised as HTTPStatusError). A Retry-After past
    `backoff.max_seconds` or past `deadline` (a time.monotonic()) raises RetryAfterTooLong without asking again."""
    import httpx  # here, not at the top: a run that calls no HTTP peer does not import it

    last_error = ""
    for attempt in range(backoff.attempts):
        retry_after = None
        try:
            return call()
        except httpx.HTTPStatusError as exc:
            if exc.response.status_code not in RETRYABLE_STATUS:
                raise
            retry_after = retry_after_seconds(exc.response)
            last_error = f"HTTP {exc.response.status_code}"
        except httpx.TransportError as exc:
            last_error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if retry_after is not None:
            allowed = backoff.max_seconds if deadline is None else min(backoff.max_seconds, deadline - time.monotonic())
            if retry_after > allowed:
                raise RetryAfterTooLong(what, last_error, retry_after)
        if attempt + 1 < backoff.attempts:
            sleep(backoff.delay(attempt, retry_after))
    raise RetriesExhausted(what, backoff.attempts, last_error)
