"""`eval-pipeline collect` under hostile clients: its limits hold whatever the headers say, on a real loopback server."""

import gzip
import http.client
import json
import resource
import select
import socket
import threading
import time
import zlib
from pathlib import Path

import httpx
import pytest

from eval_pipeline.episodes.collector import MAX_BODY, MAX_LINE, MAX_PROTOBUF_MESSAGES, TraceSink, serve

READ_TIMEOUT = 2.0  # the collector's deadline in these tests, short so that slow clients are cut off quickly
EXPORT = {"resourceSpans": [{"scopeSpans": [{"spans": [{
    "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174", "name": "invoke_agent",
    "startTimeUnixNano": "1762333200000000000", "endTimeUnixNano": 1762333201000000000,
    "status": {"code": 2, "message": "boom"},
    "attributes": [
        {"key": "gen_ai.operation.name", "value": {"stringValue": "invoke_agent"}},
        {"key": "eval.trial", "value": {"intValue": "-1"}},
        {"key": "tags", "value": {"arrayValue": {"values": [{"stringValue": "a"}, {"doubleValue": 0.5}]}}},
        {"key": "more", "value": {"kvlistValue": {"values": [{"key": "ok", "value": {"boolValue": True}}]}}},
    ],
}]}]}]}  # fmt: skip


@pytest.fixture
def collector(tmp_path):
    """(port, directory of stored exports) of a collector running in this process."""
    server = serve(TraceSink(tmp_path / "otlp"), "127.0.0.1", 0, read_timeout=READ_TIMEOUT)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], tmp_path / "otlp"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def stored(directory: Path) -> list[str]:
    return [line for path in sorted(directory.glob("*.jsonl")) for line in path.read_text().splitlines()]


