"""The viewer's HTTP server: the standard library's `ThreadingHTTPServer`, one thread and one read-only warehouse
connection per request.

Pages are built by blocking code (DuckDB, pandas, Jinja2), so a thread per request serves them without an event
loop handing each to an executor, as aiohttp would need; nothing is held between requests.

Safe by default: it listens on loopback; anywhere else only with a token (EVAL_UI_TOKEN), which every request must
then carry (`Authorization: Bearer`, or `?token=` once, kept in an HttpOnly cookie); without a token it answers only
requests addressed to a loopback name, so a web page elsewhere cannot reach it by DNS rebinding. The browser never
sends SQL: each route's reads are fixed queries with its path and filters as parameters (a head to head's two sides are
`eval-pipeline compare`'s selectors, read by its parser). Under /reports/ it serves the
reports directory's files, read-only and under the same rules, so that the links in the Dagster UI and in alerts open.

Two things are written, both by POST from the viewer's own forms: a reviewer's label (`labels`, under the warehouse
lock for one short transaction) and an episode promoted to a case (a case-set file). A POST needs its session's CSRF
token (an HMAC of the session cookie's random id under a key made at start-up) and, when the browser names its
Origin, this host.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import re
import secrets
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import get_args
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import duckdb

from eval_pipeline.regression.compare import Selector, SelectorError
from eval_pipeline.viewer.links import COMPARE_PREFIX, REPORTS_PREFIX, compare_path, queue_path
from eval_pipeline.viewer.pages import LabelForm, Pages, ReviewSettings, Visitor
from eval_pipeline.viewer.promote import promote_episode
from eval_pipeline.viewer.queues import QUEUE_BY_NAME, QueueKind
from eval_pipeline.warehouse.connection import Warehouse, WarehouseBusy
from eval_pipeline.warehouse.labels import Label, LabelVerdict, UnknownEpisode, record_label
from eval_pipeline.warehouse.viewer import Filters, NoWarehouse, Verdict, existing, read_only

TOKEN_COOKIE = "eval_ui_token"
SESSION_COOKIE = "eval_ui_session"  # a random id per browser; its CSRF token is derived from it
REVIEWER_COOKIE = "eval_ui_reviewer"
MAX_FORM_BYTES = 64 * 1024
MAX_REVIEWER_CHARS = 100
MAX_NOTE_CHARS = 10_000
_LOOPBACK_NAMES = {"localhost", "localhost.localdomain"}
_SECURITY_HEADERS = {
    # no script runs even if escaping failed; nothing is fetched from elsewhere; no page frames it
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_REPORT_TYPES = {  # what the reports directory holds; anything else is sent as bytes, which `nosniff` keeps inert
    ".html": "text/html; charset=utf-8",
    ".md": "text/markdown; charset=utf-8",
    ".json": "application/json",
    ".xml": "application/xml",
    ".csv": "text/csv; charset=utf-8",
}
_DAY = re.compile(r"^/days/(\d{4}-\d{2}-\d{2})$")
_EPISODE = re.compile(r"^/days/(\d{4}-\d{2}-\d{2})/episodes/([^/]+)$")
_PROMOTE = re.compile(r"^/days/(\d{4}-\d{2}-\d{2})/episodes/([^/]+)/promote$")
_REVIEW = re.compile(r"^/days/(\d{4}-\d{2}-\d{2})/review$")
_QUEUE = re.compile(r"^/days/(\d{4}-\d{2}-\d{2})/review/([^/]+)$")


class NotFound(Exception):
    """The path names no page, or a day, episode or report file that does not exist."""


class Moved(Exception):
    """The page asked for lives at another address (a form's fields, written as the address that shows them)."""

    def __init__(self, location: str):
        super().__init__(location)
        self.location = location


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address) is this machine only."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Viewer:
    """What every request needs: where the warehouse and the reports are, how to render, the token (None: loopback
    only), the review settings, and the key that derives each session's CSRF token (new with every start)."""

    warehouse: Warehouse
    reports_dir: Path
    pages: Pages
    token: str | None
    review: ReviewSettings
    session_key: bytes = field(default_factory=lambda: secrets.token_bytes(32))

    def page(self, path: str, query: dict[str, list[str]], visitor: Visitor) -> str:
        """The page at `path`, read on a connection closed before this returns."""
        with read_only(self.warehouse) as con:
            if path == "/":
                return self.pages.days(con, _page(query))
            if match := _DAY.match(path):
                return self.pages.day(con, _date(match[1]), _filters(query), _page(query))
            if match := _EPISODE.match(path):
                page = self.pages.episode(con, _date(match[1]), unquote(match[2]), visitor.csrf)
                if page is None:
                    raise NotFound(f"no episode {unquote(match[2])!r} on {match[1]}")
                return page
            if match := _REVIEW.match(path):
                return self.pages.review(con, _date(match[1]), self.review, visitor.reviewer)
            if match := _QUEUE.match(path):
                return self.pages.queue(con, _date(match[1]), _queue(match[2]), self.review, visitor)
            if path == COMPARE_PREFIX:
                return self.pages.compare(con, _sides(query), _page(query))
            if path == f"{COMPARE_PREFIX}/task":
                return self._compare_task(con, query)
        raise NotFound(f"no page at {path}")

    def _compare_task(self, con: duckdb.DuckDBPyConnection, query: dict[str, list[str]]) -> str:
        sides, chosen = _sides(query), _chosen(query)
        task = chosen.get("task")
        if sides is None or task is None:
            raise ValueError("give both sides (a= and b=, as eval-pipeline compare's --a and --b) and a task=")
        page = self.pages.compare_task(con, sides, task, (chosen.get("ea"), chosen.get("eb")))
        if page is None:
            raise NotFound(f"task {task!r} has no such trial on both sides of {sides[0]} vs {sides[1]}")
        return page

    def report_file(self, path: str) -> tuple[bytes, str]:
        """The bytes and content type of the reports directory's file at `path` (/reports/NAME): a file directly in
        that directory, never one a name with a separator, a dot-name or a link leads out of it to."""
        name = unquote(path.removeprefix(REPORTS_PREFIX))
        directory = self.reports_dir.resolve()
        if not name or name.startswith(".") or "/" in name or "\\" in name or "\0" in name:
            raise NotFound(f"no report file {name!r}")
        file = (directory / name).resolve()
        try:
            if file.parent == directory and file.is_file():
                return file.read_bytes(), _REPORT_TYPES.get(file.suffix.lower(), "application/octet-stream")
        except OSError:  # a name too long, a file gone or unreadable: the same answer as no such file
            pass
        raise NotFound(f"no report file {name!r}")

    def csrf(self, session: str) -> str:
        """The session's CSRF token: an HMAC of its id, so it cannot be guessed from the id alone."""
        return hmac.new(self.session_key, session.encode(), hashlib.sha256).hexdigest()


