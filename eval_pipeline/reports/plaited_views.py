"""plaited's views, for the habits of its users: `summarize` (SummaryResult JSONL, or Markdown for an LLM judge),
`calibrate` (a sample of failures for a person to review, a second grader's verdict beside the first) and
`balance` (the BalanceAnalysis of a case set). The shapes are the ones plaited documents; where its documentation
is silent, those of its own output."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

from eval_pipeline.capture.cases import CaseSpec, balance
from eval_pipeline.capture.results import Result
from eval_pipeline.redaction import excerpt, redact
from eval_pipeline.regression.stats import seed_for
from eval_pipeline.reports.calibration import TEXT_CHARS, fenced
from eval_pipeline.reports.markdown import code

STEP_PREVIEW_CHARS = 100  # of a step's text, as plaited cuts it
PLAN_PREVIEW_CHARS = 80
OUTPUT_PREVIEW_CHARS = 200
SNIPPET_STEPS = 5  # of a trajectory shown with a failure: the first two, the middle one and the last two
SMALL_CATEGORY = 3  # cases: fewer say little about a category
SMALL_CASE_SET = 20  # cases: fewer say little about the agent


class SummaryResult(TypedDict):
    id: str
    input: str
    output: str
    toolCalls: list[str]
    duration: float
    trialNum: NotRequired[int]  # a trial of a TrialResult, or one of our runs: which one


def _prompt(result: Result) -> str:
    return result.input if isinstance(result.input, str) else "\n".join(result.input)


def summary(result: Result) -> SummaryResult:
    """plaited's SummaryResult: a run in one line, for jq."""
    line: SummaryResult = {
        "id": result.id,
        "input": _prompt(result),
        "output": result.output,
        "toolCalls": [step.get("name") or "" for step in result.trajectory if step["type"] == "tool_call"],
        "duration": result.duration_ms,
    }
    if result.trial is not None:
        line["trialNum"] = result.trial
    return line


def _cut(text: str, limit: int) -> str:
    return text[:limit] + ("..." if len(text) > limit else "")


def _step_line(step: dict[str, Any]) -> str:
    kind = step["type"]
    if kind == "tool_call":
        duration = f" ({step['duration']:g}ms)" if step.get("duration") else ""
        return f"[TOOL:{step.get('name')}] -> {step.get('status')}{duration}"
    if kind == "plan":
        entries = [entry for entry in step.get("entries") or [] if isinstance(entry, dict)]
        plan = ", ".join(f"{entry.get('content')}: {entry.get('status')}" for entry in entries)
        return f"[PLAN] {_cut(plan, PLAN_PREVIEW_CHARS)}"
    return f"[{kind.upper()}] {_cut(step.get('content') or '', STEP_PREVIEW_CHARS)}"


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def summary_markdown(results: Iterable[Result]) -> Iterator[str]:
    """plaited's Markdown summary: a record per run with numbered step ids an LLM judge can cite, and its verdict; a
    record at a time."""
    for index, result in enumerate(results):
        record = result.id if result.trial is None else f"{result.id}-trial-{result.trial}"
        lines = [f"## Evaluation Record: {record}", "", f"**Input:** {_prompt(result)}", "", "**Trajectory:**"]
        lines += [f"{n}. {_step_line(step)} [→{record}-step-{n}]" for n, step in enumerate(result.trajectory, 1)]
        lines += [
            "",
            f"**Output:** {_cut(result.output, OUTPUT_PREVIEW_CHARS)}",
            "",
            f"**Metadata:** {', '.join(f'{key}={_shown(value)}' for key, value in result.metadata.items())}",
            f"**Tool Errors:** {str(result.tool_errors).lower()}",
            f"**Duration:** {result.duration_ms:g}ms",
        ]
        if verdict := result.verdict:
            lines.append(f"**Score:** {'PASS' if verdict['pass'] else 'FAIL'} ({verdict['score']:g})")
            lines += [f"**Reasoning:** {verdict['reasoning']}"] if verdict.get("reasoning") else []
        yield ("\n" if index else "") + "\n".join([*lines, "", "---", ""])


def sample_failures(results: Iterable[Result], size: int, seed_label: str) -> tuple[list[Result], int]:
    """Up to `size` of the failed runs, drawn at random but seeded by `seed_label` (the file, or the day), so a
    re-run draws the same; in the order of the results, with how many failed."""
    failed = [result for result in results if (verdict := result.verdict) is not None and not verdict["pass"]]
    drawn = random.Random(seed_for("calibrate", seed_label)).sample(range(len(failed)), max(0, min(size, len(failed))))
    return [failed[index] for index in sorted(drawn)], len(failed)


