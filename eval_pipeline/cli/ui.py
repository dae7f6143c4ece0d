"""`eval-pipeline ui`: Dagster's webserver and daemon on this project, with the same settings as the CLI.

Beside them it serves the reports directory at `EVAL_REPORTS_URL`'s default address, so that the report
links in the Dagster UI open (a browser will not follow a `file://` link from an http page); when the
variable names another server (the viewer, a static host), that one serves them.
"""

from __future__ import annotations

import argparse
import functools
import os
import signal
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from eval_pipeline.cli.command import Command, UsageError

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3000)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.settings import PROJECT_ROOT, REPORTS_URL_DEFAULT, ensure_dagster_home

    ensure_dagster_home(settings.dagster_home)
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "--host", args.host, "--port", str(args.port)]
    print(f"DAGSTER_HOME={settings.dagster_home}\n{' '.join(command)}", flush=True)
    reports = serve_reports(settings.reports_dir, REPORTS_URL_DEFAULT) if settings.reports_url == REPORTS_URL_DEFAULT else None
    signal.signal(signal.SIGTERM, _interrupted)  # a supervisor's stop ends both, even where SIGTERM was inherited as ignored
    try:
        return subprocess.run(command, env={**os.environ, **settings.as_environment()}).returncode
    except KeyboardInterrupt:
        return 0
    finally:
        if reports:
            reports.shutdown()


def serve_reports(directory: Path, url: str) -> ThreadingHTTPServer:
    """Serve `directory`'s files, read-only, at `url` (an http://host:port) from a daemon thread."""
    address = urlsplit(url)
    directory.mkdir(parents=True, exist_ok=True)
    handler = functools.partial(_QuietHandler, directory=str(directory))
    try:
        server = ThreadingHTTPServer((address.hostname or "127.0.0.1", address.port or 80), handler)
    except OSError as exc:
        raise UsageError(f"cannot serve the reports at {url}: {exc}; set EVAL_REPORTS_URL to where they are served") from None
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    print(f"reports at {url}/", flush=True)
    return server


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        """Dagster's log stays readable: one line per report opened is noise."""


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


COMMAND = Command(
    "ui",
    "start the Dagster UI and daemon with the project's DAGSTER_HOME, and serve the reports its links open",
    _arguments,
    _run,
    ("ui", "ui --host 0.0.0.0 --port 3000"),
)
