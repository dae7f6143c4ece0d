"""Per-agent regressions that survive the noise: bootstrap CIs over tasks and McNemar for pass→fail flips.

Two comparisons per agent and partition: (a) paired against the baselines, task by task (the
deltas and 0..1 scores are already paired per episode), and (b) against the trailing partitions
(each task's figures today against its mean over the trailing days, each day weighing the same;
a task needs `min_history_days` of them). An aggregate finding
needs both an effect that crosses the dimension's threshold and evidence that it is not noise:
a confidence interval that excludes "no change", or a McNemar p-value below alpha for pass rates.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import numpy as np
import pandas as pd

from eval_pipeline.config import DIMENSION_DIRECTIONS, Direction, EvalConfig
from eval_pipeline.regression.stats import Interval, bootstrap_mean, mcnemar, seed_for

PAIRED = {  # dimension -> (scores column, the value that means "no change" against the baseline)
    "cost_delta": ("cost_delta_pct", 0.0),
    "latency_delta": ("latency_delta_pct", 0.0),
    "correctness": ("correctness", 1.0),
    "tool_match": ("tool_match", 1.0),
    "weighted_score": ("weighted_score", 1.0),
}
TRENDS = {  # trend dimension -> (scores column, the threshold dimension it is judged by)
    "cost_trend": ("total_cost_usd", "cost_delta"),
    "latency_trend": ("total_duration_ms", "latency_delta"),
    "weighted_score_trend": ("weighted_score", "weighted_score"),
}


def _fmt(dimension: str, value: float) -> str:
    return f"{value:+.1f}%" if dimension in ("cost_delta", "latency_delta") else f"{value:.2f}"


def _severity(value: float, agent_id: str, dimension: str, config: EvalConfig) -> tuple[str | None, float | None]:
    """The severity `value` breaches under the agent's thresholds (critical first), and the limit."""
    threshold = config.thresholds_for(agent_id).get(dimension)
    if threshold is None or np.isnan(value):
        return None, None
    above = DIMENSION_DIRECTIONS[dimension] is Direction.ABOVE
    for severity in ("critical", "warning"):
        limit = getattr(threshold, severity)
        if limit is not None and (value > limit if above else value < limit):
            return severity, limit
    return None, None


def _ci_text(dimension: str, ci: Interval, confidence: float) -> str:
    return f"{confidence:.0%} CI {_fmt(dimension, ci.low)} to {_fmt(dimension, ci.high)} over {ci.n} tasks"


def _finding(agent_id: str, dimension: str, severity: str, value: float, limit: float, reference: float | None,
             message: str, ci: Interval | None, p_value: float | None) -> dict:  # fmt: skip
    return {
        "agent_id": agent_id, "episode_id": None, "task_id": None, "dimension": dimension, "severity": severity,
        "value": value, "threshold": limit, "baseline_value": reference, "message": message,
        "ci_low": ci.low if ci else None, "ci_high": ci.high if ci else None, "p_value": p_value,
    }  # fmt: skip


def _paired(agent_id: str, today: pd.DataFrame, day: date, config: EvalConfig) -> Iterator[dict]:
    stats = config.statistics
    per_task = today.groupby("task_id")
    for dimension, (column, unchanged) in PAIRED.items():
        values = per_task[column].mean().dropna()
        if len(values) < stats.min_tasks:
            continue
        ci = bootstrap_mean(values.to_numpy(), resamples=stats.resamples, confidence=stats.confidence,
                            seed=seed_for(day, agent_id, dimension))  # fmt: skip
        severity, limit = _severity(ci.mean, agent_id, dimension, config)
        worse = ci.low > unchanged if DIMENSION_DIRECTIONS[dimension] is Direction.ABOVE else ci.high < unchanged
        if severity and worse:
            noun = f"mean {dimension}"
            message = (f"{noun} {_fmt(dimension, ci.mean)} vs limit {_fmt(dimension, limit)} against baselines "
                       f"({_ci_text(dimension, ci, stats.confidence)})")  # fmt: skip
            yield _finding(agent_id, dimension, severity, ci.mean, limit, unchanged, message, ci, None)
    yield from _pass_rate(agent_id, "pass_rate", today, _majority(per_task["passed"]), None, day, config)


def _majority(passed: pd.core.groupby.SeriesGroupBy) -> pd.Series:
    """Per task: True when most of its graded trials passed; tasks without a verdict left out."""
    share = passed.apply(lambda s: s.dropna().astype(float).mean())
    return (share >= 0.5).where(share.notna()).dropna().astype(bool)


