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
    parser.add_argument("--concurrency", type=int, help="calls at once (default: [gateway] concurrency, 16)")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.config import load_config
    from eval_pipeline.llm.gateway import GatewayError
    from eval_pipeline.llm.judge import configured_rubrics, judge_gateway, judge_off_because
    from eval_pipeline.llm.support_bot import RUBRICS, ExamplesError, judge_examples

    if args.concurrency is not None and args.concurrency < 1:
        raise UsageError(f"--concurrency must be at least 1, not {args.concurrency}")
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else ""
    off = judge_off_because(settings.llm_base_url, settings.judge_model, key)
    if off or not settings.judge_model:
        raise UsageError(
            f"{off}: judge needs EVAL_JUDGE_MODEL, and OPENAI_BASE_URL (any OpenAI-compatible server) or "
            "OPENAI_API_KEY alone (OpenAI's own endpoint)"
        )
    if args.output.is_dir():
        raise UsageError(f"--output {args.output} is a directory: give the file to write, e.g. {args.output / 'results.json'}")
    args.output.parent.mkdir(parents=True, exist_ok=True)  # before the calls, which cost: their verdicts must land
    config = load_config(settings.config_path)
    rubrics = configured_rubrics(list(RUBRICS), config.judge.custom)  # [judge.custom.relevance] rewords one
    try:
        endpoint = config.gateway.model_copy(update={"concurrency": args.concurrency or config.gateway.concurrency})
        gateway = judge_gateway(settings.llm_base_url, key, settings.judge_model, config.judge, config.prices, endpoint)
    except GatewayError as exc:
        raise UsageError(str(exc)) from None
    try:
        outcome = judge_examples(gateway, args.examples, rubrics)
    except ExamplesError as exc:
        raise UsageError(str(exc)) from None
    args.output.write_text(jsonout.dumps(outcome.document(), indented=True) + "\n")
    usage, skipped = gateway.usage, outcome.skipped
    print(
        f"judged {len(outcome.results)} examples on {' and '.join(r.name for r in rubrics)} ({usage.calls} calls, "
        f"{usage.reasks} re-asks, {len(usage.failures)} failed); skipped {len(skipped)} -> {args.output}"
    )
    for entry in skipped:
        print(f"  skipped #{entry['index']}{' ' + entry['id'] if 'id' in entry else ''}: {entry['reason']}")
    if usage.failures and not outcome.results:
        print(f"eval-pipeline: error: every judge call failed, e.g. {usage.failures[0]}", file=sys.stderr)
        return EXIT_INFRA
    if outcome.judge_failed:  # as `run` exits on judge verdicts the gateway failed: no verdict is no clean run
        print(
            f"eval-pipeline: error: the judge failed on {outcome.judge_failed} of "
            f"{len(outcome.results) + outcome.judge_failed} examples after its retries (skipped above, not judged)",
            file=sys.stderr,
        )
        return EXIT_INFRA
    return EXIT_OK


COMMAND = Command(
    "judge",
    "judge support-bot examples on the relevance and tone rubrics",
    _arguments,
    _run,
    ("judge examples.json --output results.json",),
)
