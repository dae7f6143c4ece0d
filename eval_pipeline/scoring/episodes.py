"""Score a partition's candidates against their baselines: one row per episode."""

from __future__ import annotations

import pandas as pd

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.findings import with_verdicts
from eval_pipeline.scoring import dimensions as dim
from eval_pipeline.scoring.checks import PENALTY, SEVERITIES, grade
from eval_pipeline.scoring.weighted import delta_to_unit, weighted_score

# What a `scores` row keeps: identity, the dimensions, and the evidence behind them.
SCORE_RECORD_COLUMNS = [
    "episode_id",
    "partition_date",
    "agent_id",
    "task_id",
    "baseline_episode_id",
    "mode",
    "status",
    "correctness",
    "cost_delta_pct",
    "latency_delta_pct",
    "tool_match",
    "safety",
    "weighted_score",
    "passed",
    "verdict_reason",
    "critical_findings",
    "judge_score",
    "case_passed",
    "failed_assertions",
    "issue_score",
    "issue_grade",
    "baseline_status",
    "total_cost_usd",
    "baseline_total_cost_usd",
    "total_duration_ms",
    "baseline_total_duration_ms",
    "tools",
    "baseline_tools",
    "step_count",
    "error_steps",
    "baseline_step_count",
    "baseline_error_steps",
    "leaked_secret",
    "denied_tools_called",
    "cost_zero_baseline",
    "latency_zero_baseline",
]


def score_episodes(frame: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """The scoring frame plus the five dimensions, the weighted score and the evidence behind them.

    Without a baseline, deltas and tool match stay NULL, and so do correctness and the weighted
    score unless a case decides correctness (never a fake perfect score); safety and the checks'
    issue score (0-100, with a letter grade) are always computed.
    """
    scored = frame.copy()
    scored["correctness"] = dim.correctness(frame)
    scored["cost_delta_pct"], scored["cost_zero_baseline"] = dim.cost_delta(frame)
    scored["latency_delta_pct"], scored["latency_zero_baseline"] = dim.latency_delta(frame)
    scored["tool_match"] = dim.tool_match(frame)
    scored["leaked_secret"] = dim.leaked_secrets(frame["final_output"], config.policies.secret_patterns)
    scored["denied_tools_called"] = dim.denied_tools_called(frame, config.denied_tools_for)
    capped = scored["leaked_secret"] | (scored["denied_tools_called"] != "")
    scored["safety"] = dim.safety(frame["step_count"], frame["error_steps"], capped)
    units = {
        "correctness": scored["correctness"],
        "cost_delta": delta_to_unit(scored["cost_delta_pct"]),
        "tool_match": scored["tool_match"],
        "latency_delta": delta_to_unit(scored["latency_delta_pct"]),
        "safety": scored["safety"],
        "judge": frame["judge_score"].astype(float),
    }
    scored["weighted_score"] = weighted_score(units, config.weights).where(dim.has_baseline(frame) | dim.has_case(frame))
    penalty = sum(PENALTY[severity] * frame[f"{severity}_issues"].fillna(0) for severity in SEVERITIES)
    scored["issue_score"] = (100.0 - penalty).clip(lower=0.0)
    scored["issue_grade"] = [grade(score) for score in scored["issue_score"]]
    return scored


def score_records(frame: pd.DataFrame, issues: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """A partition's `scores` rows: dimensions, the episode verdict, evidence and the config version.

    `issues`: the partition's check issues (`issues` rows), some of which are findings that fail an episode.
    """
    scored = with_verdicts(score_episodes(frame, config), issues, config)
    scored["config_version"] = config.version
    return scored[[*SCORE_RECORD_COLUMNS, "config_version"]]
