"""The evaluation graph: read resources, call the core, write through the warehouse.

A run covers one day (nightly) or an ordered range of days (a backfill runs as one run, so
baselines flow forward day by day and the per-run overhead is paid once). Each asset does
its days in date order; each day's write is one transaction.
"""

import os
from collections.abc import Callable, Iterator
from dataclasses import asdict
from datetime import date, timedelta
from itertools import chain
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd

from eval_pipeline.alerts.messages import finding_alerts
from eval_pipeline.capture.cases import balance
from eval_pipeline.capture.command import anchored, capture_agent, captured_episodes, run_all
from eval_pipeline.capture.grader import reference_failure, reference_verdicts
from eval_pipeline.capture.headless import SchemaError
from eval_pipeline.capture.process import directory_name
from eval_pipeline.capture.runs import CaptureRun, run_label, source_revision
from eval_pipeline.capture.store import agent_directory, captured_records, captures_directory, stored_runs, write_capture
from eval_pipeline.defs.loaded import CONFIG, PACKAGE_VERSION, SETTINGS
from eval_pipeline.defs.partitions import daily_partitions, partition_days
from eval_pipeline.defs.pipeline import checks
from eval_pipeline.defs.pipeline.day_order import wait_for_earlier_days
from eval_pipeline.defs.pipeline.jobs import AGENTS_READ
from eval_pipeline.defs.pools import LLM_POOL, WAREHOUSE_POOL
from eval_pipeline.defs.resources import (
    AlertsResource,
    EpisodeSourceResource,
    EvalConfigResource,
    JudgeResource,
    ReplayResource,
    ReportsResource,
    RunScope,
    ViewerResource,
    WarehouseResource,
)
from eval_pipeline.episodes.records import RawRecords
from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import JudgeTally, configured_rubrics, judge_partition, judge_tally
from eval_pipeline.redaction import redact, redact_tree
from eval_pipeline.regression.aggregates import summary_columns
from eval_pipeline.regression.findings import VerdictCounts, finding_screen, partition_findings
from eval_pipeline.regression.lifecycle import with_lifecycle
from eval_pipeline.regression.source_health import TRAILING_DAYS
from eval_pipeline.regression.trials import agent_pass_at_k, with_flakiness
from eval_pipeline.replay.live import LIVE_REPLAY_COLUMNS, recordings_from_steps, replay_all
from eval_pipeline.reports.daily import (
    TREND_DAYS,
    agent_report_path,
    build_report,
    summary_markdown,
    write_report_files,
    write_report_json,
)
from eval_pipeline.reports.document import RunContext
from eval_pipeline.reports.markdown import Link, table
from eval_pipeline.rewards.functions import RewardBook
from eval_pipeline.rewards.inputs import scores_read
from eval_pipeline.rewards.records import reward_records
from eval_pipeline.scoring.assessments import assess, reading
from eval_pipeline.scoring.episodes import score_records
from eval_pipeline.warehouse.assertions import check_inputs, write_checks
from eval_pipeline.warehouse.baselines import days_to_look_back, write_baselines
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.findings import screened_scores_in_parts, task_summaries, write_findings
from eval_pipeline.warehouse.health import source_counts
from eval_pipeline.warehouse.history_baselines import write_history_baselines
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline.warehouse.judge import JudgementSpool, judge_inputs_in_parts
from eval_pipeline.warehouse.llm_cache import cached_answers
from eval_pipeline.warehouse.partitions import other_agents_rows, read_in_part, read_partition
from eval_pipeline.warehouse.replays import recorded_steps, write_dry_replays, write_live_replays
from eval_pipeline.warehouse.report_files import write_report_row
from eval_pipeline.warehouse.reports import report_inputs
from eval_pipeline.warehouse.rewards import write_rewards
from eval_pipeline.warehouse.scores import write_scores
from eval_pipeline.warehouse.trials import trial_counts, write_trials

# A backfill is one run over its days unless EVAL_BACKFILL_DAYS_PER_RUN splits it (on a lake, whose runs execute at once)
_BACKFILL = (
    dg.BackfillPolicy.multi_run(SETTINGS.backfill_days_per_run)
    if SETTINGS.backfill_days_per_run
    else dg.BackfillPolicy.single_run()
)
_PARTITIONED: dict[str, Any] = {"partitions_def": daily_partitions, "backfill_policy": _BACKFILL}
_LABELS: dict[str, Any] = {"group_name": "evaluation", "kinds": {"duckdb"}}
_COMMON: dict[str, Any] = {**_PARTITIONED, **_LABELS}


