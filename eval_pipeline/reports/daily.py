"""The day's report: one JSON document, rendered to Markdown in the AIR eval-harness shape."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_pipeline import jsonout
from eval_pipeline.config import SEVERITY_RANK
from eval_pipeline.episodes.model import DERIVED_TASK_PREFIX
from eval_pipeline.redaction import excerpt, redact_tree
from eval_pipeline.regression.agreement import Agreement, LabelSummary, label_summary
from eval_pipeline.regression.findings import VerdictCounts
from eval_pipeline.regression.lifecycle import resolved
from eval_pipeline.reports.calibration import calibration_sample, render_calibration
from eval_pipeline.reports.document import (
    REGRESSIONS_LISTED,
    Regression,
    Report,
    ReportData,
    RunContext,
    Summary,
    Trend,
    Trials,
    Verdicts,
    most_alerted_first,
    unlisted,
)
from eval_pipeline.reports.html import aggregate_alerts, render_html
from eval_pipeline.reports.markdown import (
    Link,
    ci_cell,
    column_title,
    dimension_cell,
    failed_on_cell,
    figure,
    left_out_line,
    plain,
    rate,
    signed_percent,
    table,
    trials_cell,
    verdict_line,
)
from eval_pipeline.scoring.dimensions import Direction, Unit, dimensions, finding_units, judged_as
from eval_pipeline.viewer.links import day_url, episode_url
from eval_pipeline.warehouse.viewer import Filters

FLAKIEST_TASKS = 10
ANSWER_CHARS = 2000  # of an agent's answer shown in a report
TREND_DAYS = 30  # partitions the trend charts cover
CATEGORY_SCORES = ("avg_weighted_score", "avg_correctness", "avg_safety")
CALIBRATION_FILE = "calibration-{day}.md"
REPORT_NAME = "eval-report-{day}"  # each report file's name, but for its format's suffix


def _day(value: Any) -> str | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).date().isoformat()


def _number(value: Any, digits: int = 3) -> float | None:
    """A figure as the report states it: rounded; None where it is undefined or unbounded (NaN, ±inf)."""
    if value is None or pd.isna(value) or not math.isfinite(float(value)):
        return None
    return round(float(value), digits)


def build_report(data: ReportData, context: RunContext) -> Report:
    """The day's document, every text in it redacted: each rendering (JSON, Markdown, HTML, the summary row, the
    Dagster metadata) shows only what it holds."""
    day, scores, findings, secret_patterns = data.day, data.scores, data.findings, context.secret_patterns
    figures = {level: rows.drop(columns="level") for level, rows in scores.figures.groupby("level")}
    (whole_day,) = figures["day"].itertuples()  # the grand total: one row, even for a day without episodes
    by_agent = figures.get("agent", figures["day"].iloc[:0]).set_index("agent_id")
    viewer = context.viewer_url

    def url(episode_id: str | None, agent_id: str) -> str | None:
        """The episode's viewer page; a per-agent finding's is the day's page narrowed to its agent."""
        if viewer is None:
            return None
        return episode_url(viewer, day, episode_id) if episode_id else day_url(viewer, day, Filters(agent=agent_id))

    counts = _counts(whole_day)
    critical = int((findings["severity"] == "critical").sum())
    warning = int((findings["severity"] == "warning").sum())
    summary: Summary = {
        "total_episodes": int(sum(data.status_counts.values())),
        **_verdicts(counts),
        "running": int(data.status_counts.get("running", 0)),
        "avg_weighted_score": _number(whole_day.weighted_score),
        "alerts": critical + warning,
        "critical_alerts": critical,
        "warning_alerts": warning,
        "quarantined": data.quarantined,
        "baselines_from": scores.baselines_from,
        "superseded": data.superseded,
        "replays": {
            "live": data.live_replays,
            "reused": data.reused_replays,
            "called": data.live_replays - data.reused_replays,
            "failed": data.failed_replays,
        },
        "judge_failed": data.judge.statuses["failed"] + data.judge.pair_statuses["failed"],
        "agent_id": data.agent_id,
        "without_task_id": scores.without_task_id,
    }
    agents = []
    alerts_of = findings.groupby(["agent_id", "severity"]).size().to_dict()  # looked up per agent, not filtered per agent
    for agent in by_agent.itertuples():
        agents.append(
            {
                "agent_id": agent.Index,
                "episodes": int(agent.episodes),
                **_verdicts(_counts(agent)),
                "avg_weighted_score": _number(agent.weighted_score),
                "avg_cost_delta_pct": _number(agent.cost_delta_pct, 1),
                "avg_latency_delta_pct": _number(agent.latency_delta_pct, 1),
                "critical_alerts": int(alerts_of.get((agent.Index, "critical"), 0)),
                "warning_alerts": int(alerts_of.get((agent.Index, "warning"), 0)),
            }
        )
    ordered_findings = findings.assign(
        _new=findings.get("lifecycle", pd.Series("new", index=findings.index)).ne("new"),
        _rank=-findings["severity"].map(SEVERITY_RANK),
    ).sort_values(["_new", "_rank", "agent_id", "dimension", "episode_id"], na_position="first")  # new ones lead
    alerts = [
        {
            "finding_id": f.finding_id,
            "severity": f.severity,
            "dimension": f.dimension,
            "agent_id": f.agent_id,
            "episode_id": f.episode_id if isinstance(f.episode_id, str) else None,  # None: a per-agent finding
            "value": _number(f.value),
            "threshold": _number(f.threshold),
            "baseline_value": _number(f.baseline_value),
            "message": f.message,
            "ci_low": _number(getattr(f, "ci_low", None)),
            "ci_high": _number(getattr(f, "ci_high", None)),
            "p_value": _number(getattr(f, "p_value", None), 4),
            "lifecycle": getattr(f, "lifecycle", None) or "new",
            "since": _day(getattr(f, "since", None)) or day.isoformat(),
            "url": url(f.episode_id if isinstance(f.episode_id, str) else None, f.agent_id),
        }
        for f in ordered_findings.itertuples()
    ]
    regressions = _regressions(alerts, scores.finding_episodes, by_agent)
    gone = resolved(findings, data.previous_findings)
    resolved_alerts = [
        {"severity": f.severity, "agent_id": f.agent_id, "task_id": f.task_id if isinstance(f.task_id, str) else None,
         "dimension": f.dimension, "since": _day(f.since), "message": f.message}
        for f in gone.itertuples()
    ]  # fmt: skip
    issues_of = _issues_by_episode(scores.shown_issues, secret_patterns)
    episodes = [
        {
            "episode_id": s.episode_id,
            "agent_id": s.agent_id,
            "task_id": s.task_id,
            "weighted_score": _number(s.weighted_score),
            **{d.column: _number(getattr(s, d.column), 1 if d.percent else 3) for d in dimensions()},
            "passed": None if pd.isna(s.passed) else bool(s.passed),
            "verdict_reason": s.verdict_reason if isinstance(s.verdict_reason, str) else None,
            "issue_score": _number(s.issue_score, 1),
            "issue_grade": s.issue_grade if isinstance(s.issue_grade, str) else None,
            "issues": issues_of.get(s.episode_id, []),
            "tools": _names(s.tools),
            "baseline_tools": _names(s.baseline_tools),
            "final_output": _answer(getattr(s, "final_output", None), secret_patterns),
            "url": url(s.episode_id, s.agent_id),
        }
        for s in scores.shown.itertuples()
    ]
    judge = None
    if data.judge.rows:
        rubrics = [
            {
                "rubric": rubric,
                "judged": tally.judged,
                "mean_score": _number(tally.mean_score),
                "mean_normalized": _number(tally.mean_normalized),
                "failed": tally.failed,
                "skipped": tally.skipped,
                "cached": tally.cached,
            }
            for rubric, tally in data.judge.rubrics.items()
        ]
        judge = {"rubrics": rubrics, **data.judge.summary()}
    report: Report = {
        "partition_date": day.isoformat(),
        "run_id": context.run_id,
        "config_version": context.config_version,
        "pass_rate": summary["pass_rate"],
        "critical_alerts": summary["critical_alerts"],
        "warning_alerts": summary["warning_alerts"],
        "summary": summary,
        "agents": agents,
        "previous_summary": data.previous_summary,
        "trend": _trend(data.trend, day, set(by_agent.index)),
        "score_histogram": _histogram(scores.weighted_scores),
        "categories": _categories(figures.get("category", figures["day"].iloc[:0]), scores.failed_on),
        "trials": _trials(data.pass_at_k, data.task_trials),
        "balance": context.balance,
        "calibration": calibration_sample(data.failed_trials, day, context.calibration_size, secret_patterns),
        "judge": judge,
        "labels": label_summary(data.labels, scores.labeled, data.labelled_judgements),
        "alerts": alerts,
        "regressions": regressions,
        "resolved": resolved_alerts,
        "episodes": episodes,
        "notes": [
            *context.notes,
            *_read_in_part_notes(data.read_in_part),
            *_untasked_note(scores.without_task_id, scores.untasked_named),
        ],
    }
    return redact_tree(report, secret_patterns)


