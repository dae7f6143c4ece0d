"""The head-to-head comparison as Markdown (its JSON is the comparison itself)."""

from __future__ import annotations

import math
from typing import Any

from eval_pipeline.reports.markdown import table


def _bound(value: float | None, unit: str) -> str:
    """A CI bound; an infinite one (a resample without spread widens the interval) is unbounded, never "inf"."""
    return "unbounded" if value is None or not math.isfinite(value) else f"{value:+.3g}{unit}"


def interval_text(delta: dict | None, unit: str = "") -> str:
    if not delta:
        return "–"
    bounds = f"{_bound(delta['ci_low'], unit)} to {_bound(delta['ci_high'], unit)}"
    return f"{delta['mean']:+.3g}{unit} (CI {bounds}, {delta['tasks']} tasks)"


def coverage_text(meta: dict[str, Any]) -> str:
    """Which tasks were compared, and how the CIs were made."""
    return (
        f"{meta['tasks_in_common']} tasks in common ({meta['tasks_only_in_a']} only in A, {meta['tasks_only_in_b']} only in B), "
        f"{meta['comparable_tasks']} of them comparable ({meta['tasks_in_common'] - meta['comparable_tasks']} lack a score "
        f"and a verdict on a side, e.g. no baseline yet); {meta['confidence']:.0%} paired bootstrap CIs over tasks, "
        f"{meta['resamples']} resamples, none over fewer than {meta['min_tasks']} tasks. Score: {meta['score']}."
    )


def passed_cell(task: dict, side: str) -> str:
    """A side's passed trials of its trials, and those without a verdict (no baseline or case yet), which did not fail."""
    unjudged = task[f"{side}_without_verdict"]
    return f"{task[f'{side}_passed']}/{task[f'{side}_trials']}" + (f" ({unjudged} without a verdict)" if unjudged else "")


def render_comparison(comparison: dict[str, Any]) -> str:
    meta, quality, performance = comparison["meta"], comparison["quality"], comparison["performance"]
    h2h, reliability = comparison["headToHead"], comparison["reliability"]
    lines = [f"# Head to head: A `{meta['a']}` vs B `{meta['b']}`", ""]
    lines.append(coverage_text(meta))
    lines += ["", "## Quality", ""]
    lines += table(
        ["Side", "Episodes", "Pass Rate", "Mean Score", "Mean Cost ($)", "Mean Latency (ms)"],
        [
            [side, s["episodes"], s["pass_rate"], s["mean_score"], s["mean_cost_usd"], s["mean_latency_ms"]]
            for side, s in (("A", quality["a"]), ("B", quality["b"]))
        ],
    )
    flips = quality["mcnemar"]
    lines += [
        "",
        f"- Score, B − A: {interval_text(quality['score_delta'])}",
        f"- Pass rate, B − A: {interval_text(quality['pass_rate_delta'])}",
        f"- Pass/fail flips: {flips['a_pass_b_fail']} tasks pass in A and fail in B, {flips['a_fail_b_pass']} the other way "
        f"(McNemar p = {'–' if flips['p_value'] is None else flips['p_value']})",
        "",
        "## Performance",
        "",
        f"- Cost, B against A: {interval_text(performance['cost_delta_pct'], '%')}",
        f"- Latency, B against A: {interval_text(performance['latency_delta_pct'], '%')}",
        "",
        "## Reliability",
        "",
    ]
    ks = sorted({int(k) for side in ("a", "b") for k in reliability[side]["pass_at_k"]})
    lines += table(
        ["Side", *[f"pass@{k}" for k in ks], *[f"pass^{k}" for k in ks], "Flaky Tasks"],
        [
            [side.upper(), *[reliability[side]["pass_at_k"].get(k, "–") for k in ks],
             *[reliability[side]["pass_hat_k"].get(k, "–") for k in ks], reliability[side]["flaky_tasks"]]
            for side in ("a", "b")
        ],
    )  # fmt: skip
    winner = f"Winner: {h2h['winner'].upper()}" if h2h["winner"] else "No winner"
    lines += ["", "## Head to Head", "", f"{winner}: {h2h['reason']}.", "",
              f"Per task: B wins {h2h['b_wins']}, A wins {h2h['a_wins']}, ties {h2h['ties']}.", ""]  # fmt: skip
    lines += table(
        ["Task", "A", "B", "Winner", "A Passed", "B Passed"],
        [[t["task_id"], t["a"], t["b"], t["winner"] or "–", *(passed_cell(t, side) for side in "ab")] for t in h2h["tasks"]],
    )
    return "\n".join(lines) + "\n"
