"""Deliver what the outbox holds: to the webhook, or, without one, to the log and a file."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import httpx

from eval_pipeline import jsonout
from eval_pipeline.alerts.messages import group_key, slack_message
from eval_pipeline.alerts.outbox import Alert, AlertOutbox, DeliveryReport
from eval_pipeline.retry import Backoff, with_retries

log = logging.getLogger(__name__)
WEBHOOK_BACKOFF = Backoff(attempts=3, base_seconds=0.5, max_seconds=5.0)
FALLBACK_FILE = "alerts.jsonl"  # in the outbox directory, when no webhook is configured


def post_webhook(url: str, payload: dict, backoff: Backoff = WEBHOOK_BACKOFF) -> None:
    """POST with retries on transport errors, 429 and 5xx; raises when it still fails."""

    def call() -> None:
        with httpx.Client(timeout=15.0) as client:
            client.post(url, content=jsonout.dumps(payload), headers={"Content-Type": "application/json"}).raise_for_status()

    with_retries("alert webhook POST", call, backoff)


def deliver_pending(
    outbox: AlertOutbox,
    webhook_url: str | None,
    ui_base_url: str,
    secret_patterns: Iterable[str],
    backoff: Backoff = WEBHOOK_BACKOFF,
) -> DeliveryReport:
    """Send every undelivered alert once: per agent and day (findings) or per failed run."""
    patterns = tuple(secret_patterns)

    def send(alerts: list[Alert]) -> None:
        payload = slack_message(alerts, ui_base_url, patterns)
        if webhook_url:
            post_webhook(webhook_url, payload, backoff)
            return
        log.info("alert (no EVAL_ALERT_WEBHOOK_URL set): %s", payload["text"])
        with (outbox.directory / FALLBACK_FILE).open("a") as handle:
            handle.write(jsonout.dumps({"at": datetime.now(UTC).isoformat(), **payload}) + "\n")

    return outbox.deliver(send, group_key)


def destination(outbox: AlertOutbox, webhook_url: str | None) -> str:
    """Where alerts go, said without the URL (it carries a token)."""
    return "the webhook" if webhook_url else f"{outbox.directory / FALLBACK_FILE} (no EVAL_ALERT_WEBHOOK_URL)"


def alerts_directory(duckdb_path: Path) -> Path:
    """The outbox and ledger live beside the warehouse file."""
    return Path(duckdb_path).with_name("alerts")