def _read_in_part_notes(read_in_part: Sequence[tuple[str, str | None, int | None]]) -> list[str]:
    """What a run narrowed by `--model` or `--limit` left out stays out of every figure of the day until a run reads
    it whole: the report says so, since its counts look like the whole day's."""
    return [
        "Read in part: run "
        + " ".join(f"--{flag} {value}" for flag, value in (("model", model), ("limit", limit)) if value)
        + f" left out some of {agent}'s episodes of the day; they are not counted here."
        for agent, model, limit in read_in_part
    ]


def _untasked_note(count: int, named: list[str]) -> list[str]:
    if not count:
        return []
    unnamed = count - len(named)
    listed = ", ".join(named) + (f" and {unnamed} more" if unnamed > 0 else "")
    return [
        f"{count} episode(s) had no metadata.task_id, so each was grouped under a task derived from its first "
        f"user message ({DERIVED_TASK_PREFIX}…): {listed}"
    ]


def _counts(figures: Any) -> VerdictCounts:
    """The verdict counts of one row of `DayScores.figures`."""
    return VerdictCounts(
        int(figures.episodes), int(figures.passed), int(figures.failed), int(figures.without_verdict),
        int(figures.without_baseline),
    )  # fmt: skip


def _regressions(alerts: list[dict[str, Any]], found: pd.DataFrame, by_agent: pd.DataFrame) -> list[Regression]:
    """The findings grouped per agent, task, dimension and severity (a per-agent finding is a group of its own), in
    the alerts' order: each group states its worst trial's value, limit, baseline's own value and message, in units.

    `found`: `DayScores.finding_episodes`, looked up as a dict per episode (a frame's `.at` was most of the time of a
    million episodes' 37,774 findings); `by_agent`: the day's figures per agent."""
    by_episode: dict[str, dict[str, Any]] = found.to_dict("index")
    groups: dict[tuple[str, str | None, str, str], list[dict[str, Any]]] = {}
    for alert in alerts:
        episode = by_episode.get(alert["episode_id"])  # None for a per-agent finding
        task = episode["task_id"] if episode is not None else None
        groups.setdefault((alert["agent_id"], task, alert["dimension"], alert["severity"]), []).append(alert)
    return [_regression(group, task, by_episode, by_agent) for (_, task, _, _), group in groups.items()]


