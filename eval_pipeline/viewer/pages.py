"""The viewer's pages, built from the warehouse's rows and rendered with Jinja2.

Agent text is untrusted twice over: it may hold markup and it may hold secrets. The templates autoescape every
value, and the environment's `finalize` redacts every string a template prints, so no page can show a secret
its builder forgot; texts that are cut or diffed are redacted whole first (a cut or a diff could split a secret).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from eval_pipeline.config import StatisticsConfig
from eval_pipeline.redaction import excerpt, redact
from eval_pipeline.regression.agreement import label_summary
from eval_pipeline.regression.compare import Selector, compare
from eval_pipeline.regression.lifecycle import resolved
from eval_pipeline.reports.comparison import coverage_text, interval_text
from eval_pipeline.scoring.dimensions import dimensions
from eval_pipeline.viewer.diff import align, word_diff
from eval_pipeline.viewer.links import (
    compare_path,
    compare_task_path,
    day_against_path,
    day_path,
    days_path,
    episode_path,
    episode_url,
    promote_path,
    queue_path,
    review_path,
)
from eval_pipeline.viewer.queues import QUEUES, QueueKind, ReviewPool
from eval_pipeline.warehouse.compare import selected_runs, selected_tasks, selector_choices
from eval_pipeline.warehouse.labels import day_labels, labelled_judgements, labelled_scores, review_pool
from eval_pipeline.warehouse.viewer import (
    DAYS_PER_PAGE,
    EPISODES_PER_PAGE,
    EpisodeRecords,
    EpisodeTotals,
    Filters,
    day_before,
    day_records,
    days_page,
    episode_records,
)

TEXT_CHARS = 20_000  # of one step's input, output or messages shown


@dataclass(frozen=True)
class Figure:
    """A number on a page and the episodes behind it."""

    label: str
    value: str
    href: str


@dataclass(frozen=True)
class StepView:
    index: int
    kind: str
    name: str  # the tool called, else the model
    agent: str | None
    duration_ms: float | None
    tokens: int | None
    cost_usd: float | None
    error: str | None
    input: str | None
    output: str | None
    messages: str | None  # the recorded messages of an LLM call, as indented JSON
    start_ms: float  # after the run's first step: by its timestamp, else where the step before it ended


@dataclass(frozen=True)
class Bar:
    """A step in the timing waterfall: where it starts and how long it takes, in percent of the axis."""

    step: StepView
    start_pct: float
    width_pct: float


@dataclass(frozen=True)
class Waterfall:
    """Runs' steps on one time axis, so that two runs shown together are drawn to the same scale."""

    span_ms: float
    ticks: list[tuple[float, str]]  # (percent of the axis, time there)
    runs: list[tuple[str, list[Bar]]]  # (which run, its steps)


@dataclass(frozen=True)
class RunView:
    """One episode as the side-by-side parts show it: its rows, its answer (redacted whole, to be diffed) and steps."""

    day: date
    episode: dict[str, Any]  # its `episodes` row
    score: dict[str, Any]  # its `scores` row; empty when not scored
    answer: str
    steps: list[StepView]

    @property
    def verdict(self) -> str:
        return {True: "passed", False: "failed", None: "no verdict"}[self.score.get("passed")]


WATERFALL_TICKS = 4  # the axis is marked at 0, ¼, ½, ¾ of its span, and its end


@dataclass(frozen=True)
class ReviewSettings:
    """How big the sampled queues are, and where promoted episodes go."""

    calibration_size: int  # [cases] calibration_sample
    passes_size: int  # [review] passes_sample
    case_set: Path  # [review] case_set, beside the config


@dataclass(frozen=True)
class Visitor:
    """Who asks: their session's CSRF token, and the reviewer name they last labelled under (None: not given yet)."""

    csrf: str
    reviewer: str | None


@dataclass(frozen=True)
class LabelForm:
    """The label form as a reviewer fills it in: text as typed, so a form handed back loses nothing."""

    reviewer: str = ""
    episode_id: str = ""
    verdict: str = ""
    score: str = ""
    note: str = ""


