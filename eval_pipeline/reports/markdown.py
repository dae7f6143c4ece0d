"""Markdown tables whose cells may hold agent-controlled text, and the figures' formats every report shares."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from eval_pipeline.scoring.dimensions import Dimension, Unit


def plain(value: Any) -> str:
    """Agent-controlled text as Markdown shows it literally: HTML in it is escaped, never rendered."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def code(value: Any) -> str:
    """Agent-controlled text as inline code on one line: fenced by more backticks than any run inside it."""
    text = " ".join(str(value).splitlines())
    fence = "`"
    while fence in text:
        fence += "`"
    return f"{fence} {text} {fence}" if text.startswith("`") or text.endswith("`") else f"{fence}{text}{fence}"


@dataclass(frozen=True)
class Link:
    """A table cell linking `text` (agent-controlled, shown literally) to `url` (ours); plain text without a URL."""

    text: str
    url: str | None


_URL_ESCAPES = str.maketrans({" ": "%20", "(": "%28", ")": "%29", "|": "%7C", "<": "%3C", ">": "%3E"})


def cell(value: Any) -> str:
    """No pipe, newline or HTML in agent output may break the table or render; a link's text no bracket."""
    if isinstance(value, Link):
        text = cell(value.text).replace("[", "\\[").replace("]", "\\]")
        return f"[{text}]({value.url.translate(_URL_ESCAPES)})" if value.url else text
    if value is None:
        return "–"
    return plain(str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " "))


def table(headers: Sequence[str], rows: Iterable[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(cell(value) for value in row) + " |" for row in rows]
    return lines


def figure(value: float | None, unit: Unit | str | None) -> str:
    """A figure in its unit (a `Unit` or its value), "–" where there is none; one without a unit (a check's) as it is."""
    if value is None:
        return "–"
    return Unit(unit).show(value) if unit else f"{value:g}"


def signed_percent(value: float | None) -> str:
    """A percent change (cost or latency delta) as the reports show it."""
    return figure(value, Unit.CHANGE)


def rate(value: float | None) -> str:
    """A pass rate (0..1) as a whole percent."""
    return "–" if value is None else f"{value:.0%}"


def ci_cell(low: float | None, high: float | None, unit: Unit | str | None = None) -> str:
    """A confidence interval in its unit; None is an unbounded side ("–" when it has none)."""
    if low is None and high is None:
        return "–"
    return f"{'unbounded' if low is None else figure(low, unit)} to {'unbounded' if high is None else figure(high, unit)}"


def column_title(dimension: Dimension) -> str:
    return dimension.label.capitalize() + (" Δ" if dimension.percent else "")


def dimension_cell(dimension: Dimension, value: float | None) -> str:
    """A dimension's value as a report cell, in its unit."""
    return figure(value, dimension.value_unit)


def trials_cell(regression: Mapping[str, Any]) -> str:
    """How many of a task's trials a regression holds ("3 of 3 trials"); a per-agent one holds all its episodes."""
    if regression["task_id"] is None:
        return "all episodes"
    return f"{regression['trials_flagged']} of {regression['trials']} trial" + ("s" if regression["trials"] != 1 else "")


def failed_on_cell(failed_on: Mapping[str, int]) -> str:
    """What a category's failed episodes failed on, the most frequent first ("latency_delta ×3")."""
    return ", ".join(f"{name} ×{count}" for name, count in failed_on.items()) or "–"


def left_out_line(counts: Mapping[str, Any]) -> str:
    """What the day holds beside its episodes with and without a verdict, in every report (Markdown and HTML alike):
    the runs not finished yet and the records rejected, which the episode count does not explain."""
    return f"Still running {counts['running']}; quarantined records {counts['quarantined']}."


def verdict_line(counts: Mapping[str, Any]) -> str:
    """The verdict counts in one sentence, with why some episodes have no verdict, how many judge verdicts the gateway
    failed and, when the candidates were replayed live, how many of those replays the cache gave (CLI, Markdown and
    HTML say it alike)."""
    line = f"{counts['passed']} passed, {counts['failed']} failed of {counts['scored']} episodes with a verdict."
    replays = counts.get("replays") or {}  # a summary stored before live replays were counted has none
    failed_replays = replays.get("failed", 0)
    if counts["without_verdict"]:
        why = [f"{failed_replays} live replay{'s' if failed_replays != 1 else ''} failed (see `replays.error`)"] * bool(
            failed_replays
        )
        if counts["without_verdict"] > failed_replays:
            why.append(
                f"no baseline, case or recorded reward yet ({counts['without_baseline']} without a baseline: "
                "the first day of those tasks)"
            )
        line += f" {counts['without_verdict']} without a verdict: {'; '.join(why)}."
    if counts.get("superseded"):
        line += f" {counts['superseded']} more in earlier runs a later run of their agent superseded (kept for compare)."
    from_history = counts.get("baselines_from", {}).get("history")
    if from_history:
        line += f" {from_history} compared with a baseline found in the source's earlier days (not yet evaluated)."
    judge_failed = counts.get("judge_failed", 0)  # a summary stored before they were counted has none
    if judge_failed:
        line += f" {judge_failed} judge verdict{'s' if judge_failed != 1 else ''} failed (see `judgements.reasoning`)."
    if replays.get("live"):
        line += f" Live replays: {replays['reused']} reused from the cache, {replays['called']} called the model."
    return line