def _code_version(stage: str) -> str:
    """The package version plus a hash of the config that decides this stage: edits mark exactly those assets stale."""
    return f"{PACKAGE_VERSION}+{CONFIG.stage_version(stage)}"


def _md(frame: pd.DataFrame, limit: int = 10) -> dg.MetadataValue:
    rows = frame.head(limit).itertuples(index=False)
    return dg.MetadataValue.md("\n".join(table(list(frame.columns), rows)) if len(frame) else "_none_")


def _tables(code_version: str, deps: list[str], tables: dict[str, str]) -> list[dg.AssetSpec]:
    """One asset per table a step writes, each depending on the tables the step reads.

    The lineage the UI draws is then what the step does: no asset writes a table it does not declare.
    """
    return [
        dg.AssetSpec(name, deps=deps, description=text, code_version=code_version, **_LABELS) for name, text in tables.items()
    ]


DayMetadata = dict[str, dict]  # per table the step wrote, the figures of one day


def _redacted(metadata: dict) -> dict:
    """A day's metadata as the UI and the event log show it: its tables of findings and episodes hold agent text."""
    patterns = CONFIG.policies.secret_patterns

    def shown(value: Any) -> Any:
        if isinstance(value, str):
            return redact(value, patterns)
        if isinstance(value, dg.MarkdownMetadataValue) and value.md_str:
            return dg.MetadataValue.md(redact(value.md_str, patterns))
        if isinstance(value, dg.JsonMetadataValue) and value.data is not None:
            return dg.MetadataValue.json(redact_tree(value.data, patterns))
        return value

    return {key: shown(value) for key, value in metadata.items()}


def _each_day(
    context: dg.AssetExecutionContext, work: Callable[[date], DayMetadata], narrowed_to: str | None = None
) -> list[DayMetadata]:
    """Run `work` for each day in order; each table's metadata of a day goes on that table's partition only.

    A range (a backfill, the demo) is one run, and Dagster copies a step's own metadata onto every
    partition it materializes: partition-scoped metadata is what keeps each day's figures its own. The steps of a run
    narrowed to one agent (`narrowed_to`, run --agent) that count that agent's rows alone say so in their metadata.
    """
    per_day = []
    for day in partition_days(context):
        by_table = work(day)
        for name, metadata in by_table.items():
            shown = _redacted({**metadata, **({"narrowed_to_agent": narrowed_to} if narrowed_to else {})})
            context.add_asset_metadata(shown, asset_key=name, partition_key=day.isoformat())
            context.log.info(f"{name} {day}: {shown}")
        per_day.append(by_table)
    return per_day


def _retried(context: dg.AssetExecutionContext, day: date, gateway: Gateway) -> dict[str, int]:
    """The day's calls the gateway answered only after retries, which the SDK makes silently: no table has a column
    for them, so the step's metadata counts them (`eval-pipeline run` sums it) and its log warns of them."""
    if gateway.usage.retried:
        context.log.warning(
            f"{day}: {gateway.usage.retried} of {gateway.usage.calls} calls to {gateway.model} answered only after retries"
        )
    return {"llm_calls_retried": gateway.usage.retried}


def _materialized(context: dg.AssetExecutionContext, metadata: dict | None = None) -> Iterator[dg.MaterializeResult]:
    """The step's result for every table it wrote; `metadata` is about the whole run, not a day."""
    for key in context.selected_asset_keys:
        yield dg.MaterializeResult(asset_key=key, metadata=metadata)


# How long a step's one connection serves a range's days in a row before another process waiting for the file gets a turn
HELD_SECONDS = 2.0


