"""The whole graph for one partition: what `eval-pipeline run`, schedules and backfills launch."""

import dagster as dg

EVALUATE_JOB = "evaluate_partition"

evaluate_partition = dg.define_asset_job(
    EVALUATE_JOB,
    selection=dg.AssetSelection.groups("evaluation"),
    description="Fetch, replay, score, find regressions and report one day.",
)
