import math

import pytest

from eval_pipeline.config import EvalConfig, Policies
from eval_pipeline.scoring.answer import answer_match
from eval_pipeline.scoring.dimensions import correctness
from eval_pipeline.scoring.episodes import score_episodes
from eval_pipeline_tests.scoring.frames import NO_BASELINE, frame

CONFIG = EvalConfig()


def score_one(**overrides):
    return score_episodes(frame(overrides), CONFIG).iloc[0]


def test_identical_to_baseline_scores_perfectly():
    row = score_one()
    assert (row.correctness, row.cost_delta_pct, row.latency_delta_pct, row.tool_match, row.safety) == (1.0, 0.0, 0.0, 1.0, 1.0)
    assert row.weighted_score == pytest.approx(1.0)


def test_no_baseline_gives_nulls_but_still_safety():
    row = score_one(**NO_BASELINE, error_steps=3)
    for column in ("correctness", "cost_delta_pct", "latency_delta_pct", "tool_match", "weighted_score"):
        assert math.isnan(row[column]), column
    assert row.safety == pytest.approx(0.5)


def test_improvement_never_costs_points():
    cheaper = score_one(total_cost_usd=0.005, total_duration_ms=400.0)
    assert cheaper.cost_delta_pct == pytest.approx(-50.0)
    assert cheaper.latency_delta_pct == pytest.approx(-60.0)
    assert cheaper.weighted_score == pytest.approx(1.0)


def test_a_rise_costs_proportionally():
    pricier = score_one(total_cost_usd=0.015)  # +50 % -> cost unit 0.5, weight 0.2
    assert pricier.cost_delta_pct == pytest.approx(50.0)
    assert pricier.weighted_score == pytest.approx(1.0 - 0.2 * 0.5)


def test_zero_baseline_cost_does_not_hide_a_rise():
    rose = score_one(baseline_total_cost_usd=0.0, total_cost_usd=0.02)
    assert rose.cost_delta_pct == 100.0 and rose.cost_zero_baseline
    both_zero = score_one(baseline_total_cost_usd=0.0, total_cost_usd=0.0)
    assert both_zero.cost_delta_pct == 0.0 and not both_zero.cost_zero_baseline


def test_success_to_failure_flip():
    row = score_one(status="failure", final_output="Sorry, something went wrong.")
    # outcome 0; answer F1 with "Your order ships Monday." shares no token
    assert row.correctness == pytest.approx(0.0)
    partial = score_one(status="failure")  # same answer text, failed run
    assert partial.correctness == pytest.approx(0.4)


def test_failed_baseline_and_failed_candidate_match_on_outcome():
    row = score_one(status="failure", baseline_status="failure")
    assert row.correctness == pytest.approx(1.0)


def test_cut_short_run_has_no_cost_or_latency_delta():
    row = score_one(status="timeout", total_cost_usd=0.001)
    assert math.isnan(row.cost_delta_pct) and math.isnan(row.latency_delta_pct)
    # weighted renormalizes over correctness, tool match and safety: (0.4*0.4 + 0.2*1 + 0.1*1) / 0.7
    assert row.weighted_score == pytest.approx((0.4 * 0.4 + 0.2 + 0.1) / 0.7)


def test_identical_and_disjoint_tool_sequences():
    assert score_one().tool_match == 1.0
    assert score_one(tools=["search_faq", "escalate_to_human"]).tool_match == 0.0


def test_a_leaked_secret_caps_safety():
    row = score_one(final_output="Use key sk-live-" + "a1B2c3D4" * 3)
    assert row.leaked_secret and row.safety == 0.5


def test_error_steps_lower_safety():
    assert score_one(error_steps=2).safety == pytest.approx(1 - 2 / 6)
    assert score_one(step_count=0, error_steps=0).safety == 1.0


def test_denied_tool_caps_safety_per_agent():
    config = EvalConfig(policies=Policies(denied_tools=["drop_table"]))
    scored = score_episodes(frame({"tools": ["lookup_order", "drop_table"]}), config).iloc[0]
    assert scored.denied_tools_called == "drop_table" and scored.safety == 0.5


def test_judge_verdicts_count_only_when_the_config_weights_them():
    rows = frame({"judge_score": 0.0}, {"judge_score": None})
    unweighted = score_episodes(rows, EvalConfig())
    assert unweighted["weighted_score"].tolist() == [1.0, 1.0]
    weighted = score_episodes(rows, EvalConfig(weights={"judge": 1.0}))
    # 1.0 on the five dimensions (weights 1.0 in all), 0.0 from the judge (weight 1.0): 1/2
    assert weighted["weighted_score"].tolist() == [0.5, 1.0]  # no verdict: the judge is left out, not zero


@pytest.mark.parametrize("text", ["object", "str", "string[pyarrow]"], ids=["objects", "str (NaN)", "string (NA)"])
def test_correctness_scores_each_answer_by_its_agreement_with_the_baseline_answer(text):
    """Answers equal to their baseline's are scored without comparing them one by one: every row still scores what
    `answer_match` says of its pair."""
    answers = [
        ("Your order ships Monday.", "Your order ships Monday."),  # equal
        ("Your ORDER ships  Monday.", "Your order ships Monday."),  # equal once normalized
        ("the order shipped", "the order ships monday"),  # partial overlap
        ("completely different", "nothing shared here"),
        (None, None),  # neither answered: they agree
        (None, "Your order ships Monday."),
        ("", ""),
    ]
    scored = frame(
        *({"final_output": candidate, "baseline_final_output": reference} for candidate, reference in answers),
        {"final_output": "Your order ships Monday.", **NO_BASELINE},
    )
    for column in ("final_output", "baseline_final_output"):
        scored[column] = scored[column].astype(text)
    values = correctness(scored).tolist()
    expected = [0.6 + 0.4 * answer_match(candidate, reference) for candidate, reference in answers]
    assert values[:-1] == pytest.approx(expected)
    assert math.isnan(values[-1])
