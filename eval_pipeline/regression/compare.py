"""Head-to-head comparison of two runs over the same tasks: who wins each task, and is it more than noise?

A side is a selection of runs (days, agent, model, `metadata.label`). Tasks present on both sides
are compared: each task's mean score (weighted score where both sides have one, else the share
of passing trials) decides its winner, shown with each side's trials and passes behind it; paired
bootstrap CIs over tasks give the differences of mean score, pass rate, cost and latency (B against
A), McNemar tests pass/fail flips, and
repeated trials give pass@k, pass^k and flakiness per side. The JSON keeps the section names of
plaited's comparison report: meta, quality, performance, reliability, headToHead.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, ValidationError

from eval_pipeline.config import StatisticsConfig
from eval_pipeline.regression.stats import Interval, bootstrap_mean, mcnemar, seed_for
from eval_pipeline.regression.trials import agent_pass_at_k, task_trials
from eval_pipeline.scoring.dimensions import relative_delta_pct

TIE = 0.005  # task scores closer than this are a tie


class SelectorError(ValueError):
    """A selector the user wrote cannot be read; the message says which part."""


class Selector(BaseModel):
    """`date=D` or `date=D1..D2`, `agent=`, `model=`, `label=`, comma-separated."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    first: date | None = None
    last: date | None = None
    agent: str | None = None
    model: str | None = None
    label: str | None = None

    @classmethod
    def parse(cls, text: str) -> Selector:
        fields: dict[str, Any] = {}
        for part in filter(None, (p.strip() for p in text.split(","))):
            key, sep, value = part.partition("=")
            if not sep or not value:
                raise SelectorError(f"selector part {part!r} is not key=value")
            if ("first" if key == "date" else key) in fields:  # the later value would silently replace the earlier
                raise SelectorError(f"selector {text!r} gives {key} twice; one value each (several days: date=D1..D2)")
            if key == "date":
                first, _, last = value.partition("..")
                fields["first"], fields["last"] = first, last or first
            elif key in ("agent", "model", "label"):
                fields[key] = value
            else:
                raise SelectorError(f"unknown selector key {key!r}; use date, agent, model or label")
        if not fields:
            raise SelectorError("an empty selector selects nothing; e.g. date=2026-11-02,agent=support-bot")
        try:
            return cls(**fields)
        except ValidationError as exc:
            raise SelectorError(f"selector {text!r}: {exc.errors()[0]['msg']}") from None

    def __str__(self) -> str:
        dates = None if self.first is None else str(self.first) if self.first == self.last else f"{self.first}..{self.last}"
        parts = {"date": dates, "agent": self.agent, "model": self.model, "label": self.label}
        return ",".join(f"{key}={value}" for key, value in parts.items() if value)


def _per_task(runs: pd.DataFrame) -> pd.DataFrame:
    """`runs` with their `verdict`, one row per task."""
    verdict_f = runs["verdict"].astype("boolean").to_numpy(dtype=float, na_value=np.nan)
    runs = runs.assign(verdict_f=verdict_f, passed_trial=verdict_f == 1.0, unjudged=np.isnan(verdict_f))
    grouped = runs.groupby("task_id")
    return pd.DataFrame(
        {
            "score": grouped["weighted_score"].mean(),
            "pass_share": grouped["verdict_f"].mean(),
            "cost": grouped["total_cost_usd"].mean(),
            "latency": grouped["total_duration_ms"].mean(),
            "trials": grouped.size(),
            "passes": grouped["passed_trial"].sum(),
            "without_verdict": grouped["unjudged"].sum(),  # no baseline or case yet: neither passed nor failed
        }
    )


def _interval(values: pd.Series, stats: StatisticsConfig, *parts: object) -> dict | None:
    """A paired bootstrap CI of the mean, over at least `min_tasks` tasks (None below: no claim)."""
    values = values.dropna()
    if len(values) < stats.min_tasks:
        return None
    ci: Interval = bootstrap_mean(
        values.to_numpy(), resamples=stats.resamples, confidence=stats.confidence, seed=seed_for(*parts)
    )
    return {"mean": round(ci.mean, 4), "ci_low": round(ci.low, 4), "ci_high": round(ci.high, 4), "tasks": ci.n}


def _side_summary(runs: pd.DataFrame, tasks: pd.DataFrame) -> dict:
    verdicts = runs["verdict"].dropna()
    return {
        "episodes": len(runs),
        "tasks": len(tasks),
        "pass_rate": round(float(verdicts.astype(float).mean()), 4) if len(verdicts) else None,
        "mean_score": round(float(runs["weighted_score"].mean()), 4) if runs["weighted_score"].notna().any() else None,
        "mean_cost_usd": round(float(runs["total_cost_usd"].mean()), 6) if len(runs) else None,
        "mean_latency_ms": round(float(runs["total_duration_ms"].mean()), 1) if len(runs) else None,
    }


