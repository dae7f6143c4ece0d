"""`eval-pipeline`: the command line of DESIGN §2, for people, cron and CI.

Every command is one module here declaring one `Command`, listed once in `COMMANDS`; the parser,
its help and examples are built from that list. Commands call the core or launch the graph.

Exit codes: 0 done, every episode of the selection that has a verdict passed, and no finding at or
above --fail-on; 1 a failed episode or such a finding; 2 usage error; 3 infrastructure error
(source unreachable, warehouse busy, unreadable file). Errors print one line, never a traceback.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from eval_pipeline.cli import (
    balance,
    baseline,
    calibrate,
    collect,
    compare,
    demo,
    export,
    judge,
    promote,
    query,
    report,
    reward,
    reward_bench,
    run,
    schemas,
    serve,
    serve_rewards,
    status,
    summarize,
    ui,
    validate_refs,
)
from eval_pipeline.cli.command import EXIT_FINDINGS, EXIT_INFRA, EXIT_OK, EXIT_USAGE, Command, obey_interrupts
from eval_pipeline.collector import collect_less_often

COMMANDS: tuple[Command, ...] = tuple(
    module.COMMAND
    for module in (
        demo,
        run,
        status,
        report,
        query,
        compare,
        baseline,
        judge,
        export,
        schemas,
        validate_refs,
        summarize,
        calibrate,
        balance,
        promote,
        collect,
        reward,
        serve_rewards,
        reward_bench,
        serve,
        ui,
    )
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eval-pipeline",
        description="Nightly evaluation of recorded AI-agent runs.",
        epilog=f"exit codes: {EXIT_OK} done, {EXIT_FINDINGS} a failed episode or findings at or above --fail-on (both within "
        f"--agent), {EXIT_USAGE} usage or config error, "
        f"{EXIT_INFRA} infrastructure error (store unreachable, warehouse busy; live replays or judge verdicts the "
        "gateway failed after its retries)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        sub = subparsers.add_parser(
            command.name,
            help=command.help,
            description=command.description,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            epilog="examples:\n" + "\n".join(f"  eval-pipeline {example}" for example in command.examples),
        )
        command.arguments(sub)
        sub.set_defaults(run=command.run)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("eval_pipeline")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Parse, build the settings once, run the command; every error becomes one line and its exit code here."""
    args = build_parser().parse_args(argv)  # exits 2 on a usage error
    obey_interrupts()
    from eval_pipeline.errors import InfrastructureError, UserInputError
    from eval_pipeline.settings import Settings

    try:
        return args.run(args, Settings.from_environment())  # settings are read and checked before anything runs
    except UserInputError as exc:
        print(f"eval-pipeline: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (InfrastructureError, OSError) as exc:
        print(f"eval-pipeline: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt as exc:  # Ctrl-C: one line, the shell's code for SIGINT
        print(f"eval-pipeline: {str(exc) or 'interrupted'}", file=sys.stderr)
        return 130
    except Exception as exc:  # a bug: still one line for cron; EVAL_DEBUG=1 shows where
        if os.environ.get("EVAL_DEBUG"):
            raise
        print(f"eval-pipeline: internal error: {type(exc).__name__}: {exc} (EVAL_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_INFRA


def entry_point() -> None:
    """The installed `eval-pipeline` command.

    Everything is written and closed when `main` returns, so the process ends at once instead
    of spending about a second tearing down Dagster's, pandas' and DuckDB's objects.
    """
    collect_less_often()
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)
