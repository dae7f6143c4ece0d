"""A webhook that answers a byte every few seconds, or never, cannot hold a run: delivery has total deadlines.

Measured before: a webhook answering one byte every 5 s kept `run` from finishing (still running at
150 s); one that never answered added about 41 s per agent-day group.
"""

import socket
import threading
import time

from eval_pipeline.alerts.delivery import Deadlines, deliver_pending
from eval_pipeline.alerts.outbox import AlertOutbox
from eval_pipeline.retry import Backoff
from eval_pipeline_tests.alerts.test_outbox_and_messages import LINKS, finding


class TricklingWebhook:
    """A real server on 127.0.0.1 that reads the request, then sends its answer one byte every `pause` seconds."""

    def __init__(self, pause: float) -> None:
        self.pause, self.listener = pause, socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(0.2)
        self.stop, self.connections = threading.Event(), 0
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}/services/T000/B000/secret-token"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                connection, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:  # closed
                return
            self.connections += 1
            threading.Thread(target=self._trickle, args=(connection,), daemon=True).start()

    def _trickle(self, connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok":
                if self.stop.wait(self.pause):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self.stop.set()
        self.listener.close()


def test_a_trickling_webhook_is_given_up_on_at_the_deadline_and_its_alerts_stay_pending(tmp_path):
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue([finding("f1"), finding("f2", agent="billing-bot"), finding("f3", agent="research-agent")], "day", [])
    webhook = TricklingWebhook(pause=0.5)  # the whole answer would take 19 s
    try:
        started = time.monotonic()
        report = deliver_pending(outbox, webhook.url, LINKS, [], Backoff(attempts=1, base_seconds=0.1),
                                 Deadlines(per_post_seconds=1.0, per_delivery_seconds=1.5))  # fmt: skip
        took = time.monotonic() - started
    finally:
        webhook.close()
    assert (report.delivered, report.pending) == (0, 3) and len(outbox.pending()) == 3  # kept for the next delivery
    assert took < 10  # bounded by the deadlines (1.5 s here), not by the webhook's 19 s per group
    assert any("took longer than 1 s" in error for error in report.errors)
    assert any("delivery took its 1.5 s" in error for error in report.errors)  # the last group was not even tried
    assert all("secret-token" not in error and "127.0.0.1" in error for error in report.errors[:1])
