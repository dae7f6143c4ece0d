import pytest

from eval_pipeline.scoring.answer import answer_match, normalize
from eval_pipeline.scoring.tools import lcs_length, multiset_jaccard, tool_match


def test_normalized_exact_match_ignores_case_and_whitespace():
    assert normalize("  Your ORDER\n ships   Monday ") == "your order ships monday"
    assert answer_match("Your order ships Monday.", "your  order ships monday.") == 1.0


def test_token_f1_for_partial_overlap():
    # candidate tokens {the, order, shipped}, reference {the, order, ships, monday}: overlap 2
    assert answer_match("the order shipped", "the order ships monday") == pytest.approx(2 * (2 / 3) * (2 / 4) / (2 / 3 + 2 / 4))
    assert answer_match("completely different", "nothing shared here") == 0.0
    assert answer_match(None, "") == 1.0  # both empty


@pytest.mark.parametrize(
    ("candidate", "baseline", "expected"),
    [
        (["search", "fetch", "summarize"], ["search", "fetch", "summarize"], 1.0),
        (["a", "b"], ["c", "d"], 0.0),
        (["a", "a", "a"], ["a"], 0.6 * 1 / 3 + 0.4 * 1 / 3),
        ([], [], 1.0),
        ([], ["a"], 0.0),
        (["a"], [], 0.0),
        (["a", "b"], ["b", "a"], 0.6 * 1.0 + 0.4 * 1 / 2),  # same multiset, order half kept
    ],
)
def test_tool_match_examples_from_the_design(candidate, baseline, expected):
    assert tool_match(candidate, baseline) == pytest.approx(expected)


def test_tool_match_keeps_repeats():
    assert tool_match(["a", "a", "a"], ["a"]) == pytest.approx(0.3333, abs=1e-4)
    assert multiset_jaccard(["a", "a", "b"], ["a", "b", "b"]) == pytest.approx(2 / 4)
    assert lcs_length(["a", "b", "c", "d"], ["b", "d", "x"]) == 2


def test_the_tool_match_dimension_scores_each_row_as_its_own_pair_of_sequences():
    """The dimension computes each distinct pair once: pairs whose names joined would read alike still differ."""
    import numpy as np
    import pandas as pd

    from eval_pipeline.scoring.dimensions import tool_match as tool_match_dimension

    pairs = [
        (["a", "b"], ["a", "b"]),
        (["ab"], ["a", "b"]),  # the same letters, other names
        (["a|1:b"], ["a", "b"]),  # a name holding what a joined key might separate names with
        (["1:a"], ["a"]),
        ([], []),
        (["a", "b"], ["a", "b"]),  # a pair again
        (["search", "search"], ["search"]),
        (["b", "a"], ["a", "b"]),
    ]
    frame = pd.DataFrame(
        {
            "tools": [np.array(c, dtype=object) for c, _ in pairs] + [np.array(["x"], dtype=object)],
            "baseline_tools": [np.array(b, dtype=object) for _, b in pairs] + [pd.NA],
            "baseline_episode_id": [f"base-{i}" for i in range(len(pairs))] + [None],  # the last has no baseline
        },
        index=range(10, 10 + len(pairs) + 1),
    )
    scored = tool_match_dimension(frame)
    assert list(scored.index) == list(frame.index)
    assert scored.iloc[:-1].tolist() == [tool_match(c, b) for c, b in pairs]
    assert scored.iloc[:-1].tolist()[:3] == [1.0, 0.0, 0.0]
    assert np.isnan(scored.iloc[-1])
