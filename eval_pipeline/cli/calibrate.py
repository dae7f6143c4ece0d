"""`eval-pipeline calibrate`: plaited's sample of failures for a person to check the grader, from a results file
or the runs stored for a day; with `--grader`, a second grader's verdict beside the recorded one."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import Command, UsageError, add_results, emit, grader_command, results

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_results(parser)
    parser.add_argument("--sample", type=int, help="failures to draw (default: [cases] calibration_sample, 10)")
    parser.add_argument("--grader", help='a second grader to re-grade the sample with, e.g. "./loose-grader.py"')


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import tempfile
    from pathlib import Path

    from eval_pipeline.capture.grader import regrade
    from eval_pipeline.config import load_config
    from eval_pipeline.reports.plaited_views import SecondOpinion, calibration_review, sample_failures

    if args.sample is not None and args.sample < 0:
        raise UsageError(f"--sample must be 0 or more, not {args.sample}")
    config = load_config(settings.config_path)
    runs, source = results(args, settings)
    sample, failed = sample_failures(runs, config.cases.calibration_sample if args.sample is None else args.sample, source)
    second = None
    if args.grader:
        with tempfile.TemporaryDirectory(prefix="calibrate-") as scratch:
            verdicts = regrade(grader_command(args.grader), sample, config.capture.grader_timeout_seconds, Path(scratch))
        second = SecondOpinion(args.grader, verdicts)
    return emit(calibration_review(source, sample, failed, second, tuple(config.policies.secret_patterns)), args.output)


COMMAND = Command(
    "calibrate",
    "sample failed runs for a person to check the grader (plaited's calibration.md), optionally re-graded",
    _arguments,
    _run,
    (
        "calibrate results.jsonl --sample 10 -o calibration.md",
        "calibrate results.jsonl --grader ./loose-grader.py --sample 10 -o comparison.md",
        "calibrate --date 2026-11-02 --agent support-bot",
    ),
)
