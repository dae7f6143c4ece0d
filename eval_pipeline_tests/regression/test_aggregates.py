"""Aggregate regressions: bootstrap CIs and McNemar on synthetic data with known effects, and on pure noise."""

import tracemalloc
from datetime import date, timedelta

import duckdb
import numpy as np
import pandas as pd
import pytest

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.aggregates import aggregate_findings, summary_columns
from eval_pipeline.regression.stats import RESAMPLED_VALUES, bootstrap_mean, mcnemar
from eval_pipeline.warehouse.findings import task_summaries_sql

DAY = date(2026, 11, 10)
CONFIG = EvalConfig()


def test_mcnemar_against_hand_computed_values():
    assert mcnemar(0, 0) == 1.0
    assert mcnemar(6, 0) == pytest.approx(2 / 64)  # two-sided: 2 × 0.5^6
    assert mcnemar(3, 1) == pytest.approx(2 * (1 + 4) / 16)
    assert mcnemar(5, 5) == 1.0


def test_the_bootstrap_is_seeded_and_resamples_tasks():
    values = np.array([1.0, 2.0, 3.0, 10.0])
    first = bootstrap_mean(values, resamples=2000, confidence=0.95, seed=7)
    assert first == bootstrap_mean(values, resamples=2000, confidence=0.95, seed=7)
    assert first.mean == 4.0 and first.n == 4 and first.low < 4.0 < first.high  # skewed: wider above than below
    assert first.high - 4.0 > 4.0 - first.low


def findings_of(today: pd.DataFrame, trailing: pd.DataFrame) -> pd.DataFrame:
    """`aggregate_findings` of episode rows, summarized per task by the warehouse's own query over them."""
    return aggregate_findings(summarized(today), summarized(trailing), DAY, CONFIG)


def summarized(episodes: pd.DataFrame) -> pd.DataFrame:
    scores = episodes.assign(superseded=False)  # noqa: F841 (DuckDB reads the frame by this name)
    return duckdb.execute(task_summaries_sql(summary_columns()), {"first": date.min, "last": date.max, "agent": None}).df()


def day_of_scores(rng, *, tasks=10, trials=3, cost_effect=0.0, noise=30.0, day=DAY, fail_tasks=0, agent="bot"):
    rows = []
    for task in range(tasks):
        for trial in range(trials):
            delta = cost_effect + rng.normal(0, noise)
            rows.append(
                {
                    "partition_date": day, "agent_id": agent, "task_id": f"t{task}", "episode_id": f"{day}-{task}-{trial}",
                    "cost_delta_pct": delta, "latency_delta_pct": rng.normal(0, noise),
                    "correctness": 1.0, "tool_match": 1.0, "weighted_score": 0.95, "passed": task >= fail_tasks,
                    "total_cost_usd": 0.01 * (1 + delta / 100), "total_duration_ms": 1000 * (1 + rng.normal(0, noise) / 100),
                }
            )  # fmt: skip
    return pd.DataFrame(rows)


def history(rng, days=7, **options):
    return pd.concat([day_of_scores(rng, day=DAY - timedelta(days=d), **options) for d in range(1, days + 1)])


def _bootstrap_drawn_at_once(values: np.ndarray, resamples: int, confidence: float, seed: int) -> tuple[float, float]:
    """The interval as `bootstrap_mean` computed it before it drew its resamples in blocks: all at once."""
    n, mean = len(values), float(values.mean())
    se = values.std(ddof=1) / np.sqrt(n)
    samples = values[np.random.default_rng(seed).integers(0, n, size=(resamples, n))]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = (samples.mean(axis=1) - mean) / (samples.std(axis=1, ddof=1) / np.sqrt(n))
    t = np.sort(t[~np.isnan(t)])
    tail = (1 - confidence) / 2
    low_t, high_t = t[int(np.floor(tail * (len(t) - 1)))], t[int(np.ceil((1 - tail) * (len(t) - 1)))]
    return float(mean - high_t * se), float(mean - low_t * se)


