"""The viewer's pages, built from the warehouse's rows and rendered with Jinja2.

Agent text is untrusted twice over: it may hold markup and it may hold secrets. The templates autoescape every
value, and the environment's `finalize` redacts every string a template prints, so no page can show a secret
its builder forgot; texts that are cut or diffed are redacted whole first (a cut or a diff could split a secret).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape
from markupsafe import Markup

from eval_pipeline.redaction import excerpt, redact
from eval_pipeline.regression.agreement import label_summary
from eval_pipeline.regression.lifecycle import resolved
from eval_pipeline.scoring.dimensions import dimensions
from eval_pipeline.viewer.diff import align, word_diff
from eval_pipeline.viewer.links import day_path, episode_path, episode_url, promote_path, queue_path, review_path
from eval_pipeline.viewer.queues import QUEUES, QueueKind, ReviewPool
from eval_pipeline.warehouse.labels import day_labels, review_pool
from eval_pipeline.warehouse.viewer import Filters, day_records, days_overview, episode_records

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
    start_pct: float  # where its bar starts and how wide it is in the timing waterfall
    width_pct: float


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

    def __init__(self, secret_patterns: tuple[str, ...], base_url: str):
        self.secret_patterns = secret_patterns
        self.base_url = base_url
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
            episode_path=episode_path,
            review_path=review_path,
            queue_path=queue_path,
            promote_path=promote_path,
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

    def days(self, con: duckdb.DuckDBPyConnection) -> str:
        overview = days_overview(con)
        days = [
            {"day": day, "agents": _records(group)}
            for day, group in overview.groupby(overview["partition_date"].map(_as_date), sort=False)
        ]
        return self.render("days.html.j2", days=days)

    def day(self, con: duckdb.DuckDBPyConnection, day: date, filters: Filters) -> str:
        records = day_records(con, day, filters)
        episodes, findings = records.episodes, records.findings
        agents = [
            {
                "agent_id": agent,
                "figures": _figures(
                    day, Filters(**{**filters.params(), "agent": agent}), group, findings[findings["agent_id"] == agent]
                ),
            }
            for agent, group in episodes.groupby("agent_id", sort=True)
        ]
        gone = resolved(findings, records.previous_findings)
        return self.render(
            "day.html.j2",
            day=day,
            filters=filters,
            choices=records.choices,
            figures=_figures(day, filters, episodes, findings),
            agents=agents,
            new=_records(findings[findings["lifecycle"] == "new"]),
            persisting=_records(findings[findings["lifecycle"] != "new"]),
            resolved=_records(gone),
            episodes=_records(episodes),
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
        summary = label_summary(labels, pool.scores, pool.judgements)
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

    @staticmethod
    def _pool(con: duckdb.DuckDBPyConnection, day: date, settings: ReviewSettings) -> ReviewPool:
        scores, judgements = review_pool(con, day)
        return ReviewPool(day, scores, judgements, settings.calibration_size, settings.passes_size)

    def _episode(self, con: duckdb.DuckDBPyConnection, day: date, episode_id: str) -> dict[str, Any] | None:
        """What an episode's page shows, for the episode page and a queue's page alike."""
        records = episode_records(con, day, episode_id)
        if records is None:
            return None
        episode, score, baseline = _clean(records.episode), _clean(records.score or {}), _clean(records.baseline or {})
        candidate_tools = _names(score.get("tools") if score else episode.get("tools"))
        answer = redact(episode.get("answer") or "", self.secret_patterns)
        baseline_answer = redact(baseline.get("final_output") or "", self.secret_patterns)
        return dict(
            day=day,
            e=episode,
            s=score,
            verdict={True: "passed", False: "failed", None: "no verdict"}[score.get("passed")],
            b=baseline,
            permalink=episode_url(self.base_url, day, episode_id),
            side_by_side=_side_by_side(episode, score, baseline),
            tools=align(_names(baseline.get("tools")), candidate_tools),
            answers=word_diff(baseline_answer, answer) if baseline else None,
            answer=answer,
            dimensions=[
                (d.label, _percent(score.get(d.column)) if d.percent else _num(score.get(d.column)))
                for d in dimensions()
                if d.column in score
            ],
            steps=self._steps(records.steps),
            baseline_steps=self._steps(records.baseline_steps),
            findings=_records(records.findings),
            assertions=_records(records.assertions),
            issues=_records(records.issues),
            judgements=_records(records.judgements),
            pairwise=_records(records.pairwise),
            rewards=[{**r, "breakdown": self._text(r["breakdown"], 2000)} for r in _records(records.rewards)],
        )

    def _steps(self, steps: pd.DataFrame) -> list[StepView]:
        """The steps with their bars in the waterfall: each from its start after the first step's, as long as it took."""
        rows = _records(steps)
        starts = [
            (pd.Timestamp(r["timestamp"]) - pd.Timestamp(rows[0]["timestamp"])).total_seconds() * 1000
            if r.get("timestamp") is not None and rows[0].get("timestamp") is not None
            else None
            for r in rows
        ]
        ends = [(start or 0) + (r.get("duration_ms") or 0) for start, r in zip(starts, rows, strict=True)]
        span = max(ends, default=0) or 1
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
                start_pct=round(100 * (start or 0) / span, 2),
                width_pct=max(round(100 * (r.get("duration_ms") or 0) / span, 2), 0.5),
            )
            for start, r in zip(starts, rows, strict=True)
        ]

    def problem(self, title: str, message: str) -> str:
        return self.render("problem.html.j2", title=title, message=message)


