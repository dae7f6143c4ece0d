"""Per-agent regressions that survive the noise: bootstrap CIs over tasks and McNemar for pass→fail flips.

Two comparisons per agent and partition: (a) paired against the baselines, task by task (the
deltas and 0..1 scores are already paired per episode), and (b) against the trailing partitions
(each task's figures today against its mean over the trailing days, each day weighing the same;
a task needs `min_history_days` of them). An aggregate finding
needs both an effect that crosses the dimension's threshold and evidence that it is not noise:
a confidence interval that excludes "no change", or a McNemar p-value below alpha for pass rates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import date
from functools import partial

import numpy as np
import pandas as pd

from eval_pipeline.config import EvalConfig, threshold_directions
from eval_pipeline.regression.stats import Interval, bootstrap_mean, mcnemar, mean_of, seed_for
from eval_pipeline.scoring.dimensions import Dimension, Direction, judged_dimensions, relative_delta_pct


def _paired_dimensions() -> list[Dimension]:
    return [d for d in judged_dimensions() if d.paired]


def _trend_dimensions() -> list[tuple[Dimension, str, str]]:
    """(dimension, its trend finding, the `scores` column whose trailing-days change is judged)."""
    return [(d, *d.trend) for d in judged_dimensions() if d.trend]


def _breach(value: float, agent_id: str, dimension: str, config: EvalConfig) -> tuple[str, float] | None:
    """The severity `value` breaches under the agent's thresholds (critical first), and the limit; None within them."""
    threshold = config.thresholds_for(agent_id).get(dimension)
    if threshold is None or np.isnan(value):
        return None
    above = threshold_directions()[dimension] is Direction.ABOVE
    for severity in ("critical", "warning"):
        limit = getattr(threshold, severity)
        if limit is not None and (value > limit if above else value < limit):
            return severity, limit
    return None


def _ci_text(dimension: Dimension, ci: Interval, confidence: float) -> str:
    return f"{confidence:.0%} CI {dimension.format(ci.low)} to {dimension.format(ci.high)} over {ci.n} tasks"


def _finding(agent_id: str, dimension: str, severity: str, value: float, limit: float, reference: float | None,
             message: str, ci: Interval | None, p_value: float | None) -> dict:  # fmt: skip
    return {
        "agent_id": agent_id, "episode_id": None, "task_id": None, "dimension": dimension, "severity": severity,
        "value": value, "threshold": limit, "baseline_value": reference, "message": message,
        "ci_low": ci.low if ci else None, "ci_high": ci.high if ci else None, "p_value": p_value,
    }  # fmt: skip