def _each_day_writing(
    context: dg.AssetExecutionContext,
    warehouse: Warehouse,
    work: Callable[[date], DayMetadata],
    narrowed_to: str | None = None,
    *,
    one_connection: bool = True,
) -> list[DayMetadata]:
    """`_each_day` of a step that writes the warehouse: the whole day again when a lake's other writer committed first.
    A day's reads and writes share one connection unless it waits on a source or an LLM in between (the file's lock
    would be held meanwhile); those of a range's days in a row share it too, for up to HELD_SECONDS (`Warehouse.held`)."""

    def run(day: date) -> DayMetadata:
        return warehouse.rerun_on_conflict(f"{work.__name__} of {day}", lambda: work(day), one_connection=one_connection)

    if not one_connection:
        return _each_day(context, run, narrowed_to)
    with warehouse.held(HELD_SECONDS) as between:

        def after_a_turn(day: date) -> DayMetadata:
            between()  # before a day, not after one: a run of one day never closes and opens the file again for nothing
            return run(day)

        return _each_day(context, after_a_turn, narrowed_to)


@dg.asset(
    **_COMMON,
    code_version=_code_version("capture"),
    description="Runs each configured agent on the case set, k trials per case, as the day's own episodes. Every run "
    "is kept beside the warehouse with its id and label; a day's stored runs are reused unless `--recapture` adds "
    "one. Off without `[capture] case_set`.",
)
def capture(context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource):
    cfg = eval_config.load()
    if not cfg.capture.case_set:
        return dg.MaterializeResult(metadata={"capture": "off: no [capture] case_set in the config"})
    cases = eval_config.case_set(cfg) or []
    settings = cfg.capture
    chosen = [spec for spec in settings.capture_agents if config.agent_id in (None, spec.agent_id)]
    try:
        agents = [(spec, capture_agent(spec, eval_config.relative)) for spec in chosen]
    except SchemaError as exc:
        raise dg.Failure(str(exc)) from None
    directory = captures_directory(warehouse.get().shared_directory)
    grader, timeout = anchored(settings.grader, eval_config.relative), settings.grader_timeout_seconds
    revision = source_revision(eval_config.relative("."))
    run_id = context.run.run_id.split("-")[0]  # one id for every agent and day this Dagster run captures

    def run_day(day: date) -> DayMetadata:
        references: dict[str, dict] | None = None  # asked once a day, only when an agent runs
        counts = {"episodes": 0, "runs_captured": 0, "runs_reused": 0, "timeout": 0, "failure": 0}
        for spec, agent in agents:
            stored = stored_runs(directory, day, spec.agent_id)
            if stored and not config.recapture:
                counts["runs_reused"] += len(stored)
                counts["episodes"] += sum(sum(1 for _ in path.open()) for path in stored)
                continue
            if references is None:
                references = (
                    reference_verdicts(grader, cases, timeout, directory / "references" / day.isoformat()) if grader else {}
                )
            run = CaptureRun(run_id, run_label(spec, revision, config.label))
            workdir = directory / "runs" / day.isoformat() / directory_name(spec.agent_id) / run_id
            runs = run_all(agent, cases, config.trials or settings.trials, workdir)
            episodes = list(captured_episodes(runs, spec.agent_id, day, grader, timeout, references, run))
            write_capture(agent_directory(directory, day, spec.agent_id) / f"{run_id}.jsonl", episodes)
            statuses = pd.Series([e["status"] for e in episodes], dtype=object).value_counts()
            counts |= {s: counts[s] + int(statuses.get(s, 0)) for s in ("timeout", "failure")}
            counts |= {"episodes": counts["episodes"] + len(episodes), "runs_captured": counts["runs_captured"] + 1}
        untrusted = sum(reference_failure(verdict) is not None for verdict in (references or {}).values())
        return {"capture": {**counts, **({"references_failed": untrusted} if grader and references is not None else {})}}

    _each_day(context, run_day, config.agent_id)
    labels = {spec.agent_id: run_label(spec, revision, config.label) for spec in chosen}
    return dg.MaterializeResult(
        metadata={"cases": len(cases), "agents": ", ".join(labels), "labels": dg.MetadataValue.json(labels)}
    )