class Pages:
    """Every page, rendered with the project's secret patterns (`[policies] secret_patterns`) redacted."""

    def __init__(self, secret_patterns: tuple[str, ...], base_url: str, statistics: StatisticsConfig):
        self.secret_patterns = secret_patterns
        self.base_url = base_url
        self.statistics = statistics  # [statistics]: how `compare` makes its CIs
        self.environment = Environment(
            loader=PackageLoader("eval_pipeline.viewer", "templates"),
            autoescape=select_autoescape(["html", "j2"], default=True),
            undefined=StrictUndefined,
            trim_blocks=True,
            lstrip_blocks=True,
            finalize=self._shown,
        )
        self.environment.globals.update(
            num=_num,
            day_path=day_path,
            days_path=days_path,
            episode_path=episode_path,
            review_path=review_path,
            queue_path=queue_path,
            promote_path=promote_path,
            compare_path=compare_path,
            compare_task_path=compare_task_path,
            day_against_path=day_against_path,
            interval_text=interval_text,
            Filters=Filters,
        )

    def _shown(self, value: Any) -> Any:
        if isinstance(value, str) and not isinstance(value, Markup):
            return redact(value, self.secret_patterns)
        return "–" if value is None else value

    def _text(self, value: Any, limit: int = TEXT_CHARS) -> str | None:
        return excerpt(value, self.secret_patterns, limit) if isinstance(value, str) else None

    def render(self, template: str, **context: Any) -> str:
        return self.environment.get_template(template).render(**context)

    def days(self, con: duckdb.DuckDBPyConnection, page: int = 1) -> str:
        listed = days_page(con, page)
        agents = {_as_date(day): _records(group) for day, group in listed.per_agent.groupby("partition_date")}
        earlier: list[date | None] = [*listed.days[1:], listed.before]  # of no day, the one None is left over
        days = [{"day": day, "before": before, "agents": agents[day]} for day, before in zip(listed.days, earlier, strict=False)]
        return self.render("days.html.j2", days=days, paging=paging(page, listed.total, DAYS_PER_PAGE, len(days), days_path))

    def day(self, con: duckdb.DuckDBPyConnection, day: date, filters: Filters, page: int = 1) -> str:
        records = day_records(con, day, filters, page)
        findings = records.findings
        agents = [
            {
                "agent_id": agent,
                "figures": _figures(
                    day, Filters(**{**filters.params(), "agent": agent}), totals, findings[findings["agent_id"] == agent]
                ),
            }
            for agent, totals in records.totals.items()
        ]
        gone = resolved(findings, records.previous_findings)
        return self.render(
            "day.html.j2",
            day=day,
            day_before=day_before(con, day),
            filters=filters,
            choices=records.choices,
            figures=_figures(day, filters, records.total, findings),
            agents=agents,
            new=_listed(findings[findings["lifecycle"] == "new"]),
            persisting=_listed(findings[findings["lifecycle"] != "new"]),
            resolved=_listed(gone),
            episodes=_records(records.episodes),
            paging=paging(
                page,
                records.total.episodes,
                EPISODES_PER_PAGE,
                len(records.episodes),
                lambda other: day_path(day, filters, other) + "#episodes",
            ),
        )

    def episode(self, con: duckdb.DuckDBPyConnection, day: date, episode_id: str, csrf: str) -> str | None:
        context = self._episode(con, day, episode_id)
        return None if context is None else self.render("episode.html.j2", csrf=csrf, **context)

    def review(self, con: duckdb.DuckDBPyConnection, day: date, settings: ReviewSettings, reviewer: str | None) -> str:
        """The day's queues, with how many of each this reviewer has labelled, and the labels' agreement figures."""
        pool = self._pool(con, day, settings)
        labels = day_labels(con, day)
        queues = []
        for kind in QUEUES:
            episodes = kind.episodes(pool)
            done = _labelled(labels, kind.name, reviewer)
            queues.append({"kind": kind, "size": len(episodes), "done": len(done & set(episodes))})
        summary = label_summary(labels, labelled_scores(con, day, labels), labelled_judgements(con, day, None, labels))
        return self.render("review.html.j2", day=day, queues=queues, reviewer=reviewer, summary=summary)

    def queue(
        self, con: duckdb.DuckDBPyConnection, day: date, kind: QueueKind, settings: ReviewSettings, visitor: Visitor
    ) -> str:
        """The first episode of the queue this reviewer has not labelled, with the label form above its page."""
        episodes = kind.episodes(self._pool(con, day, settings))
        done = _labelled(day_labels(con, day), kind.name, visitor.reviewer)
        waiting = [episode for episode in episodes if episode not in done]
        context = self._episode(con, day, waiting[0]) if waiting else None
        progress = {"size": len(episodes), "done": len(episodes) - len(waiting)}
        form = LabelForm(reviewer=visitor.reviewer or "", episode_id=waiting[0] if waiting else "")
        if context is None:
            return self.render("queue_done.html.j2", day=day, kind=kind, progress=progress)
        return self.render("queue.html.j2", csrf=visitor.csrf, kind=kind, progress=progress, form=form, **context)

    def label_again(self, day: date, kind: QueueKind, form: LabelForm, csrf: str, title: str, message: str) -> str:
        """The label form as the reviewer filled it, with why it was not recorded: nothing they typed is lost."""
        return self.render("label_again.html.j2", day=day, kind=kind, form=form, csrf=csrf, title=title, message=message)

    def promoted(self, day: date, episode_id: str, case: dict[str, Any], path: str) -> str:
        shown = json.dumps(case, indent=2, ensure_ascii=False)
        return self.render("promoted.html.j2", day=day, episode_id=episode_id, case=case, case_json=shown, path=path)

    def compare(self, con: duckdb.DuckDBPyConnection, sides: tuple[Selector, Selector] | None, page: int = 1) -> str:
        """The form that builds two selections from what the warehouse has and, given two, their head to head as
        `eval-pipeline compare` makes it: the CIs, and per task (TASKS_PER_PAGE a page) its winner with the trials
        and passes behind it."""
        choices = selector_choices(con)
        if sides is None:
            return self.render("compare.html.j2", choices=choices, sides=(Selector(), Selector()), c=None, coverage="")
        tasks = selected_tasks(con, sides)
        comparison = compare(tasks[0], tasks[1], sides, self.statistics)
        every = comparison["headToHead"]["tasks"]
        tasks = every[(page - 1) * TASKS_PER_PAGE : page * TASKS_PER_PAGE]
        return self.render(
            "compare.html.j2",
            choices=choices,
            sides=sides,
            c=comparison,
            coverage=coverage_text(comparison["meta"]),
            tasks=tasks,
            paging=paging(page, len(every), TASKS_PER_PAGE, len(tasks), lambda other: compare_path(*sides, other) + "#tasks"),
        )

    def compare_task(
        self,
        con: duckdb.DuckDBPyConnection,
        sides: tuple[Selector, Selector],
        task_id: str,
        picked: tuple[str | None, str | None],
    ) -> str | None:
        """One task of a head to head: each side's trials of it, and two of them side by side (the first of each side,
        or the ones `picked` by episode id); None when a side has no such task or trial."""
        tasks = selected_tasks(con, sides, task_id)
        trials = [selected_runs(con, side, task_id) for side in sides]
        shown = []
        for frame, wanted in zip(trials, picked, strict=True):
            row = _pick(_records(frame), wanted)
            records = None if row is None else episode_records(con, row["partition_date"], row["episode_id"])
            if row is None or records is None:
                return None
            shown.append(self._run(row["partition_date"], records))
        a, b = shown
        task = compare(tasks[0], tasks[1], sides, self.statistics)["headToHead"]["tasks"][0]  # its row, as on the page
        return self.render(
            "compare_task.html.j2",
            sides=sides,
            task=task,
            trials=[_records(frame) for frame in trials],
            a=a,
            b=b,
            side_by_side=_side_by_side(_own(a.episode, a.score), _own(b.episode, b.score)),
            tools=align(_tools(a.episode, a.score), _tools(b.episode, b.score)),
            answers=word_diff(a.answer, b.answer),
            timing=waterfall([("A", a.steps), ("B", b.steps)]),
        )

    @staticmethod
    def _pool(con: duckdb.DuckDBPyConnection, day: date, settings: ReviewSettings) -> ReviewPool:
        return ReviewPool(day, review_pool(con, day), settings.calibration_size, settings.passes_size)

    def _episode(self, con: duckdb.DuckDBPyConnection, day: date, episode_id: str) -> dict[str, Any] | None:
        """What an episode's page shows, for the episode page and a queue's page alike."""
        records = episode_records(con, day, episode_id)
        if records is None:
            return None
        run, baseline = self._run(day, records), _clean(records.baseline or {})
        episode, score, answer, steps = run.episode, run.score, run.answer, run.steps
        baseline_answer = redact(baseline.get("final_output") or "", self.secret_patterns)
        baseline_steps = self._steps(records.baseline_steps)
        return dict(
            day=day,
            e=episode,
            s=score,
            verdict=run.verdict,
            b=baseline,
            permalink=episode_url(self.base_url, day, episode_id),
            side_by_side=_side_by_side(baseline, _own(episode, score)),
            tools=align(_names(baseline.get("tools")), _tools(episode, score)),
            answers=word_diff(baseline_answer, answer) if baseline else None,
            answer=answer,
            dimensions=[
                (d.label, _percent(score.get(d.column)) if d.percent else _num(score.get(d.column)))
                for d in dimensions()
                if d.column in score
            ],
            steps=steps,
            baseline_steps=baseline_steps,
            timing=waterfall([("baseline", baseline_steps), ("this run", steps)]),
            findings=_records(records.findings),
            assertions=_records(records.assertions),
            issues=_records(records.issues),
            judgements=_records(records.judgements),
            pairwise=_records(records.pairwise),
            rewards=[{**r, "breakdown": self._text(r["breakdown"], 2000)} for r in _records(records.rewards)],
        )

    def _run(self, day: date, records: EpisodeRecords) -> RunView:
        episode = _clean(records.episode)
        answer = redact(episode.get("answer") or "", self.secret_patterns)
        return RunView(day, episode, _clean(records.score or {}), answer, self._steps(records.steps))

    def _steps(self, steps: pd.DataFrame) -> list[StepView]:
        rows = _records(steps)
        return [
            StepView(
                index=r["step_index"],
                kind=r.get("step_type") or "step",
                name=r.get("tool_name") or r.get("model") or "",
                agent=r.get("agent"),
                duration_ms=r.get("duration_ms"),
                tokens=r.get("tokens"),
                cost_usd=r.get("cost_usd"),
                error=self._text(r.get("error")),
                input=self._text(r.get("input")),
                output=self._text(r.get("output")),
                messages=self._text(_indented(r.get("messages"))),
                start_ms=start,
            )
            for start, r in zip(_starts(rows), rows, strict=True)
        ]

    def problem(self, title: str, message: str) -> str:
        return self.render("problem.html.j2", title=title, message=message)


