"""The viewer's HTTP server: the standard library's `ThreadingHTTPServer`, one thread and one read-only warehouse
connection per request.

Pages are built by blocking code (DuckDB, pandas, Jinja2), so a thread per request serves them without an event
loop handing each to an executor, as aiohttp would need; nothing is held between requests.

Safe by default: it listens on loopback; anywhere else only with a token (EVAL_UI_TOKEN), which every request must
then carry (`Authorization: Bearer`, or `?token=` once, kept in an HttpOnly cookie); without a token it answers only
requests addressed to a loopback name, so a web page elsewhere cannot reach it by DNS rebinding. The browser never
sends SQL: each route's reads are fixed queries with its path and filters as parameters. Under /reports/ it serves the
reports directory's files, read-only and under the same rules, so that the links in the Dagster UI and in alerts open.
"""

from __future__ import annotations

import hmac
import ipaddress
import re
import socket
import sys
from dataclasses import dataclass
from datetime import date
from http import HTTPStatus
from http.cookies import SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import get_args
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from eval_pipeline.viewer.links import REPORTS_PREFIX
from eval_pipeline.viewer.pages import Pages
from eval_pipeline.warehouse.connection import WarehouseBusy
from eval_pipeline.warehouse.viewer import Filters, NoWarehouse, Verdict, read_only

TOKEN_COOKIE = "eval_ui_token"
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


class NotFound(Exception):
    """The path names no page, or a day, episode or report file that does not exist."""


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
    """What every request needs: where the warehouse and the reports are, how to render, and the token (None: loopback
    only)."""

    duckdb_path: Path
    reports_dir: Path
    pages: Pages
    token: str | None

    def page(self, path: str, query: dict[str, list[str]]) -> str:
        """The page at `path`, read on a connection closed before this returns."""
        with read_only(self.duckdb_path) as con:
            if path == "/":
                return self.pages.days(con)
            if match := _DAY.match(path):
                return self.pages.day(con, _date(match[1]), _filters(query))
            if match := _EPISODE.match(path):
                page = self.pages.episode(con, _date(match[1]), unquote(match[2]))
                if page is None:
                    raise NotFound(f"no episode {unquote(match[2])!r} on {match[1]}")
                return page
        raise NotFound(f"no page at {path}")

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


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise NotFound(f"not a day: {text}") from None


def _filters(query: dict[str, list[str]]) -> Filters:
    chosen = {name: values[-1] for name, values in query.items() if values and values[-1]}
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


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        viewer = self.server.viewer
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if viewer.token is None and not is_loopback(_host_name(self.headers.get("Host", ""))):
            return self._send(HTTPStatus.FORBIDDEN, "Not this host", "This viewer answers only on 127.0.0.1 or localhost.")
        if viewer.token is not None:
            given = query.pop("token", [None])[-1]
            if given is not None and _same(given, viewer.token):
                target = url.path + (f"?{urlencode(query, doseq=True)}" if query else "")
                return self._send(HTTPStatus.SEE_OTHER, "", "", {"Location": target, "Set-Cookie": _cookie(given)})
            if not self._carries(viewer.token):
                message = "Open this address with ?token=… (the viewer's EVAL_UI_TOKEN) once, or send Authorization: Bearer."
                return self._send(HTTPStatus.UNAUTHORIZED, "Token required", message)
        try:
            if url.path.startswith(REPORTS_PREFIX):
                data, content_type = viewer.report_file(url.path)
                return self._send(HTTPStatus.OK, body=data, content_type=content_type)
            self._send(HTTPStatus.OK, body=viewer.page(url.path, query))
        except NotFound as exc:
            self._send(HTTPStatus.NOT_FOUND, "Not found", str(exc))
        except ValueError as exc:
            self._send(HTTPStatus.BAD_REQUEST, "Bad request", str(exc))
        except WarehouseBusy:
            message = "A run is writing to the warehouse right now. Retry in a moment."
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "Warehouse busy, retry", message, {"Retry-After": "5"})
        except NoWarehouse as exc:
            self._send(HTTPStatus.SERVICE_UNAVAILABLE, "No warehouse yet", str(exc))

    def _carries(self, token: str) -> bool:
        authorization = self.headers.get("Authorization", "")
        if authorization.startswith("Bearer ") and _same(authorization.removeprefix("Bearer "), token):
            return True
        cookie = SimpleCookie(self.headers.get("Cookie", ""))
        return TOKEN_COOKIE in cookie and _same(cookie[TOKEN_COOKIE].value, token)

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


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, address: tuple[str, int], viewer: Viewer):
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        self.viewer = viewer
        super().__init__(address, _Handler)
