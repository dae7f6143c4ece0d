"""PPE metrics against hand-computed values: ties, identical rewards, K = 1, and the ground truth's sources."""

import json
from itertools import combinations
from math import sqrt

import numpy as np
import pandas as pd
import pytest

from eval_pipeline.rewards.benchmark import (
    BenchmarkError,
    best_of_k,
    brier,
    ground_truth,
    kendall_tau_b,
    load_labels,
    pairwise_accuracy,
    separability,
    spearman,
)

# Two good runs and two bad ones; the reward ties one good run with one bad run.
REWARDS = [0.9, 0.5, 0.5, 0.1]
TRUTH = [1, 1, 0, 0]


def test_pairwise_accuracy_counts_a_reward_tie_as_half():
    # pairs with different truth: (0,2) right, (0,3) right, (1,2) tied, (1,3) right
    assert pairwise_accuracy(REWARDS, TRUTH) == pytest.approx(3.5 / 4)
    assert pairwise_accuracy([0.1, 0.2, 0.3], [3, 2, 1]) == 0.0
    assert pairwise_accuracy([0.7] * 4, TRUTH) == 0.5  # identical rewards: every pair a tie
    assert pairwise_accuracy(REWARDS, [1, 1, 1, 1]) is None  # no pair differs in ground truth


def test_kendall_tau_b_shrinks_its_denominator_by_the_ties_of_both_sides():
    # n0 = 6 pairs; 1 tied in the reward, 2 in the truth; 3 concordant, 0 discordant
    assert kendall_tau_b(REWARDS, TRUTH) == pytest.approx(3 / sqrt((6 - 1) * (6 - 2)))
    assert kendall_tau_b([0.1, 0.2, 0.3], [3, 2, 1]) == pytest.approx(-1.0)
    assert kendall_tau_b([0.7] * 4, TRUTH) is None  # a constant reward ranks nothing


def test_spearman_gives_ties_their_mean_rank():
    # ranks: reward [4, 2.5, 2.5, 1], truth [3.5, 3.5, 1.5, 1.5] -> covariance 3, variances 4.5 and 4
    assert spearman(REWARDS, TRUTH) == pytest.approx(3 / sqrt(4.5 * 4))
    assert spearman([0.1, 0.2, 0.3], [3, 2, 1]) == pytest.approx(-1.0)
    assert spearman([0.7] * 4, TRUTH) is None


def test_brier_reads_the_reward_as_the_probability_of_a_good_run():
    assert brier(REWARDS, TRUTH) == pytest.approx((0.01 + 0.25 + 0.25 + 0.01) / 4)
    assert brier([0.5, 0.5], [0.7, 0.2]) == pytest.approx(0.25)  # truth 0.7 is good, 0.2 bad


def test_best_of_k_picks_the_rewards_favourite_and_places_it_between_random_and_the_oracle():
    rewards = [0.9, 0.1, 0.5, 0.2, 0.2]
    truth = [0, 1, 1, 1, 0]
    groups = ["a", "a", "a", "b", "b"]
    whole = best_of_k(rewards, truth, groups)  # K = each group's size
    # a: the reward picks 0.9 (truth 0); b: a tie between truth 1 and 0 -> 0.5 expected
    assert whole["picked"] == pytest.approx((0 + 0.5) / 2)
    assert whole["random"] == pytest.approx((2 / 3 + 0.5) / 2)
    assert whole["oracle"] == 1.0
    assert whole["normalized"] == pytest.approx((0.5 - (2 / 3 + 0.5)) / (2 - (2 / 3 + 0.5)))  # worse than random: -0.8
    two = best_of_k(rewards, truth, groups, k=2)
    # a: of the 3 pairs only {0.1, 0.5} avoids 0.9, and it picks truth 1 -> 1/3
    assert two["picked"] == pytest.approx((1 / 3 + 0.5) / 2) and two["oracle"] == 1.0 and two["groups"] == 2
    assert best_of_k(rewards, truth, groups, k=3)["groups"] == 1  # b has only two runs


def test_best_of_1_is_a_random_pick():
    one = best_of_k([0.9, 0.1, 0.5], [0, 1, 1], ["a"] * 3, k=1)
    assert one["picked"] == one["random"] == one["oracle"] == pytest.approx(2 / 3)
    assert one["normalized"] is None  # no choice to make: nothing to place between random and oracle


def test_best_of_k_with_identical_rewards_is_random():
    same = best_of_k([0.4] * 4, [1, 0, 0, 0], ["a"] * 4)
    assert same["picked"] == pytest.approx(0.25) and same["normalized"] == pytest.approx(0.0)


def pairs_by_definition(rewards, truth) -> tuple[int, int, int, int, int]:
    """Every pair looked at once, O(n²): (concordant, discordant, tied in the reward alone, tied in the truth, pairs)."""
    concordant = discordant = reward_ties = truth_ties = 0
    for (r1, t1), (r2, t2) in combinations(zip(rewards, truth, strict=True), 2):
        if t1 == t2:
            truth_ties += 1
        elif r1 == r2:
            reward_ties += 1
        elif (r1 < r2) == (t1 < t2):
            concordant += 1
        else:
            discordant += 1
    return concordant, discordant, reward_ties, truth_ties, len(rewards) * (len(rewards) - 1) // 2


