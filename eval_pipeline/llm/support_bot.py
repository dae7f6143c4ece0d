"""The support-bot workflow: a JSON file of `{id, ticket, response}` examples judged on relevance and tone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import RELEVANCE, TONE, judge_partition

REQUIRED = ("id", "ticket", "response")


class ExamplesError(ValueError):
    """The examples file is not a JSON list of objects."""


def read_examples(path: Path) -> tuple[list[tuple[str, str, str]], list[dict[str, Any]]]:
    """(id, ticket, response) of each usable example, and the skipped ones with their index and reason."""
    try:
        examples = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ExamplesError(f"{path}: {exc}") from None
    if not isinstance(examples, list):
        raise ExamplesError(f"{path}: expected a JSON list of examples")
    usable, skipped, seen = [], [], set()
    for index, example in enumerate(examples):
        if not isinstance(example, dict):
            skipped.append({"index": index, "reason": "not an object"})
            continue
        missing = [key for key in REQUIRED if not str(example.get(key) or "").strip()]
        if missing:
            skipped.append({"index": index, "reason": f"missing or empty: {', '.join(missing)}"})
            continue
        if str(example["id"]) in seen:
            skipped.append({"index": index, "reason": f"duplicate id {example['id']}"})
            continue
        seen.add(str(example["id"]))
        usable.append((str(example["id"]), str(example["ticket"]), str(example["response"])))
    return usable, skipped


def judge_examples(gateway: Gateway, path: Path) -> dict[str, Any]:
    """`{"results": [{id, relevance: {score, reasoning}, tone: {...}}], "skipped": [{index, reason}]}`."""
    usable, skipped = read_examples(path)
    candidates = pd.DataFrame(
        [(example_id, "support-bot", ticket, response) for example_id, ticket, response in usable],
        columns=["episode_id", "agent_id", "user_input", "final_output"],
    )
    judged = judge_partition(gateway, candidates, [RELEVANCE, TONE], lambda keys: {})
    results: dict[str, dict[str, Any]] = {example_id: {"id": example_id} for example_id, _, _ in usable}
    for row in judged.rubrics.itertuples():
        if row.status == "judged":
            results[row.episode_id][row.rubric] = {"score": int(row.score), "reasoning": row.reasoning}
        else:
            results[row.episode_id][row.rubric] = {"score": None, "error": row.reasoning.removeprefix("judge failed: ")}
    return {"results": list(results.values()), "skipped": skipped}
