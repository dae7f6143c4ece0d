"""Asset checks, evaluated inside the assets' own runs (over every day the run covers).

None blocks: the report must still be written on exactly the days that matter most.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date

import dagster as dg
import numpy as np
import pandas as pd

from eval_pipeline.scoring.dimensions import Dimension, judged_dimensions, replay_failed


def _unit_columns() -> list[str]:
    """The 0..1 scores, which must lie in 0..1."""
    return [d.column for d in judged_dimensions() if not d.percent]


def _delta_columns() -> list[str]:
    """The percent changes, which must be finite."""
    return [d.column for d in judged_dimensions() if d.percent]


def _baseline_dimensions() -> list[Dimension]:
    """The 0..1 scores every episode with a baseline has (the paired ones)."""
    return [d for d in judged_dimensions() if d.paired and not d.percent]


SCORE_CHECKS = [
    dg.AssetCheckSpec("scores_in_range", asset="scores", description="0..1 dimensions lie in 0..1; deltas are finite."),
    dg.AssetCheckSpec(
        "scores_present_with_baseline",
        asset="scores",
        description=f"Every episode with a baseline has {', '.join(d.label for d in _baseline_dimensions())}.",
    ),
]
NO_CRITICAL_REGRESSIONS = dg.AssetCheckSpec(
    "no_critical_regressions",
    asset="regression_findings",
    description="The regression gate: WARN when a day has warning findings, ERROR when it has critical ones (real "
    "regressions of the agents, not a fault of the pipeline); never blocks the report.",
)


@dataclass
class ScoreTally:
    """Counts behind the score checks, added up day by day."""

    out_of_range: int = 0
    infinite_deltas: int = 0
    with_baseline: int = 0
    missing_scores: int = 0
    failed_live_replays: int = 0

    def add(self, scores: pd.DataFrame) -> None:
        units = scores[_unit_columns()].astype(float)
        self.out_of_range += int(((units < 0) | (units > 1)).any(axis=1).sum())
        self.infinite_deltas += int(np.isinf(scores[_delta_columns()].astype(float)).any(axis=1).sum())
        unreplayed = replay_failed(scores)  # no candidate run to score: counted apart, not as missing scores
        self.failed_live_replays += int(unreplayed.sum())
        with_baseline = scores[scores["baseline_episode_id"].notna() & ~unreplayed]
        self.with_baseline += len(with_baseline)
        self.missing_scores += int(with_baseline[[d.column for d in _baseline_dimensions()]].isna().any(axis=1).sum())

    def results(self) -> Iterator[dg.AssetCheckResult]:
        yield dg.AssetCheckResult(
            check_name="scores_in_range",
            passed=self.out_of_range == 0 and self.infinite_deltas == 0,
            metadata={"out_of_range_rows": self.out_of_range, "infinite_deltas": self.infinite_deltas},
        )
        yield dg.AssetCheckResult(
            check_name="scores_present_with_baseline",
            passed=self.missing_scores == 0,
            metadata={
                "episodes_with_baseline": self.with_baseline,
                "missing_scores": self.missing_scores,
                "failed_live_replays": self.failed_live_replays,
            },
        )


def no_critical_regressions(per_day: dict[date, tuple[int, int]]) -> dg.AssetCheckResult:
    """The gate over the run's days, given each day's (critical, warning) counts, every agent's (whichever agent the
    run evaluated again, as the days' reports); it names the days that fail it."""
    critical, warning = (sum(counts[i] for counts in per_day.values()) for i in (0, 1))
    flagged = [f"{day} ({c} critical, {w} warning)" for day, (c, w) in sorted(per_day.items()) if c or w]
    return dg.AssetCheckResult(
        check_name="no_critical_regressions",
        passed=critical == 0 and warning == 0,
        severity=dg.AssetCheckSeverity.ERROR if critical else dg.AssetCheckSeverity.WARN,
        metadata={"critical": critical, "warning": warning, "days": ", ".join(flagged) or "none"},
        description=f"Regression gate: findings on {', '.join(flagged)}; see those days' reports"
        if flagged
        else "Regression gate: no findings",
    )
