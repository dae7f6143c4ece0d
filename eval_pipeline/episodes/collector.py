"""`eval-pipeline collect`: an OTLP/HTTP trace receiver that appends what it receives to the episode source.

Agents instrumented with OpenTelemetry export to `POST /v1/traces` (JSON or protobuf, gzip or
not). Each request is appended as one line of OTLP JSON to `<source>/otlp/<UTC day>.jsonl`
whole or not at all and fsynced before the answer, so an acknowledged export is never lost (one that
could not be stored, on a full disk say, is answered 503 so the exporter retries it); the
new-episodes sensor and the nightly sweep then read those files like any other source file.

Nothing a client sends can make the collector hold more than its limits: the body is counted as
it arrives whatever the headers say (at most MAX_BODY, chunked bodies too), decompressed only up to
MAX_BODY, a protobuf export converted only up to MAX_PROTOBUF_MESSAGES, and stored only up to
MAX_LINE (413 past any of them); a client has READ_TIMEOUT to send a whole request before its
connection is closed. An export is stored only once it has the OTLP trace shape (400 otherwise),
since one malformed line would stop every later `run` of its day.
"""

from __future__ import annotations

import io
import json
import logging
import re
import socket
import time
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import islice
from pathlib import Path
from typing import Any, NoReturn

from eval_pipeline.durable import append_lines

log = logging.getLogger(__name__)
MAX_BODY = 32 * 1024 * 1024  # an export request, as sent and once decompressed
MAX_LINE = 32 * 1024 * 1024  # an export as stored: one JSON line, which `run` reads back whole
MAX_PROTOBUF_MESSAGES = 1_000_000  # in one protobuf export; each becomes a dict of its JSON form (~60x its wire size)
READ_TIMEOUT = 30.0  # seconds to send a whole request (headers and body), or to start the next one on a kept connection
_READ_SIZE = 64 * 1024  # bytes received, or decompressed, at a time
_MAX_CHUNK_LINE = 1024  # a chunked body's size line, extensions included
_HEX = re.compile(rb"[0-9a-fA-F]+")
_UNSIGNED = re.compile(r"\d+")
_SIGNED = re.compile(r"-?\d+")


class Refused(ValueError):
    """A request the collector does not store; the message says why, `status` is the HTTP answer."""

    status = 400


class BadExport(Refused):
    """A request body that is not an OTLP trace export."""


class TooLarge(Refused):
    """A request past one of the collector's size limits."""

    status = 413


def _read_exactly(stream: io.BufferedIOBase, size: int) -> bytes:
    """`size` bytes, received a block at a time, so what is held is what has arrived, not what was announced."""
    body = bytearray()
    while len(body) < size:
        block = stream.read(min(_READ_SIZE, size - len(body)))
        if not block:
            raise BadExport(f"the body ended after {len(body)} of its {size} bytes")
        body += block
    return bytes(body)


def _read_chunked(stream: io.BufferedIOBase) -> bytes:
    """A `Transfer-Encoding: chunked` body, its chunks counted against MAX_BODY as they arrive."""
    body = bytearray()
    while True:
        size_line = stream.readline(_MAX_CHUNK_LINE)
        hex_size = size_line.split(b";")[0].strip()
        if not size_line.endswith(b"\n") or not _HEX.fullmatch(hex_size):
            raise BadExport(f"not a chunk size line: {size_line[:40]!r}")
        size = int(hex_size, 16)
        if size == 0:
            break
        if len(body) + size > MAX_BODY:
            raise TooLarge(f"chunked body over the limit of {MAX_BODY} bytes")
        body += _read_exactly(stream, size)
        if stream.readline(_MAX_CHUNK_LINE).strip():
            raise BadExport("a chunk is longer than its size line says")
    while stream.readline(_MAX_CHUNK_LINE).strip():
        pass  # trailer fields: nothing of ours
    return bytes(body)


def read_body(stream: io.BufferedIOBase, headers: Message) -> bytes:
    """A request's body, counted as it arrives, so that no Content-Length (negative, lying, absent) takes it past MAX_BODY."""
    if "chunked" in headers.get("Transfer-Encoding", "").lower():
        return _read_chunked(stream)
    declared = headers.get("Content-Length")
    if declared is None:
        raise BadExport("no Content-Length and not chunked: an export needs one of them")
    if not _UNSIGNED.fullmatch(declared.strip()):
        raise BadExport(f"Content-Length {declared!r} is not a number of bytes")
    if int(declared) > MAX_BODY:
        raise TooLarge(f"body of {int(declared)} bytes is over the limit of {MAX_BODY}")
    return _read_exactly(stream, int(declared))