def _labelled(labels: pd.DataFrame, queue: str, reviewer: str | None) -> set[str]:
    """The episodes `reviewer` has labelled in `queue` (none without a reviewer)."""
    if reviewer is None or labels.empty:
        return set()
    mine = labels[(labels["queue"] == queue) & (labels["reviewer"] == reviewer)]
    return set(mine["episode_id"].astype(str))


def _figures(day: date, filters: Filters, totals: EpisodeTotals, findings: pd.DataFrame) -> list[Figure]:
    """The headline numbers of a selection, each linking to the day's page narrowed to the episodes it counts."""
    narrowed = lambda **change: day_path(day, Filters(**{**filters.params(), **change})) + "#episodes"  # noqa: E731
    return [
        Figure("episodes", f"{totals.episodes:,}", narrowed()),
        Figure("passed", f"{totals.passed:,}", narrowed(verdict="passed")),
        Figure("failed", f"{totals.failed:,}", narrowed(verdict="failed")),
        Figure("without verdict", f"{totals.without_verdict:,}", narrowed(verdict="none")),
        Figure("mean weighted score", _num(totals.mean_score), narrowed()),
        Figure("critical findings", f"{(findings['severity'] == 'critical').sum():,}", narrowed(severity="critical")),
        Figure("warning findings", f"{(findings['severity'] == 'warning').sum():,}", narrowed(severity="warning")),
    ]


