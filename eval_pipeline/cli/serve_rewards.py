"""`eval-pipeline serve-rewards`: the configured rewards over HTTP, for training loops."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_OK, Command, UsageError, port_argument

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=port_argument, default=8000)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from aiohttp import web

    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.rewards.server import reward_app
    from eval_pipeline.scoring.cases import CasesError, load_cases

    config = load_config(settings.config_path)
    try:
        cases = load_cases(beside_config(settings.config_path, config.cases.path) if config.cases.path else None)
    except CasesError as exc:
        raise UsageError(str(exc)) from None
    listening = (
        f"serving rewards on http://{args.host}:{args.port} (POST /reward, GET /health); "
        f"default reward {config.rewards.default}, defined: {', '.join(config.rewards.define)}"
    )
    try:  # aiohttp calls `print` once the socket is bound, so the line is only said when true
        web.run_app(
            reward_app(config, cases),
            host=args.host,
            port=args.port,
            access_log=None,
            print=lambda _: print(listening, flush=True),
        )
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    return EXIT_OK


COMMAND = Command(
    "serve-rewards",
    "HTTP reward server for training loops (POST /reward)",
    _arguments,
    _run,
    (
        "serve-rewards --port 8000",
        """serve-rewards &  curl -s localhost:8000/reward -d '{"pairs": [{"prompt": "2+2?", "completion": "4"}]}'""",
    ),
)