def gunzip(body: bytes) -> bytes:
    """A gzip body (its members, in order) decompressed a block at a time, refused once past MAX_BODY."""
    plain = bytearray()
    pending = body
    while pending:
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        while not member.eof:
            try:
                block = member.decompress(pending, _READ_SIZE)
            except zlib.error as exc:
                raise BadExport(f"gzip body does not decompress: {exc}") from None
            if not block and not member.eof and not member.unconsumed_tail:
                raise BadExport("gzip body does not decompress: it ends early")
            plain += block
            if len(plain) > MAX_BODY:
                raise TooLarge(f"gzip body decompresses to over the limit of {MAX_BODY} bytes")
            pending = member.unconsumed_tail
        pending = member.unused_data
    return bytes(plain)


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


def _messages(message: Any) -> Iterator[Any]:
    """A parsed protobuf message and every message inside it, depth first, one at a time."""
    pending = [iter([message])]
    while pending:
        current = next(pending[-1], None)
        if current is None:
            pending.pop()
            continue
        yield current
        pending.append(
            inner
            for field, value in current.ListFields()
            if field.message_type is not None
            for inner in (value if field.is_repeated else [value])
        )


def _from_protobuf(body: bytes) -> dict:
    from google.protobuf.json_format import MessageToDict
    from google.protobuf.message import DecodeError
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except DecodeError as exc:
        raise BadExport(f"not an ExportTraceServiceRequest: {exc}") from None
    if sum(1 for _ in islice(_messages(request), MAX_PROTOBUF_MESSAGES + 1)) > MAX_PROTOBUF_MESSAGES:
        raise TooLarge(f"protobuf export of over {MAX_PROTOBUF_MESSAGES} messages")
    return {"resourceSpans": _hex_ids(MessageToDict(request)).get("resourceSpans", [])}


def _fail(where: str, what: str) -> NoReturn:
    raise BadExport(f"{where}: {what}")


def _object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        _fail(where, "expected an object")
    return value


def _list(parent: dict, key: str, where: str) -> list:
    value = parent.get(key)
    if value is not None and not isinstance(value, list):
        _fail(f"{where}.{key}", "expected a list")
    return value or []


def _typed(parent: dict, key: str, where: str, kinds: type | tuple[type, ...], what: str) -> None:
    if key in parent and not isinstance(parent[key], kinds):
        _fail(f"{where}.{key}", f"expected {what}")


def _integer(parent: dict, key: str, where: str, pattern: re.Pattern[str]) -> None:
    """OTLP JSON gives 64-bit integers as decimal strings, or as numbers."""
    value = parent.get(key)
    if isinstance(value, bool) or not (isinstance(value, int) or (isinstance(value, str) and pattern.fullmatch(value))):
        _fail(f"{where}.{key}", "expected an integer")


def _any_value(value: Any, where: str) -> None:
    """An AnyValue: a scalar of its kind, or an array or key-value list of AnyValues."""
    any_value = _object(value, where)
    for key in ("stringValue", "bytesValue"):
        _typed(any_value, key, where, str, "a string")
    _typed(any_value, "boolValue", where, bool, "true or false")
    _typed(any_value, "doubleValue", where, (int, float, str), "a number")
    if "intValue" in any_value:
        _integer(any_value, "intValue", where, _SIGNED)
    if "arrayValue" in any_value:
        array = _object(any_value["arrayValue"], f"{where}.arrayValue")
        for i, item in enumerate(_list(array, "values", f"{where}.arrayValue")):
            _any_value(item, f"{where}.arrayValue.values[{i}]")
    if "kvlistValue" in any_value:
        _attributes(_object(any_value["kvlistValue"], f"{where}.kvlistValue"), "values", f"{where}.kvlistValue")


def _attributes(parent: dict, key: str, where: str) -> None:
    for i, item in enumerate(_list(parent, key, where)):
        attribute = _object(item, f"{where}.{key}[{i}]")
        if not isinstance(attribute.get("key"), str):
            _fail(f"{where}.{key}[{i}].key", "expected a string")
        _any_value(attribute.get("value", {}), f"{where}.{key}[{i}].value")


def _span(span: Any, where: str) -> None:
    _object(span, where)
    for key in ("traceId", "spanId"):
        if not span.get(key) or not isinstance(span[key], str):
            _fail(f"{where}.{key}", "expected an id, a non-empty string")
    for key in ("parentSpanId", "name"):
        _typed(span, key, where, str, "a string")
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        _integer(span, key, where, _UNSIGNED)
    _attributes(span, "attributes", where)
    if "status" in span:
        status = _object(span["status"], f"{where}.status")
        _typed(status, "message", f"{where}.status", str, "a string")
        _typed(status, "code", f"{where}.status", (int, str), "a status code")


