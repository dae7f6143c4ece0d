"""The evaluation graph, one daily partition at a time: read resources, call the core, write."""


import os
from datetime import timedelta
from pathlib import Path

import dagster as dg
import pandas as pd

from eval_pipeline.defs.partitions import daily_partitions, partition_day
from eval_pipeline.defs.pipeline import checks
from eval_pipeline.defs.resources import (
    EpisodeSourceResource,
    EvalConfigResource,
    ReplayResource,
    ReportsResource,
    RunScope,
    WarehouseResource,
)
from eval_pipeline.regression.findings import aggregate_findings, agent_aggregates, episode_findings, passed
from eval_pipeline.reports.daily import build_report, write_report_files
from eval_pipeline.reports.markdown import table
from eval_pipeline.scoring.episodes import SCORE_RECORD_COLUMNS, score_episodes
from eval_pipeline.warehouse.baselines import scoring_input, write_baselines
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline.warehouse.partitions import read_partition, write_partition
from eval_pipeline.warehouse.replays import write_dry_replays
from eval_pipeline.warehouse.reports import report_inputs, write_report_row

_COMMON = {"partitions_def": daily_partitions, "group_name": "evaluation", "kinds": {"duckdb"}}


def _table_md(frame: pd.DataFrame, limit: int = 10) -> dg.MetadataValue:
    rows = frame.head(limit).itertuples(index=False)
    return dg.MetadataValue.md("\n".join(table(list(frame.columns), rows)) if len(frame) else "_none_")


@dg.asset(**_COMMON, description="Canonical episodes of the day, their steps, and quarantined records.")
def episodes(
    context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, episode_source: EpisodeSourceResource
) -> dg.MaterializeResult:
    day = partition_day(context)
    counts = load_episodes(warehouse.get(), day, episode_source.open().records_for(day), config.agent_id)
    context.log.info(f"{day}: {counts.episodes} episodes, {counts.quarantined} quarantined of {counts.records_read} records read")
    return dg.MaterializeResult(
        metadata={
            "episodes": counts.episodes,
            "steps": counts.steps,
            "quarantined": counts.quarantined,
            "records_read": counts.records_read,
            "dagster/row_count": counts.episodes,
        }
    )


@dg.asset(**_COMMON, deps=[episodes], description="The episode each (agent, task) is compared with, valid from a day on.")
def baselines(
    context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource
) -> dg.MaterializeResult:
    policy = eval_config.load().baseline.policy
    added = write_baselines(warehouse.get(), partition_day(context), policy, config.agent_id)
    return dg.MaterializeResult(metadata={"baselines_contributed": added, "policy": policy})


@dg.asset(**_COMMON, deps=[episodes], description="One candidate run per finished episode (dry: the recording itself).")
def replays(
    context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, replay: ReplayResource
) -> dg.MaterializeResult:
    if replay.mode != "dry":
        raise dg.Failure(f"EVAL_REPLAY_MODE={replay.mode} is not available yet; only 'dry' replay is implemented")
    written = write_dry_replays(warehouse.get(), partition_day(context), config.agent_id)
    return dg.MaterializeResult(metadata={"replays": written, "mode": replay.mode, "dagster/row_count": written})


@dg.asset(
    **_COMMON,
    deps=[replays, baselines],
    check_specs=checks.SCORE_CHECKS,
    description="One row per finished episode: five dimensions, weighted score, pass/fail.",
)
def scores(context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource):
    day = partition_day(context)
    cfg = eval_config.load()
    scored = score_episodes(scoring_input(warehouse.get(), day, cfg.baseline.policy, config.agent_id), cfg)
    scored["passed"] = passed(scored, cfg)
    scored["config_version"] = cfg.version
    scored["scored_at"] = pd.Timestamp.now(tz="UTC")
    records = scored[SCORE_RECORD_COLUMNS + ["passed", "config_version", "scored_at"]]
    write_partition(warehouse.get(), "scores", day, records, config.agent_id)
    graded = records[records["weighted_score"].notna()]
    worst = graded.nsmallest(10, "weighted_score")[["episode_id", "agent_id", "weighted_score", "correctness", "safety"]]
    yield dg.MaterializeResult(
        metadata={
            "scored": len(records),
            "without_baseline": int(records["baseline_episode_id"].isna().sum()),
            "pass_rate": float((graded["passed"] == True).mean()) if len(graded) else 0.0,  # noqa: E712
            "mean_weighted_score": float(graded["weighted_score"].mean()) if len(graded) else 0.0,
            "worst_episodes": _table_md(worst),
            "config_version": cfg.version,
            "dagster/row_count": len(records),
        }
    )
    yield from checks.score_check_results(records)


@dg.asset(
    **_COMMON,
    deps=[scores],
    check_specs=[checks.NO_CRITICAL_REGRESSIONS],
    description="Threshold breaches per episode and per agent (writes the `findings` table).",
)
def regression_findings(context: dg.AssetExecutionContext, config: RunScope, warehouse: WarehouseResource, eval_config: EvalConfigResource):
    day = partition_day(context)
    cfg = eval_config.load()
    wh = warehouse.get()
    today = read_partition(wh, "scores", day, config.agent_id)
    previous = agent_aggregates(read_partition(wh, "scores", day - timedelta(days=1), config.agent_id))
    found = pd.concat([episode_findings(today, day, cfg), aggregate_findings(today, previous, day, cfg)], ignore_index=True)
    found["created_at"] = pd.Timestamp.now(tz="UTC")
    write_partition(wh, "findings", day, found, config.agent_id)
    by_severity = found["severity"].value_counts()
    yield dg.MaterializeResult(
        metadata={
            "critical": int(by_severity.get("critical", 0)),
            "warning": int(by_severity.get("warning", 0)),
            "findings": _table_md(found[["severity", "agent_id", "dimension", "episode_id", "message"]], 20),
            "finding_ids": dg.MetadataValue.json(found[["finding_id", "severity", "agent_id", "dimension"]].to_dict("records")),
            "dagster/row_count": len(found),
        }
    )
    yield checks.no_critical_regressions(found)


@dg.asset(**_COMMON, deps=[regression_findings], description="JSON and Markdown report files of the day (writes `reports`).")
def eval_report(
    context: dg.AssetExecutionContext, warehouse: WarehouseResource, eval_config: EvalConfigResource, reports: ReportsResource, replay: ReplayResource
) -> dg.MaterializeResult:
    day = partition_day(context)
    cfg = eval_config.load()
    inputs = report_inputs(warehouse.get(), day)
    notes = [f"Replay mode: {replay.mode}."]
    if not os.environ.get("OPENAI_BASE_URL"):
        notes.append("LLM judge and live replay are off: OPENAI_BASE_URL is not set.")
    report = build_report(day, **inputs, run_id=context.run.run_id, config_version=cfg.version, notes=notes)
    json_path, markdown_path = write_report_files(report, Path(reports.directory))
    write_report_row(warehouse.get(), day, json_path, markdown_path, report)
    summary = report["summary"]
    return dg.MaterializeResult(
        metadata={
            "markdown_path": dg.MetadataValue.path(str(markdown_path)),
            "json_path": dg.MetadataValue.path(str(json_path)),
            "pass_rate": summary["pass_rate"] or 0.0,
            "critical_alerts": summary["critical_alerts"],
            "warning_alerts": summary["warning_alerts"],
            "summary": dg.MetadataValue.md(markdown_path.read_text().split("## Episode Scores")[0]),
        }
    )
