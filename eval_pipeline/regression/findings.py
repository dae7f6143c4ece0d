"""Findings: threshold breaches per episode and dimension at its highest severity, failed cases and
finding-grade check issues per episode, regressions per agent; and the one episode verdict they decide.

Values, thresholds and baseline values are in each dimension's own unit (percent for the two
deltas, 0..1 otherwise). A finding's id hashes (day, agent, episode or "aggregate", dimension,
severity): a re-run keeps it, an escalation gets a new one, so alerts go out once per id.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable
from dataclasses import astuple, dataclass
from datetime import date

import numpy as np
import pandas as pd

from eval_pipeline.config import EvalConfig, Threshold
from eval_pipeline.regression.aggregates import aggregate_findings
from eval_pipeline.regression.source_health import SOURCE_AGENT, source_health_finding
from eval_pipeline.scoring.checks import FINDING_CHECKS
from eval_pipeline.scoring.dimensions import WEIGHTED_SCORE, Dimension, Direction, dimensions, judged_dimensions
from eval_pipeline.scoring.weighted import units, weighted_score

FINDING_COLUMNS = [
    "finding_id",
    "partition_date",
    "agent_id",
    "episode_id",
    "task_id",
    "dimension",
    "severity",
    "value",
    "threshold",
    "baseline_value",
    "message",
    "config_version",
    "ci_low",
    "ci_high",
    "p_value",
]
CASE_FINDING = "case"  # the dimension of a failed case's finding


def alert_order(agent_id: str, critical: int, warning: int) -> tuple[int, int, str]:
    """Where an agent stands wherever only some of a fleet's agents are shown (an alert digest, the report's summary
    and charts): the most critical findings first, then warning ones, then by name."""
    return (-critical, -warning, agent_id)


def finding_id(day: date, agent_id: str, episode_id: str | None, dimension: str, severity: str) -> str:
    key = f"{day.isoformat()}|{agent_id}|{episode_id or 'aggregate'}|{dimension}|{severity}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def limits(agent_ids: pd.Series, dimension: str, config: EvalConfig) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (warning, critical) limit for `dimension` under its agent's thresholds; NaN = none."""
    codes, agents = pd.factorize(agent_ids, use_na_sentinel=False)  # a lookup per agent, not per row
    per_agent = [config.thresholds_for(str(agent)).get(dimension, Threshold()) for agent in agents]
    as_float = lambda level: np.array([getattr(t, level) for t in per_agent], dtype=float)[codes]  # noqa: E731
    return as_float("warning"), as_float("critical")


@dataclass(frozen=True)
class Breachable:
    """A `scores` column and the loosest limit any agent's thresholds set on it: a value past it may breach."""

    column: str
    above: bool  # a value above `limit` may breach (a rise is bad); else a value below it
    limit: float


@dataclass(frozen=True)
class FindingScreen:
    """What an episode's `scores` row shows when the episode may have a finding of its own: a value past one of
    `breachable`, a failed case, or an issue of one of `checks`. The findings step reads only such rows (at a million
    episodes, 4 % of them), and `episode_findings` judges them exactly; a row the screen passes over has none."""

    breachable: tuple[Breachable, ...]
    checks: tuple[str, ...]


def finding_screen(config: EvalConfig) -> FindingScreen:
    """The screen of `config`: each judged dimension's loosest limit over the default thresholds and every agent's
    overrides (an agent without overrides is judged by the defaults)."""
    judged_by = [config.thresholds, *(config.thresholds_for(agent) for agent in config.agents)]
    breachable = []
    for dimension in judged_dimensions():
        bounds = [
            bound
            for threshold in (thresholds.get(dimension.name, Threshold()) for thresholds in judged_by)
            for bound in (threshold.warning, threshold.critical)
            if bound is not None and not math.isnan(bound)  # NaN never breaches
        ]
        if bounds:
            above = dimension.direction is Direction.ABOVE
            breachable.append(Breachable(dimension.column, above, min(bounds) if above else max(bounds)))
    return FindingScreen(tuple(breachable), tuple(sorted(FINDING_CHECKS)))


def classify(values: pd.Series, warning: np.ndarray, critical: np.ndarray, direction: Direction) -> tuple[pd.Series, pd.Series]:
    """(severity or None, the limit breached) per value, critical first; NaN never breaches."""
    v = values.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        breaches = (lambda bound: v > bound) if direction is Direction.ABOVE else (lambda bound: v < bound)
        is_critical = breaches(critical)
        is_warning = breaches(warning) & ~is_critical
    severity = np.full(len(v), None, dtype=object)
    severity[is_warning] = "warning"
    severity[is_critical] = "critical"
    limit = np.where(is_critical, critical, np.where(is_warning, warning, np.nan))
    return pd.Series(severity, index=values.index, dtype=object), pd.Series(limit, index=values.index)