def _regression(
    group: list[dict[str, Any]], task: str | None, by_episode: dict[str, dict[str, Any]], by_agent: pd.DataFrame
) -> Regression:
    first, dimension = group[0], judged_as(group[0]["dimension"])
    above = dimension is None or dimension.direction is Direction.ABOVE
    worst = (max if above else min)(group, key=lambda f: 0 if f["value"] is None else f["value"])
    unit, baseline_unit = finding_units(first["dimension"])
    baseline = worst["baseline_value"]
    if dimension is not None and dimension.measure is not None:  # a percent change: the baseline's ms or $
        column = dimension.measure.baseline_column()
        if worst["episode_id"] is not None:
            known = worst["episode_id"] in by_episode
            baseline = _number(by_episode[worst["episode_id"]][column], 6) if known else None
        elif first["dimension"] == dimension.name:  # a per-agent mean against the baselines: their mean
            known = first["agent_id"] in by_agent.index
            baseline = _number(by_agent.at[first["agent_id"], column], 6) if known else None
    named = [f["episode_id"] for f in group if f["episode_id"] in by_episode]
    trials = int(by_episode[named[0]]["trials"]) if task is not None and named else 0  # the group's episodes share a task
    episodes = sorted(f["episode_id"] for f in group if f["episode_id"] is not None)
    return {
        "severity": first["severity"],
        "lifecycle": "new" if any(f["lifecycle"] == "new" for f in group) else "persisting",
        "since": min(f["since"] for f in group),
        "agent_id": first["agent_id"],
        "task_id": task,
        "dimension": first["dimension"],
        "trials_flagged": len(episodes),
        "trials": trials,
        "value": worst["value"],
        "threshold": worst["threshold"],
        "baseline_value": baseline,
        "unit": unit.value if unit else None,
        "baseline_unit": baseline_unit.value if baseline_unit else None,
        "message": worst["message"],
        "episodes": episodes,
    }