@dg.multi_asset(
    name="episodes",
    **_PARTITIONED,
    pool=WAREHOUSE_POOL,
    specs=_tables(
        _code_version("episodes"),
        ["capture"],
        {
            "episodes": "Canonical episodes of the day, from the source and the day's capture.",
            "episode_steps": "Every LLM and tool call of the day's episodes, in order.",
            "quarantine": "The day's records that were rejected, with their location and reason.",
        },
    ),
    description="Reads the day's records from the source and the capture: episodes, their steps, and what was rejected.",
)
def episodes(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    episode_source: EpisodeSourceResource,
    eval_config: EvalConfigResource,
) -> Iterator[dg.MaterializeResult]:
    cfg = eval_config.load()
    source, wh = episode_source.open(cfg), warehouse.get()
    captures = captures_directory(wh.shared_directory)
    undated_day = date.fromisoformat(config.undated_day) if config.undated_day else None

    def load(day: date) -> DayMetadata:
        def records() -> Iterator[RawRecords]:
            return chain(source.records_for(day, undated_day), captured_records(captures, day))

        counts = load_episodes(wh, day, records, config.agent_id, config.model, config.limit)
        agents_read = {AGENTS_READ: dg.MetadataValue.json(list(counts.agents_read))} if config.agent_id else {}
        return {
            "episodes": {"records_read": counts.records_read, "dagster/row_count": counts.episodes, **agents_read},
            "episode_steps": {"dagster/row_count": counts.steps},
            "quarantine": {"records_read": counts.records_read, "dagster/row_count": counts.quarantined},
        }

    # files are read as the day is written, a store's answer before its transaction opens (`load_episodes`): the
    # warehouse is held across a range's days only when no day waits on the network
    _each_day_writing(context, wh, load, config.agent_id, one_connection=episode_source.local)
    yield from _materialized(context)


@dg.asset(
    **_COMMON,
    pool=WAREHOUSE_POOL,
    code_version=_code_version("baselines"),
    deps=["episodes"],
    description="The episode each (agent, task) is compared with, valid from a day on.",
)
def baselines(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    episode_source: EpisodeSourceResource,
    eval_config: EvalConfigResource,
) -> dg.MaterializeResult:
    wait_for_earlier_days(context)
    cfg, wh = eval_config.load(), warehouse.get()
    policy, agent = cfg.baseline.policy, config.agent_id

    def establish(day: date) -> DayMetadata:
        earlier = days_to_look_back(wh, day, cfg.baseline.lookback_days, agent)
        if earlier:  # a first night, or a gap: the source may know runs of these tasks the warehouse does not
            source = episode_source.open(cfg)
            history = ((d, source.records_for(d)) for d in earlier)
            from_history = write_history_baselines(wh, day, history, policy, agent)
        else:
            from_history = 0
        from_runs = write_baselines(wh, day, policy, agent)
        return {"baselines": {"dagster/row_count": from_runs + from_history, "from_history": from_history,
                              "days_looked_back": len(earlier)}}  # fmt: skip

    _each_day_writing(context, wh, establish, config.agent_id, one_connection=episode_source.local)  # as `episodes`
    return dg.MaterializeResult(metadata={"policy": policy, "lookback_days": cfg.baseline.lookback_days})


@dg.asset(
    **_COMMON,
    code_version=f"{_code_version('replays')}-{SETTINGS.replay_mode}",
    deps=["episodes", "episode_steps"],
    pool=LLM_POOL,
    description="One candidate run per finished episode (dry: the recording itself; live: reused from `llm_cache` "
    "where it holds the same replay, unless the run says `no_cache`).",
)
def replays(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    replay: ReplayResource,
    eval_config: EvalConfigResource,
) -> dg.MaterializeResult:
    wh = warehouse.get()
    if replay.mode == "dry":

        def dry(day: date) -> DayMetadata:
            return {"replays": {"dagster/row_count": write_dry_replays(wh, day, config.agent_id)}}

        _each_day_writing(context, wh, dry, config.agent_id)
        return dg.MaterializeResult(metadata={"mode": "dry"})
    if replay.mode != "live":
        raise dg.Failure(f"EVAL_REPLAY_MODE must be dry or live, not {replay.mode!r}")
    cfg = eval_config.load()
    price = cfg.prices.get(replay.candidate_model)

    def live(day: date) -> DayMetadata:
        recordings = recordings_from_steps(recorded_steps(wh, day, config.agent_id))
        gateway = replay.gateway(cfg.gateway, price)
        outcome = replay_all(gateway, recordings, price, None if config.no_cache else lambda keys: cached_answers(wh, keys))
        replayed = pd.DataFrame([asdict(r) for r in outcome.replays], columns=LIVE_REPLAY_COLUMNS)
        write_live_replays(wh, day, replayed.assign(partition_date=day, mode="live"), outcome.new_cache, config.agent_id)
        statuses = replayed["status"].value_counts()
        return {
            "replays": {
                "dagster/row_count": len(replayed),
                "reused_from_cache": outcome.reused,
                "called": outcome.called,
                "diverged": int(statuses.get("diverged", 0)),
                "failed": int(statuses.get("failure", 0)),
                "llm_calls": gateway.usage.calls,
                **_retried(context, day, gateway),
                "tokens": gateway.usage.tokens.total,
                "cost_usd": gateway.usage.cost_usd if price else None,
            }
        }

    _each_day_writing(context, wh, live, config.agent_id, one_connection=False)
    return dg.MaterializeResult(metadata={"mode": "live", "candidate_model": replay.candidate_model})