@dataclass(frozen=True)
class SecondOpinion:
    """Another grader's verdicts on the sampled runs, to show beside the recorded ones."""

    grader: str  # as the page names it: the command line it was given
    verdicts: list[dict[str, Any]]  # one per sampled run, in order: {pass, score, reasoning} or {error}


def _snippet(trajectory: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if len(trajectory) <= SNIPPET_STEPS:
        return trajectory
    return [*trajectory[:2], trajectory[len(trajectory) // 2], *trajectory[-2:]]


def _snippet_line(step: dict[str, Any]) -> str:
    if step["type"] == "tool_call":
        return f"[tool_call] {step.get('name')}: {step.get('status')}"
    if step["type"] == "plan":
        return f"[plan] {len(step.get('entries') or [])} entries"
    return f"[{step['type']}] {_cut(step.get('content') or '', STEP_PREVIEW_CHARS)}"


def _verdict_row(grader: str, verdict: dict[str, Any]) -> str:
    if "error" in verdict:
        return f"| {grader} | error | – |"
    return f"| {grader} | {'PASS' if verdict['pass'] else 'FAIL'} | {verdict['score']:g} |"


def calibration_review(
    source: str,
    sample: list[Result],
    failed: int,
    second: SecondOpinion | None = None,
    secret_patterns: tuple[str, ...] = (),
) -> str:
    """plaited's calibration.md: each sampled failure with its input, hint, output, verdicts (a second grader's
    beside the recorded one) and a trajectory snippet, for a person to tell agent failures from grader bugs.
    The runs' text is redacted, cut and fenced, so it cannot format the page."""

    def text(value: str | None) -> str:
        return fenced(excerpt(value, secret_patterns, TEXT_CHARS) if value else None)

    lines = [
        "# Grader Calibration Report",
        "",
        f"Source: {source}. {len(sample)} of {failed} failures, drawn at random (seeded by the source, so a re-run "
        "draws the same).",
        "",
        "Review each failure and mark whether it is a **valid failure** (the grader rightly found a problem), a "
        "**grader bug** (the output was right, the grader wrong) or **ambiguous**.",
    ]
    for number, result in enumerate(sample, 1):
        recorded = result.verdict or {}
        verdicts = [("recorded", recorded), *([(f"`{second.grader}`", second.verdicts[number - 1])] if second else [])]
        lines += [
            "",
            "---",
            "",
            f"## Sample {number}: {code(redact(result.id, secret_patterns))}"
            + (f" · trial {result.trial}" if result.trial is not None else ""),
        ]
        lines += ["", "**Input**", "", text(_prompt(result)), "", "**Hint**", "", text(result.hint)]
        lines += ["", "**Output**", "", text(result.output), "", "| grader | verdict | score |", "|---|---|---|"]
        lines += [_verdict_row(grader, verdict) for grader, verdict in verdicts]
        for grader, verdict in verdicts:
            lines += ["", f"**Reasoning ({grader})**", "", text(verdict.get("reasoning") or verdict.get("error"))]
        lines += ["", "**Trajectory snippet**", "", text("\n".join(map(_snippet_line, _snippet(result.trajectory))))]
        lines += ["", "**Review:**", "- [ ] Valid failure", "- [ ] Grader bug", "- [ ] Ambiguous"]
    return "\n".join(lines) + "\n"


def balance_analysis(cases: list[CaseSpec]) -> dict[str, Any]:
    """plaited's BalanceAnalysis of a case set (`totalCases`, `categories` with `name`, `count` and `percentage`,
    `underrepresented`, `suggestions`), with its positive and negative cases (`metadata.negative`) counted too."""
    ours = balance(cases)
    categories = [{"name": c["category"], "count": c["cases"], "percentage": round(c["share"] * 100)} for c in ours["categories"]]
    suggestions = []
    if ours["under_represented"]:
        suggestions.append(f"Consider adding more test cases for: {', '.join(ours['under_represented'])}")
    suggestions += [
        f"Category '{c['name']}' has {c['percentage']}% of cases - consider diversifying"
        for c in categories
        if c["percentage"] > 50
    ]
    if small := [c["name"] for c in categories if c["count"] < SMALL_CATEGORY]:
        suggestions.append(f"Categories with < {SMALL_CATEGORY} cases may not be reliable: {', '.join(small)}")
    if ours["cases"] < SMALL_CASE_SET:
        suggestions.append(f"Consider expanding test set (currently {ours['cases']} cases) for more statistical significance")
    if ours["cases"] and not ours["negative"]:
        suggestions.append("No negative cases (metadata.negative): add some where the agent should decline or break nothing")
    return {
        "totalCases": ours["cases"],
        "categories": categories,
        "underrepresented": ours["under_represented"],
        "suggestions": suggestions or ["Test set appears well-balanced"],
        "positiveCases": ours["positive"],
        "negativeCases": ours["negative"],
    }