class _AgentTasks:
    """One agent's rows of today's per-task means, in their order, read from columns of the whole day (so an agent
    costs a few numpy slices, not pandas operations: at 2,000 agents these took 2 of the findings step's 3 s)."""

    def __init__(self, positions: np.ndarray, today: dict[str, np.ndarray], trailing: dict[str, np.ndarray],
                 relative_changes: dict[str, np.ndarray], frame: pd.DataFrame):  # fmt: skip
        self.positions, self._today, self._trailing, self._frame = positions, today, trailing, frame
        self._relative_changes = relative_changes

    def values(self, column: str) -> np.ndarray:
        """Today's means of `column`, tasks without one left out."""
        values = self._today[column][self.positions]
        return values[~np.isnan(values)]

    def against_trailing(self, column: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Today's and the trailing days' means of `column` for the tasks with both, and the change between them
        (relative where the whole day's was computed, `relative_changes`; else the difference)."""
        today, before = self._today[column][self.positions], self._trailing[column][self.positions]
        both = ~np.isnan(today) & ~np.isnan(before)
        relative = self._relative_changes.get(column)
        change = relative[self.positions][both] if relative is not None else today[both] - before[both]
        return today[both], before[both], change

    def majority(self) -> pd.Series:
        return _majority(self._frame["passed"].iloc[self.positions].droplevel("agent_id"))


def _paired(agent_id: str, tasks: _AgentTasks, graded: tuple[int, float], day: date, config: EvalConfig) -> Iterator[dict]:
    stats = config.statistics
    for dimension in _paired_dimensions():
        values, unchanged = tasks.values(dimension.column), dimension.unchanged
        if len(values) < stats.min_tasks:
            continue
        breach = _breach(mean_of(values), agent_id, dimension.name, config)
        if breach is None:
            continue  # within the thresholds: no interval needed (the bootstrap is this step's costliest part)
        ci = bootstrap_mean(values, resamples=stats.resamples, confidence=stats.confidence,
                            seed=seed_for(day, agent_id, dimension.name))  # fmt: skip
        worse = ci.low > unchanged if dimension.direction is Direction.ABOVE else ci.high < unchanged
        if worse:
            severity, limit = breach
            message = (f"mean {dimension.name} {dimension.format(ci.mean)} vs limit {dimension.format(limit)} against "
                       f"baselines ({_ci_text(dimension, ci, stats.confidence)})")  # fmt: skip
            yield _finding(agent_id, dimension.name, severity, ci.mean, limit, unchanged, message, ci, None)
    yield from _pass_rate(agent_id, "pass_rate", graded, tasks.majority, None, config)


def _majority(share: pd.Series) -> pd.Series:
    """Per task: True when most of its graded trials passed (`share`: mean verdict); no verdict left out."""
    return share.dropna() >= 0.5


def _pass_rate(agent_id: str, dimension: str, graded: tuple[int, float], now: Callable[[], pd.Series],
               before: Callable[[], pd.Series] | None, config: EvalConfig) -> Iterator[dict]:  # fmt: skip
    """Pass rate (`graded`: episodes with a verdict, their pass rate): a level below the threshold,
    confirmed by McNemar over tasks that flipped. Against baselines every task passed before (a
    baseline is a successful run); against the trailing days, before is each task's majority then.
    `now` and `before` give each task's majority, asked for only past the threshold."""
    episodes, rate = graded
    breach = _breach(rate, agent_id, "pass_rate", config) if episodes else None
    if breach is None:
        return
    majority = now()
    if len(majority) < config.statistics.min_tasks:
        return
    severity, limit = breach
    was = before().reindex(majority.index) if before is not None else pd.Series(True, index=majority.index)
    paired = was.notna()
    was, majority = was[paired].astype(bool), majority[paired]
    broke, fixed = int((was & ~majority).sum()), int((~was & majority).sum())
    p_value = mcnemar(broke, fixed)
    if p_value >= config.statistics.alpha or broke <= fixed:
        return
    against = "against baselines" if before is None else f"against the trailing {config.statistics.trailing_days} days"
    message = (f"pass rate {rate:.2f} vs limit {limit:.2f} {against} across {episodes} episodes; "
               f"{broke} tasks went from pass to fail, {fixed} the other way (McNemar p = {p_value:.3g})")  # fmt: skip
    yield _finding(agent_id, dimension, severity, rate, limit, None, message, None, p_value)


def _trends(agent_id: str, tasks: _AgentTasks, before: Callable[[], pd.DataFrame], graded: tuple[int, float], day: date,
            config: EvalConfig) -> Iterator[dict]:  # fmt: skip
    """`before`: the agent's per-task means over the trailing days (each day weighing the same)."""
    stats = config.statistics
    for judged_as, dimension, column in _trend_dimensions():
        current, reference, change = tasks.against_trailing(column)
        relative = judged_as.percent
        if len(change) < stats.min_tasks:
            continue
        level = mean_of(change) if relative else float(current.mean())
        breach = _breach(level, agent_id, judged_as.name, config)
        if breach is None:
            continue
        ci = bootstrap_mean(change, resamples=stats.resamples, confidence=stats.confidence,
                            seed=seed_for(day, agent_id, dimension))  # fmt: skip
        worse = ci.low > 0 if relative else ci.high < 0
        if worse:
            severity, limit = breach
            shown = judged_as.format(ci.mean) if relative else f"{ci.mean:+.2f} to {level:.2f}"
            message = (f"{column} {shown} against the trailing {stats.trailing_days} days, limit {judged_as.format(limit)} "
                       f"({_ci_text(judged_as, ci, stats.confidence)})")  # fmt: skip
            yield _finding(agent_id, dimension, severity, level, limit, float(reference.mean()), message, ci, None)
    yield from _pass_rate(agent_id, "pass_rate_trend", graded, tasks.majority, lambda: _majority(before()["passed"]), config)


AGGREGATE_COLUMNS = ["agent_id", "episode_id", "task_id", "dimension", "severity", "value", "threshold", "baseline_value",
                     "message", "ci_low", "ci_high", "p_value"]  # fmt: skip


def summary_columns() -> list[str]:
    """The `scores` columns averaged per task and day: paired dimensions, trend columns and the verdict."""
    columns = [d.column for d in _paired_dimensions()] + [column for _, _, column in _trend_dimensions()] + ["passed"]
    return list(dict.fromkeys(columns))


def aggregate_findings(today: pd.DataFrame, trailing: pd.DataFrame, day: date, config: EvalConfig) -> pd.DataFrame:
    """Per agent: paired-against-baselines and trailing-days regressions that clear the noise.

    `today`, `trailing`: per-task summaries of current (not superseded) scores, one row per agent, task and day
    (`warehouse.findings.task_summaries`): the mean of each of `summary_columns()` (a verdict as 1.0 / 0.0),
    `graded` (episodes with a verdict) and `passes`. So a day of any size is read as one row per task, and only the
    bootstrap runs per agent, and only for a mean past a threshold."""
    means = summary_columns()
    verdicts = today.groupby("agent_id")[["graded", "passes"]].sum()
    graded_of = {  # per agent: episodes with a verdict, and their pass rate
        agent: (episodes, passes / episodes if episodes else float("nan"))
        for agent, episodes, passes in zip(
            verdicts.index, map(int, verdicts["graded"].tolist()), map(int, verdicts["passes"].tolist()), strict=True
        )
    }
    now = today[today["task_id"].notna()].set_index(["agent_id", "task_id"])[means]
    before = pd.DataFrame(columns=means, index=pd.MultiIndex.from_tuples([], names=["agent_id", "task_id"]))
    if len(trailing):
        per_task = trailing[trailing["task_id"].notna()].groupby(["agent_id", "task_id"])
        before = per_task[means].mean()[per_task.size() >= config.statistics.min_history_days]
    aligned = before.reindex(now.index)  # each of today's tasks beside its trailing means (NaN without)
    today_columns = {column: now[column].to_numpy(dtype=float, na_value=np.nan) for column in means}
    trailing_columns = {column: aligned[column].to_numpy(dtype=float, na_value=np.nan) for column in means}
    relative_changes: dict[str, np.ndarray] = {}  # of each percent trend's column, against the trailing days
    for judged_as, _, column in _trend_dimensions():
        if judged_as.percent:  # elementwise, so computed for the whole day once
            change = relative_delta_pct(now[column], aligned[column])[0]
            relative_changes[column] = change.to_numpy(dtype=float, na_value=np.nan)
    rows: list[dict] = []
    history_agents = set(before.index.get_level_values("agent_id"))
    groups = now.groupby(level="agent_id", sort=True).indices
    for agent_id in sorted(groups):
        positions = groups[agent_id]
        tasks = _AgentTasks(positions, today_columns, trailing_columns, relative_changes, now)
        graded = graded_of[agent_id]
        rows += _paired(str(agent_id), tasks, graded, day, config)
        if agent_id in history_agents:
            rows += _trends(str(agent_id), tasks, partial(before.xs, agent_id, level="agent_id"), graded, day, config)
    return pd.DataFrame(rows, columns=AGGREGATE_COLUMNS)
