"""`eval-pipeline validate-refs`: does each case's reference answer pass the configured grader?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline.cli.command import EXIT_FINDINGS, EXIT_OK, Command, UsageError, print_table

if TYPE_CHECKING:
    from eval_pipeline.settings import Settings


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--case-set", type=Path, help="a case set (JSONL); default: [capture] case_set of the config")


def _run(args: argparse.Namespace, settings: Settings) -> int:
    import tempfile

    import pandas as pd

    from eval_pipeline.capture.cases import CaseSetError, load_case_set
    from eval_pipeline.capture.command import anchored
    from eval_pipeline.capture.grader import reference_failure, reference_verdicts
    from eval_pipeline.config import beside_config, load_config

    config = load_config(settings.config_path)
    capture = config.capture
    if not capture.grader:
        raise UsageError("no grader configured: set [capture] grader in the config")
    path = args.case_set or (beside_config(settings.config_path, capture.case_set) if capture.case_set else None)
    if path is None:
        raise UsageError("no case set: give --case-set or set [capture] case_set in the config")
    try:
        cases = load_case_set(path)
    except CaseSetError as exc:
        raise UsageError(str(exc)) from None
    with tempfile.TemporaryDirectory(prefix="validate-refs-") as scratch:
        grader = anchored(capture.grader, lambda part: beside_config(settings.config_path, part))
        verdicts = reference_verdicts(grader, cases, capture.grader_timeout_seconds, Path(scratch))
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
    ("validate-refs", "validate-refs --case-set cases.jsonl"),
)
