"""`eval-pipeline judge`: a support team's examples file judged on relevance and tone by the configured judge."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_INFRA, EXIT_OK, Command, UsageError

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("examples", type=Path, help='JSON list of {"id", "ticket", "response"}')
    parser.add_argument("--output", type=Path, required=True)
    parser.add_argument("--concurrency", type=int, default=16)


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.config import load_config
    from eval_pipeline.llm.gateway import GatewayError
    from eval_pipeline.llm.judge import judge_gateway
    from eval_pipeline.llm.support_bot import ExamplesError, judge_examples

    if not (settings.llm_base_url and settings.judge_model):
        raise UsageError("judge needs OPENAI_BASE_URL and EVAL_JUDGE_MODEL (any OpenAI-compatible server)")
    config = load_config(settings.config_path)
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    try:
        gateway = judge_gateway(settings.llm_base_url, key, settings.judge_model, config.judge, config.prices, args.concurrency)
    except GatewayError as exc:
        raise UsageError(str(exc)) from None
    try:
        outcome = judge_examples(gateway, args.examples)
    except ExamplesError as exc:
        raise UsageError(str(exc)) from None
    args.output.write_text(jsonout.dumps(outcome, indent=2) + "\n")
    usage = gateway.usage
    print(
        f"judged {len(outcome['results'])} examples on relevance and tone ({usage.calls} calls, {usage.reasks} re-asks, "
        f"{len(usage.failures)} failed); skipped {len(outcome['skipped'])} -> {args.output}"
    )
    all_failed = outcome["results"] and len(usage.failures) == 2 * len(outcome["results"])
    if all_failed:
        print(f"eval-pipeline: error: every judge call failed, e.g. {usage.failures[0]}", file=sys.stderr)
        return EXIT_INFRA
    return EXIT_OK


COMMAND = Command(
    "judge",
    "judge support-bot examples on the relevance and tone rubrics",
    _arguments,
    _run,
    ("judge examples.json --output results.json",),
)