def _queue(name: str) -> QueueKind:
    kind = QUEUE_BY_NAME.get(unquote(name))
    if kind is None:
        raise NotFound(f"no queue {unquote(name)!r}; queues: {', '.join(QUEUE_BY_NAME)}")
    return kind


def label_from(form: LabelForm, queue: str, day: date) -> Label:
    """The label a filled form gives; ValueError, saying which field, when it gives none."""
    reviewer = form.reviewer.strip()
    if not reviewer or len(reviewer) > MAX_REVIEWER_CHARS:
        raise ValueError(f"give your name as reviewer (1 to {MAX_REVIEWER_CHARS} characters)")
    if form.verdict not in get_args(LabelVerdict):
        raise ValueError("choose a verdict: pass or fail")
    if form.score not in ("", "1", "2", "3", "4", "5"):
        raise ValueError("a score is 1 to 5, or none")
    if not form.episode_id:
        raise ValueError("the form names no episode")
    if len(form.note) > MAX_NOTE_CHARS:
        raise ValueError(f"a note is at most {MAX_NOTE_CHARS} characters")
    return Label(
        reviewer=reviewer,
        queue=queue,
        episode_id=form.episode_id,
        day=day,
        verdict=form.verdict,  # type: ignore[arg-type]
        score=int(form.score) if form.score else None,
        note=form.note.strip() or None,
    )


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise NotFound(f"not a day: {text}") from None