def _verdicts(counts: VerdictCounts) -> Verdicts:
    return {
        "scored": counts.scored,
        "passed": counts.passed,
        "failed": counts.failed,
        "pass_rate": _number(counts.pass_rate),
        "without_verdict": counts.without_verdict,
        "without_baseline": counts.without_baseline,
    }


def _names(value: Any) -> list[str]:
    """A tool sequence as a list; none (no baseline) as an empty one."""
    return [str(name) for name in value] if isinstance(value, list | tuple | np.ndarray) else []


def _issues_by_episode(issues: pd.DataFrame, secret_patterns: tuple[str, ...]) -> dict[str, list[dict[str, str | None]]]:
    """Each episode's issues, the most severe first, their details redacted and kept short."""
    rank = {severity: n for n, severity in enumerate(("critical", "error", "warning", "info"))}
    found: dict[str, list[dict[str, str | None]]] = {}
    shown: dict[str, str] = {}  # checks word their details alike across episodes: each is redacted once
    for issue in sorted(issues.itertuples(), key=lambda i: (rank.get(str(i.severity), 9), str(i.check))):
        detail = None
        if isinstance(issue.detail, str):
            if issue.detail not in shown:
                shown[issue.detail] = excerpt(issue.detail, secret_patterns, ANSWER_CHARS)
            detail = shown[issue.detail]
        found.setdefault(str(issue.episode_id), []).append({"check": str(issue.check), "severity": str(issue.severity),
                                                            "detail": detail})  # fmt: skip
    return found


def _answer(text: Any, secret_patterns: tuple[str, ...]) -> str | None:
    """An agent's answer as a report may show it: secrets redacted, kept short."""
    if not isinstance(text, str):
        return None
    return excerpt(text, secret_patterns, ANSWER_CHARS)


def _histogram(scores: np.ndarray, bins: int = 10) -> list[int]:
    """Counts of weighted scores in `bins` equal bins of 0..1 (1.0 in the last); NaN (no score) left out."""
    counts = np.histogram(np.clip(scores[~np.isnan(scores)], 0, 1), bins=bins, range=(0, 1))[0]
    return [int(c) for c in counts]


