"""Deliver what the outbox holds: to the webhook, or, without one, to the log and a file."""

from __future__ import annotations

import contextvars
import logging
import threading
import time
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from eval_pipeline import jsonout
from eval_pipeline.alerts.messages import MessageLinks, message_groups, slack_message
from eval_pipeline.alerts.outbox import Alert, DeliveryReport, Outbox, StopDelivery
from eval_pipeline.durable import append_lines
from eval_pipeline.retry import Backoff, RetriesExhausted, RetryAfterTooLong, with_retries

log = logging.getLogger(__name__)
WEBHOOK_BACKOFF = Backoff(attempts=3, base_seconds=0.5, max_seconds=20.0)  # a Retry-After is waited out up to the POST's deadline


@dataclass(frozen=True)
class Deadlines:
    """How long delivery may take, whatever the webhook does: a server answering a byte every few seconds
    never trips a per-read timeout, so each POST (its retries included) and each delivery run has a total."""

    per_post_seconds: float = 20.0
    per_delivery_seconds: float = 60.0  # past it, the rest stays in the outbox for the next run or the sensor


WEBHOOK_DEADLINES = Deadlines()
FALLBACK_FILE = "alerts.jsonl"  # in the outbox directory, when no webhook is configured


class WebhookError(Exception):
    """A POST that failed for good, said with the webhook's host only: its URL carries a token."""


class WebhookHoldsOff(WebhookError, StopDelivery):
    """The webhook rate-limits us for longer than this delivery may wait (Slack's 429 and Retry-After): posting the
    next message would be refused too, and Slack asks senders to wait its Retry-After out. Until `until`, no delivery
    of the outbox posts (`Outbox.hold`)."""

    def __init__(self, message: str, until: datetime) -> None:
        super().__init__(message)
        self.until = until


class DeliveryOutOfTime(WebhookError, StopDelivery):
    """The delivery's own deadline passed before this message was posted."""


def webhook_host(url: str) -> str:
    """How logs, errors and sensor ticks name a webhook (Slack's URLs are secrets)."""
    import httpx  # here and below, not at the top: a run without a webhook does not import it (0.1 s)

    return httpx.URL(url).host or "the webhook"


_posting_to_webhook: ContextVar[bool] = ContextVar("posting_to_webhook", default=False)


class _WebhookUrlAsHost(logging.Filter):
    """httpx logs each request's URL at INFO; while a webhook is posted to, its host stands in for it."""

    def filter(self, record: logging.LogRecord) -> bool:
        import httpx  # what logs to this logger has imported it

        if _posting_to_webhook.get() and isinstance(record.args, tuple):
            record.args = tuple(arg.host if isinstance(arg, httpx.URL) else arg for arg in record.args)
        return True


logging.getLogger("httpx").addFilter(_WebhookUrlAsHost())


def post_webhook(
    url: str, payload: dict, backoff: Backoff = WEBHOOK_BACKOFF, deadline_seconds: float = WEBHOOK_DEADLINES.per_post_seconds
) -> None:
    """POST with retries on transport errors, 429 and 5xx, all within `deadline_seconds`; raises WebhookError when
    it still fails or the deadline passes (the POST is then abandoned: its socket is closed under it)."""
    import httpx

    client = httpx.Client(timeout=min(15.0, deadline_seconds))

    def call() -> None:
        client.post(url, content=jsonout.dumps(payload), headers={"Content-Type": "application/json"}).raise_for_status()

    host = webhook_host(url)
    posting = _posting_to_webhook.set(True)
    deadline = time.monotonic() + deadline_seconds
    try:
        _within(
            deadline_seconds,
            lambda: with_retries(f"alert webhook POST to {host}", call, backoff, deadline=deadline),
            client.close,
        )
    except RetryAfterTooLong as exc:
        until = datetime.now(UTC) + timedelta(seconds=exc.retry_after)
        raise WebhookHoldsOff(f"{exc}; what is pending waits for the next delivery after {_clock(until)}", until) from None
    except TimeoutError:
        raise WebhookError(f"alert webhook POST to {host} took longer than {deadline_seconds:g} s; kept for later") from None
    except httpx.HTTPStatusError as exc:  # its message holds the URL
        raise WebhookError(f"alert webhook POST to {host} answered HTTP {exc.response.status_code}") from None
    except (httpx.HTTPError, httpx.InvalidURL, RetriesExhausted) as exc:  # a transport error may quote the URL too
        raise WebhookError(str(exc).replace(url, host)) from None
    finally:
        _posting_to_webhook.reset(posting)
        client.close()


def _within(seconds: float, work: Callable[[], None], abandon: Callable[[], None]) -> None:
    """`work()` in a worker thread; TimeoutError (after `abandon()`) if it has not returned within `seconds`."""
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:  # handed to the caller's thread as it is
            outcome.append(exc)

    worker = threading.Thread(target=contextvars.copy_context().run, args=(run,), daemon=True)
    worker.start()
    worker.join(seconds)
    if not outcome:
        abandon()
        raise TimeoutError
    if outcome[0] is not None:
        raise outcome[0]


def deliver_pending(
    outbox: Outbox,
    webhook_url: str | None,
    links: MessageLinks,
    secret_patterns: Iterable[str],
    backoff: Backoff = WEBHOOK_BACKOFF,
    deadlines: Deadlines = WEBHOOK_DEADLINES,
) -> DeliveryReport:
    """Send every undelivered alert once, within the deadlines: a message per agent and day (or per day, for a fleet:
    `message_groups`) or per failed run."""
    patterns = tuple(secret_patterns)
    ends = time.monotonic() + deadlines.per_delivery_seconds

    @cache
    def held_until() -> datetime | None:  # read once, under the delivery's lock: a deliverer that sets a hold stops there
        return outbox.held_until()

    def send(alerts: list[Alert]) -> None:
        payload = slack_message(alerts, links, patterns)
        if webhook_url:
            if (until := held_until()) is not None:
                raise WebhookHoldsOff(f"alert webhook asked us to hold off until {_clock(until)} (HTTP 429, Retry-After); "
                                      "what is pending waits until then", until)  # fmt: skip
            left = ends - time.monotonic()
            if left <= 0:
                raise DeliveryOutOfTime(f"delivery took its {deadlines.per_delivery_seconds:g} s; kept for the next delivery")
            try:
                post_webhook(webhook_url, payload, backoff, min(deadlines.per_post_seconds, left))
            except WebhookHoldsOff as held:  # the sensor's next tick, the next run, another host must not post into the limit
                outbox.hold(held.until)
                raise
            return
        log.info("alert (no EVAL_ALERT_WEBHOOK_URL set): %s", payload["text"])
        append_lines(outbox.directory / FALLBACK_FILE, [jsonout.dumps({"at": datetime.now(UTC).isoformat(), **payload}) + "\n"])

    return outbox.deliver(send, message_groups)


def _clock(moment: datetime) -> str:
    return f"{moment:%Y-%m-%d %H:%M:%S} UTC"


def destination(outbox: Outbox, webhook_url: str | None) -> str:
    """Where alerts go, said without the URL (it carries a token)."""
    return "the webhook" if webhook_url else f"{outbox.directory / FALLBACK_FILE} (no EVAL_ALERT_WEBHOOK_URL)"


def alerts_directory(duckdb_path: Path) -> Path:
    """The outbox and ledger live beside the warehouse file."""
    return Path(duckdb_path).with_name("alerts")
