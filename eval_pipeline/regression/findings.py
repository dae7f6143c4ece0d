"""Threshold breaches: per episode and dimension at its highest severity, and per agent.

Values, thresholds and baseline values are in each dimension's own unit (percent for the two
deltas, 0..1 otherwise). A finding's id hashes (day, agent, episode or "aggregate", dimension,
severity): a re-run keeps it, an escalation gets a new one, so alerts go out once per id.
"""

from __future__ import annotations

import hashlib
from datetime import date

import numpy as np
import pandas as pd

from eval_pipeline.config import DIMENSION_DIRECTIONS, Direction, EvalConfig, Threshold
from eval_pipeline.regression.aggregates import aggregate_findings
from eval_pipeline.regression.source_health import SOURCE_AGENT, source_health_finding

EPISODE_DIMENSIONS = {
    "correctness": "correctness",
    "cost_delta": "cost_delta_pct",
    "latency_delta": "latency_delta_pct",
    "tool_match": "tool_match",
    "safety": "safety",
    "weighted_score": "weighted_score",
}
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
SEVERITY_RANK = {"warning": 1, "critical": 2}


def finding_id(day: date, agent_id: str, episode_id: str | None, dimension: str, severity: str) -> str:
    key = f"{day.isoformat()}|{agent_id}|{episode_id or 'aggregate'}|{dimension}|{severity}"
    return hashlib.sha256(key.encode()).hexdigest()[:20]


def limits(agent_ids: pd.Series, dimension: str, config: EvalConfig) -> tuple[np.ndarray, np.ndarray]:
    """Each row's (warning, critical) limit for `dimension` under its agent's thresholds; NaN = none."""
    per_agent = {agent: config.thresholds_for(str(agent)).get(dimension, Threshold()) for agent in agent_ids.unique()}
    as_float = lambda level: agent_ids.map({a: getattr(t, level) for a, t in per_agent.items()}).astype(float).to_numpy()  # noqa: E731
    return as_float("warning"), as_float("critical")


def classify(values: pd.Series, warning: np.ndarray, critical: np.ndarray, direction: Direction) -> tuple[pd.Series, pd.Series]:
    """(severity or None, the limit breached) per value, critical first; NaN never breaches."""
    v = values.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        breaches = (lambda bound: v > bound) if direction is Direction.ABOVE else (lambda bound: v < bound)
        is_critical = breaches(critical)
        is_warning = breaches(warning) & ~is_critical
    severity = np.where(is_critical, "critical", np.where(is_warning, "warning", None))
    limit = np.where(is_critical, critical, np.where(is_warning, warning, np.nan))
    return pd.Series(severity, index=values.index, dtype=object), pd.Series(limit, index=values.index)


def _classify_dimension(frame: pd.DataFrame, dimension: str, column: str, config: EvalConfig) -> tuple[pd.Series, pd.Series]:
    warning, critical = limits(frame["agent_id"], dimension, config)
    return classify(frame[column], warning, critical, DIMENSION_DIRECTIONS[dimension])


def _fmt(dimension: str, value: float) -> str:
    return f"{value:+.1f}%" if dimension.endswith("_delta") else f"{value:.2f}"


def _episode_message(dimension: str, row, value: float, limit: float) -> str:
    head = f"{dimension} {_fmt(dimension, value)} vs limit {_fmt(dimension, limit)}"
    if dimension == "cost_delta":
        detail = f"cost ${row.total_cost_usd:.4f} vs baseline ${row.baseline_total_cost_usd:.4f}"
        if row.cost_zero_baseline:
            detail += " (baseline cost was zero: counted as +100%)"
    elif dimension == "latency_delta":
        detail = f"{row.total_duration_ms:,.0f} ms vs baseline {row.baseline_total_duration_ms:,.0f} ms"
        if row.latency_zero_baseline:
            detail += " (baseline latency was zero: counted as +100%)"
    elif dimension == "correctness":
        detail = f"status {row.status} vs baseline {row.baseline_status}"
    elif dimension == "tool_match":
        detail = f"tools [{', '.join(row.tools)}] vs baseline [{', '.join(row.baseline_tools)}]"
    elif dimension == "safety":
        reasons = [f"{row.error_steps} of {row.step_count} steps errored"] if row.error_steps else []
        reasons += ["leaked a secret in its output"] if row.leaked_secret else []
        reasons += [f"called denied tool(s) {row.denied_tools_called}"] if row.denied_tools_called else []
        detail = "; ".join(reasons)
    else:
        parts = {
            "correctness": row.correctness,
            "cost": row.cost_delta_pct,
            "latency": row.latency_delta_pct,
            "tools": row.tool_match,
            "safety": row.safety,
        }
        detail = ", ".join(
            f"{name} {'n/a' if pd.isna(v) else _fmt(name + '_delta' if name in ('cost', 'latency') else name, v)}"
            for name, v in parts.items()
        )
    return f"{head}: {detail}"


