"""Retries with exponential backoff and full jitter, for every HTTP peer we depend on."""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
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
        """Full jitter (AWS style), but never sooner than the server's own Retry-After."""
        ceiling = min(self.max_seconds, self.base_seconds * 2**attempt)
        jittered = random.uniform(0, ceiling)
        return max(jittered, min(retry_after, self.max_seconds)) if retry_after is not None else jittered


class RetriesExhausted(Exception):
    def __init__(self, what: str, attempts: int, last_error: str):
        super().__init__(f"{what} failed after {attempts} attempts: {last_error}")
        self.last_error = last_error


def retry_after_seconds(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def with_retries(what: str, call: Callable[[], T], backoff: Backoff, sleep: Callable[[float], None] = time.sleep) -> T:
    """Run `call`; retry transport errors and retryable statuses (raised as HTTPStatusError)."""
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
        if attempt + 1 < backoff.attempts:
            sleep(backoff.delay(attempt, retry_after))
    raise RetriesExhausted(what, backoff.attempts, last_error)