def check_shape(export: Any) -> None:
    """Refuse (BadExport, naming the first place) an export that departs from the OTLP trace shape: resources,
    scopes and spans as objects, each span with its ids and times, attributes as typed key-value pairs."""
    if not isinstance(export, dict) or not isinstance(export.get("resourceSpans"), list):
        raise BadExport("expected an object with resourceSpans, a list")
    try:
        for r, resource_spans in enumerate(export["resourceSpans"]):
            where = f"resourceSpans[{r}]"
            _object(resource_spans, where)
            if resource_spans.get("resource") is not None:
                _attributes(_object(resource_spans["resource"], f"{where}.resource"), "attributes", f"{where}.resource")
            for key in ("scopeSpans", "instrumentationLibrarySpans"):
                for s, scope_spans in enumerate(_list(resource_spans, key, where)):
                    _object(scope_spans, f"{where}.{key}[{s}]")
                    for i, span in enumerate(_list(scope_spans, "spans", f"{where}.{key}[{s}]")):
                        _span(span, f"{where}.{key}[{s}].spans[{i}]")
    except RecursionError:
        raise BadExport("values nested too deeply") from None


def decode(body: bytes, content_type: str, content_encoding: str) -> dict:
    """An export request as OTLP JSON of the trace shape, whichever encoding it came in."""
    if content_encoding.lower() == "gzip":
        body = gunzip(body)
    if content_type.split(";")[0].strip() == "application/x-protobuf":
        export = _from_protobuf(body)
    else:
        try:
            export = json.loads(body)
        except ValueError as exc:
            raise BadExport(f"not JSON: {exc}") from None
        except RecursionError:
            raise BadExport("not JSON this collector reads: nested too deeply") from None
    check_shape(export)
    return export


def stored_line(export: dict) -> str:
    """The export as the JSONL line it is stored as, refused past MAX_LINE (a protobuf export grows as JSON)."""
    line = json.dumps(export, separators=(",", ":")) + "\n"
    if len(line) > MAX_LINE:
        raise TooLarge(f"export of {len(line)} bytes as stored JSON is over the limit of {MAX_LINE}")
    return line


class TraceSink:
    """Appends exports to one JSONL file per UTC day, durably, each line whole or not at all."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)

    def append(self, line: str) -> None:
        append_lines(self.directory / f"{datetime.now(UTC).date().isoformat()}.jsonl", [line])


class _Deadline(io.RawIOBase):
    """A connection's incoming bytes, each receive given only the time left until the request's deadline: a
    client that trickles bytes (slowloris) is cut off when it passes, where a per-receive timeout would keep it."""

    def __init__(self, connection: socket.socket, seconds: float):
        self.connection, self.seconds = connection, seconds
        self.expires = time.monotonic() + seconds

    def restart(self) -> None:
        self.expires = time.monotonic() + self.seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self.expires - time.monotonic()
        if left <= 0:
            raise TimeoutError(f"no whole request within {self.seconds:g} s")
        self.connection.settimeout(left)
        return self.connection.recv_into(buffer)


def serve(sink: TraceSink, host: str, port: int, read_timeout: float = READ_TIMEOUT) -> ThreadingHTTPServer:
    """A server bound to host:port (port 0: a free one); call `serve_forever()` on it."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:  # exporters retry often; keep the terminal quiet
            pass

        def setup(self) -> None:
            super().setup()
            self.rfile.close()  # replaced by one that keeps the deadline
            self.deadline = _Deadline(self.connection, read_timeout)
            self.rfile = io.BufferedReader(self.deadline)

        def handle_one_request(self) -> None:
            self.deadline.restart()  # a timeout here closes the connection (BaseHTTPRequestHandler)
            super().handle_one_request()

        def _answer(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            if self.close_connection:
                self.send_header("Connection", "close")
            self.end_headers()
            self.wfile.write(body)

        def _refuse(self, status: int, message: str) -> None:
            self._answer(status, json.dumps({"error": message}).encode(), "application/json")

        def do_POST(self) -> None:
            content_type = self.headers.get("Content-Type", "application/json")
            if self.path.split("?")[0] != "/v1/traces":
                self.close_connection = True  # its body is left unread
                return self._refuse(404, "only POST /v1/traces is served")
            try:
                body = read_body(self.rfile, self.headers)
            except Refused as exc:
                self.close_connection = True  # the rest of the body, if any, is left unread
                return self._refuse(exc.status, str(exc))
            try:
                line = stored_line(decode(body, content_type, self.headers.get("Content-Encoding", "")))
            except Refused as exc:
                return self._refuse(exc.status, str(exc))
            try:
                sink.append(line)
            except OSError as exc:  # a full disk, a lock held too long: nothing stored, so the exporter should retry
                log.error("an export was not stored: %s", exc)
                return self._refuse(503, f"the export was not stored, retry later: {exc}")
            protobuf = content_type.startswith("application/x-protobuf")
            self._answer(200, b"" if protobuf else b"{}", content_type.split(";")[0])

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    return server