def _trend(trend: pd.DataFrame, day: date, agents: set[str]) -> Trend:
    """Per agent of the day (`agents`), the daily means from its first day with data in the trend window to `day`, one
    value (or None) per day: another agent sharing the warehouse is not this day's, and empty days say nothing."""
    trend = trend[trend["agent_id"].isin(agents)]
    window = [(day - timedelta(days=offset)).isoformat() for offset in range(TREND_DAYS - 1, -1, -1)]
    trend_days = trend["partition_date"].map(_day)
    seen = set(trend_days)
    days = window[next((n for n, d in enumerate(window) if d in seen), len(window) - 1) :]
    metrics = ("pass_rate", "mean_weighted_score", "mean_cost_delta_pct", "mean_latency_delta_pct")
    by_agent: dict[str, dict[str, tuple[Any, ...]]] = {}  # one pass over the rows: a day may have thousands of agents
    rows = zip(trend["agent_id"], trend_days, *(trend[m] for m in metrics), strict=True) if len(trend) else ()
    for agent_id, trend_day, *figures in rows:
        by_agent.setdefault(str(agent_id), {})[trend_day] = tuple(figures)
    series = {
        agent_id: {m: [_number(by_day[d][n]) if d in by_day else None for d in days] for n, m in enumerate(metrics)}
        for agent_id, by_day in sorted(by_agent.items())
    }
    return {"days": days, "agents": series}


def _categories(figures: pd.DataFrame, failed_on: pd.DataFrame) -> list[dict[str, Any]]:
    """Per `metadata.category` (`figures`: its rows of `DayScores.figures`, episodes without one under "(none)"):
    episodes, pass rate, mean scores and what its failed episodes failed on: each critical finding (by the name
    findings carry), most first; one that failed on none (a weighted score below the pass threshold, a failed case, a
    low recorded reward) counts under its verdict's reason, without its figures."""
    failed = {category: dict(zip(rows["name"], rows["failed"].astype(int), strict=True))
              for category, rows in failed_on.groupby("category")}  # fmt: skip
    return [
        {
            "category": row.category,
            "episodes": int(row.episodes),
            **_verdicts(_counts(row)),
            "avg_weighted_score": _number(row.weighted_score),
            "avg_correctness": _number(row.correctness),
            "avg_safety": _number(row.safety),
            "failed_on": failed.get(row.category, {}),
        }
        for row in figures.itertuples()
    ]


def _trials(pass_at_k: pd.DataFrame, task_trials: pd.DataFrame) -> Trials:
    """pass@k and pass^k per agent and k, and the flakiest tasks (some trials pass, others fail)."""
    flaky = task_trials[task_trials["flakiness"] > 0].sort_values(
        ["flakiness", "agent_id", "task_id"], ascending=[False, True, True]
    )
    return {
        "pass_at_k": [
            {"agent_id": r.agent_id, "k": int(r.k), "pass_at_k": _number(r.pass_at_k), "pass_hat_k": _number(r.pass_hat_k),
             "n_tasks": int(r.n_tasks)}
            for r in pass_at_k.sort_values(["agent_id", "k"]).itertuples()
        ],
        "flaky_tasks": [
            {"agent_id": r.agent_id, "task_id": r.task_id, "trials": int(r.trials), "passes": int(r.passes),
             "flakiness": _number(r.flakiness)}
            for r in flaky.head(FLAKIEST_TASKS).itertuples()
        ],
    }  # fmt: skip


def _balance_line(balance: dict[str, Any]) -> str:
    """Under-represented categories and the positive/negative split, in a sentence."""
    under = ", ".join(balance["under_represented"]) or "none"
    return (
        f"{balance['cases']} cases; {balance['positive']} positive, {balance['negative']} negative "
        f"(`metadata.negative`); under-represented (below half an even share): {under}."
    )


def _judge_costs(judge: dict[str, Any]) -> str:
    def dollars(value: float | None) -> str:
        return "unpriced" if value is None else f"${value:.4f}"

    return (
        f"Judge calls used {judge['tokens']:,} tokens ({dollars(judge['cost_usd'])}); the cache saved "
        f"{judge['tokens_saved_by_cache']:,} tokens ({dollars(judge['cost_saved_by_cache_usd'])})."
    )


