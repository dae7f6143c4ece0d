"""The calibration sample: failed trials drawn at random (seeded by the day), for a person to
read and say whether the grader was right. A grader nobody checks drifts unnoticed."""

from __future__ import annotations

import random
from collections.abc import Sequence
from datetime import date
from typing import Any, Literal, TypedDict, TypeVar

import pandas as pd

from eval_pipeline.redaction import excerpt
from eval_pipeline.regression.stats import seed_for
from eval_pipeline.reports.markdown import code

T = TypeVar("T")

TEXT_CHARS = 8000  # of an input or output shown: enough to judge, bounded for a page a person reads


class CalibrationTrial(TypedDict):
    """A failed trial as a reviewer reads it: its texts redacted and cut to TEXT_CHARS (None: it has none)."""

    episode_id: str | None
    agent_id: str | None
    task_id: str | None
    input: str | None
    output: str | None
    hint: str | None
    reasoning: str | None
    trial: int | None


class CalibrationSample(TypedDict):
    failed: int  # the day's failed trials, of which `trials` were drawn
    trials: list[CalibrationTrial]


def seeded_draw(purpose: str, day: date, population: Sequence[T], size: int) -> list[T]:
    """Up to `size` of `population` drawn at random, seeded by `purpose` and the day: the same ones on every re-run."""
    return random.Random(seed_for(purpose, day)).sample(list(population), min(size, len(population)))


def calibration_sample(failed: pd.DataFrame, day: date, size: int, secret_patterns: tuple[str, ...] = ()) -> CalibrationSample:
    """Up to `size` of the day's failed trials, the same ones on every re-run of the day."""
    rows = failed.sort_values("episode_id").to_dict("records")
    chosen = seeded_draw("calibration", day, rows, size)

    def text(value: Any) -> str | None:
        if value is None or (isinstance(value, float) and pd.isna(value)):
            return None
        return excerpt(str(value), secret_patterns, TEXT_CHARS)

    trials: list[CalibrationTrial] = [
        {
            "episode_id": text(row.get("episode_id")),
            "agent_id": text(row.get("agent_id")),
            "task_id": text(row.get("task_id")),
            "input": text(row.get("input")),
            "output": text(row.get("output")),
            "hint": text(row.get("hint")),
            "reasoning": text(row.get("reasoning")),
            "trial": None if pd.isna(row.get("trial")) else int(row["trial"]),
        }
        for row in sorted(chosen, key=lambda row: row["episode_id"])
    ]
    return {"failed": len(rows), "trials": trials}


SECTIONS: tuple[tuple[str, Literal["input", "output", "hint", "reasoning"]], ...] = (
    ("Input", "input"),
    ("Output", "output"),
    ("Hint", "hint"),
    ("Why it failed (grader and case assertions)", "reasoning"),
)


def fenced(text: str | None) -> str:
    """Untrusted text as a fenced block: a fence longer than any inside it, so the text cannot format the page."""
    body = text if text else "(none)"
    fence = "```"
    while fence in body:
        fence += "`"
    return f"{fence}text\n{body}\n{fence}"


def render_calibration(day: str, sample: CalibrationSample) -> str:
    """Markdown a reviewer can annotate; the agent's text is fenced, so it cannot format the page."""
    lines = [
        f"# Grader calibration — {day}",
        "",
        f"{len(sample['trials'])} of {sample['failed']} failed trials, drawn at random (seeded by the day). "
        "For each, decide whether the grader was right; a wrong call means the grader or the case needs fixing.",
    ]
    for number, trial in enumerate(sample["trials"], 1):
        lines += [
            "",
            f"## {number}. {code(trial['task_id'])} · trial {trial['trial']} · {code(trial['agent_id'])}",
            "",
            f"Episode {code(trial['episode_id'])}",
            "",
        ]
        for label, key in SECTIONS:
            lines += [f"**{label}**", "", fenced(trial[key]), ""]
        lines.append("- [ ] the grader was right")
    return "\n".join(lines) + "\n"
