"""Asset checks, evaluated inside the assets' own runs so each partition gets its verdict.

None blocks: the report must still be written on exactly the days that matter most.
"""

from __future__ import annotations

from collections.abc import Iterator

import dagster as dg
import pandas as pd


UNIT_COLUMNS = ["correctness", "tool_match", "safety", "weighted_score"]
BASELINE_COLUMNS = ["correctness", "tool_match", "weighted_score"]

SCORE_CHECKS = [
    dg.AssetCheckSpec("scores_in_range", asset="scores",
                      description="0..1 dimensions lie in 0..1; deltas are finite."),
    dg.AssetCheckSpec("scores_present_with_baseline", asset="scores",
                      description="Every episode with a baseline has correctness, tool match and a weighted score."),
]
NO_CRITICAL_REGRESSIONS = dg.AssetCheckSpec(
    "no_critical_regressions", asset="regression_findings",
    description="WARN when the day has warnings, ERROR when it has criticals; never blocks the report.",
)


def score_check_results(scores: pd.DataFrame) -> Iterator[dg.AssetCheckResult]:
    units = scores[UNIT_COLUMNS]
    out_of_range = int(((units < 0) | (units > 1)).any(axis=1).sum())
    deltas = scores[["cost_delta_pct", "latency_delta_pct"]].astype(float)
    infinite = int(deltas.isin([float("inf"), float("-inf")]).any(axis=1).sum())
    yield dg.AssetCheckResult(
        check_name="scores_in_range", passed=out_of_range == 0 and infinite == 0,
        metadata={"out_of_range_rows": out_of_range, "infinite_deltas": infinite},
    )
    with_baseline = scores[scores["baseline_episode_id"].notna()]
    missing = int(with_baseline[BASELINE_COLUMNS].isna().any(axis=1).sum())
    yield dg.AssetCheckResult(
        check_name="scores_present_with_baseline", passed=missing == 0,
        metadata={"episodes_with_baseline": len(with_baseline), "missing_scores": missing},
    )


def no_critical_regressions(findings: pd.DataFrame) -> dg.AssetCheckResult:
    critical = int((findings["severity"] == "critical").sum())
    warning = int((findings["severity"] == "warning").sum())
    return dg.AssetCheckResult(
        check_name="no_critical_regressions",
        passed=critical == 0 and warning == 0,
        severity=dg.AssetCheckSeverity.ERROR if critical else dg.AssetCheckSeverity.WARN,
        metadata={"critical": critical, "warning": warning},
    )