@dg.multi_asset(
    name="judgements",
    **_PARTITIONED,
    pool=LLM_POOL,
    specs=_tables(
        f"{_code_version('judgements')}-{os.environ.get('EVAL_JUDGE_MODEL', 'off')}",
        ["replays", "episode_steps", "baselines"],
        {
            "judgements": "The LLM judge's rubric verdicts (1-5 with reasoning) of each replay.",
            "pairwise_judgements": "The LLM judge's comparison of each answer with its baseline's answer.",
        },
    ),
    description="Asks the LLM judge (answers are cached in `llm_cache`); skipped, and said so, when it is off.",
)
def judgements(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    eval_config: EvalConfigResource,
    judge: JudgeResource,
) -> Iterator[dg.MaterializeResult]:
    if judge.off_because:
        context.log.info(judge.off_because)
        yield from _materialized(context, {"judge": judge.off_because})
        return
    cfg, wh = eval_config.load(), warehouse.get()
    rubrics = configured_rubrics(cfg.judge.rubrics, cfg.judge.custom)

    def judge_day(day: date) -> DayMetadata:
        gateway = judge.gateway(cfg)  # one budget for the day's parts
        stamp = {"partition_date": day, "config_version": cfg.version}
        tally, calls, cache_hits = JudgeTally(), 0, 0
        with JudgementSpool(wh) as spool:
            for part, candidates in enumerate(judge_inputs_in_parts(wh, day, cfg.baseline.policy, config.agent_id)):
                asking = gateway.renewed() if part else gateway
                outcome = judge_partition(
                    asking, candidates, rubrics, lambda keys: cached_answers(wh, keys), pairwise=cfg.judge.pairwise
                )
                spool.add(outcome.rubrics.assign(**stamp), outcome.pairwise.assign(**stamp), outcome.new_cache)
                tally += judge_tally(outcome.rubrics, outcome.pairwise)
                calls, cache_hits = calls + outcome.calls, cache_hits + outcome.cache_hits
            spool.write(day, config.agent_id)
        return {
            "judgements": {"llm_calls": calls, **_retried(context, day, gateway), "cache_hits": cache_hits,
                           **tally.summary(), "dagster/row_count": tally.statuses.total()},
            "pairwise_judgements": {"dagster/row_count": tally.pair_statuses.total()},
        }  # fmt: skip

    _each_day_writing(context, wh, judge_day, config.agent_id, one_connection=False)
    yield from _materialized(context, {"judge_model": judge.model, "rubrics": ", ".join(r.name for r in rubrics)})


