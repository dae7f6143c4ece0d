"""pass@k, pass^k and flakiness against hand-computed tables."""

import pandas as pd
import pytest

from eval_pipeline.regression.trials import agent_pass_at_k, pass_at_k, pass_hat_k, with_flakiness


@pytest.mark.parametrize(
    ("n", "c", "k", "at_k", "hat_k"),
    [
        (5, 2, 1, 2 / 5, 2 / 5),  # k = 1: both are the pass rate
        (5, 2, 2, 1 - 3 / 10, 1 / 10),  # 1 − C(3,2)/C(5,2); C(2,2)/C(5,2)
        (5, 2, 3, 1 - 1 / 10, 0.0),  # 1 − C(3,3)/C(5,3); C(2,3) = 0
        (5, 2, 4, 1.0, 0.0),  # C(3,4) = 0: any 4 trials hold a pass
        (3, 3, 3, 1.0, 1.0),  # n = k, c = n
        (3, 0, 3, 0.0, 0.0),  # c = 0
        (3, 0, 1, 0.0, 0.0),
        (4, 4, 2, 1.0, 1.0),  # c = n
        (4, 1, 4, 1.0, 0.0),  # n = k with one pass
    ],
)
def test_estimators_match_hand_computed_values(n, c, k, at_k, hat_k):
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_per_agent_means_over_tasks_with_enough_trials():
    counts = pd.DataFrame(
        [("a", "t1", 3, 1), ("a", "t2", 2, 2), ("a", "t3", 1, 0), ("b", "t1", 1, 1)],
        columns=["agent_id", "task_id", "trials", "passes"],
    )
    tasks = with_flakiness(counts)
    # t1: k=1 0, k=2 (1 − 1/3) − 0 = 2/3, k=3 1 − 0: flakiness (0 + 2/3 + 1) / 3 = 5/9; t2 and t3 are steady
    assert tasks["flakiness"].tolist() == pytest.approx([5 / 9, 0.0, 0.0, 0.0])
    per_k = agent_pass_at_k(tasks)
    a = per_k[per_k["agent_id"] == "a"].set_index("k")
    assert a["n_tasks"].to_dict() == {1: 3, 2: 2, 3: 1}
    assert a.loc[1, "pass_at_k"] == pytest.approx((1 / 3 + 1 + 0) / 3)
    assert a.loc[2, "pass_at_k"] == pytest.approx(((1 - 1 / 3) + 1) / 2) and a.loc[2, "pass_hat_k"] == pytest.approx((0 + 1) / 2)
    assert (a.loc[3, "pass_at_k"], a.loc[3, "pass_hat_k"]) == (1.0, 0.0)
    assert per_k[per_k["agent_id"] == "b"][["k", "pass_at_k", "pass_hat_k", "n_tasks"]].values.tolist() == [[1, 1.0, 1.0, 1]]


def test_the_running_products_hold_the_exact_binomials_to_1e_12_up_to_1000_trials():
    """The old estimators, exact big-integer binomials for every k, are the reference."""
    from math import comb

    for n in (*range(1, 41), 250, 1000):
        for c in sorted({0, 1, n // 3, n // 2, n - 1, n} & set(range(n + 1))):
            for k in range(1, n + 1):
                assert abs(pass_at_k(n, c, k) - (1 - comb(n - c, k) / comb(n, k))) < 1e-12, (n, c, k)
                assert abs(pass_hat_k(n, c, k) - comb(c, k) / comb(n, k)) < 1e-12, (n, c, k)