def exchange(port: int, request: bytes) -> tuple[int, dict]:
    """Send raw bytes as they are (headers included), and read the one answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as connection:
        connection.sendall(request)
        response = http.client.HTTPResponse(connection)
        response.begin()
        return response.status, json.loads(response.read() or b"{}")


def post(headers: str, body: bytes = b"") -> bytes:
    return f"POST /v1/traces HTTP/1.1\r\nHost: collector\r\nContent-Type: application/json\r\n{headers}\r\n".encode() + body


def test_a_whole_export_is_stored_as_it_came(collector):
    port, directory = collector
    body = json.dumps(EXPORT).encode()
    assert exchange(port, post(f"Content-Length: {len(body)}\r\n", body))[0] == 200
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(part), part) for part in (body[:100], body[100:])) + b"0\r\n\r\n"
    assert exchange(port, post("Transfer-Encoding: chunked\r\n", chunks))[0] == 200
    assert [json.loads(line) for line in stored(directory)] == [EXPORT, EXPORT]


@pytest.mark.parametrize(
    ("headers", "body", "status", "says"),
    [
        ("Content-Length: -1\r\n", b"x" * 4096, 400, "Content-Length '-1' is not a number of bytes"),
        ("Content-Length: 4 096\r\n", b"x" * 4096, 400, "is not a number of bytes"),
        ("", json.dumps(EXPORT).encode(), 400, "no Content-Length and not chunked"),  # a body without a length is not read
        ("Content-Length: 5\r\n", json.dumps(EXPORT).encode(), 400, "not JSON"),  # the rest is not a request either
        (f"Content-Length: {MAX_BODY + 1}\r\n", b"", 413, f"over the limit of {MAX_BODY}"),  # refused before it is sent
        ("Transfer-Encoding: chunked\r\n", b"-1\r\nx\r\n0\r\n\r\n", 400, "not a chunk size line"),
        ("Transfer-Encoding: chunked\r\n", b"3\r\nabcdef\r\n0\r\n\r\n", 400, "longer than its size line"),
        ("Transfer-Encoding: chunked\r\n", b"%x\r\n" % (MAX_BODY + 1), 413, "chunked body over the limit"),
    ],
)
def test_a_content_length_or_chunking_cannot_take_a_body_past_the_limit(collector, headers, body, status, says):
    port, directory = collector
    answer = exchange(port, post(headers, body))
    assert answer[0] == status and says in answer[1]["error"]
    assert stored(directory) == []


def test_chunks_are_counted_as_they_arrive(collector):
    port, directory = collector
    half = b"x" * (MAX_BODY // 2)
    chunks = b"%x\r\n%s\r\n" % (len(half), half) * 2 + b"1\r\n"  # the third chunk's size line crosses the limit
    status, answer = exchange(port, post("Transfer-Encoding: chunked\r\n", chunks))
    assert status == 413 and "chunked body over the limit" in answer["error"]
    assert stored(directory) == []


def test_a_gzip_bomb_is_refused_without_inflating_it(collector):
    port, directory = collector
    members = gzip.compress(bytes(1 << 20), 9) * 3 * 1024  # 3 MiB of gzip members, 3 GiB of zeros once inflated
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=members, headers={"Content-Encoding": "gzip"})
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - before
    assert response.status_code == 413 and "decompresses to over the limit" in response.json()["error"]
    assert grown < 8 * MAX_BODY  # not the gigabytes a whole decompression takes
    one_member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    bomb = b"".join(one_member.compress(bytes(1 << 20)) for _ in range(MAX_BODY // (1 << 20) + 1)) + one_member.flush()
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=bomb, headers={"Content-Encoding": "gzip"})
    assert response.status_code == 413
    cut = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=bomb[:1000], headers={"Content-Encoding": "gzip"})
    assert cut.status_code == 400 and "ends early" in cut.json()["error"]
    assert stored(directory) == []


def test_an_export_that_would_store_an_overlong_line_is_refused(collector):
    port, directory = collector
    escaped = json.loads(json.dumps(EXPORT))  # each "é" is stored as \u00e9: 6 bytes of the line for 2 of the body
    escaped["resourceSpans"][0]["scopeSpans"][0]["spans"][0]["name"] = "é" * (MAX_LINE // 6 + 1)
    body = json.dumps(escaped, ensure_ascii=False).encode()
    assert len(body) < MAX_BODY
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=body)
    assert response.status_code == 413 and f"as stored JSON is over the limit of {MAX_LINE}" in response.json()["error"]
    assert stored(directory) == []


@pytest.mark.parametrize(
    ("export", "says"),
    [
        ({"resourceSpans": [1]}, "resourceSpans[0]: expected an object"),
        ({}, "expected an object with resourceSpans, a list"),
        ([], "expected an object with resourceSpans, a list"),
        ({"resourceSpans": [{"scopeSpans": {}}]}, "resourceSpans[0].scopeSpans: expected a list"),
        ({"resourceSpans": [{"resource": []}]}, "resourceSpans[0].resource: expected an object"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [None]}]}]}, "resourceSpans[0].scopeSpans[0].spans[0]: expected an object"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"spanId": "ab"}]}]}]}, "spans[0].traceId: expected an id"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": 7}]}]}]}, "spans[0].spanId: expected an id"),
        ({"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab", "spanId": "cd", "startTimeUnixNano": "soon"}]}]}]},
         "spans[0].startTimeUnixNano: expected an integer"),
        ({"resourceSpans": [{"resource": {"attributes": [
            {"key": "k", "value": {"arrayValue": {"values": [{"intValue": 1.5}]}}}]}}]},
         "resource.attributes[0].value.arrayValue.values[0].intValue: expected an integer"),
        ({"resourceSpans": [{"resource": {"attributes": [{"value": {}}]}}]}, "resource.attributes[0].key: expected a string"),
    ],
)  # fmt: skip
def test_an_export_of_the_wrong_shape_is_refused_with_the_place_and_not_stored(collector, export, says):
    port, directory = collector
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", json=export)
    assert response.status_code == 400 and says in response.json()["error"]
    assert stored(directory) == []


def test_an_empty_protobuf_export_is_stored_with_its_resource_spans(collector):
    port, directory = collector
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=b"", headers={"Content-Type": "application/x-protobuf"})
    assert response.status_code == 200 and stored(directory) == ['{"resourceSpans":[]}']


def test_slow_clients_are_cut_off_at_the_deadline_while_others_are_served(collector):
    port, _ = collector
    request = post("Content-Length: 1000\r\n", b"{")
    idle, trickling = socket.create_connection(("127.0.0.1", port)), []
    for _ in range(8):  # slowloris: a byte at a time, each well within any per-receive timeout
        trickling.append(socket.create_connection(("127.0.0.1", port)))
    lying = socket.create_connection(("127.0.0.1", port))
    lying.sendall(request)  # announces 1000 bytes, sends one
    open_ = [idle, lying, *trickling]
    closed: set[socket.socket] = set()
    sent, given_up = 0, time.monotonic() + 10 * READ_TIMEOUT
    while len(closed) < len(open_) and time.monotonic() < given_up:
        for connection in set(trickling) - closed:
            try:
                connection.sendall(request[sent % len(request) : sent % len(request) + 1])
            except OSError:
                closed.add(connection)
        sent += 1
        readable, _, _ = select.select([c for c in open_ if c not in closed], [], [], READ_TIMEOUT / 20)
        for connection in readable:
            try:
                if connection.recv(1024) == b"":
                    closed.add(connection)
            except OSError:
                closed.add(connection)
        assert httpx.post(f"http://127.0.0.1:{port}/v1/traces", json={"resourceSpans": []}).status_code == 200
    assert len(closed) == len(open_), "slow connections were left open past the deadline"
    for connection in open_:
        connection.close()


def test_a_protobuf_export_of_too_many_messages_is_refused_before_it_is_converted(collector):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    port, directory = collector
    export = ExportTraceServiceRequest()
    span = export.resource_spans.add().scope_spans.add().spans.add()
    span.MergeFromString(b"\x4a\x00" * MAX_PROTOBUF_MESSAGES)  # empty attributes: 2 bytes each on the wire
    body = export.SerializeToString()
    assert len(body) < MAX_BODY
    response = httpx.post(f"http://127.0.0.1:{port}/v1/traces", content=body, headers={"Content-Type": "application/x-protobuf"})
    assert response.status_code == 413 and f"over {MAX_PROTOBUF_MESSAGES} messages" in response.json()["error"]
    assert stored(directory) == []
