"""Backoff delays and the retry loop, with a fake `sleep` and no network."""

from __future__ import annotations

import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import httpx
import pytest

from eval_pipeline import retry
from eval_pipeline.retry import (
    RETRYABLE_STATUS,
    Backoff,
    RetriesExhausted,
    RetryAfterTooLong,
    retry_after_seconds,
    with_retries,
)

BACKOFF = Backoff(attempts=4, base_seconds=0.5, max_seconds=20.0)


def status_error(code: int, headers: dict[str, str] | None = None) -> httpx.HTTPStatusError:
    request = httpx.Request("GET", "http://store.test/v1/episodes")
    response = httpx.Response(code, headers=headers, request=request)
    return httpx.HTTPStatusError(f"HTTP {code}", request=request, response=response)


class Script:
    """A `call` that raises the scripted errors in turn, then returns `result`."""

    def __init__(self, *errors: BaseException, result: object = "ok"):
        self.errors = list(errors)
        self.result = result
        self.calls = 0

    def __call__(self) -> object:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


class Forever(Script):
    def __init__(self, error_factory):
        super().__init__()
        self.error_factory = error_factory

    def __call__(self) -> object:
        self.calls += 1
        raise self.error_factory()


@pytest.fixture
def sleeps() -> list[float]:
    return []


# -- Backoff.delay -----------------------------------------------------------------------------


def test_delay_stays_within_the_exponential_ceiling_and_the_max(monkeypatch):
    monkeypatch.setattr(retry.random, "uniform", random.Random(7).uniform)
    for attempt in range(40):
        ceiling = min(BACKOFF.max_seconds, BACKOFF.base_seconds * 2**attempt)
        for _ in range(50):
            assert 0 <= BACKOFF.delay(attempt) <= ceiling <= BACKOFF.max_seconds


def test_delay_jitter_ceiling_doubles_then_caps(monkeypatch):
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: high)  # always the top
    assert [BACKOFF.delay(a) for a in range(8)] == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]


def test_retry_after_is_a_floor(monkeypatch):
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: low)  # jitter picks 0
    assert BACKOFF.delay(0, retry_after=3.0) == 3.0
    assert BACKOFF.delay(0, retry_after=0.0) == 0.0
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: high)
    assert BACKOFF.delay(3, retry_after=1.0) == 4.0  # a larger jittered wait wins


def test_a_retry_after_past_the_max_ends_the_retries_without_asking_again(sleeps):
    call = Forever(lambda: status_error(429, {"Retry-After": "3600"}))
    with pytest.raises(RetryAfterTooLong) as caught:
        with_retries("GET x", call, BACKOFF, sleep=sleeps.append)
    assert call.calls == 1 and sleeps == []
    assert str(caught.value) == "GET x answered HTTP 429 with Retry-After 3600 s, past what we may wait"
    assert isinstance(caught.value, RetriesExhausted) and caught.value.last_error == "HTTP 429"


def test_a_retry_after_past_the_deadline_ends_the_retries_without_asking_again(sleeps):
    call = Forever(lambda: status_error(503, {"Retry-After": "5"}))  # within the max of 20 s, not within the 1 s left
    with pytest.raises(RetryAfterTooLong, match="Retry-After 5 s"):
        with_retries("GET x", call, BACKOFF, sleep=sleeps.append, deadline=time.monotonic() + 1)
    assert call.calls == 1 and sleeps == []


def test_retry_after_seconds_reads_both_forms_http_allows():
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "7"})) == 7.0
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "0.5"})) == 0.5
    assert retry_after_seconds(httpx.Response(503)) is None
    in_a_minute = format_datetime(datetime.now(UTC) + timedelta(seconds=61), usegmt=True)
    assert 58 <= retry_after_seconds(httpx.Response(429, headers={"Retry-After": in_a_minute})) <= 61
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # past
    assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": "-3"})) == 0.0
    for unreadable in ["soon", "inf", "nan", ""]:
        assert retry_after_seconds(httpx.Response(503, headers={"Retry-After": unreadable})) is None


