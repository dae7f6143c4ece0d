"""The daily report's inputs and the document it makes.

The day's data is read by the warehouse (the only package that speaks SQL) and handed over as a
`ReportData`; the run adds what only it knows as a `RunContext`. The document is plain JSON (the
`.json` file, the `reports.summary` column, the Dagster metadata), typed here so its readers agree
with `build_report` on every key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any, TypedDict

import numpy as np
import pandas as pd

from eval_pipeline.llm.judge import JudgeTally
from eval_pipeline.regression.agreement import LabelSummary
from eval_pipeline.regression.findings import alert_order
from eval_pipeline.reports.calibration import CalibrationSample
from eval_pipeline.scoring.dimensions import dimensions

WORST_EPISODES = 50  # episodes the report shows one by one, worst first
UNTASKED_NAMED = 20  # episodes without a task id named in the report's note


# Regressions, and findings resolved, the HTML and Markdown files list, the new and the critical first; the JSON file holds
# every one. Listing all made a day of 200,000 episodes' HTML 6.3 MB (5,904 regressions), its Markdown 1.1 MB.
REGRESSIONS_LISTED = 200  # as many as the viewer's day page lists of each kind of finding


def unlisted(report: Report) -> str | None:
    """What the HTML and Markdown files say of the regressions and resolved findings they do not list; None if none."""
    regressions, resolved, said = len(report["regressions"]), len(report["resolved"]), []
    if regressions > REGRESSIONS_LISTED:
        said.append(f"The first {REGRESSIONS_LISTED:,} of {regressions:,} regressions are listed (the new and critical first).")
    if resolved > REGRESSIONS_LISTED:
        said.append(f"The first {REGRESSIONS_LISTED:,} of {resolved:,} resolved findings are listed.")
    return " ".join([*said, "Every one is in the JSON report and in the findings table."]) if said else None


def most_alerted_first(agents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The report's agent rows in `alert_order`: what a part that shows only some of a fleet's agents shows."""
    return sorted(agents, key=lambda a: alert_order(a["agent_id"], a["critical_alerts"], a["warning_alerts"]))


def baseline_measures() -> list[str]:
    """The `scores` column of each percent change's baseline measure (ms, $): what a regression shows its baseline in."""
    return [d.measure.baseline_column() for d in dimensions() if d.measure is not None]


def reported_means() -> list[str]:
    """The `scores` columns the report averages per agent, per category and over the day: the weighted score, the
    scores its tables show, and the baseline measures (a per-agent finding's baseline value is their mean)."""
    return ["weighted_score", "correctness", "safety", "cost_delta_pct", "latency_delta_pct", *baseline_measures()]


@dataclass(frozen=True)
class DayScores:
    """The day's current `scores` as the report reads them: figures per agent, per category and for the whole day,
    and only the episodes it shows one by one or that its findings name, so a report of a million episodes holds
    about as much as one of a thousand (but for one float per episode, the histogram's)."""

    figures: pd.DataFrame  # per `level` "agent" (by agent_id), "category" (none as "(none)") and "day" (one row):
    # episodes, passed, failed, without_verdict, without_baseline, and the mean of each of `reported_means()`
    failed_on: pd.DataFrame  # category, name, failed: failed episodes per critical finding or verdict reason
    baselines_from: dict[str, int]  # episodes compared with a baseline, by where it came from
    without_task_id: int  # episodes whose task was derived, their task id missing
    untasked_named: list[str]  # the first UNTASKED_NAMED of them by id
    weighted_scores: np.ndarray  # every episode's weighted score, NaN for none
    shown: pd.DataFrame  # the WORST_EPISODES worst episodes, worst first: `scores` rows with category and final output
    shown_issues: pd.DataFrame  # `issues` (episode_id, check, severity, detail) of the shown episodes
    finding_episodes: pd.DataFrame  # by episode_id, of the episodes the findings name: task_id, trials (its task's
    # episodes that day) and each percent change's baseline measure
    labeled: pd.DataFrame  # episode_id, passed: the verdicts of the episodes people labeled


