"""The alert outbox and the delivered ledger: files beside the warehouse, never DuckDB (a lake warehouse keeps
them in its tables instead, `warehouse/alerts.py`, for every host to share).

A run that finds regressions puts them in the outbox (one file per run and day); whoever
delivers (the alert sensor under the daemon, or `eval-pipeline run` itself) sends what the
ledger has not recorded yet and records each alert id once its POST succeeded. A failed POST
leaves the alert for the next attempt; only a crash between a POST and its record can repeat
one, and the ids travel in the payload so a receiver can drop that duplicate. Alerts are
redacted as they are put in, so the files hold no secret a report would not show.
"""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock, Timeout

from eval_pipeline import jsonout
from eval_pipeline.durable import append_lines, complete_lines, replace_whole
from eval_pipeline.errors import InfrastructureError
from eval_pipeline.redaction import redact, redact_tree

HOLD_FILE = "webhook-hold.json"  # in the outbox directory: until when the webhook asked us not to post (a lake: its tables)
OUTBOX_WAIT_SECONDS = 60.0  # for another deliverer (the sensor, another run) to finish
Alert = dict[str, Any]  # a finding (or a failed run) as JSON: "alert_id" names it for the ledger
Grouping = Callable[[list[Alert]], list[list[Alert]]]  # which alerts travel together, as one message


class DeliveryBusy(InfrastructureError):
    """Another deliverer held the outbox for the whole wait: what is pending stays for the next delivery."""


class StopDelivery(Exception):
    """A send failed in a way every later send of this delivery would too (the webhook asks us to hold off, the
    delivery's time is up): the groups after it stay pending, untried, for the next delivery."""


@dataclass(frozen=True)
class DeliveryReport:
    delivered: int
    pending: int
    errors: list[str]


class Outbox(Protocol):
    """Where alerts wait until delivered, and the record of which were."""

    directory: Path  # this host's: where alerts are written when no webhook is configured

    def enqueue(self, alerts: Iterable[Alert], name: str, secret_patterns: Iterable[str], agent: str | None = None) -> int: ...

    def pending(self) -> list[Alert]: ...

    def deliver(self, send: Callable[[list[Alert]], None], grouped: Grouping) -> DeliveryReport: ...

    def held_until(self) -> datetime | None:
        """Until when the webhook asked every deliverer of this outbox not to post (its Retry-After), if not passed."""
        ...

    def hold(self, until: datetime) -> None:
        """Record the webhook's Retry-After for every deliverer of this outbox: the sensor's next tick, a run's, another
        host's."""
        ...


def first_of_each(alerts: Iterable[Alert], delivered: set[str]) -> list[Alert]:
    """The alerts not yet delivered, each id once (its first), in the order given."""
    seen: set[str] = set()
    kept = []
    for alert in alerts:
        if alert["alert_id"] not in delivered and alert["alert_id"] not in seen:
            seen.add(alert["alert_id"])
            kept.append(alert)
    return kept


def send_in_groups(
    pending: list[Alert],
    send: Callable[[list[Alert]], None],
    grouped: Grouping,
    record: Callable[[list[Alert]], None],
) -> DeliveryReport:
    """Send `pending` one group (`grouped`) at a time; `record` each group once `send` returns. A group whose send
    fails is kept for the next attempt, and its error reported; after a StopDelivery, so are all the rest."""
    delivered, errors = 0, []
    for group in grouped(pending):
        try:
            send(group)
        except StopDelivery as exc:
            errors.append(str(exc))
            break
        except Exception as exc:  # kept for the next attempt, and reported
            errors.append(str(exc))
            continue
        record(group)
        delivered += len(group)
    return DeliveryReport(delivered=delivered, pending=len(pending) - delivered, errors=errors)


class AlertOutbox:
    def __init__(self, directory: Path, lock_timeout_seconds: float | None = None):
        self.directory = Path(directory)
        self.pending_dir = self.directory / "outbox"
        self.ledger = self.directory / "delivered.jsonl"
        wait = OUTBOX_WAIT_SECONDS if lock_timeout_seconds is None else lock_timeout_seconds
        self._lock = FileLock(str(self.directory / ".lock"), timeout=wait)  # one deliverer at a time
        # one writer of the batch files at a time (a run's read-modify-write, a delivery dropping what it delivered),
        # held for a moment only, so a run never waits on a delivery's POSTs
        self._batches_lock = FileLock(str(self.directory / ".batches.lock"), timeout=wait)

    def enqueue(self, alerts: Iterable[Alert], name: str, secret_patterns: Iterable[str], agent: str | None = None) -> int:
        """Put alerts under `name` (e.g. a day); the same name again replaces them (with `agent`, only that agent's:
        a run for one agent), an empty batch removes them."""
        patterns = list(secret_patterns)
        batch = redact_tree([dict(alert) for alert in alerts], patterns)
        self.pending_dir.mkdir(parents=True, exist_ok=True)
        target = self.pending_dir / f"{urllib.parse.quote(name, safe='')}.json"  # an agent id may hold a `/`
        with self._batches_lock:
            kept = []
            if agent is not None and target.exists():
                kept = [a for a in json.loads(target.read_text()) if a.get("agent_id") != redact(agent, patterns)]
            if not kept + batch:
                target.unlink(missing_ok=True)
            else:
                replace_whole(target, jsonout.dumps(kept + batch))  # a reader sees all of the batch or none
        return len(batch)

    def delivered_ids(self) -> set[str]:
        return {json.loads(line)["alert_id"] for line in complete_lines(self.ledger) if line.strip()}

    def pending(self) -> list[Alert]:
        """Undelivered alerts, oldest batch first, each id once."""
        batches = sorted(self.pending_dir.glob("*.json"), key=lambda p: p.stat().st_mtime_ns)
        return first_of_each((alert for path in batches for alert in json.loads(path.read_text())), self.delivered_ids())

    def deliver(self, send: Callable[[list[Alert]], None], grouped: Grouping) -> DeliveryReport:
        """Send pending alerts one group at a time; record each group once `send` returns.

        One deliverer at a time (the lock), so the sensor and a CLI run never both send a group.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        try:
            self._lock.acquire()
        except Timeout:
            raise DeliveryBusy(f"another deliverer held the outbox {self.directory} for {self._lock.timeout:g} s") from None
        try:
            report = send_in_groups(self.pending(), send, grouped, self._record)
            self._drop_delivered_batches()
            return report
        finally:
            self._lock.release()

    def held_until(self) -> datetime | None:
        """An unreadable hold file holds nothing."""
        try:
            until = datetime.fromisoformat(json.loads((self.directory / HOLD_FILE).read_text())["until"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return until if until.tzinfo and until > datetime.now(UTC) else None

    def hold(self, until: datetime) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        replace_whole(self.directory / HOLD_FILE, jsonout.dumps({"until": until.isoformat()}))

    def _record(self, alerts: list[Alert]) -> None:
        now = datetime.now(UTC).isoformat()
        append_lines(self.ledger, (json.dumps({"alert_id": a["alert_id"], "delivered_at": now}) + "\n" for a in alerts))

    def _drop_delivered_batches(self) -> None:
        delivered = self.delivered_ids()
        with self._batches_lock:
            for path in self.pending_dir.glob("*.json"):
                if all(alert["alert_id"] in delivered for alert in json.loads(path.read_text())):
                    path.unlink()
