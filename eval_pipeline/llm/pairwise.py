"""Pairwise judge: is the candidate's answer better than its baseline's for the same input?

LLM judges favour a position. Each pair is asked twice, the candidate shown first and then
second; both verdicts are kept, and only when they agree is one answer preferred, so position
bias is measured (the disagreement rate) instead of silently deciding the outcome.
"""

from __future__ import annotations

from typing import Literal

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.config import Price
from eval_pipeline.llm.asking import Item, Outcome, Request, cache_key, missing_reason, settle

PAIRWISE_VERSION = "1"


class Preference(BaseModel):
    model_config = ConfigDict(extra="forbid")

    winner: Literal["A", "B", "tie"]
    reasoning: str = Field(min_length=1)


PAIRWISE_COLUMNS = [
    "episode_id", "agent_id", "baseline_episode_id", "candidate_first", "baseline_first", "agree", "preferred",
    "reasoning", "judge_model", "cached", "status", "prompt_tokens", "completion_tokens", "cost_usd",
]  # fmt: skip


def pairwise_messages(user_input: str, first: str, second: str) -> list[dict[str, str]]:
    return [
        {
            "role": "system",
            "content": "You compare two responses of AI agents to the same input and decide which serves the user "
            "better: correct, relevant, complete and concise. The order of the responses must not matter. "
            'Answer with JSON only: {"winner": "A" | "B" | "tie", "reasoning": "<one or two sentences>"}.',
        },
        {
            "role": "user",
            "content": f"<input>\n{user_input}\n</input>\n\n<response_a>\n{first}\n</response_a>\n\n"
            f"<response_b>\n{second}\n</response_b>",
        },
    ]


_SAME_ANSWER = {
    "status": "judged", "candidate_first": "tie", "baseline_first": "tie", "agree": True, "preferred": "tie",
    "reasoning": "the same answer as the baseline's",
}  # fmt: skip


def pairwise_items(candidates: pd.DataFrame, model: str) -> list[Item[Preference]]:
    """One item per candidate: two requests (candidate as A, then as B), or skipped, saying what is missing."""
    items: list[Item[Preference]] = []
    columns = ["episode_id", "agent_id", "baseline_episode_id", "user_input", "final_output", "baseline_output"]
    for episode_id, agent_id, baseline_id, user_input, answer, baseline_answer in candidates[columns].itertuples(index=False):
        row = {"episode_id": episode_id, "agent_id": agent_id, "baseline_episode_id": baseline_id, "judge_model": model}
        if pd.isna(baseline_id):
            items.append(Item({**row, "baseline_episode_id": None, "reasoning": "skipped: no baseline"}))
            continue
        absent = missing_reason({"user input": user_input, "final answer": answer, "baseline answer": baseline_answer})
        if absent:
            items.append(Item({**row, "reasoning": absent}))
            continue
        if " ".join(answer.split()) == " ".join(baseline_answer.split()):
            items.append(Item({**row, **_SAME_ANSWER}))  # nothing to judge, and no call to pay for
            continue
        orders = (pairwise_messages(user_input, answer, baseline_answer), pairwise_messages(user_input, baseline_answer, answer))
        purpose = f"pairwise@{PAIRWISE_VERSION}"
        items.append(Item(row, tuple(Request(cache_key(model, purpose, m), m, Preference) for m in orders)))
    return items


def _decide(answers: list[Preference]) -> dict:
    candidate_first, baseline_first = answers
    as_shown_first = {"A": "candidate", "B": "baseline", "tie": "tie"}[candidate_first.winner]
    as_shown_second = {"A": "baseline", "B": "candidate", "tie": "tie"}[baseline_first.winner]
    agree = as_shown_first == as_shown_second
    return {
        "candidate_first": as_shown_first,
        "baseline_first": as_shown_second,
        "agree": agree,
        "preferred": as_shown_first if agree else "inconsistent",
        "reasoning": f"candidate first: {candidate_first.reasoning} | baseline first: {baseline_first.reasoning}",
    }


def pairwise_rows(items: list[Item[Preference]], outcomes: list[list[Outcome[Preference]]], price: Price | None) -> pd.DataFrame:
    rows = [settle(item, outcome, price, _decide) for item, outcome in zip(items, outcomes, strict=True)]
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS).sort_values("episode_id", ignore_index=True)
