"""Rubric judge: one call per rubric per answer, a 1-5 score with reasoning, validated by pydantic."""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.config import ConfigError, RubricSpec
from eval_pipeline.llm.gateway import BudgetExhausted, Gateway, GatewayError


class Rubric(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    question: str
    levels: dict[int, str]  # 5 = best ... 1 = worst
    version: str = "1"


RELEVANCE = Rubric(
    name="relevance",
    question="How well does the response address the customer's ticket?",
    levels={
        5: "Directly addresses the issue, accurate, no irrelevant content.",
        4: "Addresses the issue with minor omissions or slight digressions.",
        3: "Partly addresses the issue; misses important parts or includes notable irrelevant content.",
        2: "Barely addresses the issue; mostly generic or inaccurate.",
        1: "Off-topic or wrong.",
    },
)
TONE = Rubric(
    name="tone",
    question="How appropriate is the response's tone for customer support?",
    levels={
        5: "Professional and concise.",
        4: "Professional with minor verbosity or stiffness.",
        3: "Acceptable but noticeably too long, too curt or inconsistent.",
        2: "Unprofessional in places or hard to follow.",
        1: "Unprofessional or confusing.",
    },
)
BUILTIN_RUBRICS = {rubric.name: rubric for rubric in (RELEVANCE, TONE)}


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")

    score: int = Field(ge=1, le=5)
    reasoning: str = Field(min_length=1)

    @property
    def normalized(self) -> float:
        return (self.score - 1) / 4


def rubric_messages(rubric: Rubric, user_input: str, answer: str) -> list[dict[str, str]]:
    levels = "\n".join(f"{score}: {text}" for score, text in sorted(rubric.levels.items(), reverse=True))
    return [
        {
            "role": "system",
            "content": "You grade one response of an AI agent against one rubric. "
            'Answer with JSON only: {"score": <integer 1-5>, "reasoning": "<one or two sentences>"}.',
        },
        {
            "role": "user",
            "content": f"Rubric: {rubric.name}\n{rubric.question}\n{levels}\n\n"
            f"<input>\n{user_input}\n</input>\n\n<response>\n{answer}\n</response>",
        },
    ]


def configured_rubrics(names: list[str], custom: dict[str, RubricSpec]) -> list[Rubric]:
    """The rubrics a config names, built-in or custom; an unknown name is a config error."""
    known = {**BUILTIN_RUBRICS, **{name: Rubric(name=name, **spec.model_dump()) for name, spec in custom.items()}}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ConfigError(f"judge.rubrics names unknown rubric(s) {unknown}; known: {sorted(known)}")
    return [known[name] for name in names]


def cache_key(model: str, rubric: Rubric, messages: list[dict[str, str]]) -> str:
    """Same model, rubric version, messages and parameters: the same answer, so no second call."""
    material = json.dumps({"model": model, "rubric": [rubric.name, rubric.version], "messages": messages, "temperature": 0})
    return hashlib.sha256(material.encode()).hexdigest()


JUDGEMENT_COLUMNS = ["episode_id", "agent_id", "rubric", "score", "normalized", "reasoning", "judge_model", "cached", "status"]


@dataclass(frozen=True)
class PartitionJudgement:
    rows: pd.DataFrame  # JUDGEMENT_COLUMNS, one row per (episode, rubric): judged, failed or skipped
    new_cache: pd.DataFrame  # cache_key, model, answer, prompt_tokens, completion_tokens
    calls: int
    cache_hits: int


def judge_candidates(
    gateway: Gateway, candidates: pd.DataFrame, rubrics: list[Rubric], lookup: Callable[[list[str]], dict[str, dict]]
) -> PartitionJudgement:
    """Judge each candidate (`episode_id, agent_id, user_input, final_output`) on each rubric.

    Answers already in the cache (looked up by `lookup`) cost nothing; a candidate missing its
    input or answer gets a `skipped` row with the reason, and a failed call a `failed` row.
    """
    rows, todo = [], []
    for episode_id, agent_id, user_input, answer in candidates[
        ["episode_id", "agent_id", "user_input", "final_output"]
    ].itertuples(index=False):
        for rubric in rubrics:
            base = {"episode_id": episode_id, "agent_id": agent_id, "rubric": rubric.name, "judge_model": gateway.model}
            missing = [
                name for name, value in (("user input", user_input), ("final answer", answer)) if not (value or "").strip()
            ]
            if missing:
                rows.append({**base, "status": "skipped", "reasoning": f"skipped: no {' or '.join(missing)}", "cached": False})
                continue
            messages = rubric_messages(rubric, user_input, answer)
            todo.append((base, rubric, messages, cache_key(gateway.model, rubric, messages)))
    cached = lookup([key for *_, key in todo])
    fresh = [item for item in todo if item[3] not in cached]
    calls_before = gateway.usage.calls

    async def ask_all() -> list[Verdict | GatewayError]:
        async def ask(rubric_messages_: list[dict[str, str]]) -> Verdict | GatewayError:
            try:
                return await gateway.structured(rubric_messages_, Verdict)
            except GatewayError as exc:
                return exc

        try:
            return list(await asyncio.gather(*(ask(messages) for _, _, messages, _ in fresh)))
        finally:
            await gateway.close()

    answers = asyncio.run(ask_all()) if fresh else []
    new_cache = []
    for (base, _, _, key), answer in zip(fresh, answers, strict=True):
        if isinstance(answer, BudgetExhausted):
            rows.append({**base, "status": "skipped", "reasoning": f"skipped: {answer}", "cached": False})
            continue
        if isinstance(answer, GatewayError):
            gateway.usage.failures.append(f"{base['episode_id']}/{base['rubric']}: {answer}")
            rows.append({**base, "status": "failed", "reasoning": f"judge failed: {answer}", "cached": False})
            continue
        new_cache.append({"cache_key": key, "model": gateway.model, "answer": answer.model_dump_json()})
        rows.append({**base, **_verdict_row(answer), "cached": False})
    for base, _, _, key in todo:
        if key in cached:
            rows.append({**base, **_verdict_row(Verdict.model_validate(cached[key])), "cached": True})
    frame = pd.DataFrame(rows, columns=JUDGEMENT_COLUMNS).sort_values(["episode_id", "rubric"], ignore_index=True)
    return PartitionJudgement(
        rows=frame,
        new_cache=pd.DataFrame(new_cache, columns=["cache_key", "model", "answer"]),
        calls=gateway.usage.calls - calls_before,
        cache_hits=len(todo) - len(fresh),
    )


def _verdict_row(verdict: Verdict) -> dict:
    return {"status": "judged", "score": verdict.score, "normalized": verdict.normalized, "reasoning": verdict.reasoning}