def _chosen(query: dict[str, list[str]]) -> dict[str, str]:
    """The query's filled fields (the last value of each)."""
    return {name: values[-1] for name, values in query.items() if values and values[-1]}


_SIDE_FIELDS = ("from", "to", "agent", "model", "label")  # the compare form's fields of a side, `a_agent` and so on


def _sides(query: dict[str, list[str]]) -> tuple[Selector, Selector] | None:
    """The two selections of a head to head, None when the query names neither.

    `a` and `b` are written as `eval-pipeline compare`'s --a and --b, and read by its parser (SelectorError, a
    ValueError, with its words); `start` and `end` give the days of a side that names none. The compare form sends
    each side's fields instead (`a_agent=…`): they are written as a selector, and the browser sent to its address.
    """
    chosen = _chosen(query)
    if "a" not in query and "b" not in query:
        if any(f"{side}_{field}" in chosen for side in "ab" for field in _SIDE_FIELDS):
            raise Moved(compare_path(_selector_text(chosen, "a"), _selector_text(chosen, "b")))
        return None
    if "a" not in query or "b" not in query:
        raise SelectorError("give both sides, a= and b=, e.g. a=date=2026-11-01,agent=support-bot&b=date=2026-11-02")
    start, end = chosen.get("start"), chosen.get("end")
    if end is not None and start is None:
        raise SelectorError("end= needs a start=")
    days = Selector.parse(f"date={start}..{end or start}") if start else None
    sides = (Selector.parse(query["a"][-1]), Selector.parse(query["b"][-1]))
    if days is None:
        return sides
    return tuple(
        side.model_copy(update={"first": days.first, "last": days.last}) if side.first is None else side for side in sides
    )  # type: ignore[return-value]


def _selector_text(chosen: dict[str, str], side: str) -> str:
    """A side of the compare form written as a selector: `date=D1..D2,agent=…,model=…,label=…`."""
    first, last = chosen.get(f"{side}_from"), chosen.get(f"{side}_to")
    days = f"{first}..{last}" if first and last and first != last else first or last
    parts = {"date": days} | {field: chosen.get(f"{side}_{field}") for field in ("agent", "model", "label")}
    return ",".join(f"{key}={value}" for key, value in parts.items() if value)


def _filters(query: dict[str, list[str]]) -> Filters:
    chosen = _chosen(query)
    verdict = chosen.get("verdict")
    if verdict is not None and verdict not in get_args(Verdict):
        raise ValueError(f"verdict must be one of {', '.join(get_args(Verdict))}, not {verdict!r}")
    return Filters(
        agent=chosen.get("agent"),
        dimension=chosen.get("dimension"),
        severity=chosen.get("severity"),
        category=chosen.get("category"),
        verdict=verdict,  # type: ignore[arg-type]
    )


