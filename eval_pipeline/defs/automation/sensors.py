"""Runs for days whose episodes arrived or changed, late arrivals for older days included."""

import json
from datetime import UTC, datetime

import dagster as dg

from eval_pipeline.defs.loaded import CONFIG
from eval_pipeline.defs.pipeline.jobs import evaluate_partition
from eval_pipeline.defs.resources import EpisodeSourceResource
from eval_pipeline.episodes.changes import day_fingerprints, days_to_evaluate


@dg.sensor(
    job=evaluate_partition,
    minimum_interval_seconds=120,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Polls the episode source (never the warehouse) and evaluates each finished day that changed.",
)
def new_episodes(context: dg.SensorEvaluationContext, episode_source: EpisodeSourceResource):
    today = datetime.now(UTC).date()
    fingerprints = day_fingerprints(episode_source.open(CONFIG), today, CONFIG.automation.store_window_days)
    seen = json.loads(context.cursor) if context.cursor else None
    days = days_to_evaluate(fingerprints, seen, today, CONFIG.automation.first_tick_lookback_days)
    # the cursor moves only when this tick returns: a failed tick is seen again by the next one
    context.update_cursor(json.dumps(fingerprints, sort_keys=True))
    if not days:
        return dg.SkipReason(f"no finished day changed among {len(fingerprints)} watched")
    return [
        dg.RunRequest(
            run_key=f"episodes-{day}-{fingerprints[day]}",
            partition_key=day,
            tags={"eval_pipeline/launched_by": "new_episodes"},
        )
        for day in days
    ]