def _labels_line(labels: LabelSummary) -> str:
    return (
        f"{labels['labels']} labels by {labels['reviewers']} reviewer(s) in the viewer's review queues: "
        f"{labels['passed']} pass, {labels['failed']} fail. Cohen's kappa of each machine verdict against them:"
    )


def agreement_rows(labels: LabelSummary) -> list[list[Any]]:
    """One row per machine verdict (the episode verdict, then each judge rubric) against people's labels."""
    machines: list[tuple[str, Agreement]] = [("episode verdict (grader)", labels["grader"])]
    machines += [(f"judge: {j['rubric']}", j) for j in labels["judge"]]
    return [
        [what, a["pairs"], a["both_pass"], a["both_fail"], a["only_machine_pass"], a["only_human_pass"],
         _number(a["observed"], 2), _number(a["kappa"], 2)]
        for what, a in machines
    ]  # fmt: skip


SUMMARY_ROWS = 20  # of each table in the report's summary (the Dagster UI's): a fleet's full tables ran to 600 KB a night


def summary_markdown(report: Report) -> str:
    """The report as the Dagster UI shows it on each day's materialization, which the instance keeps for good: every
    section but the worst episodes, each table's first SUMMARY_ROWS rows (the agents with the most alerts first) and a
    count of the rest."""
    return render_markdown(report, SUMMARY_ROWS)