@dg.multi_asset(
    name="assertions",
    **_PARTITIONED,
    pool=WAREHOUSE_POOL,
    specs=_tables(
        _code_version("assertions"),
        ["replays", "episodes", "episode_steps"],
        {
            "assertions": "Each expectation of an episode's case, passed or not (episodes that have a case).",
            "issues": "What the deterministic checks found in each episode, with its severity.",
        },
    ),
    description="Checks each episode against its case's assertions and the deterministic checks.",
)
def assertions(
    context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource
) -> Iterator[dg.MaterializeResult]:
    cfg, wh = eval_config.load(), warehouse.get()
    cases = eval_config.cases(cfg)
    run_checks = eval_config.checks(cfg, config.checks)

    def assess_day(day: date) -> DayMetadata:
        screen = reading(cases, cfg.checks, run_checks)
        outcome = assess(check_inputs(wh, day, config.agent_id, screen), cases, cfg.checks, run_checks, screen)
        stamp = {"partition_date": day, "config_version": cfg.version}
        write_checks(wh, day, outcome.assertions.assign(**stamp), outcome.issues.assign(**stamp), config.agent_id)
        with_case = outcome.assertions.groupby("episode_id")["passed"].all()
        issues = outcome.issues
        by_check = issues.groupby(["check", "severity"]).size().rename("issues").reset_index() if len(issues) else issues
        return {
            "assertions": {
                "episodes_with_case": len(with_case),
                "cases_passed": int(with_case.sum()),
                "assertions_failed": int((~outcome.assertions["passed"].astype(bool)).sum()),
                "dagster/row_count": len(outcome.assertions),
            },
            "issues": {"issues_by_check": _md(by_check, 30), "dagster/row_count": len(issues)},
        }

    _each_day_writing(context, wh, assess_day, config.agent_id)
    yield from _materialized(context, {"cases_file": cfg.cases.path or "none", "checks": ", ".join(c.name for c in run_checks)})


_WORST_SHOWN = ["episode_id", "agent_id", "weighted_score", "verdict_reason"]
# What a day's findings materialization shows and names of them (the instance keeps every run's metadata, and a day of a
# million episodes has tens of thousands of findings: 4 MiB of ids); the warehouse's `findings` holds every one
FINDINGS_SHOWN, FINDINGS_NAMED = 20, 100


@dg.asset(
    **_COMMON,
    pool=WAREHOUSE_POOL,
    code_version=_code_version("scores"),
    deps=["replays", "episodes", "baselines", "judgements", "assertions", "issues"],
    check_specs=checks.SCORE_CHECKS,
    description="One row per finished episode: every registered dimension, the weighted score, and the episode's one "
    "verdict (passed, and why not).",
)
def scores(context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource):
    cfg, wh = eval_config.load(), warehouse.get()
    tally = checks.ScoreTally()

    def score(day: date) -> DayMetadata:
        verdicts, lowest = VerdictCounts(0, 0, 0, 0, 0), []

        def count(records: pd.DataFrame) -> None:
            nonlocal verdicts
            tally.add(records)
            verdicts += VerdictCounts.of(records)
            lowest.append(records.loc[records["weighted_score"].notna(), _WORST_SHOWN].nsmallest(10, "weighted_score"))

        def score_part(inputs: pd.DataFrame, issues: pd.DataFrame) -> pd.DataFrame:
            records = score_records(inputs, issues, cfg)
            count(records)
            return records

        rows = write_scores(wh, day, cfg.baseline.policy, config.agent_id, score_part)
        if config.agent_id:  # the counts and the checks speak of the day as the warehouse holds it, as the report does
            for others in other_agents_rows(wh, "scores", day, config.agent_id):
                count(others)
                rows += len(others)
        return {
            "scores": {
                "dagster/row_count": rows,
                "passed": verdicts.passed,
                "failed": verdicts.failed,
                "without_verdict": verdicts.without_verdict,
                "without_baseline": verdicts.without_baseline,
                "worst_episodes": _md(pd.concat(lowest).sort_values(["weighted_score", "episode_id"]).head(10)),
            }
        }

    _each_day_writing(context, wh, score)  # the whole day's figures, whichever agent it ran
    yield dg.MaterializeResult(metadata={"config_version": cfg.version})
    yield from tally.results()