def _page(query: dict[str, list[str]]) -> int:
    """The page of a long list (the days, a day's episodes, a head to head's tasks) the query asks for (`page=`, from 1)."""
    asked = _chosen(query).get("page", "1")
    if not (asked.isdecimal() and 1 <= int(asked) < 2**31):  # a larger one would overflow the query's offset
        raise ValueError(f"page must be a whole number from 1, not {asked!r}")
    return int(asked)


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        viewer = self.server.viewer
        url = urlsplit(self.path)
        query = parse_qs(url.query, keep_blank_values=True)  # `a=` is a selector, and an empty one
        if not self._admitted(query, url.path):
            return
        if url.path.startswith(REPORTS_PREFIX):
            return self._answer(lambda: self._report(url.path))
        session, new_session = self._session()
        visitor = Visitor(viewer.csrf(session), self._cookie(REVIEWER_COOKIE))
        cookies = {"Set-Cookie": _session_cookie(session)} if new_session else {}
        self._answer(lambda: self._send(HTTPStatus.OK, body=viewer.page(url.path, query, visitor), headers=cookies))

    def do_POST(self) -> None:
        """A label or a promotion: admitted like a page, from this viewer's own pages only (Origin, when the browser
        sends one, names this host), and with the session's CSRF token."""
        viewer = self.server.viewer
        url = urlsplit(self.path)
        declared = self.headers.get("Content-Length", "0")
        length = int(declared) if declared.isdigit() else MAX_FORM_BYTES + 1
        if length > MAX_FORM_BYTES:
            self.close_connection = True  # its body stays unread
            return self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "Too large", f"A form is at most {MAX_FORM_BYTES} bytes.")
        body = self.rfile.read(length).decode(errors="replace")  # read before any refusal: the connection stays usable
        if not self._admitted({}, url.path):
            return
        origin = self.headers.get("Origin")
        if origin is not None and urlsplit(origin).netloc != self.headers.get("Host", ""):
            return self._send(HTTPStatus.FORBIDDEN, "Refused", "This form was sent from another site.")
        fields = {name: values[-1] for name, values in parse_qs(body).items()}
        session = self._cookie(SESSION_COOKIE)
        if session is None or not _same(fields.get("csrf", ""), viewer.csrf(session)):
            message = "This form's CSRF token is missing or stale: reload the page and send it again."
            return self._send(HTTPStatus.FORBIDDEN, "Refused", message)
        self._answer(lambda: self._sent(url.path, fields, viewer.csrf(session)))

    def _report(self, path: str) -> None:
        data, content_type = self.server.viewer.report_file(path)
        self._send(HTTPStatus.OK, body=data, content_type=content_type)

    def _sent(self, path: str, fields: dict[str, str], csrf: str) -> None:
        if match := _QUEUE.match(path):
            return self._label(_date(match[1]), _queue(match[2]), fields, csrf)
        if match := _PROMOTE.match(path):
            return self._promote(_date(match[1]), unquote(match[2]))
        raise NotFound(f"nothing to send to at {path}")

    def _answer(self, respond: Callable[[], None]) -> None:
        """Run `respond`; a page or form it could not answer becomes the matching error page."""
        try:
            respond()
        except NotFound as exc:
            self._send(HTTPStatus.NOT_FOUND, "Not found", str(exc))
        except Moved as exc:
            self._send(HTTPStatus.SEE_OTHER, headers={"Location": exc.location})
        except ValueError as exc:
            self._send(HTTPStatus.BAD_REQUEST, "Bad request", str(exc))
        except WarehouseBusy:
            message = "A run is writing to the warehouse right now. Retry in a moment."
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "Warehouse busy, retry", message, {"Retry-After": "5"})
        except NoWarehouse as exc:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "No warehouse yet", str(exc))

    def _label(self, day: date, kind: QueueKind, fields: dict[str, str], csrf: str) -> None:
        """Record the label and go to the queue's next episode; on any refusal, the form comes back as it was filled."""
        viewer = self.server.viewer
        form = LabelForm(**{name: fields.get(name, "") for name in LabelForm.__dataclass_fields__})
        try:
            label = label_from(form, kind.name, day)
        except ValueError as exc:
            return self._send(
                HTTPStatus.BAD_REQUEST, body=viewer.pages.label_again(day, kind, form, csrf, "Label not recorded", str(exc))
            )
        retried = lambda delay: print(f"label: warehouse busy, retrying in {delay:.2f}s", file=sys.stderr, flush=True)  # noqa: E731
        try:
            record_label(existing(viewer.warehouse), label, on_retry=retried)
        except UnknownEpisode as exc:
            return self._send(
                HTTPStatus.NOT_FOUND, body=viewer.pages.label_again(day, kind, form, csrf, "Label not recorded", str(exc))
            )
        except WarehouseBusy:
            message = "A run held the warehouse for the whole wait; your label was not recorded. Send it again in a moment."
            page = viewer.pages.label_again(day, kind, form, csrf, "Warehouse busy, label not recorded", message)
            return self._send(HTTPStatus.SERVICE_UNAVAILABLE, body=page, headers={"Retry-After": "5"})
        headers = {"Location": queue_path(day, kind.name), "Set-Cookie": _reviewer_cookie(label.reviewer)}
        self._send(HTTPStatus.SEE_OTHER, headers=headers)

    def _promote(self, day: date, episode_id: str) -> None:
        viewer = self.server.viewer
        with read_only(viewer.warehouse) as con:
            case = promote_episode(con, day, episode_id, viewer.review.case_set, viewer.pages.secret_patterns)
        if case is None:
            raise NotFound(f"no episode {episode_id!r} on {day}")
        self._send(HTTPStatus.OK, body=viewer.pages.promoted(day, episode_id, case, str(viewer.review.case_set)))

    def _admitted(self, query: dict[str, list[str]], path: str) -> bool:
        """Whether the request may be answered (loopback Host, or the token); if not, the refusal is sent."""
        viewer = self.server.viewer
        if viewer.token is None and not is_loopback(_host_name(self.headers.get("Host", ""))):
            self._send(HTTPStatus.FORBIDDEN, "Not this host", "This viewer answers only on 127.0.0.1 or localhost.")
            return False
        if viewer.token is not None:
            given = query.pop("token", [None])[-1]
            if given is not None and _same(given, viewer.token):
                target = path + (f"?{urlencode(query, doseq=True)}" if query else "")
                self._send(HTTPStatus.SEE_OTHER, "", "", {"Location": target, "Set-Cookie": _cookie(given)})
                return False
            if not self._carries(viewer.token):
                message = "Open this address with ?token=… (the viewer's EVAL_UI_TOKEN) once, or send Authorization: Bearer."
                self._send(HTTPStatus.UNAUTHORIZED, "Token required", message)
                return False
        return True

    def _session(self) -> tuple[str, bool]:
        """The visitor's session id, and whether it is new (then the response sets its cookie)."""
        session = self._cookie(SESSION_COOKIE)
        return (session, False) if session else (secrets.token_urlsafe(32), True)

    def _cookie(self, name: str) -> str | None:
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        return unquote(cookie[name].value) or None if name in cookie else None

    def _carries(self, token: str) -> bool:
        authorization = self.headers.get("Authorization", "")
        if authorization.startswith("Bearer ") and _same(authorization.removeprefix("Bearer "), token):
            return True
        cookie = self._cookie(TOKEN_COOKIE)
        return cookie is not None and _same(cookie, token)

    def _send(
        self,
        status: HTTPStatus,
        title: str = "",
        message: str = "",
        headers: dict[str, str] | None = None,
        body: str | bytes | None = None,
        content_type: str = "text/html; charset=utf-8",
    ) -> None:
        if body is None and status != HTTPStatus.SEE_OTHER:
            body = self.server.viewer.pages.problem(title, message)
        data = body.encode() if isinstance(body, str) else body or b""
        self.send_response(status)
        for name, value in {**_SECURITY_HEADERS, **(headers or {}), "Content-Type": content_type}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        """One line per request on stderr, without the query (it may carry the token)."""
        print(f"{self.command} {urlsplit(self.path).path} {args[1] if len(args) > 1 else ''}", file=sys.stderr, flush=True)


def _host_name(host: str) -> str:
    """The name in a Host header, without its port."""
    if host.startswith("["):
        return host[: host.find("]") + 1]
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


def _same(given: str, token: str) -> bool:
    return hmac.compare_digest(given.encode(), token.encode())


def _cookie(token: str) -> str:
    return f"{TOKEN_COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/"


def _session_cookie(session: str) -> str:
    return f"{SESSION_COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/"


def _reviewer_cookie(reviewer: str) -> str:
    """The reviewer's name, remembered for their next label (quoted: a name may hold any character)."""
    return f"{REVIEWER_COOKIE}={quote(reviewer, safe='')}; SameSite=Strict; Path=/; Max-Age=31536000"


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], viewer: Viewer):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.viewer = viewer
        super().__init__(address, _Handler)
