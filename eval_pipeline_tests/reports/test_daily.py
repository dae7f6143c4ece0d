"""The daily report's sections: categories, case-set balance, calibration sample, repeated trials and
aggregate regressions with their CIs."""

from dataclasses import replace
from datetime import date, timedelta

import duckdb
import pandas as pd
import pyarrow as pa

from eval_pipeline.capture.cases import CaseSpec, balance
from eval_pipeline.config import EvalConfig
from eval_pipeline.llm.judge import JudgeTally
from eval_pipeline.regression.findings import FINDING_COLUMNS, with_verdicts
from eval_pipeline.reports.calibration import render_calibration
from eval_pipeline.reports.daily import build_report, render_markdown
from eval_pipeline.reports.document import DayScores, ReportData, RunContext
from eval_pipeline.scoring.assessments import ISSUE_COLUMNS
from eval_pipeline.scoring.episodes import score_episodes
from eval_pipeline.warehouse.reports import day_scores
from eval_pipeline_tests.scoring.frames import frame

DAY = date(2026, 11, 2)
ISSUES = pd.DataFrame(columns=ISSUE_COLUMNS)


NO_ISSUES = pd.DataFrame(columns=["episode_id", "check", "severity", "detail"])


def read_as_the_warehouse_does(scores: pd.DataFrame, findings: pd.DataFrame) -> DayScores:
    """`scores` rows (with category and final output) read by the warehouse's own report queries, typed as the
    warehouse types them: a column of only NULLs as text, a list as a list of text (DuckDB would guess numbers)."""
    rows = pa.Table.from_pandas(scores.assign(baseline_origin=None), preserve_index=False)
    text = [f.with_type(pa.list_(pa.string()) if pa.types.is_list(f.type) else pa.string()) if _untyped(f.type) else f
            for f in rows.schema]  # fmt: skip
    with duckdb.connect() as con:
        con.register("day_scores", rows.cast(pa.schema(text)))
        con.register("day_issues", NO_ISSUES)
        return day_scores(con, "day_scores", "day_issues", {}, findings["episode_id"].dropna().tolist(), [])


def _untyped(kind: pa.DataType) -> bool:
    return pa.types.is_null(kind) or (pa.types.is_list(kind) and pa.types.is_null(kind.value_type))


def test_categories_trials_and_aggregate_regressions_are_reported():
    scores = with_verdicts(score_episodes(frame({}, {"total_cost_usd": 0.02}, {}), EvalConfig()), ISSUES, EvalConfig())
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
    failed = pd.DataFrame(
        [(f"support-bot:t{n}:0", "support-bot", f"t{n}", 0, "say hi", f"prompt {n}", "```\n# injected\n```", "grader: no hi")
         for n in range(5)],
        columns=["episode_id", "agent_id", "task_id", "trial", "hint", "input", "output", "reasoning"],
    )  # fmt: skip
    cases = [CaseSpec(id=f"c{n}", input="x", metadata={"category": "billing" if n < 8 else "auth", "negative": n == 0})
             for n in range(10)]  # fmt: skip
    data = ReportData(
        day=DAY, scores=read_as_the_warehouse_does(scores, findings), findings=findings,
        previous_findings=findings.iloc[:0], status_counts={"success": 3},
        superseded=0, quarantined=0, judge=JudgeTally(), labelled_judgements=empty, pass_at_k=pass_at_k,
        task_trials=task_trials,
        failed_trials=failed, trend=pd.DataFrame(columns=["partition_date", "agent_id"]), previous_summary=None,
        labels=pd.DataFrame(),
    )  # fmt: skip
    report = build_report(data, RunContext(run_id="r", config_version="v", calibration_size=3, balance=balance(cases)))
    assert report["balance"] == {
        "cases": 10, "positive": 9, "negative": 1, "under_represented": ["auth"],
        "categories": [{"category": "billing", "cases": 8, "share": 0.8}, {"category": "auth", "cases": 2, "share": 0.2}],
    }  # fmt: skip
    sampled = report["calibration"]
    assert sampled["failed"] == 5 and len(sampled["trials"]) == 3
    again = build_report(
        replace(data, failed_trials=failed.iloc[::-1]), RunContext(run_id="r", config_version="v", calibration_size=3)
    )
    assert again["calibration"] == sampled  # seeded by the day: the same sample on a re-run, whatever the row order
    page = render_calibration(DAY.isoformat(), sampled)
    assert page.count("- [ ] the grader was right") == 3 and "````text\n```\n# injected\n```\n````" in page
    assert [c["category"] for c in report["categories"]] == ["(none)", "billing"]
    assert report["categories"][1]["episodes"] == 2 and report["categories"][1]["pass_rate"] == 0.5
    assert report["trials"]["flaky_tasks"] == [
        {"agent_id": "support-bot", "task_id": "t1", "trials": 2, "passes": 1, "flakiness": 0.25}
    ]
    assert report["alerts"][0]["ci_low"] == 21.1
    markdown = render_markdown(report)
    assert "## Categories" in markdown and "| billing | 2 | 50% |" in markdown
    assert "## Case Set Balance" in markdown and "| billing | 8 | 80% |" in markdown
    assert "under-represented (below half an even share): auth." in markdown
    assert "Grader calibration: 3 of 5 failed trials sampled for review in `calibration-" in markdown
    assert "## Repeated Trials" in markdown and "| support-bot | t1 | 2 | 1 | 0.25 |" in markdown
    assert (
        "## Aggregate Regressions" in markdown
        and "| WARNING | support-bot | cost_delta | +24.0% | +21.1% to +26.9% | – | +20.0% |" in markdown
    )


