"""The episode-store client against a real HTTP fake of the store (`fake_store.py`).

Proves the bulk export path and the paged fallback return exactly one day's episodes, each
once; that transient failures (503, a broken stream) are retried and a dead store, or one that
refuses, ends in one-line `SourceUnavailable` errors after the configured attempts.
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from eval_pipeline.episodes.source import open_source
from eval_pipeline.episodes.store import EpisodeStore, SourceUnavailable
from eval_pipeline.retry import Backoff

FAST = Backoff(attempts=5, base_seconds=0.01, max_seconds=0.05)
DAY = date(2026, 11, 2)
DAY_START = datetime(2026, 11, 2, tzinfo=UTC)
ON_DAY = 700  # more than one list page of 500
EXPORT = "/v1/episodes/export"
LIST = "/v1/episodes"


@dataclass(frozen=True)
class RecordingBackoff(Backoff):
    """FAST, also noting each (attempt, retry_after) it was asked to wait for."""

    waits: list = field(default_factory=list, compare=False, hash=False)

    def delay(self, attempt: int, retry_after: float | None = None) -> float:
        self.waits.append((attempt, retry_after))
        return super().delay(attempt, retry_after)


def recording_backoff() -> RecordingBackoff:
    return RecordingBackoff(attempts=FAST.attempts, base_seconds=FAST.base_seconds, max_seconds=FAST.max_seconds)


def populate(store) -> set[str]:
    """700 episodes on DAY (the first at exactly midnight), plus neighbours just outside it."""
    expected = set()
    for i in range(ON_DAY):
        episode_id = f"ep-{i:04d}"
        store.add_episode(
            episode_id,
            DAY_START + timedelta(seconds=120 * i),
            agent_id=f"agent-{i % 4}",
            status="failure" if i % 7 == 0 else "success",
        )
        expected.add(episode_id)
    store.add_episode("prev-late", DAY_START - timedelta(microseconds=1))  # 23:59:59.999999 the day before
    store.add_episode("prev-noon", DAY_START - timedelta(hours=12))
    store.add_episode("next-midnight", DAY_START + timedelta(days=1))  # `until` is exclusive
    store.add_episode("next-noon", DAY_START + timedelta(days=1, hours=12))
    store.episodes.reverse()  # the store's storage order must not matter
    return expected


def check_records(records, store_url: str, expected: set[str]) -> None:
    ids = []
    for record in records:
        episode = json.loads(record.raw)
        ids.append(episode["episode_id"])
        assert record.source == store_url
        assert record.locator == f"episode {episode['episode_id']}"
        assert record.fallback_day == DAY
        assert len(episode["steps"]) == 2 and episode["steps"][0]["step_type"] == "llm_call"
        assert datetime.fromisoformat(episode["started_at"]).astimezone(UTC).date() == DAY
    assert len(ids) == len(set(ids)) == ON_DAY  # each episode exactly once
    assert set(ids) == expected


def closed_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"  # nothing listens here any more


# -- export (bulk) path ----------------------------------------------------------------------


def test_export_returns_exactly_the_days_episodes(fake_store):
    expected = populate(fake_store)

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    check_records(records, fake_store.url, expected)
    exports = fake_store.requests_to(EXPORT)
    assert exports == [{"since": "2026-11-02T00:00:00Z", "until": "2026-11-03T00:00:00Z"}]
    assert fake_store.requests_to(LIST) == []  # no fallback when export works


@pytest.mark.parametrize("retry_after", [None, 0])
def test_export_retried_after_two_503s(fake_store, retry_after):
    expected = populate(fake_store)
    fake_store.fail_next(2, path=EXPORT, retry_after=retry_after)

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    check_records(records, fake_store.url, expected)
    assert len(fake_store.requests_to(EXPORT)) == 3
    assert fake_store.requests_to(LIST) == []


def test_broken_export_stream_is_retried_whole_never_half_loaded(fake_store):
    expected = populate(fake_store)
    fake_store.cut_export_next(1, after_lines=300)  # connection dropped mid-body

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    check_records(records, fake_store.url, expected)  # no duplicates from the first, cut attempt
    assert len(fake_store.requests_to(EXPORT)) == 2


# -- paged fallback (no export endpoint) -----------------------------------------------------


def test_paged_path_when_export_is_missing(fake_store):
    expected = populate(fake_store)
    fake_store.export_enabled = False  # the list is a plain JSON list by default

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    check_records(records, fake_store.url, expected)
    assert len(fake_store.requests_to(EXPORT)) == 1  # asked once, answered 404, not retried
    pages = fake_store.requests_to(LIST)
    assert [(p["offset"], p["limit"]) for p in pages] == [("0", "500"), ("500", "500")]
    assert all(p["since"] == "2026-11-02T00:00:00Z" and p["until"] == "2026-11-03T00:00:00Z" for p in pages)
    fetched = [
        path.rsplit("/", 1)[1] for method, path, _ in fake_store.requests if path.startswith(LIST + "/") and path != EXPORT
    ]
    assert len(fetched) == len(set(fetched)) == ON_DAY  # every id fetched exactly once
    assert set(fetched) == expected


@pytest.mark.parametrize("wrapper", ["episodes", "items"])
def test_paged_path_reads_a_wrapped_list(fake_store, wrapper):
    fake_store.export_enabled = False
    fake_store.list_wrapper = wrapper  # {"<wrapper>": [...]} instead of a plain list
    for i in range(3):
        fake_store.add_episode(f"ep-{i}", DAY_START + timedelta(hours=i))
    fake_store.add_episode("other-day", DAY_START + timedelta(days=1))

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    assert [r.locator for r in records] == ["episode ep-2", "episode ep-1", "episode ep-0"]  # newest first
    assert all(json.loads(r.raw)["steps"] for r in records)


def test_paged_path_retries_transient_list_and_get_failures(fake_store):
    expected = populate(fake_store)
    fake_store.export_enabled = False
    fake_store.fail_next(2, status=502, path=LIST, exact=True)  # the first list page, twice
    fake_store.fail_next(1, path="/v1/episodes/ep-0042", exact=True, status=504)

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    check_records(records, fake_store.url, expected)
    assert [p["offset"] for p in fake_store.requests_to(LIST)] == ["0", "0", "0", "500"]
    assert len(fake_store.requests_to("/v1/episodes/ep-0042")) == 2


def test_an_exact_page_multiple_ends_on_an_empty_page(fake_store):
    fake_store.export_enabled = False
    for i in range(500):
        fake_store.add_episode(f"ep-{i:04d}", DAY_START + timedelta(seconds=i))

    records = list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    assert len(records) == 500
    assert [p["offset"] for p in fake_store.requests_to(LIST)] == ["0", "500"]


def test_an_empty_day_yields_nothing(fake_store):
    fake_store.add_episode("other-day", DAY_START - timedelta(days=3))
    assert list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY)) == []
    fake_store.export_enabled = False
    assert list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY)) == []


# -- failures ----------------------------------------------------------------------------------


def test_unreachable_store_raises_source_unavailable_after_the_attempts():
    url = closed_port_url()
    backoff = recording_backoff()

    with pytest.raises(SourceUnavailable) as caught:
        list(EpisodeStore(url, timeout=2, backoff=backoff).records_for(DAY))

    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    assert url in message
    assert "after 5 attempts" in message and "ConnectError" in message
    assert [attempt for attempt, _ in backoff.waits] == [0, 1, 2, 3]  # 5 tries, 4 waits between


def test_unreachable_store_health_raises_source_unavailable():
    url = closed_port_url()
    with pytest.raises(SourceUnavailable, match="unreachable") as caught:
        EpisodeStore(url, timeout=2, backoff=FAST).health()
    assert url in str(caught.value) and "\n" not in str(caught.value)


def test_store_always_answering_503_raises_after_the_attempts(fake_store):
    populate(fake_store)
    fake_store.fail_next(10**6, retry_after=0)
    backoff = recording_backoff()

    with pytest.raises(SourceUnavailable) as caught:
        list(EpisodeStore(fake_store.url, backoff=backoff).records_for(DAY))

    message = str(caught.value)
    assert "\n" not in message and "Traceback" not in message
    assert fake_store.url in message and "HTTP 503" in message and "after 5 attempts" in message
    assert len(fake_store.requests) == 5  # exactly the configured attempts, all on the export
    assert len(fake_store.requests_to(EXPORT)) == 5
    assert backoff.waits == [(0, 0.0), (1, 0.0), (2, 0.0), (3, 0.0)]  # Retry-After reached the backoff


def test_non_retryable_4xx_raises_at_once_with_the_status(fake_store):
    populate(fake_store)
    fake_store.fail_next(1, status=400, path=EXPORT)

    with pytest.raises(SourceUnavailable) as caught:
        list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    message = str(caught.value)
    assert "HTTP 400" in message and fake_store.url in message and "\n" not in message
    assert len(fake_store.requests) == 1  # not retried, and no fallback to the paged path


def test_non_retryable_4xx_on_get_by_id_in_paged_path(fake_store):
    for i in range(3):
        fake_store.add_episode(f"ep-{i:04d}", DAY_START + timedelta(hours=i))
    fake_store.export_enabled = False
    fake_store.fail_next(1, status=403, path="/v1/episodes/ep-0001", exact=True)

    with pytest.raises(SourceUnavailable, match="HTTP 403") as caught:
        list(EpisodeStore(fake_store.url, backoff=FAST).records_for(DAY))

    assert "/v1/episodes/ep-0001" in str(caught.value)
    assert len(fake_store.requests_to("/v1/episodes/ep-0001")) == 1


# -- health ------------------------------------------------------------------------------------


def test_health_returns_the_store_json(fake_store):
    for i in range(3):
        fake_store.add_episode(f"ep-{i}", DAY_START)
    assert EpisodeStore(fake_store.url + "/", backoff=FAST).health() == {"status": "ok", "episodes": 3}
    assert fake_store.requests == [("GET", "/v1/health", {})]


def test_health_retries_a_transient_503(fake_store):
    fake_store.fail_next(1, path="/v1/health")
    assert EpisodeStore(fake_store.url, backoff=FAST).health() == {"status": "ok", "episodes": 0}
    assert len(fake_store.requests_to("/v1/health")) == 2


# -- the fake itself (its contract is what the tests above rely on) ----------------------------


def test_fake_store_list_contract(fake_store):
    import httpx

    populate(fake_store)
    with httpx.Client(base_url=fake_store.url) as client:
        default = client.get(LIST).json()
        assert len(default) == 50 and all("steps" not in s for s in default)
        starts = [s["started_at"] for s in default]
        assert starts == sorted(starts, reverse=True)  # newest first
        assert client.get(LIST, params={"limit": 0}).status_code == 422
        assert client.get(LIST, params={"limit": 501}).status_code == 422
        assert client.get(LIST, params={"since": "nonsense"}).status_code == 422
        day = client.get(
            LIST,
            params={
                "since": "2026-11-02T00:00:00Z",
                "until": "2026-11-03T00:00:00Z",
                "agent_id": "agent-1",
                "status": "success",
                "limit": 500,
            },
        ).json()
        assert day and all(s["agent_id"] == "agent-1" and s["status"] == "success" for s in day)
        assert client.get("/v1/episodes/nope").status_code == 404
        assert len(client.get("/v1/episodes/ep-0001").json()["steps"]) == 2
        export = client.get(EXPORT, params={"since": "2026-11-02T00:00:00Z", "until": "2026-11-03T00:00:00Z"})
        assert export.headers["transfer-encoding"] == "chunked"
        assert len(export.text.splitlines()) == ON_DAY
        fake_store.export_enabled = False
        assert client.get(EXPORT).status_code == 404


def test_fake_store_serves_episodes_with_an_unreadable_start(fake_store):
    import httpx

    fake_store.add_episode("good", DAY_START)
    fake_store.episodes.append(
        {"episode_id": "bad", "agent_id": "a", "status": "success", "started_at": "last Tuesday, after lunch", "steps": []}
    )
    with httpx.Client(base_url=fake_store.url) as client:
        assert [s["episode_id"] for s in client.get(LIST).json()] == ["good", "bad"]
        day = client.get(EXPORT, params={"since": "2026-11-02T00:00:00Z", "until": "2026-11-03T00:00:00Z"})
        assert [json.loads(line)["episode_id"] for line in day.text.splitlines()] == ["good"]


class _OddStore(BaseHTTPRequestHandler):
    """A proxy error page on /v1/health and an unknown list wrapper on /v1/episodes."""

    def log_message(self, *args):  # quiet
        pass

    def do_GET(self):
        if self.path.startswith("/v1/health"):
            body, kind = b"<html>502 from the proxy</html>", "text/html"
        elif self.path.startswith("/v1/episodes/export"):
            body, kind = b"", "text/plain"
        else:
            body, kind = b'{"data": []}', "application/json"
        self.send_response(404 if self.path.startswith("/v1/episodes/export") else 200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def odd_store():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OddStore)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_non_json_answer_is_a_clear_source_error(odd_store):
    with pytest.raises(SourceUnavailable, match="text/html that is not JSON"):
        EpisodeStore(odd_store, backoff=FAST).health()


def test_an_unknown_list_shape_is_an_error_not_an_empty_day(odd_store):
    with pytest.raises(SourceUnavailable, match="neither a list"):
        list(EpisodeStore(odd_store, backoff=FAST).records_for(DAY))


@pytest.mark.parametrize("export_enabled", [True, False])
def test_the_day_is_fetched_before_records_are_read(fake_store, export_enabled):
    """The warehouse lock is taken while records are read: no network may happen then."""
    expected = populate(fake_store)
    fake_store.export_enabled = export_enabled
    url = fake_store.url
    records = EpisodeStore(url, backoff=FAST).records_for(DAY)
    fake_store.close()  # the store goes away before a single record is read
    check_records(list(records), url, expected)


@pytest.mark.parametrize("export_enabled", [True, False])
def test_the_day_is_spooled_beside_the_warehouse_not_in_the_hosts_temporary_directory(
    fake_store, export_enabled, tmp_path, monkeypatch
):
    """The day's answer (2.5 GB at a million episodes) is spooled before its records are read. In the host's temporary
    directory, which may be memory (tmpfs), it would hold the memory the ingest's batches save."""
    expected = populate(fake_store)
    fake_store.export_enabled = export_enabled
    made, temporary_file = [], tempfile.TemporaryFile

    def spooled(**kwargs):
        made.append(kwargs.get("dir"))
        return temporary_file(**kwargs)

    monkeypatch.setattr(tempfile, "TemporaryFile", spooled)
    source = open_source(fake_store.url, tmp_path / "data" / "episode_source_index.json")
    check_records(list(source.records_for(DAY)), fake_store.url, expected)
    assert made and set(made) == {tmp_path / "data"}  # without an export, its try's spool and the pages'
