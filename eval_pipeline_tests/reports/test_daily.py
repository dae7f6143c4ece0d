"""The daily report's new sections: categories, repeated trials and aggregate regressions with their CIs."""

from datetime import date

import pandas as pd

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.findings import FINDING_COLUMNS, passed
from eval_pipeline.reports.daily import build_report, render_markdown
from eval_pipeline.scoring.episodes import score_episodes
from eval_pipeline_tests.scoring.frames import frame

DAY = date(2026, 11, 2)


def test_categories_trials_and_aggregate_regressions_are_reported():
    scores = score_episodes(frame({}, {"total_cost_usd": 0.02}, {}), EvalConfig())
    scores["passed"] = passed(scores, EvalConfig())
    scores["category"] = ["billing", "billing", None]
    scores["final_output"] = "ok"
    findings = pd.DataFrame(
        [
            {"finding_id": "f1", "partition_date": DAY, "agent_id": "support-bot", "episode_id": None, "task_id": None,
             "dimension": "cost_delta", "severity": "warning", "value": 24.0, "threshold": 20.0, "baseline_value": 0.0,
             "message": "mean cost_delta +24.0% vs limit +20.0% against baselines (95% CI +21.1% to +26.9% over 5 tasks)",
             "config_version": "v", "ci_low": 21.1, "ci_high": 26.9, "p_value": None},
        ],
        columns=FINDING_COLUMNS,
    )  # fmt: skip
    pass_at_k = pd.DataFrame(
        [("support-bot", 1, 0.5, 0.5, 2), ("support-bot", 2, 0.75, 0.25, 2)],
        columns=["agent_id", "k", "pass_at_k", "pass_hat_k", "n_tasks"],
    )
    task_trials = pd.DataFrame(
        [("support-bot", "t1", 2, 1, 0.25), ("support-bot", "t2", 2, 2, 0.0)],
        columns=["agent_id", "task_id", "trials", "passes", "flakiness"],
    )
    empty = pd.DataFrame(columns=["rubric", "status", "cached", "prompt_tokens", "completion_tokens", "cost_usd"])
    pairwise = empty.assign(preferred=None, agree=None)
    report = build_report(
        DAY, scores, findings, findings.iloc[:0], {"success": 3}, 0, empty, pairwise, pass_at_k, task_trials,
        pd.DataFrame(columns=["partition_date", "agent_id"]), None, run_id="r", config_version="v", notes=[],
    )  # fmt: skip
    assert [c["category"] for c in report["categories"]] == ["(none)", "billing"]
    assert report["categories"][1]["episodes"] == 2 and report["categories"][1]["pass_rate"] == 0.5
    assert report["trials"]["flaky_tasks"] == [
        {"agent_id": "support-bot", "task_id": "t1", "trials": 2, "passes": 1, "flakiness": 0.25}
    ]
    assert report["alerts"][0]["ci_low"] == 21.1
    markdown = render_markdown(report)
    assert "## Categories" in markdown and "| billing | 2 | 0.5 |" in markdown
    assert "## Repeated Trials" in markdown and "| support-bot | t1 | 2 | 1 | 0.25 |" in markdown
    assert (
        "## Aggregate Regressions" in markdown
        and "| WARNING | support-bot | cost_delta | 24.0 | 21.1 to 26.9 | – | 20.0 |" in markdown
    )
