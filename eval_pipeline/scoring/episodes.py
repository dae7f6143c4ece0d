"""Score a partition's candidates against their baselines: one row per episode."""

from __future__ import annotations

import pandas as pd

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.findings import with_verdicts
from eval_pipeline.scoring import dimensions as dim
from eval_pipeline.scoring.checks import SEVERITIES, grades, issue_scores
from eval_pipeline.scoring.dimensions import dimensions
from eval_pipeline.scoring.weighted import units, weighted_score

_IDENTITY = ["episode_id", "partition_date", "agent_id", "task_id", "baseline_episode_id", "baseline_partition_date", "mode",
             "status", "superseded"]  # fmt: skip
_VERDICT = ["weighted_score", "passed", "verdict_reason", "critical_findings"]
_EVIDENCE = ["case_passed", "failed_assertions", "issue_score", "issue_grade", "baseline_status", "total_cost_usd",
             "baseline_total_cost_usd", "total_duration_ms", "baseline_total_duration_ms", "tools", "baseline_tools",
             "step_count", "error_steps", "baseline_step_count", "baseline_error_steps", "leaked_secret",
             "denied_tools_called", "cost_zero_baseline", "latency_zero_baseline"]  # fmt: skip


def score_record_columns() -> list[str]:
    """What a `scores` row keeps: identity, every registered dimension, the verdict, and the evidence behind them."""
    return [*_IDENTITY, *(d.column for d in dimensions()), *_VERDICT, *_EVIDENCE]


def score_episodes(frame: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """The scoring frame plus every registered dimension, the weighted score and the evidence behind them.

    Without a baseline, deltas and tool match stay NULL, and so do correctness and the weighted
    score unless a case decides correctness (never a fake perfect score); safety and the checks'
    issue score (0-100, with a letter grade) are computed unless the live replay failed (no run: none of them).
    """
    scored = frame.copy()
    if "superseded" not in scored:  # a frame built without capture runs has no superseded run
        scored["superseded"] = False
    scored["cost_zero_baseline"] = dim.delta_pct(frame, "total_cost_usd")[1]
    scored["latency_zero_baseline"] = dim.delta_pct(frame, "total_duration_ms")[1]
    scored["leaked_secret"] = dim.leaked_secrets(frame["final_output"], config.policies.secret_patterns)
    scored["denied_tools_called"] = dim.denied_tools_called(frame, config.denied_tools_for)
    for dimension in dimensions():
        scored[dimension.column] = dimension.values(scored)
    weighed = weighted_score(units({d.name: scored[d.column] for d in dimensions()}), config.weights)
    scored["weighted_score"] = weighed.where(dim.has_baseline(frame) | dim.has_case(frame))
    scored["issue_score"] = issue_scores({s: frame[f"{s}_issues"].fillna(0).to_numpy(dtype=float) for s in SEVERITIES})
    scored["issue_grade"] = grades(scored["issue_score"].to_numpy())
    unreplayed = dim.replay_failed(frame)
    if unreplayed.any():  # no candidate run: nothing to compare or check, nothing to decide a verdict (case, reward)
        unknown = [*(d.column for d in dimensions()), "weighted_score", "case_score", "case_passed", "recorded_reward",
                   "issue_score", "issue_grade"]  # fmt: skip
        scored[unknown] = scored[unknown].mask(unreplayed)
    return scored


def score_records(frame: pd.DataFrame, issues: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """A partition's `scores` rows: dimensions, the episode verdict, evidence and the config version.

    `issues`: the partition's check issues (`issues` rows), some of which are findings that fail an episode.
    """
    scored = with_verdicts(score_episodes(frame, config), issues, config)
    scored["config_version"] = config.version
    return scored[[*score_record_columns(), "config_version"]]