# -- with_retries ------------------------------------------------------------------------------


def test_success_first_time_does_not_sleep(sleeps):
    call = Script(result=42)
    assert with_retries("GET x", call, BACKOFF, sleep=sleeps.append) == 42
    assert call.calls == 1 and sleeps == []


def test_retries_transport_errors_and_5xx_then_succeeds(sleeps):
    request = httpx.Request("GET", "http://store.test/")
    call = Script(
        httpx.ConnectError("refused", request=request),
        status_error(503),
        httpx.ReadTimeout("slow", request=request),
        result="done",
    )
    assert with_retries("GET x", call, BACKOFF, sleep=sleeps.append) == "done"
    assert call.calls == 4
    assert len(sleeps) == 3
    assert all(0 <= s <= min(BACKOFF.max_seconds, BACKOFF.base_seconds * 2**i) for i, s in enumerate(sleeps))


@pytest.mark.parametrize("status", sorted(RETRYABLE_STATUS))
def test_every_retryable_status_is_retried(status, sleeps):
    call = Script(status_error(status))
    assert with_retries("GET x", call, BACKOFF, sleep=sleeps.append) == "ok"
    assert call.calls == 2 and len(sleeps) == 1


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422, 501])
def test_non_retryable_status_is_raised_at_once(status, sleeps):
    call = Script(status_error(status))
    with pytest.raises(httpx.HTTPStatusError) as caught:
        with_retries("GET x", call, BACKOFF, sleep=sleeps.append)
    assert caught.value.response.status_code == status
    assert call.calls == 1 and sleeps == []


def test_other_exceptions_are_not_retried(sleeps):
    call = Script(ValueError("not JSON"))
    with pytest.raises(ValueError):
        with_retries("GET x", call, BACKOFF, sleep=sleeps.append)
    assert call.calls == 1 and sleeps == []


def test_exhausted_after_the_attempts_with_the_last_error(sleeps):
    call = Forever(lambda: status_error(503, {"Retry-After": "2"}))
    with pytest.raises(RetriesExhausted) as caught:
        with_retries("GET http://store.test/v1/episodes", call, BACKOFF, sleep=sleeps.append)
    assert call.calls == BACKOFF.attempts
    assert len(sleeps) == BACKOFF.attempts - 1  # no pointless wait after the last attempt
    assert all(2.0 <= s <= BACKOFF.max_seconds for s in sleeps)  # Retry-After honoured as a floor
    assert str(caught.value) == "GET http://store.test/v1/episodes failed after 4 attempts: HTTP 503"
    assert caught.value.last_error == "HTTP 503"


def test_exhausted_on_transport_errors_names_the_error(sleeps):
    request = httpx.Request("GET", "http://store.test/")
    call = Forever(lambda: httpx.ConnectError("[Errno 111] Connection refused", request=request))
    expected = r"failed after 4 attempts: ConnectError: \[Errno 111\] Connection refused"
    with pytest.raises(RetriesExhausted, match=expected):
        with_retries("GET x", call, BACKOFF, sleep=sleeps.append)
    assert call.calls == 4 and len(sleeps) == 3


def test_retry_after_from_an_earlier_attempt_does_not_leak(monkeypatch, sleeps):
    monkeypatch.setattr(retry.random, "uniform", lambda low, high: low)  # jitter picks 0
    request = httpx.Request("GET", "http://store.test/")
    call = Script(status_error(429, {"Retry-After": "5"}), httpx.ConnectError("refused", request=request))
    assert with_retries("GET x", call, BACKOFF, sleep=sleeps.append) == "ok"
    assert sleeps == [5.0, 0.0]


def test_a_single_attempt_never_sleeps(sleeps):
    call = Forever(lambda: status_error(502))
    with pytest.raises(RetriesExhausted, match="after 1 attempts"):
        with_retries("GET x", call, Backoff(attempts=1), sleep=sleeps.append)
    assert call.calls == 1 and sleeps == []