@dataclass(frozen=True)
class ReportData:
    """Everything the warehouse holds for one day's report (frames are rows of the tables they name)."""

    day: date
    scores: DayScores
    findings: pd.DataFrame
    previous_findings: pd.DataFrame  # the day before's, to tell new, persisting and resolved apart
    status_counts: dict[str, int]  # episodes per status, superseded runs' left out
    superseded: int  # episodes of case-set runs a later run of their agent that day superseded (kept, not counted)
    quarantined: int
    judge: JudgeTally  # the day's `judgements` and `pairwise_judgements`, counted
    labelled_judgements: pd.DataFrame  # the `judgements` rows of the episodes `labels` holds a verdict on
    pass_at_k: pd.DataFrame
    task_trials: pd.DataFrame
    failed_trials: pd.DataFrame  # the calibration sample is drawn from these
    trend: pd.DataFrame  # `agent_daily` over the trend window ending on `day`
    previous_summary: dict[str, Any] | None  # the day before's summary as stored (an older run's may lack keys)
    labels: pd.DataFrame  # `labels`: people's verdicts from the viewer's review queues
    live_replays: int = 0  # the day's replays run live through the candidate model
    reused_replays: int = 0  # of those, reused from the cache (no model call)
    failed_replays: int = 0  # of those, failed by the gateway after its retries: no candidate run, so no verdict
    # agents whose runs of the day were read in part (`partial_days`): (agent, `run --model`, `run --limit`)
    read_in_part: Sequence[tuple[str, str | None, int | None]] = ()
    agent_id: str | None = None  # the report is of this agent's part of the day alone (`run --agent --output`)


@dataclass(frozen=True)
class RunContext:
    """What the run writing the report adds: who wrote it, under which config, and how to show it."""

    run_id: str | None
    config_version: str
    notes: Sequence[str] = ()  # shown at the top (replay mode, why the judge was off)
    secret_patterns: tuple[str, ...] = ()  # configured beyond the built-in kinds, all redacted from every text shown
    calibration_size: int = 10  # failed trials sampled for a person to check the grader
    balance: dict[str, Any] | None = None  # the case set's coverage (`capture.cases.balance`), when there is one
    viewer_url: str | None = None  # EVAL_VIEWER_BASE_URL: each finding and episode shown links to its viewer page


class Verdicts(TypedDict):
    """The verdict counts as every part of the report states them ("scored": has a verdict)."""

    scored: int
    passed: int
    failed: int
    pass_rate: float | None
    without_verdict: int
    without_baseline: int


class ReplayCounts(TypedDict):
    live: int  # episodes replayed live (0 in dry mode)
    reused: int  # of them, reused from the cache: no model call
    called: int  # of them, called the candidate model
    failed: int  # of them, failed by the gateway after its retries: without a verdict


class Summary(Verdicts):
    """The day in figures: the `reports.summary` column, and the cards compared with the day before."""

    total_episodes: int
    running: int
    avg_weighted_score: float | None
    alerts: int
    critical_alerts: int
    warning_alerts: int
    quarantined: int
    baselines_from: dict[str, int]  # episodes compared with a baseline, by where it came from (run, history, pin, ...)
    superseded: int  # episodes of earlier case-set runs a later run of their agent replaced in the day's count
    replays: ReplayCounts
    judge_failed: int  # judge verdicts (rubric and pairwise) the gateway failed after its retries
    agent_id: str | None  # None: the report covers every agent of the day; else it is that agent's part (`run --agent --output`)
    without_task_id: int  # episodes recorded without `metadata.task_id` (their task derived, the note names them)


class Trend(TypedDict):
    days: list[str]  # ISO dates, oldest first
    agents: dict[str, dict[str, list[float | None]]]  # agent -> metric -> one value per day (None: no data)


class Trials(TypedDict):
    pass_at_k: list[dict[str, Any]]  # per agent and k
    flaky_tasks: list[dict[str, Any]]  # the flakiest first


class Regression(TypedDict):
    """The findings of one agent's task in one dimension and severity (a per-agent finding: `task_id` None), stated
    by its worst trial; `unit`/`baseline_unit` name how to write `value`/`threshold` and `baseline_value`
    (`scoring.dimensions.Unit`; None for a check's or a case's finding)."""

    severity: str
    lifecycle: str  # "new" when any of its findings is
    since: str
    agent_id: str
    task_id: str | None
    dimension: str
    trials_flagged: int  # its trials with the finding (0 for a per-agent one)
    trials: int  # the task's trials that day
    value: float | None
    threshold: float | None
    baseline_value: float | None  # the baseline's own value: ms or $ for a percent change, else in `unit`
    unit: str | None
    baseline_unit: str | None
    message: str
    episodes: list[str]


class Report(TypedDict):
    """The day's report; rows of its sections are plain dicts, keyed as `build_report` writes them."""

    partition_date: str
    run_id: str | None
    config_version: str
    pass_rate: float | None
    critical_alerts: int
    warning_alerts: int
    summary: Summary
    agents: list[dict[str, Any]]
    previous_summary: dict[str, Any] | None
    trend: Trend
    score_histogram: list[int]
    categories: list[dict[str, Any]]
    trials: Trials
    balance: dict[str, Any] | None
    calibration: CalibrationSample
    judge: dict[str, Any] | None  # None: nothing was judged
    labels: LabelSummary | None  # people's labels against the verdicts; None: nobody labelled the day
    alerts: list[dict[str, Any]]
    regressions: list[Regression]  # the alerts grouped per task
    resolved: list[dict[str, Any]]
    episodes: list[dict[str, Any]]  # the worst ones
    notes: list[str]
