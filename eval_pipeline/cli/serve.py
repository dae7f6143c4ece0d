"""`eval-pipeline serve`: the episode viewer, web pages over the warehouse (days, findings, episodes beside baselines),
and the reports directory's files under /reports/."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import Command, UsageError, port_argument, serve_until_stopped

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    from eval_pipeline.settings import VIEWER_PORT_DEFAULT

    parser.add_argument("--host", default="127.0.0.1", help="listen here (beyond loopback only with EVAL_UI_TOKEN set)")
    parser.add_argument("--port", type=port_argument, default=VIEWER_PORT_DEFAULT)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.viewer.pages import Pages, ReviewSettings
    from eval_pipeline.viewer.server import Viewer, ViewerServer, is_loopback

    token = settings.viewer_token.get_secret_value() if settings.viewer_token else None
    if token is None and not is_loopback(args.host):
        raise UsageError(f"refusing to serve on {args.host} without a token: set EVAL_UI_TOKEN (then every request needs it)")
    config = load_config(settings.config_path)
    review = ReviewSettings(
        calibration_size=config.cases.calibration_sample,
        passes_size=config.review.passes_sample,
        case_set=beside_config(settings.config_path, config.review.case_set),
    )
    pages = Pages(tuple(config.policies.secret_patterns), settings.viewer_base_url, config.statistics)
    viewer = Viewer(settings.warehouse(), settings.reports_dir, pages, token, review)
    try:
        server = ViewerServer((args.host, args.port), viewer)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    where = f"http://{args.host}:{server.server_address[1]}/"
    return serve_until_stopped(server, f"viewer on {where} over {viewer.warehouse.shown}{' (token required)' if token else ''}")


COMMAND = Command(
    "serve",
    "the episode viewer: days, findings, each episode beside its baseline, and review queues to label them",
    _arguments,
    _run,
    ("serve", "serve --port 8765", "serve --host 0.0.0.0   # with EVAL_UI_TOKEN set: every request then needs it"),
)
