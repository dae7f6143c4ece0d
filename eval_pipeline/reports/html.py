"""The day's report as one self-contained HTML file: inline CSS and SVG, no scripts, no external resources.

Agent output is untrusted: the template autoescapes every value, so an answer holding `<script>`
or an `onerror` attribute shows as text.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

from eval_pipeline.reports.document import REGRESSIONS_LISTED, Regression, Report, most_alerted_first, unlisted
from eval_pipeline.reports.markdown import (
    ci_cell,
    dimension_cell,
    failed_on_cell,
    figure,
    left_out_line,
    rate,
    signed_percent,
    trials_cell,
    verdict_line,
)
from eval_pipeline.reports.svg import PALETTE, histogram, line_chart
from eval_pipeline.scoring.dimensions import Unit, dimensions, finding_units

WORST_SHOWN = 20
# Agents a trend chart draws, those with the most alerts first: as many lines as colours to tell them apart (a fleet of
# 2,000 agents drew 2,000 lines and legends, 3 MB of a 5 MB report)
CHARTED_AGENTS = len(PALETTE)


@cache
def _environment() -> Environment:
    return Environment(
        loader=PackageLoader("eval_pipeline.reports", "templates"),
        autoescape=select_autoescape(["html", "j2"], default=True),
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def aggregate_alerts(alerts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The per-agent findings that carry statistics (a confidence interval or a p-value), each with the `unit` of its
    value, limit and interval."""
    return [
        {**f, "unit": finding_units(f["dimension"])[0]}
        for f in alerts
        if f["episode_id"] is None and (f["ci_low"] is not None or f["p_value"] is not None)
    ]


def worst_shown(episodes: list[dict[str, Any]], limit: int = WORST_SHOWN) -> list[dict[str, Any]]:
    """The worst episodes a page shows: every failed one the report holds, then the others up to `limit` in all,
    so no failed trial is cut while a passing one is shown."""
    failed = [e for e in episodes if e["passed"] is False]
    return failed + [e for e in episodes if e["passed"] is not False][: max(0, limit - len(failed))]


def _findings_of(report: Report) -> Callable[[Regression], list[dict[str, Any]]]:
    """A regression's findings, one per trial, as the alerts list holds them."""

    numbered: dict[tuple[str | None, str, str], list[tuple[int, dict[str, Any]]]] = {}
    for position, finding in enumerate(report["alerts"]):  # indexed once: a day may have tens of thousands of groups
        numbered.setdefault((finding["episode_id"], finding["dimension"], finding["severity"]), []).append((position, finding))

    def findings(group: Regression) -> list[dict[str, Any]]:
        keys = {(episode, group["dimension"], group["severity"]) for episode in group["episodes"]}
        return [finding for _, finding in sorted((pair for key in keys for pair in numbered.get(key, [])), key=lambda p: p[0])]

    return findings


def _cards(report: Report) -> list[dict[str, str]]:
    """The headline figures with their change from the previous day (worse in red, better in green)."""
    s, before = report["summary"], report["previous_summary"] or {}

    def change(key: str, higher_is_better: bool, show) -> tuple[str, str]:
        now, then = s.get(key), before.get(key)
        if now is None or then is None:
            return "no previous day", ""
        diff = now - then
        tone = "" if diff == 0 else ("better" if (diff > 0) == higher_is_better else "worse")
        return f"{show(diff)} vs previous day", tone

    score = s["avg_weighted_score"]
    cards = []
    for label, key, value, higher_is_better, show in (
        ("Episodes", "total_episodes", f"{s['total_episodes']:,}", True, lambda d: f"{d:+,}"),
        ("Passed", "passed", f"{s['passed']:,} of {s['scored']:,}", True, lambda d: f"{d:+,}"),
        ("Pass rate", "pass_rate", rate(s["pass_rate"]), True, lambda d: f"{d * 100:+.1f} pts"),
        ("Mean weighted score", "avg_weighted_score", "–" if score is None else f"{score:.3f}", True, lambda d: f"{d:+.3f}"),
        ("Critical alerts", "critical_alerts", str(s["critical_alerts"]), False, lambda d: f"{d:+d}"),
        ("Warning alerts", "warning_alerts", str(s["warning_alerts"]), False, lambda d: f"{d:+d}"),
    ):  # fmt: skip
        text, tone = change(key, higher_is_better, show)
        cards.append({"label": label, "value": value, "change": text, "tone": tone})
    return cards


def render_html(
    report: Report,
    judge_costs: str = "",
    balance: str = "",
    calibration_file: str = "",
    labels_line: str = "",
    label_rows: list[list[Any]] | None = None,
) -> str:
    trend = report["trend"]
    charted = [a["agent_id"] for a in most_alerted_first(report["agents"]) if a["agent_id"] in trend["agents"]][:CHARTED_AGENTS]
    per = lambda metric: {agent: trend["agents"][agent][metric] for agent in charted}  # noqa: E731
    charts = {
        "pass_rate": line_chart(trend["days"], per("pass_rate"), label=rate, title="Pass rate per agent", domain=(0, 1)),
        "score": line_chart(
            trend["days"], per("mean_weighted_score"), label=Unit.SCORE.show, title="Mean score per agent", domain=(0, 1)
        ),
        "cost_delta": line_chart(trend["days"], per("mean_cost_delta_pct"), label=signed_percent, title="Mean cost delta"),
        "latency_delta": line_chart(
            trend["days"], per("mean_latency_delta_pct"), label=signed_percent, title="Mean latency delta"
        ),
        "distribution": histogram(report["score_histogram"], title="Weighted score distribution"),
    }
    aggregate = aggregate_alerts(report["alerts"])
    return (
        _environment()
        .get_template("daily.html.j2")
        .render(
            r=report,
            cards=_cards(report),
            verdict_line=f"{verdict_line(report['summary'])} {left_out_line(report['summary'])}",
            charts=charts,
            charted=len(charted),
            trended=len(trend["agents"]),
            aggregate=aggregate,
            new_count=sum(g["lifecycle"] == "new" for g in report["regressions"]),
            listed=REGRESSIONS_LISTED,
            unlisted=unlisted(report),
            judge_costs=judge_costs,
            balance=balance,
            calibration_file=calibration_file,
            worst=worst_shown(report["episodes"]),
            findings_of=_findings_of(report),
            pct=rate,
            figure=figure,
            trials=trials_cell,
            failed_on=failed_on_cell,
            labels_line=labels_line,
            label_rows=label_rows or [],
            delta=signed_percent,
            dimensions=dimensions(),
            cell=dimension_cell,
            ci=ci_cell,
        )
    )
