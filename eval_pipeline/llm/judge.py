"""Rubric judge: one call per rubric per answer, a 1-5 score with reasoning, validated by pydantic; a part of a
day's judgement (rubrics and pairwise) in one concurrent batch; and the day's figures, added up part by part."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field

from eval_pipeline.config import ConfigError, GatewayConfig, JudgeConfig, Price, RubricSpec
from eval_pipeline.llm.asking import Item, Outcome, Request, ask_items, cache_key, missing_reason, settle
from eval_pipeline.llm.gateway import BudgetExhausted, Gateway
from eval_pipeline.llm.pairwise import pairwise_items, pairwise_rows


def judge_off_because(base_url: str | None, model: str | None, api_key: str | None = None) -> str | None:
    """Why the judge cannot run, in one plain line; None when it can.

    It needs a model, and an endpoint: OPENAI_BASE_URL, or OpenAI's own with OPENAI_API_KEY alone."""
    missing = [name for name, given in (("OPENAI_BASE_URL", base_url or api_key), ("EVAL_JUDGE_MODEL", model)) if not given]
    return f"LLM judge off: {' and '.join(missing)} not set" if missing else None


def judge_gateway(
    base_url: str | None, api_key: str, model: str, judge: JudgeConfig, prices: dict[str, Price], endpoint: GatewayConfig
) -> Gateway:
    """The judge's gateway within the config's budget, pricing its own calls (the nightly step and `judge` alike)."""
    return Gateway(
        base_url=base_url,
        api_key=api_key,
        model=model,
        **endpoint.model_dump(),
        max_calls=judge.max_calls_per_run,
        max_dollars=judge.max_dollars_per_run,
        price=prices.get(model),
    )


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

    score: int = Field(ge=1, le=5, strict=True)  # `true` or "4" is no score: asked again, never read as 1 or 4
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


JUDGEMENT_COLUMNS = [
    "episode_id", "agent_id", "rubric", "score", "normalized", "reasoning", "judge_model", "cached", "status",
    "prompt_tokens", "completion_tokens", "cost_usd",
]  # fmt: skip


def rubric_items(candidates: pd.DataFrame, rubrics: list[Rubric], model: str) -> list[Item[Verdict]]:
    """One item per (candidate, rubric); a candidate without input or answer is skipped, saying which."""
    items: list[Item[Verdict]] = []
    for episode_id, agent_id, user_input, answer in candidates[
        ["episode_id", "agent_id", "user_input", "final_output"]
    ].itertuples(index=False):
        absent = missing_reason({"user input": user_input, "final answer": answer})
        for rubric in rubrics:
            row = {"episode_id": episode_id, "agent_id": agent_id, "rubric": rubric.name, "judge_model": model}
            if absent:
                items.append(Item({**row, "reasoning": absent}))
                continue
            messages = rubric_messages(rubric, user_input, answer)
            key = cache_key(model, f"rubric:{rubric.name}@{rubric.version}", messages)
            items.append(Item(row, (Request(key, messages, Verdict),)))
    return items


def rubric_rows(items: list[Item[Verdict]], outcomes: list[list[Outcome[Verdict]]], price: Price | None) -> pd.DataFrame:
    def decide(answers: list[Verdict]) -> dict:
        (verdict,) = answers
        return {"score": verdict.score, "normalized": verdict.normalized, "reasoning": verdict.reasoning}

    rows = [settle(item, outcome, price, decide) for item, outcome in zip(items, outcomes, strict=True)]
    return pd.DataFrame(rows, columns=JUDGEMENT_COLUMNS).sort_values(["episode_id", "rubric"], ignore_index=True)


@dataclass(frozen=True)
class PartitionJudgement:
    rubrics: pd.DataFrame  # JUDGEMENT_COLUMNS, one row per (episode, rubric): judged, failed or skipped
    pairwise: pd.DataFrame  # PAIRWISE_COLUMNS, one row per episode
    new_cache: pd.DataFrame  # CACHE_COLUMNS
    calls: int
    cache_hits: int


def judge_partition(
    gateway: Gateway,
    candidates: pd.DataFrame,
    rubrics: list[Rubric],
    lookup: Callable[[list[str]], dict[str, dict]],
    *,
    pairwise: bool = False,
) -> PartitionJudgement:
    """Judge each candidate (`episode_id, agent_id, user_input, final_output`, and for `pairwise`
    `baseline_episode_id, baseline_output`) on each rubric, and against its baseline's answer."""
    by_rubric = rubric_items(candidates, rubrics, gateway.model)
    paired = pairwise_items(candidates, gateway.model) if pairwise else []
    calls_before = gateway.usage.calls
    items: list[Item[Any]] = [*by_rubric, *paired]
    outcomes, new_cache = ask_items(gateway, items, lookup)
    for item, answered in zip(items, outcomes, strict=True):
        for outcome in answered:
            if outcome.error is not None and not isinstance(outcome.error, BudgetExhausted):
                gateway.usage.failures.append(f"{item.row['episode_id']}/{item.row.get('rubric', 'pairwise')}: {outcome.error}")
    return PartitionJudgement(
        rubrics=rubric_rows(by_rubric, outcomes[: len(by_rubric)], gateway.price),
        pairwise=pairwise_rows(paired, outcomes[len(by_rubric) :], gateway.price),
        new_cache=new_cache,
        calls=gateway.usage.calls - calls_before,
        cache_hits=sum(o.cached for answered in outcomes for o in answered),
    )


_PREFERENCES = ("candidate", "baseline", "tie", "inconsistent")