@dg.asset(
    **_COMMON,
    pool=WAREHOUSE_POOL,
    code_version=_code_version("regression_findings"),
    deps=["scores", "issues", "episodes", "quarantine"],
    check_specs=[checks.NO_CRITICAL_REGRESSIONS],
    description="Threshold breaches per episode and per agent (writes the `findings` table).",
)
def regression_findings(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    eval_config: EvalConfigResource,
    alerts: AlertsResource,
    viewer: ViewerResource,
):
    wait_for_earlier_days(context)
    cfg, wh, outbox = eval_config.load(), warehouse.get(), alerts.outbox(warehouse)
    gated: dict[date, tuple[int, int]] = {}  # each day's (critical, warning), every agent's: the gate judges the day

    def find(day: date) -> DayMetadata:
        today = task_summaries(wh, day, day, config.agent_id, summary_columns())
        first, last = day - timedelta(days=cfg.statistics.trailing_days), day - timedelta(days=1)
        trailing = task_summaries(wh, first, last, config.agent_id, summary_columns())
        # the source is judged whole: not by a run of one agent, nor on a day kept in part (`--model`, `--limit`)
        whole = not config.agent_id and not read_in_part(wh, day)
        counts = source_counts(wh, day, TRAILING_DAYS) if whole else None
        yesterday = read_partition(wh, "findings", day - timedelta(days=1), config.agent_id)
        scored_parts = screened_scores_in_parts(wh, day, config.agent_id, finding_screen(cfg))
        found = with_lifecycle(partition_findings(scored_parts, today, trailing, counts, day, cfg), yesterday, day)
        write_findings(wh, day, found, config.agent_id)
        # the gate and the counts speak of the day as the warehouse holds it: `run --agent` replaced one agent's only
        day_findings = read_partition(wh, "findings", day) if config.agent_id else found
        critical = int((day_findings["severity"] == "critical").sum())
        warning = int((day_findings["severity"] == "warning").sum())
        gated[day] = (critical, warning)
        # announced by the alert sensor, or by `eval-pipeline run` itself; a re-run replaces the day's batch (for one
        # agent: that agent's alerts in it), so what waits is what the findings table holds
        alerts = finding_alerts(found, context.run.run_id)
        outbox.enqueue(alerts, f"{day}-all-agents", cfg.policies.secret_patterns, config.agent_id or None)
        shown = day_findings.head(FINDINGS_SHOWN)
        episodes = [Link(e, viewer.episode(day, e)) if isinstance(e, str) else "all episodes" for e in shown["episode_id"]]
        shown = shown[["severity", "agent_id", "dimension"]].assign(episode_id=episodes, message=shown["message"])
        named = day_findings.head(FINDINGS_NAMED)[["finding_id", "severity", "agent_id", "dimension"]]
        return {
            "regression_findings": {
                "dagster/row_count": len(day_findings),
                "critical": critical,
                "warning": warning,
                "findings": _md(shown, FINDINGS_SHOWN),
                "in_viewer": dg.MetadataValue.url(viewer.day(day)),
                "finding_ids": dg.MetadataValue.json(named.astype(str).to_dict("records")),
            }
        }

    _each_day_writing(context, wh, find)  # the whole day's figures, whichever agent it ran
    yield dg.MaterializeResult()
    yield checks.no_critical_regressions(gated)


@dg.asset(
    **_COMMON,
    pool=WAREHOUSE_POOL,
    code_version=_code_version("rewards"),
    deps=["scores", "episodes", "issues"],
    description="Every configured reward of each scored episode, with its breakdown (writes `rewards`): "
    "the training signal is computed from the same scores the alerts come from, every night.",
)
def rewards(context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource):
    cfg, wh = eval_config.load(), warehouse.get()
    book = RewardBook(cfg.rewards)
    only = config.rewards or None  # `eval-pipeline reward --name`: replace only those rewards' rows
    names = only or book.names
    columns = scores_read()

    def compute(day: date) -> DayMetadata:  # always the whole day: an agent-scoped run still leaves every reward current
        episodes, rows = write_rewards(wh, day, cfg.version, lambda scored: reward_records(scored, book, names), columns, only)
        return {"rewards": {"episodes": episodes, "rewards": len(names), "dagster/row_count": rows}}

    _each_day_writing(context, wh, compute)
    return dg.MaterializeResult()


