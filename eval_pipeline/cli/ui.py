"""`eval-pipeline ui`: Dagster's webserver and daemon on this project, with the same settings as the CLI."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3000)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.settings import PROJECT_ROOT, ensure_dagster_home

    ensure_dagster_home(settings.dagster_home)
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "--host", args.host, "--port", str(args.port)]
    print(f"DAGSTER_HOME={settings.dagster_home}\n{' '.join(command)}", flush=True)
    os.execve(command[0], command, {**os.environ, **settings.as_environment()})  # the webserver resolves the same paths
    return EXIT_OK  # not reached


COMMAND = Command(
    "ui",
    "start the Dagster UI and daemon with the project's DAGSTER_HOME",
    _arguments,
    _run,
    ("ui", "ui --host 0.0.0.0 --port 3000"),
)