def _labelled(labels: pd.DataFrame, queue: str, reviewer: str | None) -> set[str]:
    """The episodes `reviewer` has labelled in `queue` (none without a reviewer)."""
    if reviewer is None or labels.empty:
        return set()
    mine = labels[(labels["queue"] == queue) & (labels["reviewer"] == reviewer)]
    return set(mine["episode_id"].astype(str))


def _figures(day: date, filters: Filters, episodes: pd.DataFrame, findings: pd.DataFrame) -> list[Figure]:
    """The headline numbers of a selection, each linking to the day's page narrowed to the episodes it counts."""
    narrowed = lambda **change: day_path(day, Filters(**{**filters.params(), **change})) + "#episodes"  # noqa: E731
    passed = episodes["passed"].astype("boolean")
    mean = episodes["weighted_score"].mean()
    return [
        Figure("episodes", str(len(episodes)), narrowed()),
        Figure("passed", str(int(passed.fillna(False).sum())), narrowed(verdict="passed")),
        Figure("failed", str(int((~passed).fillna(False).sum())), narrowed(verdict="failed")),
        Figure("without verdict", str(int(passed.isna().sum())), narrowed(verdict="none")),
        Figure("mean weighted score", _num(mean), narrowed()),
        Figure("critical findings", str(int((findings["severity"] == "critical").sum())), narrowed(severity="critical")),
        Figure("warning findings", str(int((findings["severity"] == "warning").sum())), narrowed(severity="warning")),
    ]


def _side_by_side(episode: dict[str, Any], score: dict[str, Any], baseline: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(what, baseline, this run) for the figures a regression is judged on."""
    own = lambda key: score.get(key) if score.get(key) is not None else episode.get(key)  # noqa: E731
    return [
        ("status", baseline.get("status") or "–", own("status") or "–"),
        ("cost (USD)", _num(baseline.get("total_cost_usd"), 5), _num(own("total_cost_usd"), 5)),
        ("latency (ms)", _num(baseline.get("total_duration_ms"), 0), _num(own("total_duration_ms"), 0)),
        ("tokens", _num(baseline.get("total_tokens"), 0), _num(episode.get("total_tokens"), 0)),
        ("steps", _num(baseline.get("step_count"), 0), _num(own("step_count"), 0)),
        ("error steps", _num(baseline.get("error_steps"), 0), _num(own("error_steps"), 0)),
    ]


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