@dg.multi_asset(
    name="pass_at_k",
    **_PARTITIONED,
    pool=WAREHOUSE_POOL,
    specs=_tables(
        _code_version("pass_at_k"),
        ["scores"],
        {
            "pass_at_k": "Per agent and k: pass@k and pass^k over its tasks' repeated trials.",
            "task_trials": "Per agent and task: trials, passes and flakiness.",
        },
    ),
    description="Counts each task's repeated trials by their verdicts.",
)
def pass_at_k(
    context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource
) -> Iterator[dg.MaterializeResult]:
    cfg, wh = eval_config.load(), warehouse.get()

    def count(day: date) -> DayMetadata:
        per_task = with_flakiness(trial_counts(wh, day, config.agent_id))
        per_k = agent_pass_at_k(per_task)
        stamp = {"partition_date": day, "config_version": cfg.version}
        write_trials(wh, day, per_k.assign(**stamp), per_task.assign(**stamp), config.agent_id)
        flaky = per_task[per_task["flakiness"] > 0].sort_values("flakiness", ascending=False)
        return {
            "pass_at_k": {"max_k": int(per_k["k"].max()) if len(per_k) else 0, "dagster/row_count": len(per_k)},
            "task_trials": {"flaky_tasks": len(flaky), "flakiest_tasks": _md(flaky), "dagster/row_count": len(per_task)},
        }

    _each_day_writing(context, wh, count, config.agent_id)
    yield from _materialized(context)


_REPORT_READS = ["regression_findings", "scores", "episodes", "episode_steps", "replays", "quarantine", "judgements",
                 "pairwise_judgements", "assertions", "pass_at_k", "task_trials"]  # fmt: skip


@dg.asset(
    **_COMMON,
    pool=WAREHOUSE_POOL,
    code_version=_code_version("eval_report"),
    deps=_REPORT_READS,
    description="JSON, Markdown and HTML report files of the day (writes `reports`).",
)
def eval_report(
    context: dg.AssetExecutionContext,
    config: RunScope,
    warehouse: WarehouseResource,
    eval_config: EvalConfigResource,
    reports: ReportsResource,
    viewer: ViewerResource,
    replay: ReplayResource,
    judge: JudgeResource,
) -> dg.MaterializeResult:
    wait_for_earlier_days(context)
    cfg, wh = eval_config.load(), warehouse.get()
    notes = [f"Replay mode: {replay.mode}."] + ([f"{judge.off_because}."] if judge.off_because else [])
    case_set = eval_config.case_set(cfg)

    def run_context(*more_notes: str) -> RunContext:
        return RunContext(
            run_id=context.run.run_id,
            config_version=cfg.version,
            notes=[*notes, *more_notes],
            secret_patterns=tuple(cfg.policies.secret_patterns),
            calibration_size=cfg.cases.calibration_sample,
            balance=balance(case_set) if case_set is not None else None,
            viewer_url=viewer.base_url,
        )

    day_context = agent_context = run_context()
    if config.agent_id:
        again = f"This run evaluated agent {config.agent_id} again (run --agent)"
        day_context = run_context(f"{again}; the other agents' figures are from the runs that evaluated them last.")
        agent_context = run_context(f"{again}: this is its part of the day alone; the day's report covers every agent.")

    def report(day: date) -> DayMetadata:
        content = build_report(report_inputs(wh, day, TREND_DAYS), day_context)
        if config.agent_id:  # what `run --agent --output` hands over: what the run evaluated, as its exit code counts it
            of_agent = build_report(report_inputs(wh, day, TREND_DAYS, config.agent_id), agent_context)
            write_report_json(of_agent, agent_report_path(Path(reports.directory), context.run.run_id, day))
        paths = write_report_files(content, Path(reports.directory))
        write_report_row(wh, day, paths, content)
        summary = content["summary"]
        return {
            "eval_report": {
                "critical_alerts": summary["critical_alerts"],
                "warning_alerts": summary["warning_alerts"],
                "episodes": summary["total_episodes"],
                **{key: summary[key] for key in ("passed", "failed", "without_verdict")},
                "failed_live_replays": summary["replays"]["failed"],
                "failed_judge_verdicts": summary["judge_failed"],
                "html_report": dg.MetadataValue.url(viewer.report(paths["html"])),
                "in_viewer": dg.MetadataValue.url(viewer.day(day)),
                "html_path": dg.MetadataValue.path(str(paths["html"])),
                "markdown_path": dg.MetadataValue.path(str(paths["md"])),
                "json_path": dg.MetadataValue.path(str(paths["json"])),
                "summary": dg.MetadataValue.md(summary_markdown(content)),
                "dagster/row_count": 1,
            }
        }

    _each_day_writing(context, wh, report)  # the whole day's figures, whichever agent it ran
    return dg.MaterializeResult()