@dataclass(frozen=True)
class RubricTally:
    """One rubric's verdicts of a day, added up part by part."""

    judged: int = 0
    score_sum: float = 0.0
    scored: int = 0  # judged rows with a score
    normalized_sum: float = 0.0
    normalized: int = 0
    failed: int = 0
    skipped: int = 0
    cached: int = 0

    def __add__(self, other: RubricTally) -> RubricTally:
        return RubricTally(*(mine + theirs for mine, theirs in zip(astuple(self), astuple(other), strict=True)))

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    @property
    def mean_normalized(self) -> float | None:
        return self.normalized_sum / self.normalized if self.normalized else None


@dataclass(frozen=True)
class JudgeTally:
    """A day's judge in figures, added up part by part (`judge_tally`): rubric verdicts by status and per rubric, the
    tokens and dollars the calls cost and those the cache saved, the pairwise comparisons by status and preference."""

    statuses: Counter[str] = field(default_factory=Counter)  # rubric rows: judged, failed, skipped
    rubrics: dict[str, RubricTally] = field(default_factory=dict)
    asked_tokens: int = 0
    asked_usd: float = 0.0
    saved_tokens: int = 0
    saved_usd: float = 0.0
    priced: bool = False  # some row that asked has a cost: the model has a price
    pair_statuses: Counter[str] = field(default_factory=Counter)
    preferred: Counter[str] = field(default_factory=Counter)  # of the pairs compared
    agreeing: int = 0  # pairs compared whose two orders agreed

    def __add__(self, other: JudgeTally) -> JudgeTally:
        names = sorted({*self.rubrics, *other.rubrics})
        return JudgeTally(
            self.statuses + other.statuses,
            {name: self.rubrics.get(name, RubricTally()) + other.rubrics.get(name, RubricTally()) for name in names},
            self.asked_tokens + other.asked_tokens,
            self.asked_usd + other.asked_usd,
            self.saved_tokens + other.saved_tokens,
            self.saved_usd + other.saved_usd,
            self.priced or other.priced,
            self.pair_statuses + other.pair_statuses,
            self.preferred + other.preferred,
            self.agreeing + other.agreeing,
        )

    @property
    def rows(self) -> int:
        return self.statuses.total() + self.pair_statuses.total()

    def summary(self) -> dict:
        """As the step's metadata and the report say it; dollars are None without a price for the judge's model."""
        compared = self.pair_statuses["judged"]

        def dollars(usd: float) -> float | None:
            return round(usd, 6) if self.priced else None

        return {
            **{status: self.statuses[status] for status in ("judged", "failed", "skipped")},
            "tokens": self.asked_tokens,
            "cost_usd": dollars(self.asked_usd),
            "tokens_saved_by_cache": self.saved_tokens,
            "cost_saved_by_cache_usd": dollars(self.saved_usd),
            "pairs_compared": compared,
            **{f"pairs_{status}": self.pair_statuses[status] for status in ("failed", "skipped")},
            **{f"pairs_{verdict}": self.preferred[verdict] for verdict in _PREFERENCES},
            "pair_agreement": round(self.agreeing / compared, 4) if compared else None,
        }


_SPENT = ["cached", "prompt_tokens", "completion_tokens", "cost_usd"]
# What `judge_tally` reads of each side's rows
JUDGE_TALLY_COLUMNS = {
    "rubrics": ["rubric", "status", "score", "normalized", *_SPENT],
    "pairwise": ["status", "preferred", "agree", *_SPENT],
}


def judge_tally(rubrics: pd.DataFrame | None = None, pairwise: pd.DataFrame | None = None) -> JudgeTally:
    """The tally of rubric verdicts (rows as `judgements` holds them) and pairwise comparisons (`pairwise_judgements`),
    either or both: the tally of any split of the rows adds up to the tally of all."""
    rubrics = pd.DataFrame(columns=JUDGE_TALLY_COLUMNS["rubrics"]) if rubrics is None else rubrics
    pairwise = pd.DataFrame(columns=JUDGE_TALLY_COLUMNS["pairwise"]) if pairwise is None else pairwise
    every = pd.concat([rubrics[_SPENT], pairwise[_SPENT]])
    every = every[every["prompt_tokens"].notna()]  # rows that asked (or found an answer in the cache)
    cached = every["cached"].astype(bool)

    def tokens(rows: pd.DataFrame) -> int:
        return int(rows["prompt_tokens"].sum() + rows["completion_tokens"].sum())

    compared = pairwise[pairwise["status"] == "judged"]
    return JudgeTally(
        statuses=Counter(rubrics["status"].dropna().tolist()),
        rubrics={str(name): _rubric_tally(group) for name, group in rubrics.groupby("rubric", sort=True)},
        asked_tokens=tokens(every[~cached]),
        asked_usd=float(every.loc[~cached, "cost_usd"].sum()),
        saved_tokens=tokens(every[cached]),
        saved_usd=float(every.loc[cached, "cost_usd"].sum()),
        priced=bool(every["cost_usd"].notna().any()),
        pair_statuses=Counter(pairwise["status"].dropna().tolist()),
        preferred=Counter(compared["preferred"].dropna().tolist()),
        agreeing=int(compared["agree"].astype(bool).sum()),
    )


def _rubric_tally(rows: pd.DataFrame) -> RubricTally:
    judged = rows[rows["status"] == "judged"]
    scores, normalized = judged["score"].dropna().astype(float), judged["normalized"].dropna().astype(float)
    return RubricTally(
        judged=len(judged),
        score_sum=float(scores.sum()),
        scored=len(scores),
        normalized_sum=float(normalized.sum()),
        normalized=len(normalized),
        failed=int((rows["status"] == "failed").sum()),
        skipped=int((rows["status"] == "skipped").sum()),
        cached=int(rows["cached"].fillna(False).astype(bool).sum()),
    )
