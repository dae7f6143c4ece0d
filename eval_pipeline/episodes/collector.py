"""`eval-pipeline collect`: an OTLP/HTTP trace receiver that appends what it receives to the episode source.

Agents instrumented with OpenTelemetry export to `POST /v1/traces` (JSON or protobuf, gzip or
not). Each request is appended as one line of OTLP JSON to `<source>/otlp/<UTC day>.jsonl`
under a file lock and fsynced before the answer, so an acknowledged export is never lost; the
new-episodes sensor and the nightly sweep then read those files like any other source file.
"""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from filelock import FileLock

MAX_BODY = 32 * 1024 * 1024  # one export request


class BadExport(ValueError):
    """A request body that is not an OTLP trace export; the message says why (answered with 400)."""


def _hex_ids(value: Any) -> Any:
    """Protobuf's JSON mapping gives trace and span ids as base64; OTLP JSON wants hex."""
    import base64

    if isinstance(value, dict):
        return {
            key: base64.b64decode(item).hex() if key in ("traceId", "spanId", "parentSpanId") and item else _hex_ids(item)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_hex_ids(item) for item in value]
    return value


def decode(body: bytes, content_type: str, content_encoding: str) -> dict:
    """An export request as OTLP JSON, whichever encoding it came in."""
    if content_encoding.lower() == "gzip":
        try:
            body = gzip.decompress(body)
        except OSError as exc:
            raise BadExport(f"gzip body does not decompress: {exc}") from None
    if content_type.split(";")[0].strip() == "application/x-protobuf":
        from google.protobuf.json_format import MessageToDict
        from google.protobuf.message import DecodeError
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

        request = ExportTraceServiceRequest()
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise BadExport(f"not an ExportTraceServiceRequest: {exc}") from None
        return _hex_ids(MessageToDict(request))
    try:
        export = json.loads(body)
    except ValueError as exc:
        raise BadExport(f"not JSON: {exc}") from None
    if not isinstance(export, dict) or not isinstance(export.get("resourceSpans", []), list):
        raise BadExport("expected an object with resourceSpans")
    return export


class TraceSink:
    """Appends exports to one JSONL file per UTC day, durably."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def append(self, export: dict) -> None:
        path = self.directory / f"{datetime.now(UTC).date().isoformat()}.jsonl"
        line = json.dumps(export, separators=(",", ":")) + "\n"
        with FileLock(f"{path}.lock", timeout=30), path.open("a", encoding="utf-8") as handle:
            handle.write(line)
            handle.flush()
            os.fsync(handle.fileno())


def serve(sink: TraceSink, host: str, port: int) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: a free one); call `serve_forever()` on it."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # exporters retry often; keep the terminal quiet
            pass

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self) -> None:
            content_type = self.headers.get("Content-Type", "application/json")
            protobuf = content_type.startswith("application/x-protobuf")
            if self.path.split("?")[0] != "/v1/traces":
                return self._answer(404, b'{"error": "only POST /v1/traces is served"}', "application/json")
            length = int(self.headers.get("Content-Length") or 0)
            if length > MAX_BODY:
                return self._answer(413, b'{"error": "export larger than 32 MiB"}', "application/json")
            try:
                export = decode(self.rfile.read(length), content_type, self.headers.get("Content-Encoding", ""))
            except BadExport as exc:
                return self._answer(400, json.dumps({"error": str(exc)}).encode(), "application/json")
            sink.append(export)
            self._answer(200, b"" if protobuf else b"{}", content_type.split(";")[0])

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