def _pass_rate(agent_id: str, dimension: str, today: pd.DataFrame, now: pd.Series, before: pd.Series | None,
               day: date, config: EvalConfig) -> Iterator[dict]:  # fmt: skip
    """Pass rate: a level below the threshold, confirmed by McNemar over tasks that flipped.

    Against baselines every task passed before (a baseline is a successful run); against the
    trailing days, before is each task's majority verdict then."""
    graded = today["passed"].dropna().astype(float)
    if graded.empty or len(now) < config.statistics.min_tasks:
        return
    rate = float(graded.mean())
    severity, limit = _severity(rate, agent_id, "pass_rate", config)
    if not severity:
        return
    was = before.reindex(now.index) if before is not None else pd.Series(True, index=now.index)
    paired = was.notna()
    was, now = was[paired].astype(bool), now[paired]
    broke, fixed = int((was & ~now).sum()), int((~was & now).sum())
    p_value = mcnemar(broke, fixed)
    if p_value >= config.statistics.alpha or broke <= fixed:
        return
    against = "against baselines" if before is None else f"against the trailing {config.statistics.trailing_days} days"
    message = (f"pass rate {rate:.2f} vs limit {limit:.2f} {against} across {len(graded)} episodes; "
               f"{broke} tasks went from pass to fail, {fixed} the other way (McNemar p = {p_value:.3g})")  # fmt: skip
    yield _finding(agent_id, dimension, severity, rate, limit, None, message, None, p_value)


def _trends(agent_id: str, today: pd.DataFrame, trailing: pd.DataFrame, day: date, config: EvalConfig) -> Iterator[dict]:
    stats = config.statistics
    days_seen = trailing.groupby("task_id")["partition_date"].nunique()
    trailing = trailing[trailing["task_id"].isin(days_seen[days_seen >= stats.min_history_days].index)]
    daily = trailing.groupby(["task_id", "partition_date"])  # each trailing day weighs the same
    now, before = today.groupby("task_id"), trailing.groupby("task_id")
    for dimension, (column, judged_as) in TRENDS.items():
        current, reference = now[column].mean(), daily[column].mean().groupby("task_id").mean()
        both = current.notna() & reference.reindex(current.index).notna()
        current, reference = current[both], reference.reindex(current.index)[both]
        relative = judged_as in ("cost_delta", "latency_delta")
        if relative:
            keep = reference > 0
            change = (current[keep] - reference[keep]) / reference[keep] * 100
        else:
            change = current - reference
        if len(change) < stats.min_tasks:
            continue
        ci = bootstrap_mean(change.to_numpy(), resamples=stats.resamples, confidence=stats.confidence,
                            seed=seed_for(day, agent_id, dimension))  # fmt: skip
        level = ci.mean if relative else float(current.mean())
        severity, limit = _severity(level, agent_id, judged_as, config)
        worse = ci.low > 0 if relative else ci.high < 0
        if severity and worse:
            shown = _fmt(judged_as, ci.mean) if relative else f"{ci.mean:+.2f} to {level:.2f}"
            message = (f"{column} {shown} against the trailing {stats.trailing_days} days, limit {_fmt(judged_as, limit)} "
                       f"({_ci_text(judged_as, ci, stats.confidence)})")  # fmt: skip
            reference_value = float(reference.mean())
            yield _finding(agent_id, dimension, severity, level, limit, reference_value, message, ci, None)
    if "passed" in trailing:
        yield from _pass_rate(
            agent_id, "pass_rate_trend", today, _majority(now["passed"]), _majority(before["passed"]), day, config
        )


AGGREGATE_COLUMNS = ["agent_id", "episode_id", "task_id", "dimension", "severity", "value", "threshold", "baseline_value",
                     "message", "ci_low", "ci_high", "p_value"]  # fmt: skip


def aggregate_findings(today: pd.DataFrame, trailing: pd.DataFrame, day: date, config: EvalConfig) -> pd.DataFrame:
    """Per agent: paired-against-baselines and trailing-days regressions that clear the noise."""
    rows = []
    for agent_id, scores in today.groupby("agent_id", sort=True):
        rows += _paired(str(agent_id), scores, day, config)
        history = trailing[trailing["agent_id"] == agent_id]
        if len(history):
            rows += _trends(str(agent_id), scores, history, day, config)
    return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)