def _classify_dimension(frame: pd.DataFrame, dimension: Dimension, config: EvalConfig) -> tuple[pd.Series, pd.Series]:
    warning, critical = limits(frame["agent_id"], dimension.name, config)
    return classify(frame[dimension.column], warning, critical, dimension.direction)


def _episode_message(dimension: Dimension, row, value: float, limit: float) -> str:
    return f"{dimension.name} {dimension.format(value)} vs limit {dimension.format(limit)}: {dimension.explain(row)}"


class _Columns:
    """A frame's columns, each made a list on its first read: what `_Row`s read."""

    __slots__ = ("_frame", "_lists")

    def __init__(self, frame: pd.DataFrame) -> None:
        self._frame = frame
        self._lists: dict[str, list] = {}

    def values(self, name: str) -> list:
        if name not in self._lists:
            if name not in self._frame.columns:
                raise AttributeError(name)
            self._lists[name] = self._frame[name].tolist()  # the values `itertuples` gives
        return self._lists[name]


class _Row:
    """A row of a frame read by attribute, as `itertuples` gives it, reading only the columns asked: a breach's
    evidence (`Dimension.explain`) reads two to six of the scoring frame's columns, where `itertuples` took every
    value of every one from Arrow one by one (`partition_findings` of a million episodes: 1.13-1.15 s against 1.66-1.70 s)."""

    __slots__ = ("_at", "_columns")

    def __init__(self, columns: _Columns, at: int) -> None:
        self._columns, self._at = columns, at

    def __getattr__(self, name: str):
        return self._columns.values(name)[self._at]


def _baseline_values(scored: pd.DataFrame, config: EvalConfig) -> dict[str, pd.Series]:
    """Each judged dimension's value for the baseline compared with itself; the weighted score's from the others'."""
    values = {d.name: d.baseline_values(scored) for d in dimensions()}
    weighted = weighted_score(units(values), config.weights).where(scored["baseline_episode_id"].notna())
    return {**values, WEIGHTED_SCORE.name: weighted}


def _threshold_findings(scored: pd.DataFrame, config: EvalConfig, worded: bool = True) -> list[pd.DataFrame]:
    """One row per (episode, dimension) that breaches a threshold, at its highest severity; `worded`: with the
    baseline's value and the message, which a verdict does not read (a million episodes' scoring spent 1.1 s on them)."""
    baseline_values = _baseline_values(scored, config) if worded else {}
    parts = []
    for dimension in judged_dimensions():
        column = dimension.column
        severity, limit = _classify_dimension(scored, dimension, config)
        hit = severity.notna()
        if not hit.any():
            continue
        breached = scored.loc[hit] if worded else scored.loc[hit, ["agent_id", "episode_id", "task_id", column]]
        rows = {
            "agent_id": breached["agent_id"],
            "episode_id": breached["episode_id"],
            "task_id": breached["task_id"],
            "dimension": dimension.name,
            "severity": severity[hit],
            "value": breached[column].astype(float),
            "threshold": limit[hit],
        }
        if worded:
            rows["baseline_value"] = baseline_values[dimension.name][hit]
            columns = _Columns(breached)
            rows["message"] = [
                _episode_message(dimension, _Row(columns, at), value, bound)
                for at, (value, bound) in enumerate(zip(breached[column], limit[hit], strict=True))
            ]
        parts.append(pd.DataFrame(rows))
    return parts


