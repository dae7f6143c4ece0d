"""`eval-pipeline`: the command line of DESIGN §2, for people, cron and CI.

Exit codes: 0 done, every episode of the selection that has a verdict passed, and no finding at or
above --fail-on; 1 a failed episode or such a finding; 2 usage error; 3 infrastructure error
(source unreachable, warehouse busy, unreadable file).
Errors print one line, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
from contextlib import contextmanager
from datetime import date
from pathlib import Path

from eval_pipeline import jsonout
from eval_pipeline.errors import UserInputError

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INFRA = 0, 1, 2, 3


class UsageError(UserInputError):
    """The command line asks for something that cannot be done."""


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="eval-pipeline",
        description="Nightly evaluation of recorded AI-agent runs.",
        epilog=f"exit codes: {EXIT_OK} done, {EXIT_FINDINGS} a failed episode or findings at or above --fail-on (both within "
        f"--agent), {EXIT_USAGE} usage or config error, "
        f"{EXIT_INFRA} infrastructure error (store unreachable, warehouse busy)",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    commands.add_parser("demo", help="write the sample episodes if missing and evaluate every sample day")

    run = commands.add_parser("run", help="evaluate one day or an inclusive range of days")
    run.add_argument("--date", type=_date, help="one partition (YYYY-MM-DD)")
    run.add_argument("--start", type=_date, help="first day of a range")
    run.add_argument("--end", type=_date, help="last day of a range (inclusive)")
    run.add_argument("--agent", help="evaluate (and replace the rows of) this agent only")
    run.add_argument(
        "--fail-on",
        choices=["critical", "warning", "never"],
        default="critical",
        help="exit 1 when an episode failed or findings at or above this severity exist, only --agent's when given "
        "(default: critical; never: always 0)",
    )
    run.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML: one test case per episode")
    run.add_argument("--recapture", action="store_true", help="run the case-set agent again even where a capture is stored")
    run.add_argument("--trials", type=int, help="trials per case for the case-set agent (over [capture] trials)")

    commands.add_parser("status", help="source health, partitions in the warehouse, latest run")

    report = commands.add_parser("report", help="print or write the day's report")
    report.add_argument("--date", type=_date, required=True)
    report.add_argument("--format", choices=["md", "json", "html"], default="md")
    report.add_argument("--output", type=Path, help="write to this file instead of printing")
    report.add_argument("--open", action="store_true", help="print the HTML report's path and open it where a browser can")

    query = commands.add_parser("query", help="read-only SQL over the warehouse")
    query.add_argument("sql")
    query.add_argument("--format", choices=["table", "csv", "json"], default="table")

    compare = commands.add_parser(
        "compare",
        help="head to head: two runs of the same tasks, per-task winners and paired CIs",
        description="Selectors: comma-separated date=D or date=D1..D2, agent=, model=, label= (metadata.label). "
        "Example: eval-pipeline compare --a date=2026-11-01,agent=support-bot --b date=2026-11-02,agent=support-bot",
    )
    compare.add_argument("--a", required=True, help="the first side, e.g. date=2026-11-01,model=gpt-4o")
    compare.add_argument("--b", required=True, help="the second side, e.g. date=2026-11-01,model=gpt-4.1")
    compare.add_argument("--format", choices=["md", "json"], default="md")
    compare.add_argument("--output", type=Path, help="write to this file instead of printing")

    baseline = commands.add_parser("baseline", help="promote, pin or list the baselines runs are compared with")
    actions = baseline.add_subparsers(dest="action", required=True)
    promote = actions.add_parser("promote", help="make a day's successful runs of an agent its baselines from that day on")
    promote.add_argument("--agent", required=True)
    promote.add_argument("--date", type=_date, required=True)
    pin = actions.add_parser("pin", help="pin one episode as its task's baseline")
    pin.add_argument("episode_id")
    pin.add_argument("--from", dest="valid_from", type=_date, help="first day it applies to (default: its own day)")
    listing = actions.add_parser("list", help="the baseline of every task on a day (default today)")
    listing.add_argument("--agent")
    listing.add_argument("--date", type=_date)

    judge = commands.add_parser("judge", help="judge support-bot examples on the relevance and tone rubrics")
    judge.add_argument("examples", type=Path, help='JSON list of {"id", "ticket", "response"}')
    judge.add_argument("--output", type=Path, required=True)
    judge.add_argument("--concurrency", type=int, default=16)

    export = commands.add_parser("export", help="write a day's episodes in another tool's format (with our scores)")
    export.add_argument("--format", choices=["plaited"], required=True)
    export.add_argument("--date", type=_date, required=True)
    export.add_argument("--agent", help="only this agent's episodes")
    export.add_argument("--output", type=Path, help="write to this file instead of printing")

    schemas = commands.add_parser("schemas", help="JSON Schemas of the episode, case and input formats we read")
    schemas.add_argument("name", nargs="?", help="one schema; without it, the list")
    schemas.add_argument("--json", action="store_true", help="the list as JSON: every schema by name")

    refs = commands.add_parser("validate-refs", help="check that each case's reference passes the configured grader")
    refs.add_argument("--case-set", type=Path, help="a case set (JSONL); default: [capture] case_set of the config")

    collect = commands.add_parser("collect", help="receive OpenTelemetry traces (OTLP/HTTP) into the episode source")
    collect.add_argument("--host", default="127.0.0.1")
    collect.add_argument("--port", type=int, default=4318)

    reward = commands.add_parser("reward", help="compute the configured rewards of a day's scored episodes (writes `rewards`)")
    reward.add_argument("--date", type=_date, help="one partition (YYYY-MM-DD)")
    reward.add_argument("--start", type=_date, help="first day of a range")
    reward.add_argument("--end", type=_date, help="last day of a range (inclusive)")
    reward.add_argument("--name", action="append", help="only this reward (repeatable); default: every configured reward")

    serve_rewards = commands.add_parser("serve-rewards", help="HTTP reward server for training loops (POST /reward)")
    serve_rewards.add_argument("--host", default="127.0.0.1")
    serve_rewards.add_argument("--port", type=int, default=8000)

    reward_bench = commands.add_parser(
        "reward-bench", help="how well each configured reward ranks labelled runs (PPE metrics), per category"
    )
    reward_bench.add_argument("--date", type=_date, help="one partition (YYYY-MM-DD)")
    reward_bench.add_argument("--start", type=_date, help="first day of a range")
    reward_bench.add_argument("--end", type=_date, help="last day of a range (inclusive)")
    reward_bench.add_argument("--k", type=int, help="best-of-K over K runs of a task (default: all of its runs that day)")
    reward_bench.add_argument("--labels", type=Path, help="human labels, JSONL of {episode_id, label} (over [rewards] labels)")
    reward_bench.add_argument("--format", choices=["table", "json"], default="table")

    ui = commands.add_parser("ui", help="start the Dagster UI and daemon with the project's DAGSTER_HOME")
    ui.add_argument("--host", default="127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    for name, command in commands.choices.items():
        command.formatter_class = argparse.RawDescriptionHelpFormatter
        command.epilog = "examples:\n" + "\n".join(f"  eval-pipeline {example}" for example in EXAMPLES[name])
    return parser


EXAMPLES = {
    "demo": ["demo"],
    "run": [
        "run --date 2026-11-21",
        "run --start 2026-10-01 --end 2026-10-31          # a backfill, oldest day first",
        "run --date 2026-11-21 --agent support-bot --fail-on warning --junit results.xml",
    ],
    "status": ["status"],
    "report": [
        "report --date 2026-11-02",
        "report --date 2026-11-02 --format json --output report.json",
        "report --date 2026-11-02 --open",
    ],
    "query": [
        'query "SELECT * FROM agent_daily ORDER BY partition_date DESC LIMIT 20"',
        'query "SELECT dimension, count(*) FROM latest_findings GROUP BY ALL" --format csv',
    ],
    "compare": [
        "compare --a date=2026-11-01,agent=support-bot --b date=2026-11-02,agent=support-bot",
        "compare --a label=prompt-v1 --b label=prompt-v2 --format json --output h2h.json",
    ],
    "baseline": [
        "baseline promote --agent support-bot --date 2026-11-03",
        "baseline pin EPISODE_ID",
        "baseline list --agent support-bot",
    ],
    "judge": ["judge examples.json --output results.json"],
    "export": ["export --format plaited --date 2026-11-02 --output results.jsonl"],
    "schemas": ["schemas", "schemas episode > episode.schema.json", "schemas --json"],
    "validate-refs": ["validate-refs", "validate-refs --case-set cases.jsonl"],
    "collect": [
        "collect                      # then: OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318 in the agent's environment",
        "collect --host 0.0.0.0 --port 4318",
    ],
    "reward": ["reward --date 2026-11-02", "reward --date 2026-11-02 --name safe_overall --name issues"],
    "serve-rewards": [
        "serve-rewards --port 8000",
        """serve-rewards &  curl -s localhost:8000/reward -d '{"pairs": [{"prompt": "2+2?", "completion": "4"}]}'""",
    ],
    "reward-bench": [
        "reward-bench --date 2026-11-02",
        "reward-bench --start 2026-11-01 --end 2026-11-03 --labels labels.jsonl --format json",
    ],
    "ui": ["ui", "ui --host 0.0.0.0 --port 3000"],
}


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("eval_pipeline")
    except PackageNotFoundError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # exits 2 on a usage error
    from eval_pipeline.errors import InfrastructureError, UserInputError
    from eval_pipeline.settings import Settings

    handler = globals()[f"_cmd_{args.command.replace('-', '_')}"]
    try:
        return handler(args, Settings.from_environment())  # settings are read and checked once, before anything runs
    except UserInputError as exc:
        print(f"eval-pipeline: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (InfrastructureError, OSError) as exc:
        print(f"eval-pipeline: error: {exc}", file=sys.stderr)
        return EXIT_INFRA
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # a bug: still one line for cron; EVAL_DEBUG=1 shows where
        if os.environ.get("EVAL_DEBUG"):
            raise
        print(f"eval-pipeline: internal error: {type(exc).__name__}: {exc} (EVAL_DEBUG=1 for the traceback)", file=sys.stderr)
        return EXIT_INFRA


def _days(args) -> list[date]:
    from eval_pipeline.runner import days_between

    if args.date and (args.start or args.end):
        raise UsageError("give --date or --start/--end, not both")
    if args.date:
        return [args.date]
    if not (args.start and args.end):
        raise UsageError("give --date D, or --start D1 --end D2")
    if args.end < args.start:
        raise UsageError(f"--end {args.end} is before --start {args.start}")
    return days_between(args.start, args.end)


def _check_partitions(days: list[date], first: date) -> None:
    from datetime import UTC, datetime, timedelta

    last = datetime.now(UTC).date() + timedelta(days=1)
    outside = [day for day in days if not first <= day < last]
    if outside:
        raise UsageError(
            f"{outside[0]} is outside the partitions ({first} to today, UTC); set EVAL_HISTORY_START for older history"
        )


def _evaluate(
    settings,
    days: list[date],
    agent: str | None,
    undated_day: date | None = None,
    recapture: bool = False,
    trials: int | None = None,
) -> None:
    """Run the days, deliver their alerts, and print one line per day, then where to look."""
    from eval_pipeline.config import load_config
    from eval_pipeline.reports.markdown import verdict_line
    from eval_pipeline.runner import run_days
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.reports import report_rows

    _check_partitions(days, settings.history_start)
    config = load_config(settings.config_path)  # a bad config is the user's to fix: say so before any run starts
    span = str(days[0]) if len(days) == 1 else f"{days[0]}..{days[-1]} ({len(days)} days, one run)"
    try:
        with _progress(f"evaluating {span}") as progress:
            run_id = run_days(settings, days, agent, undated_day, progress, recapture, trials)
    finally:  # without a daemon nobody else announces what this run found, or that it failed
        _deliver_alerts(settings, config.policies.secret_patterns)
    rows = report_rows(Warehouse(settings.duckdb_path), days)
    for row in rows.itertuples():
        s = json.loads(row.summary)
        pass_rate = "–" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
        print(
            f"{row.partition_date:%Y-%m-%d}  {s['total_episodes']:>5} episodes  {s['passed']:>5} passed  "
            f"{s['failed']:>5} failed  {s['without_verdict']:>5} without a verdict  pass rate {pass_rate:>4}  "
            f"{s['critical_alerts']} critical, {s['warning_alerts']} warning  {s['quarantined']} quarantined  "
            f"{row.html_path or row.markdown_path}"
        )
        if s["without_verdict"]:
            print(f"            {verdict_line(s)}")
    print(f"run in the UI: {settings.ui_base_url}/runs/{run_id}")


@contextmanager
def _progress(text: str):
    """A progress bar over the run's steps on a terminal; nothing at all in cron or CI logs."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        yield None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=True) as bar:
        task = bar.add_task(text, total=None)

        def advance(done: int, total: int, step: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{text}: {step} done")

        yield advance


def _deliver_alerts(settings, secret_patterns: list[str]) -> None:
    from eval_pipeline.alerts.delivery import alerts_directory, deliver_pending, destination
    from eval_pipeline.alerts.outbox import AlertOutbox

    outbox = AlertOutbox(alerts_directory(settings.duckdb_path))
    report = deliver_pending(outbox, settings.alert_webhook_url, settings.ui_base_url, secret_patterns)
    if report.delivered:
        print(f"alerts: {report.delivered} delivered to {destination(outbox, settings.alert_webhook_url)}")
    if report.pending:
        print(
            f"alerts: {report.pending} not delivered ({report.errors[0]}); they stay in the outbox for the next run "
            "or the alert sensor",
            file=sys.stderr,
        )


def _cmd_run(args, settings) -> int:
    from eval_pipeline.config import SEVERITY_RANK
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.reports import run_outcome

    days = _days(args)
    if args.trials is not None and args.trials < 1:
        raise UsageError("--trials must be at least 1")
    _evaluate(settings, days, args.agent, args.date, args.recapture, args.trials)  # undated records go to --date
    if args.junit:
        from eval_pipeline.reports.junit import write_junit
        from eval_pipeline.warehouse.reports import junit_inputs

        write_junit(args.junit, *junit_inputs(Warehouse(settings.duckdb_path), days, args.agent))
        print(f"JUnit XML: {args.junit}")
    if args.fail_on == "never":
        return EXIT_OK
    outcome = run_outcome(Warehouse(settings.duckdb_path), days, args.agent)
    floor = SEVERITY_RANK[args.fail_on]
    severe = any(SEVERITY_RANK.get(severity, 0) >= floor and n for severity, n in outcome.findings.items())
    return EXIT_FINDINGS if outcome.failed_episodes or severe else EXIT_OK


def _cmd_demo(args, settings) -> int:
    from eval_pipeline.episodes.samples import SAMPLE_DAYS, write_samples

    if settings.source_is_store:
        raise UsageError("the demo runs on sample files; unset EVAL_EPISODE_SOURCE (it points at a store)")
    source = Path(settings.episode_source)
    if not (source.is_dir() and any(source.iterdir())):
        written = write_samples(source)
        print(f"wrote {len(written)} sample files to {source}")
    _evaluate(settings, list(SAMPLE_DAYS), None)
    _print_findings(settings, list(SAMPLE_DAYS))
    print(
        "\nnext:\n"
        f"  {_command()} report --date {SAMPLE_DAYS[1]} --open    # the HTML report of the day with injected regressions\n"
        f'  {_command()} query "SELECT agent_id, dimension, severity, message FROM findings ORDER BY ALL"\n'
        "  make ui    # the Dagster UI at http://127.0.0.1:3000, with these runs"
    )
    return EXIT_OK


def _print_findings(settings, days: list[date]) -> None:
    """Every finding of `days`, one line per task and dimension, and the agents without any."""
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.reports import agents_seen, findings_digest

    warehouse = Warehouse(settings.duckdb_path)
    digest = findings_digest(warehouse, days)
    print("\nfindings:")
    for f in digest.itertuples():
        count = "aggregate" if not f.episodes else f"{f.episodes} episode" + ("s" if f.episodes > 1 else "")
        print(f"  {f.partition_date:%Y-%m-%d}  {f.severity.upper():<8} {f.agent_id:<16} {f.task_id:<40} {count:<11} {f.message}")
    clean = sorted(set(agents_seen(warehouse, days)) - set(digest["agent_id"]))
    for agent in clean:
        print(f"  no findings for {agent}")


def _command() -> str:
    """How to call this command again from here: `.venv/bin/eval-pipeline` when it is not on PATH."""
    invoked = Path(sys.argv[0]).resolve()
    if invoked.name == "eval-pipeline" and shutil.which("eval-pipeline") != str(invoked):
        return os.path.relpath(invoked) if invoked.is_relative_to(Path.cwd()) else str(invoked)
    return "eval-pipeline"


def _cmd_status(args, settings) -> int:
    from eval_pipeline.config import load_config
    from eval_pipeline.defs.resources import source_index_path
    from eval_pipeline.episodes.source import open_source, source_health
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.partitions import partition_counts

    print(f"episode source   {settings.episode_source}")
    print(f"warehouse        {settings.duckdb_path}")
    print(f"reports          {settings.reports_dir}")
    print(f"config           {settings.config_path or '(built-in defaults)'}")
    print(f"DAGSTER_HOME     {settings.dagster_home}")
    sources = load_config(settings.config_path).sources
    index = Path(source_index_path(str(settings.duckdb_path)))
    health = source_health(open_source(settings.episode_source, index, sources))
    print(
        f"\nsource health    {jsonout.dumps(health.get('health', {k: v for k, v in health.items() if k != 'episodes_per_day'}))}"
    )
    for day, count in health.get("episodes_per_day", {}).items():
        print(f"  {day}  {count} records")
    if settings.duckdb_path.exists():
        counts = partition_counts(Warehouse(settings.duckdb_path))
        _print_table(
            counts.fillna(0).astype({c: int for c in counts.columns if c != "partition_date"}), "partitions in the warehouse"
        )
    else:
        print("\nno warehouse yet: run `eval-pipeline demo` or `eval-pipeline run --date D`")
    _print_latest_run(settings)
    return EXIT_OK


def _print_latest_run(settings) -> None:
    if not (settings.dagster_home / "dagster.yaml").exists():
        return
    from eval_pipeline.runner import open_instance

    with open_instance(settings) as instance:
        runs = instance.get_runs(limit=1)
        if runs:
            run = runs[0]
            partition = run.tags.get("dagster/partition", "-")
            print(f"\nlatest run       {run.run_id} {run.job_name} partition {partition}: {run.status.value}")
            print(f"                 {settings.ui_base_url}/runs/{run.run_id}")


def _print_table(frame, title: str | None = None) -> None:
    """A rich table on a terminal; plain aligned text when piped, so scripts and logs read it as before."""
    from rich.console import Console
    from rich.table import Table

    console = Console()
    if frame.empty:
        print(f"{title}: (no rows)" if title else "(no rows)")
        return
    cells = frame.astype(object).map(_cell)
    if not console.is_terminal:
        if title:
            print(f"\n{title}")
        print(cells.to_string(index=False, max_colwidth=200))
        return
    table = Table(title=title, title_justify="left", header_style="bold")
    for column in frame.columns:
        table.add_column(str(column), justify="right" if frame[column].dtype.kind in "iuf" else "left", no_wrap=True)
    for row in cells.itertuples(index=False):
        table.add_row(*row)
    console.print(table)


def _cell(value) -> str:
    import numpy as np
    import pandas as pd

    if isinstance(value, list | tuple | dict | np.ndarray):
        return str(value.tolist() if isinstance(value, np.ndarray) else value)
    if value is None or pd.isna(value):
        return "–"
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.date().isoformat()  # a DATE column, read through pandas
    return str(value)


def _emit(text: str, output: Path | None) -> int:
    """Write `text` to `output` (saying so), or print it."""
    if output:
        output.write_text(text)
        print(f"wrote {output}")
    else:
        sys.stdout.write(text)
    return EXIT_OK


def _cmd_report(args, settings) -> int:
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.reports import report_rows

    rows = report_rows(Warehouse(settings.duckdb_path), [args.date]) if settings.duckdb_path.exists() else None
    if rows is None or rows.empty:
        raise UsageError(f"no report for {args.date}; run `eval-pipeline run --date {args.date}` first")
    row = rows.iloc[0]
    if args.open:
        if not row["html_path"]:
            raise UsageError(f"the report of {args.date} predates HTML reports; run `eval-pipeline run --date {args.date}` again")
        html = Path(row["html_path"])
        print(html)
        if sys.platform == "darwin" or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
            import webbrowser

            webbrowser.open(html.resolve().as_uri())
        return EXIT_OK
    path = {"md": row["markdown_path"], "json": row["json_path"], "html": row["html_path"]}[args.format]
    if not path:
        raise UsageError(f"no {args.format} report for {args.date}; run `eval-pipeline run --date {args.date}` again")
    return _emit(Path(path).read_text(), args.output)


def _cmd_query(args, settings) -> int:
    import duckdb

    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.query import run_read_only

    if not settings.duckdb_path.exists():
        raise UsageError(f"no warehouse at {settings.duckdb_path}; run `eval-pipeline demo` or `eval-pipeline run` first")
    try:
        frame = run_read_only(Warehouse(settings.duckdb_path), args.sql)
    except duckdb.Error as exc:
        raise UsageError(str(exc).splitlines()[0]) from None
    if args.format == "csv":
        frame.to_csv(sys.stdout, index=False)
    elif args.format == "json":
        print(jsonout.dumps(frame.astype(object).to_dict(orient="records")))
    else:
        _print_table(frame)
    return EXIT_OK


def _cmd_compare(args, settings) -> int:

    from eval_pipeline.config import load_config
    from eval_pipeline.regression.compare import Selector, SelectorError, compare
    from eval_pipeline.reports.comparison import render_comparison
    from eval_pipeline.warehouse.compare import selected_runs
    from eval_pipeline.warehouse.connection import Warehouse

    try:
        sides = (Selector.parse(args.a), Selector.parse(args.b))
    except SelectorError as exc:
        raise UsageError(str(exc)) from None
    if not settings.duckdb_path.exists():
        raise UsageError(f"no warehouse at {settings.duckdb_path}; run `eval-pipeline run` first")
    warehouse = Warehouse(settings.duckdb_path)
    runs = [selected_runs(warehouse, side) for side in sides]
    for side, name, frame in zip(sides, "ab", runs, strict=True):
        if frame.empty:
            raise UsageError(f"--{name} {side} selects no finished episode")
    comparison = compare(*runs, sides, load_config(settings.config_path).statistics)
    return _emit(
        jsonout.dumps(comparison, indent=2) + "\n" if args.format == "json" else render_comparison(comparison), args.output
    )


def _cmd_export(args, settings) -> int:
    from eval_pipeline.episodes.adapters.plaited import to_capture
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.export import export_inputs

    if not settings.duckdb_path.exists():
        raise UsageError(f"no warehouse at {settings.duckdb_path}; run `eval-pipeline run --date {args.date}` first")
    lines = []
    for episode in export_inputs(Warehouse(settings.duckdb_path), args.date, args.agent):
        verdict = episode["passed"]
        score = None
        if verdict is not None:
            weighted = episode["weighted_score"]
            score = {"pass": bool(verdict), "score": weighted if weighted is not None else float(verdict),
                     "reasoning": f"eval_pipeline: weighted score {weighted}, passed {bool(verdict)}"}  # fmt: skip
        lines.append(jsonout.dumps(to_capture(episode, score)))
    return _emit("".join(f"{line}\n" for line in lines), args.output)


def _cmd_schemas(args, settings) -> int:
    from eval_pipeline.episodes.schemas import SCHEMAS, json_schema

    if args.name:
        if args.name not in SCHEMAS:
            raise UsageError(f"no schema {args.name!r}; known: {', '.join(SCHEMAS)}")
        print(jsonout.dumps(json_schema(args.name), indent=2))
    elif args.json:
        print(jsonout.dumps({name: json_schema(name) for name in SCHEMAS}, indent=2))
    else:
        for name, (_, description) in SCHEMAS.items():
            print(f"{name:<20} {description}")
    return EXIT_OK


def _cmd_validate_refs(args, settings) -> int:
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
    _print_table(pd.DataFrame(rows, columns=["case", "verdict", "score", "reasoning"]), title="References")
    failed = sum(reason is not None for reason in failures.values())
    print(
        f"{len(verdicts) - failed} of {len(verdicts)} references pass their grader; {len(cases) - len(verdicts)} cases have none."
    )
    return EXIT_FINDINGS if failed else EXIT_OK


def _cmd_collect(args, settings) -> int:
    from eval_pipeline.episodes.collector import TraceSink, serve

    if settings.episode_source.startswith(("http://", "https://")):
        raise UsageError("collect writes into a file source; EVAL_EPISODE_SOURCE is an episode store URL")
    directory = Path(settings.episode_source) / "otlp"
    try:
        server = serve(TraceSink(directory), args.host, args.port)
    except OSError as exc:
        raise UsageError(f"cannot listen on {args.host}:{args.port}: {exc}") from None
    host, port = server.server_address[:2]
    print(f"collecting OTLP/HTTP traces on http://{host}:{port}/v1/traces into {directory}", flush=True)
    try:
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def _cmd_baseline(args, settings) -> int:
    from datetime import UTC, datetime

    from eval_pipeline.config import load_config
    from eval_pipeline.warehouse import baselines
    from eval_pipeline.warehouse.connection import Warehouse

    if not settings.duckdb_path.exists():
        raise UsageError(f"no warehouse at {settings.duckdb_path}; run `eval-pipeline run` first")
    warehouse = Warehouse(settings.duckdb_path)
    if args.action == "promote":
        promoted = baselines.promote(warehouse, args.agent, args.date)
        if not promoted:
            raise UsageError(f"{args.agent} has no successful episode on {args.date}")
        print(f"promoted {promoted} baseline(s) of {args.agent} from {args.date} on; re-run later days to compare with them")
    elif args.action == "pin":
        pinned = baselines.pin(warehouse, args.episode_id, args.valid_from)
        if pinned is None:
            raise UsageError(f"no episode {args.episode_id} in the warehouse")
        print(f"pinned {args.episode_id} for {pinned['agent_id']} / {pinned['task_id']} from {pinned['valid_from']} on")
    else:
        as_of = args.date or datetime.now(UTC).date()
        policy = load_config(settings.config_path).baseline.policy
        frame = baselines.effective_baselines(warehouse, as_of, policy, args.agent)
        print(frame.to_string(index=False) if len(frame) else f"no baselines on {as_of}")
    return EXIT_OK


def _cmd_judge(args, settings) -> int:
    from eval_pipeline.llm.gateway import Gateway
    from eval_pipeline.llm.support_bot import ExamplesError, judge_examples

    base_url, model = os.environ.get("OPENAI_BASE_URL"), os.environ.get("EVAL_JUDGE_MODEL")
    if not (base_url and model):
        raise UsageError("judge needs OPENAI_BASE_URL and EVAL_JUDGE_MODEL (any OpenAI-compatible server)")
    api_key = os.environ.get("OPENAI_API_KEY", "")
    gateway = Gateway(base_url=base_url, api_key=api_key, model=model, concurrency=args.concurrency)
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


def _scored(settings, days: list[date]):
    """The warehouse and its scored episodes of `days`, as rewards read them; a usage error when there are none."""
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.rewards import reward_inputs_frame

    if not settings.duckdb_path.exists():
        raise UsageError(f"no warehouse at {settings.duckdb_path}; run `eval-pipeline run` first")
    warehouse = Warehouse(settings.duckdb_path)
    scored = reward_inputs_frame(warehouse, days[0], days[-1])
    if scored.empty:
        raise UsageError(f"no scored episodes from {days[0]} to {days[-1]}; run `eval-pipeline run` for those days first")
    return warehouse, scored


def _reward_names(requested: list[str] | None, config) -> list[str]:
    defined = list(config.rewards.define)
    unknown = [name for name in requested or [] if name not in defined]
    if unknown:
        raise UsageError(f"no reward {unknown[0]!r}; defined: {', '.join(defined)}")
    return list(dict.fromkeys(requested)) if requested else defined


def _cmd_reward(args, settings) -> int:
    import pandas as pd

    from eval_pipeline.config import load_config
    from eval_pipeline.rewards.functions import RewardBook
    from eval_pipeline.rewards.records import reward_records
    from eval_pipeline.warehouse.rewards import write_rewards

    days = _days(args)
    config = load_config(settings.config_path)
    names = _reward_names(args.name, config)
    warehouse, scored = _scored(settings, days)
    by_day = dict(tuple(scored.groupby(scored["partition_date"].dt.date)))
    book, written = RewardBook(config.rewards), []
    with warehouse.session():
        for day in days:
            records = reward_records(by_day.get(day, scored.iloc[:0]), book, names)
            write_rewards(warehouse, day, records.assign(partition_date=day, config_version=config.version), names)
            written.append(records.assign(partition_date=day.isoformat()))
    rows = pd.concat(written, ignore_index=True)
    summary = (
        rows.groupby(["partition_date", "reward_name"], sort=False)["value"]
        .agg(episodes="size", with_value="count", mean="mean", min="min", max="max")
        .round(3)
        .reset_index()
    )
    _print_table(summary, f"rewards written ({len(rows)} rows, config {config.version})")
    return EXIT_OK


def _cmd_serve_rewards(args, settings) -> int:
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


def _cmd_reward_bench(args, settings) -> int:
    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.rewards.benchmark import BenchmarkError, benchmark_rewards, benchmark_table, load_labels

    days = _days(args)
    if args.k is not None and args.k < 1:
        raise UsageError("--k must be at least 1")
    config = load_config(settings.config_path)
    labels_path = args.labels or (beside_config(settings.config_path, config.rewards.labels) if config.rewards.labels else None)
    try:
        labels = load_labels(labels_path) if labels_path else {}
    except BenchmarkError as exc:
        raise UsageError(str(exc)) from None
    _, scored = _scored(settings, days)
    result = benchmark_rewards(scored, config.rewards, labels, args.k)
    if not result["episodes"]:
        raise UsageError(
            f"no scored episode from {days[0]} to {days[-1]} has a ground truth: give human labels (--labels, or "
            "[rewards] labels), cases, or metadata.reward"
        )
    if args.format == "json":
        print(jsonout.dumps(result, indent=2))
        return EXIT_OK
    _print_table(benchmark_table(result), f"reward benchmark, {days[0]}..{days[-1]}: {result['ground_truth']}")
    return EXIT_OK


def _cmd_ui(args, settings) -> int:
    from eval_pipeline.settings import PROJECT_ROOT, ensure_dagster_home

    ensure_dagster_home(settings.dagster_home)
    dagster = Path(sys.executable).with_name("dagster")
    command = [str(dagster), "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"), "--host", args.host, "--port", str(args.port)]
    print(f"DAGSTER_HOME={settings.dagster_home}\n{' '.join(command)}", flush=True)
    os.execve(command[0], command, {**os.environ, **settings.as_environment()})  # the webserver resolves the same paths
    return EXIT_OK  # not reached


def entry_point() -> None:
    """The installed `eval-pipeline` command.

    Everything is written and closed when `main` returns, so the process ends at once instead
    of spending about a second tearing down Dagster's, pandas' and DuckDB's objects.
    """
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    entry_point()
