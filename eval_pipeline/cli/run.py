"""`eval-pipeline run`: launch the graph for a day or a range, then answer with one exit code."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from eval_pipeline import jsonout
from eval_pipeline.cli.command import (
    EXIT_FINDINGS,
    EXIT_INFRA,
    EXIT_OK,
    Command,
    UsageError,
    add_days,
    add_store_url,
    check_agent_seen,
    days,
    emit,
    print_other_policy,
    print_outdated,
    span,
    with_store_url,
)

if TYPE_CHECKING:
    from eval_pipeline.capture.cases import CaseSpec
    from eval_pipeline.config import EvalConfig
    from eval_pipeline.runner import Progress, RunDone, RunRequest
    from eval_pipeline.settings import Settings
    from eval_pipeline.warehouse.cases import CaseResults
    from eval_pipeline.warehouse.reports import RunOutcome


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_days(parser)  # none of them: yesterday (UTC), as a nightly cron line wants
    parser.add_argument("--agent", "--agent-id", dest="agent", help="evaluate (and replace the rows of) this agent only")
    parser.add_argument("--model", help="evaluate only this model's episodes (the day's rows are what the run read)")
    parser.add_argument("--limit", type=int, help="evaluate at most this many episodes a day, the first by start time")
    add_store_url(parser)
    parser.add_argument("--output", type=Path, metavar="PATH", help="also write the day's JSON report there (a list for a range)")
    parser.add_argument(
        "--fail-on",
        choices=["critical", "warning", "never"],
        default="critical",
        help="exit 1 when an episode failed or findings at or above this severity exist, only --agent's when given "
        "(default: critical; never: always 0)",
    )
    parser.add_argument("--junit", type=Path, metavar="PATH", help="also write JUnit XML: one test case per episode")
    parser.add_argument(
        "--recapture", action="store_true", help="run the case-set agents again even where a run is stored (both are kept)"
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="live replay: call the candidate model afresh for every episode (fresh samples), replacing the cached replays",
    )
    parser.add_argument("--trials", type=int, help="trials per case for the case-set agents (over [capture] trials)")
    parser.add_argument(
        "--label", help="label the runs the case-set agents make (default: agent/model@git revision); compare with label="
    )
    parser.add_argument(
        "--checks",
        type=lambda text: tuple(name.strip() for name in text.split(",") if name.strip()),
        metavar="A,B",
        help="run only these checks, built-in or plug-in (default: all); the day's issues are theirs",
    )


def _run(args: argparse.Namespace, settings: Settings) -> int:
    from eval_pipeline.runner import RunRequest
    from eval_pipeline.warehouse.reports import run_outcome

    selected = days(args, default=datetime.now(UTC).date() - timedelta(days=1))
    for name in ("trials", "limit"):
        if getattr(args, name) is not None and getattr(args, name) < 1:
            raise UsageError(f"--{name} must be at least 1")
    settings = with_store_url(settings, args.store_url)
    request = RunRequest(
        selected,
        args.agent,
        undated_day=selected[0] if len(selected) == 1 else None,  # records without a timestamp go to the one day
        recapture=args.recapture,
        trials=args.trials,
        label=args.label,
        model=args.model,
        limit=args.limit,
        checks=args.checks,
        no_cache=args.no_cache,
    )
    done = evaluate(settings, request)
    if args.output:  # what the run evaluated, as its exit code and --junit count it: under --agent, the agent's part
        from eval_pipeline.reports.daily import agent_report_path
        from eval_pipeline.warehouse.report_files import report_files

        paths = (
            [agent_report_path(settings.reports_dir, done.run_id, day) for day in selected]
            if args.agent
            else [Path(files.json_path) for files in report_files(settings.warehouse(), selected)]
        )
        reports = [json.loads(path.read_text()) for path in paths]
        emit(jsonout.dumps(reports[0] if len(selected) == 1 else reports, indented=True) + "\n", args.output)
    if args.junit:
        from eval_pipeline.config import load_config
        from eval_pipeline.reports.junit import junit_xml, write_junit
        from eval_pipeline.warehouse.reports import junit_inputs

        patterns = load_config(settings.config_path).policies.secret_patterns
        inputs = junit_inputs(settings.warehouse(), selected, args.agent)
        write_junit(args.junit, junit_xml(selected, *inputs, patterns, args.fail_on))
        print(f"JUnit XML: {args.junit}")
    if args.fail_on == "never":
        return EXIT_OK
    return _exit_code(run_outcome(settings.warehouse(), selected, args.agent), args.fail_on, selected)


def _exit_code(outcome: RunOutcome, fail_on: str, selected: list[date]) -> int:
    """1 for what the agents did (a failed episode, findings at or above `fail_on`); else 3 when the gateway failed
    live replays or judge verdicts after its retries, saying so on stderr: their episodes have no verdict, and a night
    the gateway was down must not pass as a clean one; else 0."""
    from eval_pipeline.config import fails_the_gate

    if outcome.failed_episodes or any(fails_the_gate(severity, fail_on) and n for severity, n in outcome.findings.items()):
        return EXIT_FINDINGS
    if outcome.failed_live_replays or outcome.failed_judge_verdicts:
        replays, verdicts = outcome.failed_live_replays, outcome.failed_judge_verdicts
        print(
            f"eval-pipeline: {replays} live replay{'s' if replays != 1 else ''} and {verdicts} judge "
            f"verdict{'s' if verdicts != 1 else ''} failed after retries on {span(selected)}: "
            "see replays.error / judgements.reasoning",
            file=sys.stderr,
        )
        return EXIT_INFRA
    return EXIT_OK


COMMAND = Command(
    "run",
    "evaluate one day or an inclusive range of days",
    _arguments,
    _run,
    (
        "run                                              # yesterday (UTC), the nightly default",
        "run --date 2026-11-21",
        "run --start 2026-10-01 --end 2026-10-31          # a backfill, oldest day first",
        "run --date 2026-11-21 --agent support-bot --fail-on warning --junit results.xml",
        "run --store-url http://localhost:8100 --agent-id my-agent --model gpt-4 --limit 20 --output results.json",
        "run --date 2026-11-21 --checks short_answer,no_data,too_polite   # some checks only, a plug-in among them",
    ),
)


def check_partitions(selected: list[date], settings: Settings) -> None:
    today = datetime.now(UTC).date()
    first, last = settings.partition_start(today), today + timedelta(days=1)
    outside = [day for day in selected if not first <= day < last]
    if outside:
        raise UsageError(
            f"{outside[0]} is outside the partitions ({first} to today, UTC); set EVAL_HISTORY_START for older history"
        )


def checked_inputs(
    settings: Settings, selected: list[date], checks: tuple[str, ...] | None = None
) -> tuple[EvalConfig, list[CaseSpec]]:
    """The config and case set, read once and checked before any run starts: what is wrong in them is the user's
    to fix (exit 2), as are the cases file, a headless schema, an unknown format in [sources] formats, days outside
    the partitions, live replay without its endpoint or model, a plug-in that does not load or an unknown --checks
    name."""
    from eval_pipeline import plugins
    from eval_pipeline.capture.headless import SchemaError, load_schema
    from eval_pipeline.config import beside_config, load_config
    from eval_pipeline.episodes.adapters import CANONICAL
    from eval_pipeline.scoring.cases import load_cases

    check_partitions(selected, settings)
    if settings.live_replay_unready:
        raise UsageError(settings.live_replay_unready)
    config = load_config(settings.config_path)
    cases = case_set(settings, config)
    load_cases(beside_config(settings.config_path, config.cases.path) if config.cases.path else None)  # checks each
    plugins.checks(config, settings.config_path, checks)
    formats = [CANONICAL, *(adapter.NAME for adapter in plugins.adapters(config, settings.config_path))]
    unknown = sorted(set(config.sources.formats.values()) - set(formats))
    if unknown:
        raise UsageError(f"[sources] formats names unknown format(s) {unknown}; known: {sorted(formats)}")
    for agent in config.capture.capture_agents if cases else []:
        if agent.schema_path:
            try:
                load_schema(beside_config(settings.config_path, agent.schema_path))
            except SchemaError as exc:
                raise UsageError(str(exc)) from None
    return config, cases


def launch(settings: Settings, request: RunRequest, config: EvalConfig, what: str = "evaluating") -> RunDone:
    """Run the graph (or the request's part of it) for the request's days, then deliver the alerts it raised."""
    from eval_pipeline.runner import run_days

    first, last = request.days[0], request.days[-1]
    span = str(first) if first == last else f"{first}..{last} ({len(request.days)} days, one run)"
    try:
        with _progress(f"{what} {span}") as progress:
            done = run_days(settings, request, progress)
    except KeyboardInterrupt:
        raise  # Ctrl-C wants the prompt back now: what is in the outbox goes with the next run or the sensor
    except BaseException:  # announce the failure too, but end with the run's own error, whatever delivery meets
        try:
            _deliver_alerts(settings, config.policies.secret_patterns)  # without a daemon nobody else says it failed
        except OSError as exc:
            print(f"alerts: not delivered: {exc}", file=sys.stderr)
        raise
    _deliver_alerts(settings, config.policies.secret_patterns)  # nor what this run found
    return done


def case_set(settings: Settings, config: EvalConfig) -> list[CaseSpec]:
    """The configured case set, none without one; reading it checks every case."""
    from eval_pipeline.capture.cases import load_case_set
    from eval_pipeline.config import beside_config

    path = config.capture.case_set
    return load_case_set(beside_config(settings.config_path, path)) if path else []


def evaluate(settings: Settings, request: RunRequest) -> RunDone:
    """Run the whole graph for the days; print each case of the case set and each category, when there is
    one, then one line per day, then where to look."""
    from eval_pipeline.reports.markdown import left_out_line, verdict_line
    from eval_pipeline.warehouse.cases import case_results
    from eval_pipeline.warehouse.outdated import other_policy_days, outdated_days
    from eval_pipeline.warehouse.report_files import report_files

    config, case_specs = checked_inputs(settings, request.days, request.checks)
    done = launch(settings, request, config)
    if request.agent_id:
        check_agent_seen(settings.warehouse(), request.days, request.agent_id, done.agents_read)
    cases = [case.id for case in case_specs]
    agents = [agent.agent_id for agent in config.capture.capture_agents if request.agent_id in (None, agent.agent_id)]
    if cases and agents:
        _print_case_results(case_results(settings.warehouse(), request.days, agents, cases))
    warehouse = settings.warehouse()
    with warehouse.session(read_only=True):  # one connection for what the run's summary reads
        for files in report_files(warehouse, request.days):
            s = files.summary
            pass_rate = "–" if s["pass_rate"] is None else f"{s['pass_rate']:.0%}"
            print(
                f"{files.day:%Y-%m-%d}  {s['total_episodes']:>5} episodes  {s['passed']:>5} passed  "
                f"{s['failed']:>5} failed  {s['without_verdict']:>5} without a verdict  pass rate {pass_rate:>4}  "
                f"{s['critical_alerts']} critical, {s['warning_alerts']} warning  {s['quarantined']} quarantined  "
                f"{files.html_path or files.markdown_path}"
            )
            told = (
                s["without_verdict"],
                s.get("running"),
                s.get("superseded"),
                s.get("baselines_from", {}).get("history"),
                s.get("replays", {}).get("live"),
                s.get("judge_failed"),
            )
            if any(told):  # what the counts leave out, what the gateway failed and where live replays came from
                print(f"            {verdict_line(s)}{f' {left_out_line(s)}' if s.get('running') else ''}")
            if request.agent_id:
                print(f"            {_agent_line(settings, done.run_id, files.day, request.agent_id)}")
        print_outdated(outdated_days(warehouse, config.baseline.policy, after=request.days[-1]))
        print_other_policy(other_policy_days(warehouse, config.baseline.policy), config.baseline.policy)
    print(f"run in the UI: {settings.ui_base_url}/runs/{done.run_id}")
    retried = done.retried_calls
    if retried:  # the SDK retries silently; failed calls say their attempts in `replays.error` and `judgements.reasoning`
        print(
            f"eval-pipeline: warning: {retried} gateway call{'s' if retried != 1 else ''} answered only after retries on "
            f"{span(request.days)} (llm_calls_retried in the run's replays and judgements metadata)",
            file=sys.stderr,
        )
    return done


def _agent_line(settings: Settings, run_id: str, day: date, agent_id: str) -> str:
    """What `run --agent` evaluated of the day, from the agent's own report (`run --output` hands it over). These
    figures, not the day's, decide the run's exit code."""
    from eval_pipeline.reports.daily import agent_report_path

    s = json.loads(agent_report_path(settings.reports_dir, run_id, day).read_text())["summary"]
    rate = s["pass_rate"]
    return (
        f"agent {agent_id} (this run; its figures decide the exit code): {s['total_episodes']:>5} episodes  "
        f"{s['passed']:>5} passed  {s['failed']:>5} failed  {s['without_verdict']:>5} without a verdict  "
        f"pass rate {'–' if rate is None else f'{rate:.0%}':>4}  {s['critical_alerts']} critical, "
        f"{s['warning_alerts']} warning"
    )


def _print_case_results(results: CaseResults) -> None:
    """Per day and run of an agent: each case passed or failed, with what failed and its trials, then each
    category's pass rate."""
    import pandas as pd

    from eval_pipeline.cli.command import print_table

    run = ["partition_date", "agent_id", "capture_run"]
    categories = dict(iter(results.categories.groupby(run, sort=False)))
    for key, cases in results.cases.groupby(run, sort=False):
        day, _, capture_run = key
        title = f"{day:%Y-%m-%d} {cases['label'].iloc[0]}" + (f" run {capture_run}" if capture_run else "")
        print_table(
            pd.DataFrame(
                {
                    "case": cases["case_id"],
                    "category": cases["category"],
                    "result": cases["passed"].map({True: "pass", False: "fail"}).fillna("no verdict"),
                    "trials passed": [f"{p} of {n}" for p, n in zip(cases["trials_passed"], cases["trials"], strict=True)],
                    "failed expectation": cases["failed"].fillna(""),
                }
            ),
            f"{title}: cases",
        )
        per_category = categories[key][["category", "cases", "passed", "failed", "pass_rate"]]
        rates = per_category["pass_rate"].map(lambda rate: "–" if pd.isna(rate) else f"{rate:.0%}")
        print_table(per_category.drop(columns="pass_rate").assign(**{"pass rate": rates}), f"{title}: per category")
        print()


@contextmanager
def _progress(text: str) -> Iterator[Progress | None]:
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

        def advance(done: int, total: int, now: str) -> None:
            bar.update(task, completed=done, total=total, description=f"{text}: {now}")

        yield advance


def _deliver_alerts(settings: Settings, secret_patterns: list[str]) -> None:
    from eval_pipeline.alerts.delivery import alerts_directory, deliver_pending, destination
    from eval_pipeline.alerts.messages import MessageLinks
    from eval_pipeline.alerts.outbox import DeliveryBusy
    from eval_pipeline.warehouse.alerts import open_outbox

    outbox = open_outbox(settings.warehouse(), alerts_directory(settings.duckdb_path))
    links = MessageLinks(ui_base_url=settings.ui_base_url, viewer_base_url=settings.viewer_base_url)
    try:
        report = deliver_pending(outbox, settings.alert_webhook_url, links, secret_patterns)
    except DeliveryBusy as exc:  # the run's own outcome still stands: its verdict and lines follow
        print(f"alerts: not delivered now: {exc}; they stay in the outbox for the next run or the alert sensor", file=sys.stderr)
        return
    if report.delivered:
        print(f"alerts: {report.delivered} delivered to {destination(outbox, settings.alert_webhook_url)}")
    if report.pending:
        print(
            f"alerts: {report.pending} not delivered ({report.errors[0]}); they stay in the outbox for the next run "
            "or the alert sensor",
            file=sys.stderr,
        )
