"""The whole graph for one partition: what `eval-pipeline run`, schedules and backfills launch."""

import dagster as dg

EVALUATE_JOB = "evaluate_partition"
# The `episodes` step's metadata under `run --agent`: every agent the day's records hold, which `eval-pipeline run`
# names when its agent has none (the step wrote the one agent's episodes only)
AGENTS_READ = "agents_read"

evaluate_partition = dg.define_asset_job(
    EVALUATE_JOB,
    selection=dg.AssetSelection.groups("evaluation"),
    description="Fetch, replay, score, find regressions and report one day.",
)
