"""`eval-pipeline ui`: Dagster's webserver and daemon on this project, and beside them the episode viewer
(`eval-pipeline serve`), with the same settings as the CLI.

The viewer listens where EVAL_VIEWER_BASE_URL says, so every link derived from that setting opens: the report files
the Dagster UI links to (a browser will not follow a `file://` link from an http page), the days and episodes that
alerts and reports link to. When the setting names another machine, that one serves them and only Dagster starts.
Both run as child processes and stop together: when either ends, on Ctrl-C, or on a SIGTERM, which is forwarded.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from eval_pipeline.cli.command import Command, UsageError, port_argument

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings

STOP_SECONDS = 30  # a child still running this long after its SIGTERM is killed


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="Dagster's webserver listens here (the viewer: its base URL)")
    parser.add_argument("--port", type=port_argument, default=3000)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.settings import PROJECT_ROOT, ensure_dagster_home

    ensure_dagster_home(settings.dagster_home)
    environment = {**os.environ, **settings.as_environment()}
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "--host", args.host, "--port", str(args.port)]
    signal.signal(signal.SIGTERM, _interrupted)  # a supervisor's stop ends both, even where SIGTERM was inherited as ignored
    children: list[subprocess.Popen] = []
    groups: list[int] = []  # process groups to empty when stopping
    try:
        if viewer := _viewer_command(settings.viewer_base_url):
            children.append(_start_viewer(viewer, environment, settings.viewer_base_url))
        else:
            print(f"viewer: {settings.viewer_base_url} is not served here; run `eval-pipeline serve` where it is", flush=True)
        print(f"DAGSTER_HOME={settings.dagster_home}\n{' '.join(command)}", flush=True)
        children.append(subprocess.Popen(command, env=environment, start_new_session=True))  # a group of its own: see `_stop`
        groups.append(children[-1].pid)
        return _until_one_ends(children)
    except KeyboardInterrupt:
        return 0
    finally:
        _stop(children, groups)


def _viewer_command(base_url: str) -> list[str] | None:
    """`eval-pipeline serve` on the base URL's loopback address and port; None when the URL names another host."""
    from eval_pipeline.viewer.server import is_loopback

    address = urlsplit(base_url)
    if address.scheme != "http" or not address.hostname or not is_loopback(address.hostname):
        return None
    port = address.port or 80
    return [sys.executable, "-m", "eval_pipeline.cli", "serve", "--host", address.hostname, "--port", str(port)]


def _start_viewer(command: list[str], environment: dict[str, str], base_url: str) -> subprocess.Popen:
    """The viewer's process once it listens; its own error (on stderr) and a UsageError when it cannot."""
    process = subprocess.Popen(command, env=environment, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    first = process.stdout.readline()  # serve prints one line, once it listens, and nothing more on stdout
    if not first.startswith("viewer on "):
        process.wait()
        raise UsageError(f"the viewer could not start at {base_url} (see above); set EVAL_VIEWER_BASE_URL to a free port")
    print(first, end="", flush=True)
    return process


def _until_one_ends(children: list[subprocess.Popen]) -> int:
    while True:
        for child in children:
            if (code := child.poll()) is not None:
                return code
        time.sleep(0.5)


def _stop(children: list[subprocess.Popen], groups: list[int]) -> None:
    """SIGTERM to each child still running, then wait for all and for every process in `groups`; what outlasts
    STOP_SECONDS is killed. `dagster dev` stops its webserver and daemon but returns before its code servers end, so
    it leads a process group of its own, emptied here."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stop short
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_SECONDS
    for child in children:
        try:
            child.wait(max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
    for group in groups:
        _empty(group, deadline)


def _empty(group: int, deadline: float) -> None:
    """SIGTERM to the processes left in `group`, then SIGKILL to those still there at `deadline`."""
    for stop in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, stop)
            while time.monotonic() < deadline:
                time.sleep(0.1)
                os.killpg(group, 0)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + STOP_SECONDS


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


COMMAND = Command(
    "ui",
    "start the Dagster UI and daemon with the project's DAGSTER_HOME, and the episode viewer its links open",
    _arguments,
    _run,
    ("ui", "ui --host 0.0.0.0 --port 3000"),
)