def render_markdown(report: Report, rows_shown: int | None = None) -> str:
    """The report as Markdown; with `rows_shown`, its summary (`summary_markdown`)."""

    def capped(rows: list, rest: str) -> tuple[list, list[str]]:
        """`rows` as shown, and the lines counting those left out (none in the whole report)."""
        if rows_shown is None or len(rows) <= rows_shown:
            return rows, []
        return rows[:rows_shown], ["", f"… and {len(rows) - rows_shown} more {rest} in the report."]

    def listed(rows: list) -> list:
        """Of a long list, the whole report's first REGRESSIONS_LISTED (`unlisted` says so); the summary caps its own."""
        return rows if rows_shown is not None else rows[:REGRESSIONS_LISTED]

    def table_of(headers: list[str], rows: list[list], rest: str = "rows") -> list[str]:
        kept, left_out = capped(rows, rest)
        return [*table(headers, kept), *left_out]

    s = report["summary"]
    lines = [f"# Eval report {report['partition_date']}", ""]
    lines += table(
        ["Total Episodes", "Passed", "Failed", "Avg Weighted Score", "Alerts"],
        [
            [
                s["total_episodes"],
                s["passed"],
                s["failed"],
                s["avg_weighted_score"],
                f"{s['alerts']} ({s['critical_alerts']} critical, {s['warning_alerts']} warning)",
            ]
        ],
    )
    lines += [
        "",
        f"{verdict_line(s)} {left_out_line(s)} Config `{report['config_version']}`.",
        "",
    ]
    lines += [f"> {plain(note)}" for note in report["notes"]] + ([""] if report["notes"] else [])
    lines += ["## Agents", ""]
    agents = report["agents"] if rows_shown is None else most_alerted_first(report["agents"])
    lines += table_of(
        ["Agent", "Episodes", "Pass Rate", "Avg Score", "Cost Δ", "Latency Δ", "Critical", "Warning"],
        [
            [
                a["agent_id"],
                a["episodes"],
                rate(a["pass_rate"]),
                figure(a["avg_weighted_score"], Unit.SCORE),
                signed_percent(a["avg_cost_delta_pct"]),
                signed_percent(a["avg_latency_delta_pct"]),
                a["critical_alerts"],
                a["warning_alerts"],
            ]
            for a in agents
        ],
        "agents",
    )
    if judge := report["judge"]:
        lines += ["", "## LLM Judge", ""]
        lines += table_of(
            ["Rubric", "Judged", "Mean Score (1-5)", "Failed", "Skipped", "From Cache"],
            [[j["rubric"], j["judged"], j["mean_score"], j["failed"], j["skipped"], j["cached"]] for j in judge["rubrics"]],
        )
        lines += ["", _judge_costs(judge)]
        if judge["pairs_compared"]:
            lines.append(
                f"Pairwise against the baseline's answer ({judge['pairs_compared']} pairs, each asked in both orders"
                f"{f'; {failed} failed' if (failed := judge.get('pairs_failed')) else ''}): "
                f"candidate preferred {judge['pairs_candidate']}, baseline preferred {judge['pairs_baseline']}, "
                f"tie {judge['pairs_tie']}, inconsistent across orders {judge['pairs_inconsistent']} "
                f"(position agreement {judge['pair_agreement']:.0%})."
            )
    if labels := report["labels"]:
        lines += ["", "## Human Labels", "", _labels_line(labels), ""]
        lines += table_of(
            ["Machine Verdict", "Pairs", "Both Pass", "Both Fail", "Only Machine Pass", "Only Person Pass", "Observed", "Kappa"],
            agreement_rows(labels),
        )
    if report["categories"] and any(c["category"] != "(none)" for c in report["categories"]):
        lines += ["", "## Categories", ""]
        lines += table_of(
            ["Category", "Episodes", "Pass Rate", "Avg Score", "Avg Correctness", "Avg Safety", "Failed On"],
            [
                [
                    c["category"],
                    c["episodes"],
                    rate(c["pass_rate"]),
                    *(figure(c[key], Unit.SCORE) for key in CATEGORY_SCORES),
                    failed_on_cell(c["failed_on"]),
                ]
                for c in report["categories"]
            ],
        )
    if balance := report["balance"]:
        lines += ["", "## Case Set Balance", ""]
        lines += table_of(
            ["Category", "Cases", "Share"], [[c["category"], c["cases"], f"{c['share']:.0%}"] for c in balance["categories"]]
        )
        lines += ["", plain(_balance_line(balance))]
    trials = report["trials"]
    if any(row["k"] > 1 for row in trials["pass_at_k"]):
        lines += ["", "## Repeated Trials", ""]
        lines += table_of(
            ["Agent", "k", "pass@k", "pass^k", "Tasks"],
            [[r["agent_id"], r["k"], r["pass_at_k"], r["pass_hat_k"], r["n_tasks"]] for r in trials["pass_at_k"]],
        )
        lines += ["", "Flaky tasks (some trials pass, others fail; flakiness = mean over k of pass@k − pass^k):", ""]
        lines += (
            table_of(
                ["Agent", "Task", "Trials", "Passed", "Flakiness"],
                [[t["agent_id"], t["task_id"], t["trials"], t["passes"], t["flakiness"]] for t in trials["flaky_tasks"]],
            )
            if trials["flaky_tasks"]
            else ["None: every task passed all its trials or none."]
        )
    if calibration := report["calibration"]["trials"]:
        lines += ["", f"Grader calibration: {len(calibration)} of {report['calibration']['failed']} failed trials sampled "
                      f"for review in `{CALIBRATION_FILE.format(day=report['partition_date'])}`."]  # fmt: skip
    aggregate = aggregate_alerts(report["alerts"])
    if aggregate:
        lines += [
            "",
            "## Aggregate Regressions",
            "",
            "Per agent, only where the effect crosses its threshold and clears the noise:",
            "",
        ]
        lines += table_of(
            ["Severity", "Agent", "Dimension", "Value", "95% CI", "p", "Limit"],
            [
                [f["severity"].upper(), f["agent_id"], f["dimension"], figure(f["value"], f["unit"]),
                 ci_cell(f["ci_low"], f["ci_high"], f["unit"]),
                 "–" if f["p_value"] is None else f["p_value"], figure(f["threshold"], f["unit"])]
                for f in aggregate
            ],
        )  # fmt: skip
    lines += ["", "## Regression Alerts", ""]
    regressions = report["regressions"]
    new = sum(g["lifecycle"] == "new" for g in regressions)
    lines += [
        f"{len(regressions)} regressions ({len(report['alerts'])} findings): {new} new, {len(regressions) - new} "
        f"persisting, {len(report['resolved'])} resolved since yesterday (new ones first; each task's trials in one row, "
        "stated by its worst trial).",
        "",
    ]
    if regressions:
        lines += table_of(
            ["Severity", "Agent", "Task", "Dimension", "Trials", "Value", "Limit", "Baseline", "Message"],
            [
                [g["severity"].upper() + (" (new)" if g["lifecycle"] == "new" else f" (since {g['since']})"), g["agent_id"],
                 g["task_id"] or "(all episodes)", g["dimension"], trials_cell(g), figure(g["value"], g["unit"]),
                 figure(g["threshold"], g["unit"]), figure(g["baseline_value"], g["baseline_unit"]), g["message"]]
                for g in listed(regressions)
            ],
        )  # fmt: skip
    else:
        lines.append("No regressions.")
    if report["resolved"]:
        lines += ["", "Resolved since yesterday:", ""]
        resolved, left_out = capped(listed(report["resolved"]), "resolved")
        lines += [
            plain(f"- {r['severity'].upper()} {r['agent_id']} {r['task_id'] or '(all episodes)'} {r['dimension']} ")
            + f"(since {r['since']})"
            for r in resolved
        ] + left_out
    if rows_shown is None and (note := unlisted(report)):
        lines += ["", note]
    if rows_shown is not None:
        return "\n".join(lines) + "\n"
    lines += ["", f"## Episode Scores (worst {len(report['episodes'])})", ""]
    lines += table(
        ["Episode", "Agent", "Verdict", "Score", *(column_title(d) for d in dimensions()), "Grade", "Issues"],
        [
            [Link(e["episode_id"], e["url"]), e["agent_id"], _verdict_cell(e["passed"]), figure(e["weighted_score"], Unit.SCORE),
             *(dimension_cell(d, e[d.column]) for d in dimensions()), e["issue_grade"] or "–",
             ", ".join(f"{i['check']} ({i['severity']})" for i in e["issues"]) or "–"]
            for e in report["episodes"]
        ],
    )  # fmt: skip
    return "\n".join(lines) + "\n"


