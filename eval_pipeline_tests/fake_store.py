"""A real HTTP fake of the AIR Blackbox agent-episode store (DESIGN §3), for tests.

`FakeStore` serves the store API from an in-memory list of episode dicts on 127.0.0.1 (an
ephemeral port), in a background thread of a stdlib `ThreadingHTTPServer`:

    GET /v1/health                 {"status": "ok", "episodes": N}
    GET /v1/episodes               summaries (no steps), newest first; agent_id, status, since,
                                   until, limit (1..500, default 50, else 422), offset (>= 0)
    GET /v1/episodes/{id}          the full episode, 404 if unknown
    GET /v1/episodes/export        full episodes as NDJSON, chunked; agent_id, status, since, until

`since`/`until` filter on `started_at` (since inclusive, until exclusive). The list answer is a
plain JSON list, or `{"<list_wrapper>": [...]}` when `list_wrapper` is set.

Fault injection:
  * `fail_next(n, status=503, path=None, exact=False, retry_after=None)`: the next `n` requests
    (whose path starts with, or with `exact` is, `path`; or any request) answer `status`, with
    `Retry-After` when given;
  * `export_enabled = False`: the export endpoint answers 404, as a store without it does;
  * `cut_export_next(n, after_lines)`: the next `n` exports send `after_lines` lines, then drop
    the connection without ending the chunked body (a broken stream).
Every request is logged in `requests` as `(method, path, query)`, `query` a dict of the last
value of each parameter, before any fault is applied.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from eval_pipeline.episodes.model import Episode, Step

LIST_CAP = 500
LIST_DEFAULT = 50
EXPORT_LINES_PER_CHUNK = 64


@dataclass
class _Fault:
    path: str | None  # a path prefix, or None for every request
    exact: bool  # `path` must match whole, not as a prefix
    remaining: int
    status: int
    retry_after: int | float | None


@dataclass
class _Cut:
    remaining: int
    after_lines: int


class _BadQuery(ValueError):
    pass


def _parse_time(value: Any) -> datetime:
    moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def make_episode(
    episode_id: str,
    started_at: datetime | str,
    *,
    agent_id: str = "support-bot",
    status: str = "success",
    steps: int = 2,
    **extra: Any,
) -> dict[str, Any]:
    """A valid store episode (built through the canonical model) as its JSON dict."""
    start = _parse_time(started_at)
    step_list = [
        Step(
            step_index=i,
            step_type="llm_call" if i % 2 == 0 else "tool_call",
            tool_name=None if i % 2 == 0 else "lookup_order",
            model="gpt-4o-mini",
            provider="openai",
            input_summary=f"{episode_id} step {i} in",
            output_summary=f"{episode_id} step {i} out",
            tokens=10 + i,
            cost_usd=0.001,
            duration_ms=100.0,
            timestamp=start,
        )
        for i in range(steps)
    ]
    episode = Episode(
        episode_id=episode_id,
        agent_id=agent_id,
        status=status,
        steps=step_list,
        tools_used=sorted({s.tool_name for s in step_list if s.tool_name}),
        step_count=steps,
        started_at=start,
        ended_at=start,
        **extra,
    )
    return episode.model_dump(mode="json")


class FakeStore:
    def __init__(self, episodes: Iterable[dict[str, Any]] = (), *, list_wrapper: str | None = None):
        self.episodes: list[dict[str, Any]] = list(episodes)
        self.list_wrapper = list_wrapper
        self.export_enabled = True
        self.requests: list[tuple[str, str, dict[str, str]]] = []
        self._faults: list[_Fault] = []
        self._cuts: list[_Cut] = []
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> FakeStore:
        store = self

        class Handler(_Handler):
            fake = store

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(  # a short poll interval makes shutdown() quick
            target=self._server.serve_forever, kwargs={"poll_interval": 0.01}, name="fake-episode-store", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakeStore:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("FakeStore is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # -- test knobs --------------------------------------------------------------------------

    def add_episode(self, episode_id: str, started_at: datetime | str, **fields: Any) -> dict[str, Any]:
        episode = make_episode(episode_id, started_at, **fields)
        self.episodes.append(episode)
        return episode

    def fail_next(
        self, n: int, status: int = 503, *, path: str | None = None, exact: bool = False, retry_after: int | float | None = None
    ) -> None:
        """The next `n` requests under `path` (a prefix, or the whole path when `exact`; None:
        any path) answer `status`, with a `Retry-After` header when `retry_after` is given."""
        with self._lock:
            self._faults.append(_Fault(path, exact, n, status, retry_after))

    def cut_export_next(self, n: int, after_lines: int) -> None:
        """The next `n` exports drop the connection after `after_lines` lines."""
        with self._lock:
            self._cuts.append(_Cut(n, after_lines))

    def requests_to(self, path: str) -> list[dict[str, str]]:
        """Queries of the logged GETs of exactly `path`."""
        return [query for method, p, query in list(self.requests) if method == "GET" and p == path]

    # -- behaviour ---------------------------------------------------------------------------

    def _take_fault(self, path: str) -> _Fault | None:
        with self._lock:
            for fault in self._faults:
                if fault.remaining > 0 and (
                    fault.path is None or (path == fault.path if fault.exact else path.startswith(fault.path))
                ):
                    fault.remaining -= 1
                    return fault
        return None

    def _take_cut(self) -> int | None:
        with self._lock:
            for cut in self._cuts:
                if cut.remaining > 0:
                    cut.remaining -= 1
                    return cut.after_lines
        return None

    def _snapshot(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self.episodes)

    def _matching(self, query: dict[str, str]) -> list[dict[str, Any]]:
        try:
            since = _parse_time(query["since"]) if "since" in query else None
            until = _parse_time(query["until"]) if "until" in query else None
        except ValueError as exc:
            raise _BadQuery(f"bad since/until: {exc}") from exc
        chosen = []
        for episode in self._snapshot():
            try:
                started = _parse_time(episode["started_at"])
            except (KeyError, TypeError, ValueError):  # unreadable: no time filter can match it
                if since is not None or until is not None:
                    continue
                started = datetime.min.replace(tzinfo=UTC)  # listed last
            if "agent_id" in query and episode.get("agent_id") != query["agent_id"]:
                continue
            if "status" in query and episode.get("status") != query["status"]:
                continue
            if since is not None and started < since:
                continue
            if until is not None and started >= until:
                continue
            chosen.append((started, episode))
        chosen.sort(key=lambda pair: pair[0], reverse=True)  # newest first; stable for ties
        return [episode for _, episode in chosen]

    def _list(self, query: dict[str, str]) -> Any:
        try:
            limit = int(query.get("limit", LIST_DEFAULT))
            offset = int(query.get("offset", 0))
        except ValueError as exc:
            raise _BadQuery(f"limit/offset must be integers: {exc}") from exc
        if not 1 <= limit <= LIST_CAP:
            raise _BadQuery(f"limit must be between 1 and {LIST_CAP}")
        if offset < 0:
            raise _BadQuery("offset must be >= 0")
        page = self._matching(query)[offset : offset + limit]
        summaries = [{k: v for k, v in episode.items() if k != "steps"} for episode in page]
        return {self.list_wrapper: summaries} if self.list_wrapper else summaries

    def _get(self, episode_id: str) -> dict[str, Any] | None:
        for episode in self._snapshot():
            if str(episode.get("episode_id")) == episode_id:
                return episode
        return None


class _Handler(BaseHTTPRequestHandler):
    fake: FakeStore
    protocol_version = "HTTP/1.1"  # keep-alive and chunked transfer
    disable_nagle_algorithm = True  # headers and body go out in separate writes: no 40 ms stalls
    timeout = 10  # an idle keep-alive connection is dropped, so no handler thread lingers

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        path = parts.path
        query = dict(parse_qsl(parts.query, keep_blank_values=True))
        fake = self.fake
        with fake._lock:
            fake.requests.append(("GET", path, query))

        fault = fake._take_fault(path)
        if fault is not None:
            headers = {} if fault.retry_after is None else {"Retry-After": str(fault.retry_after)}
            self._json(fault.status, {"detail": f"injected HTTP {fault.status}"}, headers)
            return
        try:
            if path == "/v1/health":
                self._json(200, {"status": "ok", "episodes": len(fake._snapshot())})
            elif path == "/v1/episodes":
                self._json(200, fake._list(query))
            elif path == "/v1/episodes/export" and fake.export_enabled:
                self._export(fake._matching(query))
            elif path.startswith("/v1/episodes/") and "/" not in path[len("/v1/episodes/") :]:
                episode = fake._get(unquote(path[len("/v1/episodes/") :]))
                if episode is None:
                    self._json(404, {"detail": "Episode not found"})
                else:
                    self._json(200, episode)
            else:
                self._json(404, {"detail": "Not Found"})
        except _BadQuery as exc:
            self._json(422, {"detail": str(exc)})
        except Exception as exc:  # a bug in the fake or odd test data: answer, never drop the connection
            self._json(500, {"detail": f"{type(exc).__name__}: {exc}"})

    def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _export(self, episodes: list[dict[str, Any]]) -> None:
        cut_after = self.fake._take_cut()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for n, chunk in enumerate(_chunks(episodes, EXPORT_LINES_PER_CHUNK)):
            lines = chunk
            if cut_after is not None:
                lines = chunk[: max(0, cut_after - n * EXPORT_LINES_PER_CHUNK)]
            if lines:
                data = "".join(json.dumps(e) + "\n" for e in lines).encode()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            if cut_after is not None and len(lines) < len(chunk):
                self.wfile.flush()
                self.close_connection = True  # no terminating chunk: the body is incomplete
                return
        self.wfile.write(b"0\r\n\r\n")


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
