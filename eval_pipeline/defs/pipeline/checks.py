"""Asset checks, evaluated inside the assets' own runs (over every day the run covers).

None blocks: the report must still be written on exactly the days that matter most.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import dagster as dg
import numpy as np
import pandas as pd

UNIT_COLUMNS = ["correctness", "tool_match", "safety", "weighted_score"]
BASELINE_COLUMNS = ["correctness", "tool_match", "weighted_score"]

SCORE_CHECKS = [
    dg.AssetCheckSpec("scores_in_range", asset="scores", description="0..1 dimensions lie in 0..1; deltas are finite."),
    dg.AssetCheckSpec(
        "scores_present_with_baseline",
        asset="scores",
        description="Every episode with a baseline has correctness, tool match and a weighted score.",
    ),
]
NO_CRITICAL_REGRESSIONS = dg.AssetCheckSpec(
    "no_critical_regressions",
    asset="regression_findings",
    description="WARN when the day has warnings, ERROR when it has criticals; never blocks the report.",
)


@dataclass
class ScoreTally:
    """Counts behind the score checks, added up day by day."""

    out_of_range: int = 0
    infinite_deltas: int = 0
    with_baseline: int = 0
    missing_scores: int = 0

    def add(self, scores: pd.DataFrame) -> None:
        units = scores[UNIT_COLUMNS].astype(float)
        self.out_of_range += int(((units < 0) | (units > 1)).any(axis=1).sum())
        self.infinite_deltas += int(np.isinf(scores[["cost_delta_pct", "latency_delta_pct"]].astype(float)).any(axis=1).sum())
        with_baseline = scores[scores["baseline_episode_id"].notna()]
        self.with_baseline += len(with_baseline)
        self.missing_scores += int(with_baseline[BASELINE_COLUMNS].isna().any(axis=1).sum())

    def results(self) -> Iterator[dg.AssetCheckResult]:
        yield dg.AssetCheckResult(
            check_name="scores_in_range",
            passed=self.out_of_range == 0 and self.infinite_deltas == 0,
            metadata={"out_of_range_rows": self.out_of_range, "infinite_deltas": self.infinite_deltas},
        )
        yield dg.AssetCheckResult(
            check_name="scores_present_with_baseline",
            passed=self.missing_scores == 0,
            metadata={"episodes_with_baseline": self.with_baseline, "missing_scores": self.missing_scores},
        )


def no_critical_regressions(critical: int, warning: int) -> dg.AssetCheckResult:
    return dg.AssetCheckResult(
        check_name="no_critical_regressions",
        passed=critical == 0 and warning == 0,
        severity=dg.AssetCheckSeverity.ERROR if critical else dg.AssetCheckSeverity.WARN,
        metadata={"critical": critical, "warning": warning},
    )
