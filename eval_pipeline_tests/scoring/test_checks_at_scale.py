"""The checks on a large episode: they must take time in proportion to it (benchmarks/bounds.py times them)."""

import json
import random

import pytest

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import run_checks
from eval_pipeline.scoring.checks.fabrication import _supported
from eval_pipeline.scoring.trajectory import ToolCall, Trajectory


def test_numeric_fabrication_over_hundreds_of_kilobytes_of_numbers_finds_each_made_up_one():
    prices = {f"sku-{i}": 100 + 7 * i for i in range(20_000)}  # the tool's numbers: 100, 107, 114, ...
    stated = [f"{price:,}" for price in prices.values()] + [str(1_000_000 + 100 * i) for i in range(2_000)]
    answer = "Prices: " + ", ".join(stated) + ".\n" + "\n" * 100_000 + "1. That is all."  # and many blank lines
    outputs = json.dumps(prices)
    episode = Trajectory("big", "bot", "success", answer, ["List every price."], [ToolCall("prices", "{}", outputs)], 1)
    assert len(answer) + len(outputs) > 300_000
    made_up = [issue for issue in run_checks(episode, ChecksConfig()) if issue.check == "numeric_fabrication"]
    assert [issue.detail.split("'")[1] for issue in made_up] == [str(1_000_000 + 100 * i) for i in range(2_000)]


@pytest.mark.parametrize("tolerance", [0.0, 0.05, 0.5, 1.0, 3.0])
def test_the_sorted_index_finds_a_matching_source_exactly_when_a_scan_would(tolerance):
    rng = random.Random(7)
    sources = [round(rng.uniform(1, 500), rng.choice([0, 1, 2])) for _ in range(300)]
    index = sorted(set(sources))
    boundaries = [s * (1 + tolerance) for s in sources[:50]] + [s * (1 - tolerance) for s in sources[:50]]
    claims = [value for value in [round(rng.uniform(1, 600), 2) for _ in range(2000)] + sources + boundaries if value >= 1]
    for value in claims:  # the check's claims are numbers of at least 1
        assert _supported(value, index, tolerance) == any(abs(value - s) <= tolerance * s for s in sources), value