@pytest.mark.parametrize("tasks", [3, 7, 2_100, 20_000])
def test_an_agent_of_many_tasks_is_resampled_within_a_bounded_memory_to_the_same_interval(tasks):
    """The night an agent's 20,000 nightly tasks all got costlier, its cost interval drew 2,000 × 20,000 resamples at
    once (three arrays of 320 MB; 3.4 GiB at 100,000 tasks): now a block at a time, to the bit the same interval."""
    values = np.random.default_rng(tasks).normal(0.2, 1.0, tasks).round(1)  # rounded: small samples repeat values
    tracemalloc.start()
    try:
        ci = bootstrap_mean(values, resamples=2000, confidence=0.95, seed=11)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert (ci.low, ci.high) == _bootstrap_drawn_at_once(values, 2000, 0.95, 11)
    assert peak < 3 * 8 * RESAMPLED_VALUES + 16 * 2000 + 64 * tasks  # blocks of indices and values, and the t's


def test_pure_noise_never_alerts_over_many_seeds():
    fired = []
    for seed in range(200):
        rng = np.random.default_rng(seed)
        found = findings_of(day_of_scores(rng), history(rng))
        fired += [(seed, d) for d in found["dimension"]]
    assert fired == []


def test_a_known_effect_is_covered_by_the_ci_and_alerts():
    covered, alerted = 0, 0
    for seed in range(100):
        rng = np.random.default_rng(1000 + seed)
        found = findings_of(day_of_scores(rng, cost_effect=50.0), history(rng, cost_effect=0.0))
        cost = found[found["dimension"] == "cost_delta"]
        if len(cost):
            alerted += 1
            row = cost.iloc[0]
            covered += row["ci_low"] <= 50.0 <= row["ci_high"]
            assert row["severity"] in ("critical", "warning") and "95% CI" in row["message"]
    assert alerted == 100 and covered >= 90  # a 95 % interval: some misses are expected, not many
    trend = found[found["dimension"] == "cost_trend"].iloc[0]
    assert trend["ci_low"] > 20 and "against the trailing 7 days" in trend["message"]


def test_one_outlier_task_is_not_a_regression_but_the_same_effect_everywhere_is():
    def day(deltas):
        return pd.DataFrame(
            {"partition_date": DAY, "agent_id": "bot", "task_id": [f"t{i}" for i in range(len(deltas))],
             "episode_id": [f"e{i}" for i in range(len(deltas))], "cost_delta_pct": deltas, "latency_delta_pct": 0.0,
             "correctness": 1.0, "tool_match": 1.0, "weighted_score": 1.0, "passed": True,
             "total_cost_usd": 0.01, "total_duration_ms": 1000.0}
        )  # fmt: skip

    outlier = day([120.0, -2.0, 1.0, -1.0, 2.0])  # mean +24 %: over the 20 % limit, but one task
    assert outlier["cost_delta_pct"].mean() > 20
    assert findings_of(outlier, outlier.iloc[:0]).empty
    everywhere = day([24.0, 23.0, 25.0, 26.0, 22.0])
    found = findings_of(everywhere, everywhere.iloc[:0])
    assert found[["dimension", "severity"]].values.tolist() == [["cost_delta", "warning"]]
    assert found.iloc[0]["ci_low"] > 20


def test_pass_to_fail_flips_need_mcnemar():
    rng = np.random.default_rng(3)
    few = day_of_scores(rng, tasks=10, fail_tasks=4)  # pass rate 0.6 < 0.7, but 4 flips: p = 0.125
    assert "pass_rate" not in set(findings_of(few, few.iloc[:0])["dimension"])
    many = day_of_scores(rng, tasks=10, fail_tasks=6)  # pass rate 0.4 < 0.5, 6 flips: p = 0.031
    found = findings_of(many, many.iloc[:0]).set_index("dimension")
    assert found.loc["pass_rate", "severity"] == "critical" and found.loc["pass_rate", "p_value"] == pytest.approx(2 / 64)
