"""The findings step reads only the `scores` rows its screen passes (`finding_screen`): the findings must be exactly
those of every row, whatever thresholds each agent has, and the screen must pass over the rows that find nothing."""

from __future__ import annotations

from datetime import date

import pandas as pd
import pytest

from benchmarks.run_throughput import Shape, write_days
from eval_pipeline.cli import main
from eval_pipeline.config import AgentOverrides, EvalConfig, Threshold, load_config
from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline.regression.aggregates import summary_columns
from eval_pipeline.regression.findings import finding_screen, partition_findings
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.findings import screened_scores_in_parts

pytestmark = pytest.mark.slow


def _findings(config: EvalConfig, parts, day: date) -> pd.DataFrame:
    no_tasks = pd.DataFrame(columns=["agent_id", "task_id", "partition_date", *summary_columns(), "graded", "passes"])
    found = partition_findings(parts, no_tasks, no_tasks, None, day, config)
    return found.sort_values("finding_id").reset_index(drop=True)


def _day(warehouse: Warehouse, table: str, day: date) -> pd.DataFrame:
    return warehouse.read_frame(f"SELECT * FROM {table} WHERE partition_date = $day ORDER BY episode_id", {"day": day})


@pytest.fixture
def warehouse(sample_root) -> Warehouse:
    """The demo days (one with numeric fabrications, a finding-grade check) and, beside the last two, two generated
    days of 120 episodes, a fifth of them regressed in cost, latency, tool sequence or outcome."""
    write_days(sample_root / "generated", SAMPLE_DAYS[1:], Shape.parse("3x10x4"), seed=7, regression_rate=0.2)
    for day_file in (sample_root / "generated").iterdir():
        day_file.rename(sample_root / "episodes" / f"generated-{day_file.name}")
    assert main(["run", "--start", SAMPLE_DAYS[0].isoformat(), "--end", SAMPLE_DAYS[-1].isoformat(), "--fail-on", "never"]) == 0
    return Warehouse(sample_root / "eval.duckdb")


def test_screened_scores_find_what_every_score_finds(warehouse, monkeypatch):
    monkeypatch.setattr("eval_pipeline.warehouse.findings.FINDING_PART_EPISODES", 7)  # many parts
    defaults = load_config(PROJECT_ROOT / "eval.toml")
    # one generated agent judged more strictly than the defaults on three dimensions, one more loosely, the rest by
    # the defaults
    strict, loose = "agent-00", "agent-01"
    config = defaults.model_copy(
        update={
            "agents": {
                strict: AgentOverrides(
                    thresholds={
                        "cost_delta": Threshold(warning=0.5, critical=400),
                        "tool_match": Threshold(warning=0.999),
                        "weighted_score": Threshold(critical=0.97),
                    }
                ),
                loose: AgentOverrides(thresholds={"latency_delta": Threshold(warning=900, critical=None)}),
            }
        }
    )
    screen = finding_screen(config)
    limits = {b.column: b.limit for b in screen.breachable}
    assert limits["cost_delta_pct"] == 0.5 and limits["tool_match"] == 0.999 and limits["weighted_score"] == 0.97
    fabricated = 0
    for day in SAMPLE_DAYS:
        scores, issues = _day(warehouse, "scores", day), _day(warehouse, "issues", day)
        screened = list(screened_scores_in_parts(warehouse, day, None, screen))
        assert len(screened) == -(-len(scores) // 7)  # parts as many as the day's episodes fill, screened or not
        expected = _findings(config, [(scores, issues)], day)
        pd.testing.assert_frame_equal(_findings(config, screened, day), expected)
        assert sum(len(part) for part, _ in screened) < len(scores)  # it passes over the rows that find nothing
        fabricated += (expected["dimension"] == "numeric_fabrication").sum()
    assert fabricated > 0
    assert expected["episode_id"].nunique() > 10
    # the strict agent's overrides find more than the defaults would, through the screen too
    by_defaults = _findings(defaults, [(scores, issues)], day)
    assert (expected["agent_id"] == strict).sum() > (by_defaults["agent_id"] == strict).sum()
