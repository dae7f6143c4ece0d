"""A lake's alert outbox and delivered ledger, in its tables: the sensor on one host and a run on another see the
same alerts, and one deliverer at a time sends them.

The single-file warehouse keeps its outbox in files beside it (`alerts/outbox.py`); `open_outbox` picks. One
deliverer at a time holds the lease row until it is done or the lease expires (it outlasts a delivery's deadline,
so a deliverer that died frees it): two takers update the same row, and DuckLake lets only one of them commit.
The lease compares the takers' clocks, which must agree to within seconds (NTP).
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from eval_pipeline import jsonout
from eval_pipeline.alerts.delivery import WEBHOOK_DEADLINES
from eval_pipeline.alerts.outbox import (
    Alert,
    AlertOutbox,
    DeliveryBusy,
    DeliveryReport,
    Grouping,
    Outbox,
    first_of_each,
    send_in_groups,
)
from eval_pipeline.redaction import redact, redact_tree
from eval_pipeline.warehouse.connection import Warehouse, of_agent
from eval_pipeline.warehouse.lake import is_conflict
from eval_pipeline.warehouse.rows import one_row

LEASE_SECONDS = 2 * WEBHOOK_DEADLINES.per_delivery_seconds  # outlasts a delivery; then another deliverer may take it
LEASE_POLL_SECONDS = 0.5


def open_outbox(warehouse: Warehouse, directory: Path) -> Outbox:
    """The warehouse's outbox: its tables on a lake, files in `directory` beside a single file. `directory` also holds
    what is written when no webhook is configured."""
    return WarehouseOutbox(warehouse, directory) if warehouse.lake else AlertOutbox(directory)


class WarehouseOutbox:
    def __init__(self, warehouse: Warehouse, directory: Path, wait_seconds: float = 60.0, lease_seconds: float = LEASE_SECONDS):
        self.warehouse = warehouse
        self.directory = Path(directory)
        self.wait_seconds = wait_seconds
        self.lease_seconds = lease_seconds
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    def enqueue(self, alerts: Iterable[Alert], name: str, secret_patterns: Iterable[str], agent: str | None = None) -> int:
        """Put alerts under `name` (e.g. a day); the same name again replaces them (with `agent`, only that agent's:
        a run for one agent), an empty batch removes them."""
        patterns = list(secret_patterns)
        batch = redact_tree([dict(alert) for alert in alerts], patterns)
        given: dict[str, object] = {
            "batch": name,
            "ids": [a["alert_id"] for a in batch],
            "alerts": [jsonout.dumps(a) for a in batch],
        }
        replaced: dict[str, object] = {"batch": name, "agent": None if agent is None else redact(agent, patterns)}
        self._write(
            f"the alert batch {name}",
            (_REPLACED, replaced),
            ("INSERT INTO alert_outbox SELECT $batch, position, alert_id, alert::JSON, now() FROM "
             "(SELECT unnest(range(len($ids))) AS position, unnest($ids) AS alert_id, unnest($alerts) AS alert)", given),
        )  # fmt: skip
        return len(batch)

    def pending(self) -> list[Alert]:
        """Undelivered alerts, oldest batch first, each id once."""
        with self.warehouse.connect(read_only=True) as con:
            rows = con.execute(
                "SELECT alert FROM alert_outbox ANTI JOIN alerts_delivered USING (alert_id) ORDER BY enqueued_at, batch, position"
            ).fetchall()
        return first_of_each((json.loads(alert) for (alert,) in rows), delivered=set())

    def deliver(self, send: Callable[[list[Alert]], None], grouped: Grouping) -> DeliveryReport:
        """Send pending alerts one group at a time; record each group once `send` returns. One deliverer at a time,
        on any host (the lease)."""
        with self._lease():
            report = send_in_groups(self.pending(), send, grouped, self._record)
            self._write("dropping delivered alert batches", (_DROP_DELIVERED_BATCHES, {}))
            return report

    def held_until(self) -> datetime | None:
        with self.warehouse.connect(read_only=True) as con:
            row = con.execute("SELECT webhook_held_until FROM alert_delivery_lease WHERE webhook_held_until > now()").fetchone()
        return None if row is None else row[0].astimezone(UTC)

    def hold(self, until: datetime) -> None:
        self._write("recording the webhook's hold", (_HOLD, {"until": until}))

    def _record(self, alerts: list[Alert]) -> None:
        ids = [alert["alert_id"] for alert in alerts]
        self._write("recording delivered alerts", ("INSERT INTO alerts_delivered SELECT unnest($ids), now()", {"ids": ids}))

    def _write(self, what: str, *statements: tuple[str, dict[str, object]]) -> None:
        """The statements in one transaction, run again while another writer's commit wins."""

        def write() -> None:
            with self.warehouse.transaction() as con:
                for sql, params in statements:
                    con.execute(sql, params)

        self.warehouse.rerun_on_conflict(what, write, one_connection=False)

    @contextmanager
    def _lease(self) -> Iterator[None]:
        """Hold the delivery lease: taken when it is free or expired, waited for up to `wait_seconds`, freed after."""
        gives_up = time.monotonic() + self.wait_seconds
        while not self._take():
            if time.monotonic() >= gives_up:
                raise DeliveryBusy(f"another deliverer held the outbox of {self.warehouse.shown} for {self.wait_seconds:g} s")
            time.sleep(LEASE_POLL_SECONDS)
        try:
            yield
        finally:
            self._write("freeing the alert delivery lease", (_FREE, {"me": self.holder}))

    def _take(self) -> bool:
        try:
            with self.warehouse.transaction() as con:
                return one_row(con, _TAKE, {"me": self.holder, "seconds": self.lease_seconds})[0] == 1
        except duckdb.TransactionException as exc:
            if is_conflict(exc):
                return False  # another taker committed first
            raise


_REPLACED = f"""DELETE FROM alert_outbox WHERE batch = $batch  -- with an agent, only its alerts
AND {of_agent("json_extract_string(alert, '$.agent_id')", "$agent::VARCHAR")}"""
_TAKE = """UPDATE alert_delivery_lease SET holder = $me, expires_at = now() + to_seconds($seconds)
WHERE expires_at < now() OR holder = $me"""
_FREE = "UPDATE alert_delivery_lease SET holder = NULL, expires_at = TIMESTAMPTZ '1970-01-01 00:00:00+00' WHERE holder = $me"
_HOLD = "UPDATE alert_delivery_lease SET webhook_held_until = $until"
_DROP_DELIVERED_BATCHES = """DELETE FROM alert_outbox WHERE batch IN (
    SELECT batch FROM alert_outbox LEFT JOIN alerts_delivered USING (alert_id)
    GROUP BY batch HAVING bool_and(alerts_delivered.alert_id IS NOT NULL))"""
