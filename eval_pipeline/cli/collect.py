"""`eval-pipeline collect`: an OTLP/HTTP endpoint that stores agents' traces in the episode source."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import Command, UsageError, port_argument, serve_until_stopped

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_argument, default=4318)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.episodes.collector import TraceSink, serve

    if settings.source_is_store:
        raise UsageError("collect writes into a file source; EVAL_EPISODE_SOURCE is an episode store URL")
    directory = Path(settings.episode_source) / "otlp"
    try:
        server = serve(TraceSink(directory), args.host, args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    host, port = str(server.server_address[0]), server.server_address[1]
    return serve_until_stopped(server, f"collecting OTLP/HTTP traces on http://{host}:{port}/v1/traces into {directory}")


COMMAND = Command(
    "collect",
    "receive OpenTelemetry traces (OTLP/HTTP) into the episode source",
    _arguments,
    _run,
    (
        "collect                      # then: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 in the agent's environment",
        "collect --host 0.0.0.0 --port 4318",
    ),
)