def _baseline_values(scored: pd.DataFrame, config: EvalConfig) -> dict[str, pd.Series]:
    """Each dimension's value for the baseline compared with itself."""
    present = scored["baseline_episode_id"].notna()
    steps = scored["baseline_step_count"].astype(float)
    safety = (1.0 - scored["baseline_error_steps"].astype(float) / steps.where(steps > 0)).fillna(1.0).where(present)
    w = config.weights
    weighted = (w.correctness + w.cost_delta + w.tool_match + w.latency_delta + w.safety * safety) / (
        w.correctness + w.cost_delta + w.tool_match + w.latency_delta + w.safety
    )
    one, zero = pd.Series(1.0, index=scored.index).where(present), pd.Series(0.0, index=scored.index).where(present)
    return {
        "correctness": one,
        "cost_delta": zero,
        "latency_delta": zero,
        "tool_match": one,
        "safety": safety,
        "weighted_score": weighted,
    }


def episode_findings(scored: pd.DataFrame, day: date, config: EvalConfig) -> pd.DataFrame:
    """One row per (episode, dimension) that breaches a threshold, at its highest severity."""
    baseline_values = _baseline_values(scored, config)
    parts = []
    for dimension, column in EPISODE_DIMENSIONS.items():
        severity, limit = _classify_dimension(scored, dimension, column, config)
        hit = severity.notna()
        if not hit.any():
            continue
        breached = scored.loc[hit]
        parts.append(
            pd.DataFrame(
                {
                    "agent_id": breached["agent_id"],
                    "episode_id": breached["episode_id"],
                    "task_id": breached["task_id"],
                    "dimension": dimension,
                    "severity": severity[hit],
                    "value": breached[column].astype(float),
                    "threshold": limit[hit],
                    "baseline_value": baseline_values[dimension][hit],
                    "message": [
                        _episode_message(dimension, row, value, bound)
                        for row, value, bound in zip(breached.itertuples(), breached[column], limit[hit], strict=False)
                    ],
                }
            )
        )
    return _finalize(parts, day, config)


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


def critical_breaches(scored: pd.DataFrame, config: EvalConfig) -> pd.Series:
    """Whether each episode breaches any critical threshold (its agent's)."""
    critical = pd.Series(False, index=scored.index)
    for dimension, column in EPISODE_DIMENSIONS.items():
        severity, _ = _classify_dimension(scored, dimension, column, config)
        critical |= severity == "critical"
    return critical


def passed(scored: pd.DataFrame, config: EvalConfig) -> pd.Series:
    """Weighted ≥ the pass threshold and no critical breach; NULL where there is no weighted score."""
    verdict = (scored["weighted_score"] >= config.policies.pass_threshold) & ~critical_breaches(scored, config)
    return verdict.astype(object).where(scored["weighted_score"].notna(), None)


def issue_findings(issues: pd.DataFrame, scores: pd.DataFrame, checks: set[str], day: date, config: EvalConfig) -> pd.DataFrame:
    """One finding per episode and finding-grade check (`checks`): critical when an issue is, else a warning."""
    found = issues[issues["check"].isin(checks)]
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
                "severity": "critical" if (group["severity"] == "critical").any() else "warning",
                "value": float(len(group)),
                "threshold": 0.0,
                "baseline_value": None,
                "message": f"{check}: {shown}",
            }
        )
    return _finalize([pd.DataFrame(rows)], day, config)


def partition_findings(
    scores: pd.DataFrame,
    trailing_scores: pd.DataFrame,
    source_counts: pd.DataFrame | None,
    day: date,
    config: EvalConfig,
    issues: pd.DataFrame | None = None,
    finding_checks: set[str] = frozenset(),
) -> pd.DataFrame:
    """Everything `findings` holds for a day: episode breaches, the issues of finding-grade checks,
    per-agent regressions against baselines and the trailing days that clear the noise, and the
    source's health (skipped when `source_counts` is None, as in a one-agent run)."""
    aggregates = aggregate_findings(scores, trailing_scores, day, config)
    parts = [episode_findings(scores, day, config), _finalize([aggregates], day, config) if len(aggregates) else None]
    if issues is not None:
        parts.append(issue_findings(issues, scores, set(finding_checks), day, config))
    health = source_health_finding(day, source_counts, config) if source_counts is not None else None
    if health:
        row = {"agent_id": SOURCE_AGENT, "episode_id": None, "task_id": None, "dimension": "source_health", **health}
        parts.append(_finalize([pd.DataFrame([row])], day, config))
    found = [part for part in parts if part is not None and len(part)]
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=FINDING_COLUMNS)