def test_pairwise_accuracy_and_kendall_tau_b_count_every_pair_as_their_definitions_with_any_ties():
    rng = np.random.default_rng(7)
    for trial in range(300):
        n = int(rng.integers(0, 40))
        levels = int(rng.integers(1, 8))
        rewards = rng.random(n) if trial % 3 == 0 else rng.integers(0, levels, n) / levels
        truth = rng.random(n) if trial % 4 == 0 else rng.integers(0, 3, n) / 2
        concordant, discordant, reward_ties, truth_ties, pairs = pairs_by_definition(rewards, truth)
        differing = pairs - truth_ties
        expected = (concordant + 0.5 * reward_ties) / differing if differing else None
        assert pairwise_accuracy(rewards, truth) == pytest.approx(expected)
        tied_in_rewards = sum(a == b for a, b in combinations(rewards, 2))
        denominator = (pairs - tied_in_rewards) * (pairs - truth_ties)
        tau = (concordant - discordant) / sqrt(denominator) if denominator > 0 else None
        assert kendall_tau_b(rewards, truth) == pytest.approx(tau)


def test_a_hundred_thousand_runs_of_a_continuous_ground_truth_are_ranked_exactly():
    # A continuous ground truth (a reviewers' share, a recorded metadata.reward) has a level per run. Before, counting
    # pairs level by level took minutes at 200,000 runs, and tau-b's denominator, an exact integer past int64 from about
    # 78,000 runs, stopped reward-bench with "loop of ufunc does not support argument 0 of type int".
    n, swapped = 100_000, 1_234
    truth = np.random.default_rng(3).permutation(n) / n
    in_order = np.sort(truth)
    rewards = in_order.copy()
    at = np.arange(swapped) * 50  # disjoint neighbours swapped: exactly `swapped` pairs out of order
    rewards[at], rewards[at + 1] = in_order[at + 1], in_order[at]
    pairs = n * (n - 1) // 2
    assert pairwise_accuracy(rewards, in_order) == (pairs - swapped) / pairs
    assert kendall_tau_b(rewards, in_order) == pytest.approx((pairs - 2 * swapped) / pairs, rel=1e-12)


def best_of_k_by_enumeration(rewards, truth, groups, k) -> dict:
    """Best-of-K by its definition: every draw of K runs of a group, its highest reward's runs equally likely picked."""
    picked, random_pick, oracle = [], [], []
    for group in sorted(set(groups)):
        members = [i for i, g in enumerate(groups) if g == group]
        size = len(members) if k is None else k
        if len(members) < size:
            continue
        draws = list(combinations(members, size))

        def pick(scores, draws=draws):
            best = [[i for i in draw if scores[i] == max(scores[j] for j in draw)] for draw in draws]
            return float(np.mean([np.mean([truth[i] for i in top]) for top in best]))

        picked.append(pick(rewards))
        oracle.append(pick(truth))
        random_pick.append(float(np.mean([truth[i] for i in members])))
    if not picked:
        return {"groups": 0, "picked": None, "random": None, "oracle": None}
    return {"groups": len(picked), "picked": np.mean(picked), "random": np.mean(random_pick), "oracle": np.mean(oracle)}


def test_best_of_k_of_many_groups_at_once_is_the_mean_over_every_draw():
    rng = np.random.default_rng(11)
    for trial in range(120):
        n = int(rng.integers(1, 16))
        rewards = (rng.integers(0, 3, n) / 2).tolist() if trial % 2 else rng.random(n).round(1).tolist()
        truth = (rng.integers(0, 2, n) * 1.0).tolist() if trial % 3 else rng.random(n).tolist()
        groups = [str(g) for g in rng.integers(0, 4, n)]
        for k in (None, 1, 2, 3):
            got, expected = best_of_k(rewards, truth, groups, k), best_of_k_by_enumeration(rewards, truth, groups, k)
            assert got["groups"] == expected["groups"]
            for key in ("picked", "random", "oracle"):
                assert got[key] == (None if expected[key] is None else pytest.approx(expected[key], rel=1e-12, abs=1e-12))


def test_separability_counts_system_pairs_with_disjoint_intervals():
    assert separability([0.9, 0.9, 0.9, 0.1, 0.1, 0.1], ["a"] * 3 + ["b"] * 3) == 1.0
    assert separability([0.5] * 6, ["a", "b", "c"] * 2) == 0.0
    assert separability([0.2, 0.4], ["a", "a"]) is None
    spread = [0.1, 0.9, 0.5, 0.2, 0.8, 0.6]
    assert separability(spread, ["a"] * 3 + ["b"] * 3) == separability(spread, ["a"] * 3 + ["b"] * 3)  # seeded


def test_ground_truth_prefers_a_label_then_the_case_then_metadata_reward():
    scored = pd.DataFrame(
        {
            "episode_id": ["labelled", "cased", "rewarded", "unknown"],
            "case_passed": pd.array([False, True, None, None], dtype="boolean"),
            "metadata_reward": [0.0, 0.0, 3.0, None],
        }
    )
    truth, source = ground_truth(scored, {"labelled": 0.75})
    assert truth.tolist()[:3] == [0.75, 1.0, 1.0] and pd.isna(truth.iloc[3])  # metadata.reward clipped to 1
    assert source.tolist() == ["label", "case", "metadata.reward", "none"]


def test_labels_come_from_jsonl_or_a_json_list(tmp_path):
    jsonl = tmp_path / "labels.jsonl"
    jsonl.write_text('{"episode_id": "a", "label": true}\n{"episode_id": "b", "label": 0.25}\n')
    assert load_labels(jsonl) == {"a": 1.0, "b": 0.25}
    listed = tmp_path / "labels.json"
    listed.write_text(json.dumps([{"episode_id": "c", "label": 0}]))
    assert load_labels(listed) == {"c": 0.0}
    for bad in ('{"episode_id": "a", "label": 2}\n', '{"label": 1}\n', '{"episode_id": "a", "label": "good"}\n', "not json\n"):
        jsonl.write_text(bad)
        with pytest.raises(BenchmarkError, match="labels file"):
            load_labels(jsonl)
