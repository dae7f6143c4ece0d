from datetime import date

import pandas as pd
import pytest

from eval_pipeline.config import AgentOverrides, EvalConfig, Threshold
from eval_pipeline.regression.findings import VerdictCounts, episode_findings, finding_id, with_verdicts
from eval_pipeline.scoring.assessments import ISSUE_COLUMNS
from eval_pipeline.scoring.episodes import score_episodes
from eval_pipeline_tests.scoring.frames import frame

DAY = date(2026, 11, 2)
CONFIG = EvalConfig()
NO_ISSUES = pd.DataFrame(columns=ISSUE_COLUMNS)


def findings_for(config=CONFIG, **overrides) -> pd.DataFrame:
    scored = score_episodes(frame(overrides), config)
    return episode_findings(scored, NO_ISSUES, DAY, config)


def severity_of(findings: pd.DataFrame, dimension: str):
    rows = findings[findings["dimension"] == dimension]
    assert len(rows) <= 1
    return rows["severity"].iloc[0] if len(rows) else None


@pytest.mark.parametrize(
    ("overrides", "dimension", "expected"),
    [
        ({"total_cost_usd": 0.0125}, "cost_delta", "warning"),  # +25 %
        ({"total_cost_usd": 0.015}, "cost_delta", "critical"),  # +50 %
        ({"total_cost_usd": 0.0119}, "cost_delta", None),  # +19 %
        ({"total_duration_ms": 1350.0}, "latency_delta", "warning"),  # +35 %
        ({"total_duration_ms": 1700.0}, "latency_delta", "critical"),  # +70 %
        ({"total_duration_ms": 1250.0}, "latency_delta", None),
        ({"step_count": 10, "error_steps": 3}, "safety", "critical"),  # 0.7
        ({"step_count": 10, "error_steps": 2}, "safety", None),  # 0.8 is not below 0.8
    ],
)
def test_threshold_boundaries_on_scored_episodes(overrides, dimension, expected):
    assert severity_of(findings_for(**overrides), dimension) == expected


@pytest.mark.parametrize(
    ("dimension", "value", "expected"),
    [
        ("correctness", 0.3, "critical"),
        ("correctness", 0.5, None),
        ("tool_match", 0.4, "warning"),
        ("tool_match", 0.5, None),
        ("safety", 0.7, "critical"),
        ("weighted_score", 0.4, "critical"),
        ("weighted_score", 0.6, None),
        ("cost_delta_pct", 20.0, None),
        ("cost_delta_pct", 40.0, "warning"),
        ("cost_delta_pct", 40.1, "critical"),
        ("latency_delta_pct", 30.1, "warning"),
        ("latency_delta_pct", 60.1, "critical"),
    ],
)
def test_threshold_boundaries_on_values(dimension, value, expected):
    scored = score_episodes(frame({}), CONFIG)
    scored[dimension] = value
    found = episode_findings(scored, NO_ISSUES, DAY, CONFIG)
    name = dimension.removesuffix("_pct")
    assert severity_of(found, name) == expected


def test_one_row_per_dimension_at_its_highest_severity_with_units():
    found = findings_for(total_cost_usd=0.015)
    row = found[found["dimension"] == "cost_delta"].iloc[0]
    assert (row.severity, row.value, row.threshold, row.baseline_value) == ("critical", pytest.approx(50.0), 40.0, 0.0)
    assert "$0.0150 vs baseline $0.0100" in row.message
    assert row.config_version == CONFIG.version


def test_per_agent_threshold_overrides_merge_field_by_field():
    config = EvalConfig(agents={"support-bot": AgentOverrides(thresholds={"cost_delta": Threshold(critical=80)})})
    assert config.thresholds_for("support-bot")["cost_delta"] == Threshold(warning=20, critical=80)
    assert severity_of(findings_for(config, total_cost_usd=0.015), "cost_delta") == "warning"
    assert config.version != CONFIG.version


def test_finding_ids_are_stable_and_change_on_escalation():
    first = finding_id(DAY, "a", "ep-1", "cost_delta", "warning")
    assert first == finding_id(DAY, "a", "ep-1", "cost_delta", "warning")
    assert first != finding_id(DAY, "a", "ep-1", "cost_delta", "critical")
    assert finding_id(DAY, "a", None, "pass_rate", "warning") == finding_id(DAY, "a", None, "pass_rate", "warning")


def test_secret_messages_never_carry_the_secret():
    secret = "sk-live-" + "Zz9" * 10
    found = findings_for(final_output=f"here: {secret}")
    assert severity_of(found, "safety") == "critical"
    assert secret not in " ".join(found["message"])


def test_passed_needs_weighted_and_no_critical():
    scored = score_episodes(
        frame({}, {"total_cost_usd": 0.015}, {"final_output": "leak sk-" + "x" * 20}, {"baseline_episode_id": None}), CONFIG
    )
    judged = with_verdicts(scored, NO_ISSUES, CONFIG)
    assert judged["passed"].tolist() == [True, False, False, None]
    assert judged["verdict_reason"].tolist() == [
        None,
        "critical cost_delta",
        "critical safety",
        None,
    ]
    assert judged["critical_findings"].tolist() == [[], ["cost_delta"], ["safety"], []]


def test_a_failed_case_a_failed_reward_and_a_critical_issue_finding_each_fail_the_episode():
    no_baseline = {key: None for key in frame({}).columns if key.startswith("baseline_")}
    scored = score_episodes(
        frame(
            {**no_baseline, "case_score": 0.5, "case_passed": False, "failed_assertions": "expected_output_contains: no phrase"},
            {**no_baseline, "recorded_reward": 0.0},
            {**no_baseline, "recorded_reward": 1.0},
            {**no_baseline},
            {**no_baseline},
        ),
        CONFIG,
    )
    issues = pd.DataFrame(
        [("ep-3", "support-bot", "numeric_fabrication", "error", "'$6.1B' in the answer matches no number")],
        columns=ISSUE_COLUMNS,
    )
    judged = with_verdicts(scored, issues, CONFIG)
    assert judged["passed"].tolist() == [False, False, True, False, None]  # the last has nothing that decides
    assert judged["verdict_reason"].tolist() == [
        "critical case; weighted score 0.600 below 0.70",
        "recorded reward 0 below 1",
        None,
        "critical numeric_fabrication",
        None,
    ]
    found = episode_findings(scored, issues, DAY, CONFIG)
    assert found[["episode_id", "dimension", "severity"]].values.tolist() == [
        ["ep-0", "case", "critical"],
        ["ep-3", "numeric_fabrication", "critical"],
    ]
    assert found["message"].iloc[0] == "case failed: expected_output_contains: no phrase"
    counts = VerdictCounts.of(judged)
    assert (counts.passed, counts.failed, counts.without_verdict, counts.scored, counts.pass_rate) == (1, 3, 1, 4, 0.25)

    lenient = EvalConfig.model_validate({"policies": {"finding_severity": {"case": "warning", "numeric_fabrication": "warning"}}})
    judged = with_verdicts(scored, issues, lenient)
    assert judged["passed"].tolist() == [False, False, True, None, None]  # a failed case fails at any severity; ep-3 is undecided
    assert judged["verdict_reason"].iloc[0] == "case failed; weighted score 0.600 below 0.70"
