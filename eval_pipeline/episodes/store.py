"""Client of the AIR Blackbox agent-episode-store HTTP API (DESIGN §3).

The bulk path is the NDJSON export filtered to one day, spooled to a temporary file so a
broken stream is retried whole and never half-loaded. Stores without the export endpoint are
read through the list (paged past its 500-row cap) and get-by-id endpoints.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from typing import IO, Any

import httpx

from eval_pipeline.episodes.records import RawRecord, record_episode_id
from eval_pipeline.errors import InfrastructureError
from eval_pipeline.retry import Backoff, RetriesExhausted, with_retries

PAGE_LIMIT = 500  # the store's cap on `limit`
DEFAULT_BACKOFF = Backoff()


class SourceUnavailable(InfrastructureError):
    """The store could not be reached or kept failing after retries."""


def _day_bounds(day: date) -> dict[str, str]:
    start = datetime.combine(day, time(), tzinfo=UTC)
    iso = lambda moment: moment.isoformat().replace("+00:00", "Z")  # noqa: E731
    return {"since": iso(start), "until": iso(start + timedelta(days=1))}


class EpisodeStore:
    def __init__(
        self, base_url: str, *, timeout: float = 30.0, backoff: Backoff = DEFAULT_BACKOFF, spool_directory: Path | None = None
    ):
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout
        self.backoff = backoff
        # where a day's answer is spooled (the host's temporary directory when None, which may be memory: tmpfs)
        self.spool_directory = spool_directory

    def _spool(self) -> IO[bytes]:
        """A file for a day's answer, closed (and gone) once its caller has read it."""
        if self.spool_directory is not None:
            self.spool_directory.mkdir(parents=True, exist_ok=True)
        return tempfile.TemporaryFile(dir=self.spool_directory)

    def _client(self) -> httpx.Client:
        return httpx.Client(base_url=self.base_url, timeout=self.timeout)

    def _get_json(self, client: httpx.Client, path: str, params: dict[str, Any] | None = None) -> Any:
        def call() -> Any:
            response = client.get(path, params=params)
            response.raise_for_status()
            try:
                return response.json()
            except ValueError:
                kind = response.headers.get("content-type", "a body")
                raise SourceUnavailable(f"episode store {self.base_url}: GET {path} answered {kind} that is not JSON") from None

        return self._retrying(f"GET {self.base_url}{path}", call)

    def _retrying(self, what: str, call):
        try:
            return with_retries(what, call, self.backoff)
        except RetriesExhausted as exc:
            raise SourceUnavailable(f"episode store {self.base_url} unreachable or failing: {exc}") from exc
        except httpx.HTTPStatusError as exc:
            raise SourceUnavailable(f"episode store {self.base_url}: {what} answered HTTP {exc.response.status_code}") from exc

    def health(self) -> dict[str, Any]:
        with self._client() as client:
            return self._get_json(client, "/v1/health")

    def records_for(self, day: date, undated_day: date | None = None) -> Iterator[RawRecord]:  # every record is dated
        """Every episode whose start falls on `day` (UTC), as raw records.

        The whole day is fetched into a local spool before this returns, so a caller that
        writes records under a lock never holds it while waiting on the network.
        """
        with self._client() as client:
            spool = self._export(client, day) or self._paged(client, day)
        return self._read_spool(spool, day)

    def _read_spool(self, spool, day: date) -> Iterator[RawRecord]:
        with spool:
            for line_no, line in enumerate(spool, 1):
                text = line.decode("utf-8", errors="replace").strip()
                if text:
                    episode_id = record_episode_id(text)
                    locator = f"episode {episode_id}" if episode_id else f"export line {line_no}"
                    yield RawRecord(self.base_url, locator, text, day)

    def _export(self, client: httpx.Client, day: date):
        """Spool the day's NDJSON export; None when this store has no export endpoint."""

        def call():
            spool = self._spool()
            try:
                with client.stream("GET", "/v1/episodes/export", params=_day_bounds(day)) as response:
                    if response.status_code in (404, 405, 501):
                        spool.close()
                        return None
                    response.raise_for_status()
                    for chunk in response.iter_bytes():
                        spool.write(chunk)
            except BaseException:
                spool.close()
                raise
            spool.seek(0)
            return spool

        return self._retrying(f"GET {self.base_url}/v1/episodes/export", call)

    def summaries(self, day: date) -> list[dict[str, Any]]:
        """The day's episode summaries (no steps), paged past the 500-row cap, each id once."""
        with self._client() as client:
            return self._summaries(client, day)

    def _summaries(self, client: httpx.Client, day: date) -> list[dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}  # newest-first paging can repeat an id; keep one
        for offset in itertools.count(0, PAGE_LIMIT):
            page = self._get_json(client, "/v1/episodes", {**_day_bounds(day), "limit": PAGE_LIMIT, "offset": offset})
            summaries = _page_items(page)
            found.update((str(s["episode_id"]), s) for s in summaries if isinstance(s, dict) and "episode_id" in s)
            if len(summaries) < PAGE_LIMIT:
                break
        return list(found.values())

    def _paged(self, client: httpx.Client, day: date):
        """Spool the day's episodes one by one: list pages past the 500-row cap, then get-by-id."""
        ids = [str(summary["episode_id"]) for summary in self._summaries(client, day)]
        spool = self._spool()
        try:
            for episode_id in ids:
                episode = self._get_json(client, f"/v1/episodes/{episode_id}")
                spool.write(json.dumps(episode, separators=(",", ":")).encode() + b"\n")
        except BaseException:
            spool.close()
            raise
        spool.seek(0)
        return spool


def _page_items(page: Any) -> list[Any]:
    """A list page is a JSON list, or an object wrapping one under `episodes` or `items`."""
    if isinstance(page, dict):
        page = page.get("episodes", page.get("items"))
    if not isinstance(page, list):
        raise SourceUnavailable("episode store list answer is neither a list nor {episodes|items: [...]}")
    return page
