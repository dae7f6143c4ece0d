"""`eval-pipeline validate-refs`: does each case's reference answer pass the grader? With `-o`, plaited's validation.jsonl."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import EXIT_FINDINGS, EXIT_OK, Command, UsageError, grader_command, print_table

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case-set", type=Path, help="a case set (JSONL); default: [capture] case_set of the config")
    parser.add_argument("--grader", help='the grader, e.g. "./grader.py"; default: [capture] grader of the config')
    parser.add_argument("-o", "--output", type=Path, help="also write plaited's validation.jsonl, one line per reference")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import tempfile
    from functools import partial

    import pandas as pd

    from eval_pipeline.capture.cases import CaseSetError, load_case_set
    from eval_pipeline.capture.command import anchored
    from eval_pipeline.capture.grader import reference_failure, reference_verdicts, validation_lines
    from eval_pipeline.config import beside_config, load_config

    config = load_config(settings.config_path)
    capture = config.capture
    grader = (
        grader_command(args.grader) if args.grader else anchored(capture.grader, partial(beside_config, settings.config_path))
    )
    if not grader:
        raise UsageError("no grader: give --grader or set [capture] grader in the config")
    path = args.case_set or (beside_config(settings.config_path, capture.case_set) if capture.case_set else None)
    if path is None:
        raise UsageError("no case set: give --case-set or set [capture] case_set in the config")
    try:
        cases = load_case_set(path)
    except CaseSetError as exc:
        raise UsageError(str(exc)) from None
    with tempfile.TemporaryDirectory(prefix="validate-refs-") as scratch:
        verdicts = reference_verdicts(grader, cases, capture.grader_timeout_seconds, Path(scratch))
    if args.output:
        args.output.write_text("".join(jsonout.dumps(line) + "\n" for line in validation_lines(cases, verdicts)))
        print(f"wrote {args.output}")
    failures = {case_id: reference_failure(verdict) for case_id, verdict in verdicts.items()}
    rows = [
        {"case": case_id, "verdict": "pass" if failures[case_id] is None else ("error" if "error" in v else "fail"),
         "score": v.get("score"), "reasoning": failures[case_id] or v.get("reasoning") or ""}
        for case_id, v in verdicts.items()
    ]  # fmt: skip
    print_table(pd.DataFrame(rows, columns=["case", "verdict", "score", "reasoning"]), title="References")
    failed = sum(reason is not None for reason in failures.values())
    print(
        f"{len(verdicts) - failed} of {len(verdicts)} references pass their grader; {len(cases) - len(verdicts)} cases have none."
    )
    return EXIT_FINDINGS if failed else EXIT_OK


COMMAND = Command(
    "validate-refs",
    "check that each case's reference passes the configured grader",
    _arguments,
    _run,
    ("validate-refs", "validate-refs --case-set prompts.jsonl --grader ./grader.py -o validation.jsonl"),
)
