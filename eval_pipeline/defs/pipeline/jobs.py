"""The whole graph for one partition: what `eval-pipeline run`, schedules and backfills launch."""

import dagster as dg

from eval_pipeline.defs.partitions import daily_partitions

EVALUATE_JOB = "evaluate_partition"

evaluate_partition = dg.define_asset_job(
    EVALUATE_JOB,
    selection=dg.AssetSelection.groups("evaluation"),
    partitions_def=daily_partitions,
    description="Fetch, replay, score, find regressions and report one day.",
)
