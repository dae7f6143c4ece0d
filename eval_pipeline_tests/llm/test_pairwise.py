"""The pairwise judge and the judge's budget and costs, against a real OpenAI-compatible server on 127.0.0.1."""

import pandas as pd
import pytest

from eval_pipeline.config import Price
from eval_pipeline.llm.gateway import Gateway, GatewayError
from eval_pipeline.llm.judge import RELEVANCE, judge_partition, judge_tally
from eval_pipeline_tests.fake_openai import deterministic_score

# deterministic_score: "Refund sent today." 5, "Please wait." 3, "No idea." 1, "Sorry." 5 (code points mod 5, plus 1)
CANDIDATES = pd.DataFrame(
    [
        ("ep-1", "bot", "Where is my refund?", "Refund sent today.", "base-1", "Please wait."),
        ("ep-2", "bot", "Where is my refund?", "No idea.", "base-2", "Sorry."),
        ("ep-3", "bot", "Hello", "Same  answer.", "base-3", "Same answer."),
        ("ep-4", "bot", "Hello", "ok", None, None),
        ("ep-5", "bot", "Hello", "ok", "base-5", ""),
    ],
    columns=["episode_id", "agent_id", "user_input", "final_output", "baseline_episode_id", "baseline_output"],
)
PRICE = Price(input_per_million=1_000, output_per_million=5_000)  # the fake's 100 + 20 tokens: $0.2 a call


def gateway(server, **options) -> Gateway:
    return Gateway(base_url=server.base_url, api_key="sk-pairwise-test-key-0123456789", model="judge-1", **options)


def by_episode(frame: pd.DataFrame) -> dict[str, dict]:
    return {row["episode_id"]: row for row in frame.to_dict("records")}


def test_each_pair_is_asked_in_both_orders_and_the_verdicts_agree(fake_openai):
    assert [deterministic_score(text) for text in ("Refund sent today.", "Please wait.", "No idea.", "Sorry.")] == [5, 3, 1, 5]
    outcome = judge_partition(gateway(fake_openai), CANDIDATES, [], lambda keys: {}, pairwise=True)
    pairs = by_episode(outcome.pairwise)
    assert pairs["ep-1"]["candidate_first"] == pairs["ep-1"]["baseline_first"] == "candidate"
    assert pairs["ep-1"]["agree"] and pairs["ep-1"]["preferred"] == "candidate"
    assert pairs["ep-2"]["preferred"] == "baseline"
    # the same answer (whitespace aside) is a tie without a call
    assert (pairs["ep-3"]["preferred"], pairs["ep-3"]["status"]) == ("tie", "judged") and pd.isna(pairs["ep-3"]["prompt_tokens"])
    assert (pairs["ep-4"]["status"], pairs["ep-4"]["reasoning"]) == ("skipped", "skipped: no baseline")
    assert (pairs["ep-5"]["status"], pairs["ep-5"]["reasoning"]) == ("skipped", "skipped: no baseline answer")
    asked = [r["body"]["messages"][1]["content"] for r in fake_openai.requests]
    assert len(asked) == 4  # two pairs, two orders each (sent concurrently, so in any order)
    orders = {(text.index("Refund sent today.") < text.index("Please wait.")) for text in asked if "Refund sent today." in text}
    assert orders == {True, False}  # the candidate shown first once, second once


def test_position_bias_is_measured_not_hidden(fake_openai):
    fake_openai.position_bias = True  # the judge always prefers whatever it reads first
    outcome = judge_partition(gateway(fake_openai), CANDIDATES, [], lambda keys: {}, pairwise=True)
    pairs = by_episode(outcome.pairwise)
    for episode in ("ep-1", "ep-2"):
        assert (pairs[episode]["candidate_first"], pairs[episode]["baseline_first"]) == ("candidate", "baseline")
        assert not pairs[episode]["agree"] and pairs[episode]["preferred"] == "inconsistent"
    summary = judge_tally(outcome.rubrics, outcome.pairwise).summary()
    assert (summary["pairs_compared"], summary["pairs_inconsistent"], summary["pairs_tie"]) == (3, 2, 1)
    assert summary["pair_agreement"] == pytest.approx(1 / 3, abs=1e-4)


def test_the_judge_prices_its_own_calls_and_the_cache_saves_them(fake_openai):
    cache: dict[str, dict] = {}
    first = judge_partition(gateway(fake_openai, price=PRICE), CANDIDATES, [RELEVANCE], lambda keys: {}, pairwise=True)
    summary = judge_tally(first.rubrics, first.pairwise).summary()
    # 4 distinct rubric requests and 4 pairwise ones, 120 tokens and $0.2 each; ep-5 asks what ep-4 asked: one call saved
    assert first.calls == 8 and (summary["tokens"], summary["cost_usd"]) == (8 * 120, pytest.approx(1.6))
    assert (summary["tokens_saved_by_cache"], summary["cost_saved_by_cache_usd"]) == (120, pytest.approx(0.2))
    assert by_episode(first.pairwise)["ep-1"]["cost_usd"] == pytest.approx(0.4)  # both orders
    cache.update(
        {
            row["cache_key"]: row | {"answer": __import__("json").loads(row["answer"])}
            for row in first.new_cache.to_dict("records")
        }
    )

    second = judge_partition(
        gateway(fake_openai, price=PRICE),
        CANDIDATES,
        [RELEVANCE],
        lambda keys: {k: cache[k] for k in keys if k in cache},
        pairwise=True,
    )
    summary = judge_tally(second.rubrics, second.pairwise).summary()
    assert second.calls == 0 and second.cache_hits == 9  # ep-4 and ep-5 share one cached answer
    assert (summary["tokens"], summary["cost_usd"]) == (0, 0.0)
    assert (summary["tokens_saved_by_cache"], summary["cost_saved_by_cache_usd"]) == (9 * 120, pytest.approx(1.8))


def test_a_dollar_budget_stops_cleanly_and_says_what_was_left(fake_openai):
    judge = gateway(fake_openai, price=PRICE, max_dollars=0.5, concurrency=1)
    outcome = judge_partition(judge, CANDIDATES, [RELEVANCE], lambda keys: {}, pairwise=True)
    assert judge.usage.calls == 3 and judge.usage.cost_usd == pytest.approx(0.6)  # $0.4 spent < $0.5: one more call
    statuses = pd.concat([outcome.rubrics, outcome.pairwise])
    unjudged = statuses[statuses["reasoning"].str.contains("budget", na=False)]
    assert len(unjudged) and set(unjudged["status"]) == {"skipped"}
    assert set(unjudged["reasoning"]) == {"skipped: budget of $0.5 used up"}
    assert judge.usage.failures == []

    with pytest.raises(GatewayError, match="needs a price for judge-1"):
        gateway(fake_openai, max_dollars=1.0)
