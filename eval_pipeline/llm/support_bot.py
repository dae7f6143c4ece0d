"""The support-bot workflow: a JSON file of `{id, ticket, response}` examples judged on relevance and tone."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import RELEVANCE, TONE, Rubric, judge_partition

REQUIRED = ("id", "ticket", "response")
RUBRICS = ("relevance", "tone")  # built in, reworded by `[judge.custom.<name>]` in the config


class ExamplesError(ValueError):
    """The examples file is not a JSON list of objects."""


def _not_a_string(example: dict[str, Any]) -> str | None:
    """Why an example's id, ticket or response is unusable: each must be a non-empty string, never coerced."""
    missing = [key for key in REQUIRED if key not in example or example[key] is None or example[key] == ""]
    if missing:
        return f"missing or empty: {', '.join(missing)}"
    for key in REQUIRED:
        value = example[key]
        if not isinstance(value, str):
            return f"{key} must be a string, not {type(value).__name__}"
        if not value.strip():
            return f"missing or empty: {key}"
    return None


def read_examples(path: Path) -> tuple[list[tuple[int, str, str, str]], list[dict[str, Any]]]:
    """(index, id, ticket, response) of each usable example, and the skipped ones with their index and reason."""
    try:
        examples = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExamplesError(f"{path}: {exc}") from None
    if not isinstance(examples, list):
        raise ExamplesError(f"{path}: expected a JSON list of examples")
    usable: list[tuple[int, str, str, str]] = []
    skipped: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, example in enumerate(examples):
        reason = "not an object" if not isinstance(example, dict) else _not_a_string(example)
        if reason is None and example["id"] in seen:
            reason = f"duplicate id {example['id']}"
        if reason is not None:
            skipped.append({"index": index, "reason": reason})
            continue
        seen.add(example["id"])
        usable.append((index, example["id"], example["ticket"], example["response"]))
    return usable, skipped


@dataclass(frozen=True)
class JudgedExamples:
    """`results`: `[{id, relevance: {score, reasoning}, tone: {...}}]`; `skipped`: `[{index, id?, reason}]`."""

    results: list[dict[str, Any]]
    skipped: list[dict[str, Any]]
    judge_failed: int  # skipped because the judge failed on them after its retries: no verdict, so no clean run

    def document(self) -> dict[str, Any]:
        """What the results file holds."""
        return {"results": self.results, "skipped": self.skipped}


def judge_examples(gateway: Gateway, path: Path, rubrics: list[Rubric] | None = None) -> JudgedExamples:
    """The examples of `path` judged on `rubrics`.

    An example is a result only when every rubric judged it; one the judge failed on (after the
    gateway's retries and one re-ask) is skipped with each failing rubric's reason, never a null score;
    so is one a call budget left unjudged, and an unusable one (with why).
    """
    rubrics = rubrics or [RELEVANCE, TONE]  # the built-ins RUBRICS names
    usable, skipped = read_examples(path)
    candidates = pd.DataFrame(
        [(example_id, "support-bot", ticket, response) for _, example_id, ticket, response in usable],
        columns=["episode_id", "agent_id", "user_input", "final_output"],
    )
    judged = judge_partition(gateway, candidates, rubrics, lambda keys: {})
    verdicts: dict[str, dict[str, Any]] = {example_id: {"id": example_id} for _, example_id, _, _ in usable}
    failures: dict[str, list[str]] = {}
    failed: set[str] = set()
    for row in judged.rubrics.itertuples():
        if row.status == "judged":
            verdicts[str(row.episode_id)][str(row.rubric)] = {"score": int(row.score), "reasoning": row.reasoning}
        else:
            if row.status == "failed":
                failed.add(str(row.episode_id))
            failures.setdefault(str(row.episode_id), []).append(
                f"{row.rubric}: {str(row.reasoning).removeprefix('judge failed: ')}"
            )
    results = [verdicts[example_id] for _, example_id, _, _ in usable if example_id not in failures]
    skipped += [{"index": index, "id": example_id, "reason": "; ".join(failures[example_id])}
                for index, example_id, _, _ in usable if example_id in failures]  # fmt: skip
    return JudgedExamples(results, sorted(skipped, key=lambda entry: entry["index"]), len(failed))