def _verdict_cell(passed: bool | None) -> str:
    return "no verdict" if passed is None else "passed" if passed else "FAILED"


def write_report_files(report: Report, directory: Path) -> dict[str, Path]:
    """The day's report as JSON, Markdown and self-contained HTML; their paths by format."""
    directory.mkdir(parents=True, exist_ok=True)
    stem = directory / REPORT_NAME.format(day=report["partition_date"])
    paths = {"json": stem.with_suffix(".json"), "md": stem.with_suffix(".md"), "html": stem.with_suffix(".html")}
    write_report_json(report, paths["json"])
    paths["md"].write_text(render_markdown(report))
    paths["html"].write_text(report_html(report))
    if report["calibration"]["trials"]:
        paths["calibration"] = directory / CALIBRATION_FILE.format(day=report["partition_date"])
        paths["calibration"].write_text(render_calibration(report["partition_date"], report["calibration"]))
    return paths


def write_report_json(report: Report, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(jsonout.dumps(report, indented=True) + "\n")


def agent_report_path(directory: Path, run_id: str, day: date) -> Path:
    """Where a `run --agent` leaves its agent's part of each day (JSON) for `run --output`: under the run's id, so two
    runs of different agents never write one file, and the day's own report stays the whole day's."""
    return directory / "runs" / run_id / f"{REPORT_NAME.format(day=day.isoformat())}.json"


def report_html(report: Report) -> str:
    """The day's HTML, with the lines it words from the report's figures (judge costs, balance, calibration file,
    labels): the same whether the run writes it or `report FILE.json --format html` renders a saved report."""
    return render_html(
        report,
        judge_costs=_judge_costs(report["judge"]) if report["judge"] else "",
        balance=_balance_line(report["balance"]) if report["balance"] else "",
        calibration_file=CALIBRATION_FILE.format(day=report["partition_date"]),
        labels_line=_labels_line(report["labels"]) if report["labels"] else "",
        label_rows=agreement_rows(report["labels"]) if report["labels"] else [],
    )