# Rows of a head to head's table of tasks: two days of 20,000 tasks made a page of 9.3 MB; `compare --format json` lists
# every one.
TASKS_PER_PAGE = 500
# Rows of each list of findings a day page shows, the critical first (a day of 200,000 episodes had 7,505 new ones); the
# filters narrow a list, and the `findings` table holds every one.
FINDINGS_SHOWN = 200


@dataclass(frozen=True)
class FindingList:
    """A list of findings as a day page shows it: its first FINDINGS_SHOWN rows of `count`."""

    rows: list[dict[str, Any]]
    count: int


def _listed(findings: pd.DataFrame) -> FindingList:
    return FindingList(_records(findings.head(FINDINGS_SHOWN)), len(findings))


@dataclass(frozen=True)
class Paging:
    """Where a page's rows stand in a long list (a day's episodes, a head to head's tasks): rows `first` to `last`
    (from 1) of `total`, `size` a page, with the links to the pages beside it."""

    page: int
    pages: int
    size: int
    total: int
    first: int
    last: int
    previous: str | None
    next: str | None


def paging(page: int, total: int, size: int, shown: int, link: Callable[[int], str]) -> Paging:
    """Page `page` of a list of `total` rows, `shown` of them on it; `link` gives a page's address."""
    pages = -(-total // size)
    first = (page - 1) * size
    return Paging(
        page=page,
        pages=pages,
        size=size,
        total=total,
        first=first + 1,
        last=first + shown,
        previous=link(min(page, pages + 1) - 1) if page > 1 else None,  # past the end: the last page
        next=link(page + 1) if page < pages else None,
    )


def _pick(trials: list[dict[str, Any]], episode_id: str | None) -> dict[str, Any] | None:
    """The trial `episode_id` names, else the first; None when there is none such."""
    if episode_id is None:
        return trials[0] if trials else None
    return next((row for row in trials if row["episode_id"] == episode_id), None)


def _starts(rows: list[dict[str, Any]]) -> list[float]:
    """Each step's start in ms after the run's first: from its timestamp, else where the step before it ended."""
    times = [pd.Timestamp(r["timestamp"]) if r.get("timestamp") is not None else None for r in rows]
    origin = min((t for t in times if t is not None), default=None)
    starts: list[float] = []
    end = 0.0
    for time, row in zip(times, rows, strict=True):
        start = (time - origin).total_seconds() * 1000 if time is not None and origin is not None else end
        starts.append(start)
        end = start + (row.get("duration_ms") or 0)
    return starts


def waterfall(runs: list[tuple[str, list[StepView]]]) -> Waterfall:
    """The runs that have steps on one time axis, as long as the longest of them."""
    shown = [(name, steps) for name, steps in runs if steps]
    span = max((st.start_ms + (st.duration_ms or 0) for _, steps in shown for st in steps), default=0.0) or 1.0
    bars = [
        (
            name,
            [Bar(st, round(100 * st.start_ms / span, 2), max(round(100 * (st.duration_ms or 0) / span, 2), 0.3)) for st in steps],
        )
        for name, steps in shown
    ]
    ticks = [(100 * n / WATERFALL_TICKS, _elapsed(span * n / WATERFALL_TICKS)) for n in range(WATERFALL_TICKS + 1)]
    return Waterfall(span, ticks, bars)


def _elapsed(ms: float) -> str:
    return f"{ms:,.0f} ms" if ms < 10_000 else f"{ms / 1000:,.1f} s"


_RUN_FIGURES = (  # (what, column, digits; None: text) of the figures two runs are put side by side on
    ("status", "status", None),
    ("cost (USD)", "total_cost_usd", 5),
    ("latency (ms)", "total_duration_ms", 0),
    ("tokens", "total_tokens", 0),
    ("steps", "step_count", 0),
    ("error steps", "error_steps", 0),
)


def _side_by_side(left: dict[str, Any], right: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, left run, right run) for the figures a regression is judged on."""
    shown = lambda row, column, digits: (row.get(column) or "–") if digits is None else _num(row.get(column), digits)  # noqa: E731
    return [(what, shown(left, column, digits), shown(right, column, digits)) for what, column, digits in _RUN_FIGURES]


def _own(episode: dict[str, Any], score: dict[str, Any]) -> dict[str, Any]:
    """The episode's figures as it was scored: the replayed run's where it was replayed, else the recorded ones."""
    return {**episode, **{key: value for key, value in score.items() if value is not None}}


def _tools(episode: dict[str, Any], score: dict[str, Any]) -> list[str]:
    """The tools the run called, as scored (a replay's), else as recorded."""
    return _names(score.get("tools") if score else episode.get("tools"))


def _num(value: Any, digits: int = 3) -> str:
    """A figure as a page shows it: rounded, `–` where there is none."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return "–" if not isinstance(value, bool) else str(value).lower()
    return f"{value:,.{digits}f}" if digits else f"{value:,.0f}"


def _percent(value: Any) -> str:
    return "–" if value is None else f"{value:+.1f}%"


def _names(value: Any) -> list[str]:
    return [str(name) for name in value] if isinstance(value, list | tuple) else []


def _indented(messages: Any) -> str | None:
    if not isinstance(messages, str):
        return None
    try:
        return json.dumps(json.loads(messages), indent=2, ensure_ascii=False)
    except ValueError:
        return messages


def _as_date(value: Any) -> date:
    return pd.Timestamp(value).date()


def _clean(row: dict[str, Any]) -> dict[str, Any]:
    """A row with plain Python values: None for missing ones, lists for arrays, numbers as numbers."""
    return {key: _plain(value) for key, value in row.items()}


def _plain(value: Any) -> Any:
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    if isinstance(value, pd.Timestamp) and value == value.normalize():
        return value.date()  # a DATE column, read through pandas
    return value


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [_clean(row) for row in frame.to_dict("records")]