def _reliability(runs: pd.DataFrame) -> dict:
    per_task = task_trials(runs.assign(agent_id="side"))
    per_k = agent_pass_at_k(per_task)
    return {
        "pass_at_k": {int(r.k): round(r.pass_at_k, 4) for r in per_k.itertuples()},
        "pass_hat_k": {int(r.k): round(r.pass_hat_k, 4) for r in per_k.itertuples()},
        "flaky_tasks": int((per_task["flakiness"] > 0).sum()),
        "mean_flakiness": round(float(per_task["flakiness"].mean()), 4) if len(per_task) else None,
    }


def compare(a: pd.DataFrame, b: pd.DataFrame, selectors: tuple[Selector, Selector], stats: StatisticsConfig) -> dict:
    """`a`, `b`: runs (task_id, weighted_score, passed: the episode verdict, total_cost_usd, total_duration_ms)."""
    a, b = a.assign(verdict=a["passed"]), b.assign(verdict=b["passed"])
    all_a, all_b = _per_task(a), _per_task(b)
    common = all_a.index.intersection(all_b.index).sort_values()
    ta, tb = all_a.loc[common], all_b.loc[common]
    a, b = a[a["task_id"].isin(common)], b[b["task_id"].isin(common)]
    by_score = ta["score"].notna() & tb["score"].notna()
    score_a = ta["score"].where(by_score, ta["pass_share"])
    score_b = tb["score"].where(by_score, tb["pass_share"])
    diff = score_b - score_a
    winner = {task: None if pd.isna(d) else "tie" if abs(d) < TIE else "b" if d > 0 else "a" for task, d in diff.items()}
    passed_a, passed_b = ta["pass_share"] >= 0.5, tb["pass_share"] >= 0.5
    known = ta["pass_share"].notna() & tb["pass_share"].notna()
    flips = {
        "a_pass_b_fail": int((passed_a & ~passed_b & known).sum()),
        "a_fail_b_pass": int((~passed_a & passed_b & known).sum()),
    }
    key = (str(selectors[0]), str(selectors[1]))
    relative = lambda column: relative_delta_pct(tb[column], ta[column])[0]  # noqa: E731
    comparable = int(diff.notna().sum())
    score_delta = _interval(diff, stats, *key, "score")
    enough = comparable >= stats.min_tasks
    return {
        "meta": {
            "a": str(selectors[0]),
            "b": str(selectors[1]),
            "tasks_in_common": len(common),
            "tasks_only_in_a": len(all_a.index.difference(common)),
            "tasks_only_in_b": len(all_b.index.difference(common)),
            "comparable_tasks": comparable,  # in common, and both sides have a score or a verdict for them
            "min_tasks": stats.min_tasks,
            "confidence": stats.confidence,
            "resamples": stats.resamples,
            "score": "mean weighted score per task where both sides have one, else the share of passing trials",
        },
        "quality": {
            "a": _side_summary(a, ta),
            "b": _side_summary(b, tb),
            "score_delta": score_delta,
            "pass_rate_delta": _interval(tb["pass_share"] - ta["pass_share"], stats, *key, "pass_rate"),
            "mcnemar": {
                **flips,
                "p_value": round(mcnemar(flips["a_pass_b_fail"], flips["a_fail_b_pass"]), 4) if enough else None,
            },
        },
        "performance": {
            "cost_delta_pct": _interval(relative("cost"), stats, *key, "cost"),
            "latency_delta_pct": _interval(relative("latency"), stats, *key, "latency"),
        },
        "reliability": {"a": _reliability(a), "b": _reliability(b)},
        "headToHead": {
            **_verdict(score_delta, comparable, stats.min_tasks),
            "b_wins": sum(w == "b" for w in winner.values()),
            "a_wins": sum(w == "a" for w in winner.values()),
            "ties": sum(w == "tie" for w in winner.values()),
            "tasks": [
                {
                    "task_id": task,
                    "a": _round(score_a[task]),
                    "b": _round(score_b[task]),
                    "winner": winner[task],
                    "a_trials": int(ta["trials"][task]),
                    "a_passed": int(ta["passes"][task]),
                    "a_without_verdict": int(ta["without_verdict"][task]),
                    "b_trials": int(tb["trials"][task]),
                    "b_passed": int(tb["passes"][task]),
                    "b_without_verdict": int(tb["without_verdict"][task]),
                }
                for task in common
            ],
        },
    }


def _verdict(score_delta: dict | None, comparable: int, min_tasks: int) -> dict:
    """The overall winner: the side the score difference's CI favours, and only over enough comparable tasks."""
    if score_delta is None:  # no interval below `min_tasks` comparable tasks
        return {"winner": None, "reason": f"too few comparable tasks ({comparable} < {min_tasks}) to call a winner"}
    if score_delta["ci_low"] > 0 or score_delta["ci_high"] < 0:
        side = "b" if score_delta["ci_low"] > 0 else "a"
        return {"winner": side, "reason": f"the score difference's CI excludes 0 in {side.upper()}'s favour"}
    return {"winner": None, "reason": "no difference beyond the noise: the score difference's CI includes 0"}


def _round(value: float) -> float | None:
    return None if pd.isna(value) else round(float(value), 4)