def test_the_trend_shows_the_days_agents_from_their_first_day_with_data():
    """A user's agent in a warehouse the demo shares: the demo's agents are not in the user's charts, nor are the 28
    empty days before the first with data."""
    scores = with_verdicts(score_episodes(frame({}, {}), EvalConfig()), ISSUES, EvalConfig()).assign(category=None)
    metrics = {"pass_rate": 1.0, "mean_weighted_score": 1.0, "mean_cost_delta_pct": 0.0, "mean_latency_delta_pct": 0.0}
    trend = pd.DataFrame(
        [{"partition_date": DAY - timedelta(days=1), "agent_id": "support-bot", **metrics},
         {"partition_date": DAY, "agent_id": "support-bot", **metrics},
         {"partition_date": DAY - timedelta(days=5), "agent_id": "demo-agent", **metrics}]
    )  # fmt: skip
    empty = pd.DataFrame(columns=["rubric", "status", "cached", "prompt_tokens", "completion_tokens", "cost_usd"])
    nothing = pd.DataFrame(columns=["agent_id", "task_id", "trials", "passes", "flakiness", "k"])
    no_findings = pd.DataFrame(columns=FINDING_COLUMNS)
    data = ReportData(
        day=DAY, scores=read_as_the_warehouse_does(scores, no_findings), findings=no_findings,
        previous_findings=no_findings, status_counts={"success": 2}, superseded=0, quarantined=0, judge=JudgeTally(),
        labelled_judgements=empty, pass_at_k=nothing, task_trials=nothing,
        failed_trials=pd.DataFrame(columns=["episode_id", "agent_id", "task_id", "trial", "hint", "input", "output"]),
        trend=trend, previous_summary=None, labels=pd.DataFrame(),
    )  # fmt: skip
    report = build_report(data, RunContext(run_id="r", config_version="v"))
    assert set(report["trend"]["agents"]) == {"support-bot"} == {a["agent_id"] for a in report["agents"]}
    assert report["trend"]["days"] == [(DAY - timedelta(days=1)).isoformat(), DAY.isoformat()]


def test_without_a_baseline_every_episode_still_shows_its_grade_and_issues(project_env, monkeypatch):
    """An evallab user's first day: "episodes": [] in the JSON report, grades and issues only by SQL."""
    import json

    from eval_pipeline.cli import main
    from eval_pipeline.episodes.samples import write_samples

    write_samples(project_env / "episodes")
    (project_env / "eval.toml").write_text("[baseline]\nlookback_days = 0\n")  # no baseline from anywhere
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    report = json.loads((project_env / "reports" / "eval-report-2026-11-02.json").read_text())
    episodes = report["episodes"]
    assert len(episodes) == min(50, report["summary"]["total_episodes"])
    assert {e["passed"] for e in episodes} >= {None} and all(e["issue_grade"] in set("ABCDF") for e in episodes)
    order = {False: 0, None: 1, True: 2}
    assert [order[e["passed"]] for e in episodes] == sorted(order[e["passed"]] for e in episodes)  # failed first
    with_issues = [e for e in episodes if e["issues"]]
    assert with_issues and all({"check", "severity", "detail"} <= i.keys() for e in with_issues for i in e["issues"])
    markdown = (project_env / "reports" / "eval-report-2026-11-02.md").read_text()
    assert "| Episode | Agent | Verdict | Score |" in markdown and "| Grade | Issues |" in markdown
    assert "no verdict" in markdown


def test_a_run_for_one_agent_in_a_shared_warehouse_says_that_agents_figures_beside_the_whole_days_report(project_env, capsys):
    """Issue 21: the user's agent shares its warehouse with the demo's agents. A run of its agent alone prints that
    agent's figures (its row of the report's agent table) beside the day's, while the report stays the whole day's,
    as the warehouse holds it, and says which agent this run evaluated again."""
    import json

    from eval_pipeline.cli import main
    from eval_pipeline.episodes.samples import write_samples

    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    capsys.readouterr()
    whole_day = json.loads((project_env / "reports" / "eval-report-2026-11-02.json").read_text())["summary"]
    assert main(["run", "--date", "2026-11-02", "--agent", "support-bot", "--fail-on", "never"]) == 0
    printed = capsys.readouterr().out
    report = json.loads((project_env / "reports" / "eval-report-2026-11-02.json").read_text())
    assert {a["agent_id"] for a in report["agents"]} >= {"support-bot", "billing-bot", "code-assistant"}
    assert report["summary"] == whole_day | {"agent_id": None}
    (mine,) = [a for a in report["agents"] if a["agent_id"] == "support-bot"]
    summary = report["summary"]
    assert f"{summary['total_episodes']:>5} episodes  {summary['passed']:>5} passed  {summary['failed']:>5} failed" in printed
    assert (
        f"agent support-bot (this run; its figures decide the exit code): {mine['episodes']:>5} episodes  "
        f"{mine['passed']:>5} passed  {mine['failed']:>5} failed"
    ) in printed
    assert mine["episodes"] < summary["total_episodes"]
    html = (project_env / "reports" / "eval-report-2026-11-02.html").read_text()
    assert "This run evaluated agent support-bot again (run --agent)" in html and "billing-bot" in html
