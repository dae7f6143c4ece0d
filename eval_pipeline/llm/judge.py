"""Rubric judge: one call per rubric per answer, a 1-5 score with reasoning, validated by pydantic."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.llm.gateway import Gateway, GatewayError


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


@dataclass(frozen=True)
class Judgement:
    item_id: str
    rubric: str
    verdict: Verdict | None
    error: str | None = None


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


async def judge_all(gateway: Gateway, items: list[tuple[str, str, str]], rubrics: list[Rubric]) -> list[Judgement]:
    """Judge every (id, input, answer) on every rubric, concurrently within the gateway's bound."""

    async def one(item_id: str, user_input: str, answer: str, rubric: Rubric) -> Judgement:
        try:
            verdict = await gateway.structured(rubric_messages(rubric, user_input, answer), Verdict)
        except GatewayError as exc:
            gateway.usage.failures.append(f"{item_id}/{rubric.name}: {exc}")
            return Judgement(item_id, rubric.name, None, str(exc))
        return Judgement(item_id, rubric.name, verdict)

    return list(await asyncio.gather(*(one(*item, rubric) for item in items for rubric in rubrics)))