def _case_findings(scored: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """One finding per episode whose case failed, at the configured severity, naming the failed expectations."""
    failed = scored[scored["case_passed"].astype("boolean").fillna(True).eq(False).to_numpy()]
    return pd.DataFrame(
        {
            "agent_id": failed["agent_id"],
            "episode_id": failed["episode_id"],
            "task_id": failed["task_id"],
            "dimension": CASE_FINDING,
            "severity": config.policies.finding_severity[CASE_FINDING],
            "value": failed["correctness"].astype(float),
            "threshold": 1.0,
            "baseline_value": None,
            "message": [f"case failed: {reasons or 'an expectation was not met'}" for reasons in failed["failed_assertions"]],
        }
    )


def issue_findings(issues: pd.DataFrame, scores: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """One finding per episode and finding-grade check that raised issues, at the check's configured severity."""
    found = issues[issues["check"].isin(FINDING_CHECKS)]
    if found.empty:
        return pd.DataFrame(columns=FINDING_COLUMNS)
    tasks = scores.set_index("episode_id")["task_id"]
    rows = []
    for (episode_id, agent_id, check), group in found.groupby(["episode_id", "agent_id", "check"], sort=True):
        shown = "; ".join(group["detail"].head(3)) + (f"; and {len(group) - 3} more" if len(group) > 3 else "")
        rows.append(
            {
                "agent_id": agent_id,
                "episode_id": episode_id,
                "task_id": tasks.get(episode_id),
                "dimension": check,
                "severity": config.policies.finding_severity[check],
                "value": float(len(group)),
                "threshold": 0.0,
                "baseline_value": None,
                "message": f"{check}: {shown}",
            }
        )
    return pd.DataFrame(rows)


def _episode_finding_rows(scored: pd.DataFrame, issues: pd.DataFrame, config: EvalConfig, worded: bool = True) -> pd.DataFrame:
    parts = [
        *_threshold_findings(scored, config, worded),
        _case_findings(scored, config),
        issue_findings(issues, scored, config),
    ]
    found = [part for part in parts if len(part)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=FINDING_COLUMNS)


def episode_findings(scored: pd.DataFrame, issues: pd.DataFrame, day: date, config: EvalConfig) -> pd.DataFrame:
    """Every finding about a single episode: threshold breaches, a failed case, finding-grade check issues."""
    rows = _episode_finding_rows(scored, issues, config)
    return _finalize([rows] if len(rows) else [], day, config)


def with_verdicts(scored: pd.DataFrame, issues: pd.DataFrame, config: EvalConfig) -> pd.DataFrame:
    """`scored` with the one verdict of each episode: `passed`, `verdict_reason` and `critical_findings`.

    The `scores` step decides the verdict here, from the same findings `regression_findings` records,
    so a verdict and the findings that explain it never disagree.
    """
    findings = _episode_finding_rows(scored, issues, config, worded=False)
    critical = findings[findings["severity"] == "critical"].groupby("episode_id")["dimension"].agg(lambda d: sorted(set(d)))
    critical_findings = scored["episode_id"].map(critical)
    passed, reason = episode_verdicts(scored, critical_findings, config)
    return scored.assign(passed=passed, verdict_reason=reason, critical_findings=_each_list(scored["episode_id"], critical))


def _each_list(episode_ids: pd.Series, lists: pd.Series) -> pd.Series:
    """Each episode's list of `lists` (by episode id; an empty one where it has none), as one Arrow array taken from
    the few lists there are: most episodes have none, and a Python list per episode cost 0.5 s of a million's scoring."""
    import pyarrow as pa

    at = lists.index.get_indexer(episode_ids)
    values = pa.array([*lists.tolist(), []], type=pa.list_(pa.string()))
    taken = values.take(pa.array(np.where(at < 0, len(lists), at)))
    return pd.Series(pd.arrays.ArrowExtensionArray(taken), index=episode_ids.index)


def _finalize(parts: list[pd.DataFrame], day: date, config: EvalConfig) -> pd.DataFrame:
    if not parts:
        return pd.DataFrame(columns=FINDING_COLUMNS)
    findings = pd.concat(parts, ignore_index=True)
    findings["partition_date"] = day
    findings["config_version"] = config.version
    findings["finding_id"] = [
        finding_id(day, agent, episode, dimension, severity)
        for agent, episode, dimension, severity in zip(
            findings["agent_id"], findings["episode_id"], findings["dimension"], findings["severity"], strict=False
        )
    ]
    return findings.reindex(columns=FINDING_COLUMNS)


def episode_verdicts(scored: pd.DataFrame, critical: pd.Series, config: EvalConfig) -> tuple[pd.Series, pd.Series]:
    """The one pass/fail of each episode, and why it failed (None where it passed or has no verdict).

    Passed iff the weighted score (where there is one) reaches the pass threshold, the case (where
    there is one) did not fail, the recorded reward of the run's own grader (where there is one) is 1,
    and no finding about it is critical (`critical`: the dimensions of its critical findings, NaN
    for none). No verdict (None) where none of these says anything: no baseline yet, no case, no
    reward and nothing critical.
    """
    threshold = config.policies.pass_threshold
    weighted, reward = scored["weighted_score"].astype(float), scored["recorded_reward"].astype(float)
    # what fails an episode, each over whole columns; only the episodes something failed are worded (most pass: 50,000
    # worded one by one took 0.05 s, nearly all of it for None)
    has_critical = critical.notna().to_numpy()
    case_failed = scored["case_passed"].astype("boolean").fillna(True).eq(False).to_numpy(dtype=bool)
    low_score, low_reward = (weighted < threshold).to_numpy(), (reward < 1).to_numpy()
    failing = np.flatnonzero(has_critical | case_failed | low_score | low_reward)
    worded = np.full(len(scored), None, dtype=object)
    worded[failing] = [
        _failure_reason(
            critical.iat[at] if has_critical[at] else [],
            bool(case_failed[at]),
            float(weighted.iat[at]) if low_score[at] else None,
            float(reward.iat[at]) if low_reward[at] else None,
            threshold,
        )
        for at in failing.tolist()
    ]
    reasons = pd.Series(worded, index=scored.index, dtype=object)
    decided = weighted.notna() | scored["case_passed"].notna() | reward.notna() | critical.notna()
    return reasons.isna().astype(object).where(decided, None), reasons.where(decided, None)


def _failure_reason(dimensions: list[str], case_failed: bool, low_score: float | None, low_reward: float | None,
                    threshold: float) -> str:  # fmt: skip
    """Why an episode failed, worded from what failed it: the dimensions of its critical findings, its case, and the
    weighted score or recorded reward that fell short (None where it did not)."""
    reasons = [f"critical {', '.join(dimensions)}"] if dimensions else []
    reasons += ["case failed"] if case_failed and CASE_FINDING not in dimensions else []  # a failed case below critical
    reasons += [f"weighted score {low_score:.3f} below {threshold:.2f}"] if low_score is not None else []
    reasons += [f"recorded reward {low_reward:g} below 1"] if low_reward is not None else []
    return "; ".join(reasons)


def partition_findings(
    scored_parts: Iterable[tuple[pd.DataFrame, pd.DataFrame]],
    today_tasks: pd.DataFrame,
    trailing_tasks: pd.DataFrame,
    source_counts: pd.DataFrame | None,
    day: date,
    config: EvalConfig,
) -> pd.DataFrame:
    """Everything `findings` holds for a day: the episodes' findings (`scored_parts`: the day's `scores` rows with
    the `issues` of the same episodes, a part at a time), per-agent regressions against baselines and the trailing
    days that clear the noise (from per-task summaries, see `aggregate_findings`), and the source's health (skipped
    when `source_counts` is None, as in a one-agent run). A superseded run (`scores.superseded`) finds nothing."""
    parts = [episode_findings(current(scores), issues, day, config) for scores, issues in scored_parts]
    aggregates = aggregate_findings(today_tasks, trailing_tasks, day, config)
    parts.append(_finalize([aggregates], day, config) if len(aggregates) else None)
    health = source_health_finding(day, source_counts, config) if source_counts is not None else None
    if health:
        row = {"agent_id": SOURCE_AGENT, "episode_id": None, "task_id": None, "dimension": "source_health", **health}
        parts.append(_finalize([pd.DataFrame([row])], day, config))
    found = [part for part in parts if part is not None and len(part)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=FINDING_COLUMNS)


def current(scores: pd.DataFrame) -> pd.DataFrame:
    """The rows the day's verdict counts: all but a case-set agent's runs its later run of the day superseded."""
    if "superseded" not in scores:
        return scores
    return scores[~scores["superseded"].astype("boolean").fillna(False)]


@dataclass(frozen=True)
class VerdictCounts:
    """How many episodes passed, failed and have no verdict: the one count every output reports.

    "Scored" means an episode with a verdict. One without a verdict has no baseline yet (the first
    day of its task), no case, no recorded reward and nothing critical.
    """

    episodes: int
    passed: int
    failed: int
    without_verdict: int
    without_baseline: int

    @property
    def scored(self) -> int:
        return self.passed + self.failed

    @property
    def pass_rate(self) -> float | None:
        return self.passed / self.scored if self.scored else None

    @classmethod
    def of(cls, scores: pd.DataFrame) -> VerdictCounts:
        """`scores`: rows of the `scores` table (`passed`, `baseline_episode_id`); superseded runs do not count."""
        scores = current(scores)
        verdict = scores["passed"].astype("boolean")
        return cls(
            episodes=len(scores),
            passed=int(verdict.eq(True).sum()),
            failed=int(verdict.eq(False).sum()),
            without_verdict=int(verdict.isna().sum()),
            without_baseline=int(scores["baseline_episode_id"].isna().sum()),
        )

    def __add__(self, other: VerdictCounts) -> VerdictCounts:
        """The counts of two disjoint sets of episodes together (a day scored a part at a time)."""
        return VerdictCounts(*(a + b for a, b in zip(astuple(self), astuple(other), strict=True)))
