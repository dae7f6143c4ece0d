"""A real Slack-style webhook receiver on 127.0.0.1 that records every POST and can fail on purpose."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class WebhookReceiver:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.attempts = 0
        self.fail_next = 0  # answer this many POSTs with `fail_status`
        self.fail_status = 500
        self.retry_after: Callable[[], str] | None = None  # the Retry-After header of a failing answer, made as it is sent
        self.arrivals: list[float] = []  # time.monotonic() of each POST
        self.on_post: Callable[[], None] | None = None  # called as a POST arrives, before it is answered
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.attempts += 1
                receiver.arrivals.append(time.monotonic())
                if receiver.on_post:
                    receiver.on_post()
                if receiver.fail_next > 0:
                    receiver.fail_next -= 1
                    self.send_response(receiver.fail_status)
                    if receiver.retry_after:
                        self.send_header("Retry-After", receiver.retry_after())
                else:
                    receiver.messages.append(json.loads(body))
                    self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hooks/eval"

    @property
    def finding_ids(self) -> list[str]:
        return [finding_id for message in self.messages for finding_id in message["finding_ids"]]

    def __enter__(self) -> WebhookReceiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
