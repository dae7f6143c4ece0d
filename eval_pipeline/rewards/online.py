"""Rewards of runs that never went through the warehouse: canonical episodes or prompt/completion pairs.

The same deterministic scorers as the pipeline run on them (safety, case assertions, the checks),
through the same functions (`scoring.episodes.score_episodes`, `scoring.assessments.assess`). There
is no baseline here, so correctness (unless a case decides it), the cost and latency deltas and tool
match are absent, and a weighted reward renormalizes its weights over the dimensions present.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from statistics import fmean
from typing import Any

import pandas as pd

from eval_pipeline.config import EvalConfig
from eval_pipeline.episodes.model import Episode, Step, StepType
from eval_pipeline.regression.findings import with_verdicts
from eval_pipeline.rewards.functions import Reward, RewardBook
from eval_pipeline.rewards.inputs import reward_inputs
from eval_pipeline.scoring.assessments import assess
from eval_pipeline.scoring.cases import Case
from eval_pipeline.scoring.checks import SEVERITIES, all_checks
from eval_pipeline.scoring.episodes import score_episodes

PAIR_AGENT = "prompt-completion"  # the agent of a prompt/completion pair
ONLINE_SCORERS = ("safety", "case_assertions", *(check.name for check in all_checks()))
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


def message_text(message: Any) -> str:
    """A chat message's text: plain strings as they are; `content` as a string or a list of text parts."""
    if isinstance(message, str):
        return message
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content or ""


def conversation_text(value: str | list, role: str | None = None) -> str:
    """A prompt or completion as TRL passes it (a string, or conversational: a list of messages), as text;
    with `role`, only that role's messages."""
    if isinstance(value, str):
        return value
    return "\n".join(message_text(m) for m in value if role is None or not isinstance(m, dict) or m.get("role") == role)


def pair_episode(prompt: str | list, completion: str | list, expected: dict | None = None) -> Episode:
    """A single-turn run: one LLM call from the prompt's text to the completion's (assistant) text."""
    step = Step(
        step_index=0,
        step_type=StepType.LLM_CALL,
        input_summary=conversation_text(prompt),
        output_summary=conversation_text(completion, role="assistant"),
    )
    return Episode(
        episode_id="pair",
        agent_id=PAIR_AGENT,
        status="success",
        steps=[step],
        started_at=_EPOCH,
        metadata={"expected": expected} if expected else {},
    )


_CANDIDATE_COLUMNS = ("episode_id", "agent_id", "task_id", "status", "final_output", "tools", "total_duration_ms",
                      "total_cost_usd", "mode", "step_count", "error_steps")  # fmt: skip
_BASELINE_COLUMNS = ("baseline_episode_id", "baseline_status", "baseline_final_output", "baseline_tools",
                     "baseline_total_cost_usd", "baseline_total_duration_ms", "baseline_step_count",
                     "baseline_error_steps")  # fmt: skip


def _step(step: Step) -> dict:
    """A step as `episode_steps` stores it (`ingest.py` maps the same fields)."""
    return {"step_type": step.step_type.value, "tool_name": step.tool_name, "input": step.input_summary,
            "output": step.output_summary, "error": step.error, "agent": step.metadata.get("agent")}  # fmt: skip


def _candidate(position: int, episode: Episode) -> dict:
    """The episode as the pipeline's scorers read a candidate, keyed by its position in the batch (ids may repeat)."""
    steps = episode.ordered_steps()
    return {
        "episode_id": str(position),
        "agent_id": episode.agent_id,
        "task_id": episode.task_id,
        "status": episode.status.value,
        "final_output": episode.final_output,
        "tools": episode.tools,
        "total_duration_ms": episode.total_duration_ms,
        "total_cost_usd": episode.total_cost_usd,
        "mode": "dry",
        "expected": episode.metadata.get("expected"),
        "available_tools": episode.available_tools,
        "grader": json.dumps(episode.metadata["grader"]) if episode.metadata.get("grader") else None,
        "steps": [_step(s) for s in steps],
        "step_count": len(steps),
        "error_steps": sum(s.is_error for s in steps),
    }


def scored_frame(episodes: list[Episode], config: EvalConfig, cases: dict[str, Case]) -> pd.DataFrame:
    """The batch scored as the pipeline scores a day, without baselines or a judge: one row per episode, in order,
    with its verdict."""
    candidates = [_candidate(position, episode) for position, episode in enumerate(episodes)]
    assessment = assess(candidates, cases, config.checks)
    ids = [candidate["episode_id"] for candidate in candidates]
    assertions: dict[str, list[dict]] = defaultdict(list)
    for row in assessment.assertions.to_dict("records"):  # a batch is small: plain Python beats groupby here
        assertions[row["episode_id"]].append(row)
    issues: dict[str, list[dict]] = defaultdict(list)
    for row in assessment.issues.to_dict("records"):
        issues[row["episode_id"]].append(row)
    columns = {
        **{name: [c[name] for c in candidates] for name in _CANDIDATE_COLUMNS},
        "case_score": [fmean(float(a["score"]) for a in assertions[i]) if assertions[i] else None for i in ids],
        "case_passed": pd.array([all(a["passed"] for a in assertions[i]) if assertions[i] else None for i in ids], "boolean"),
        "failed_assertions": ["; ".join(_failed(assertions[i])) for i in ids],
        "recorded_reward": [_reward(episode.metadata.get("reward")) for episode in episodes],
        **{
            f"{severity}_issues": [sum(issue["severity"] == severity for issue in issues[i]) for i in ids]
            for severity in SEVERITIES
        },
        "critical_checks": [sorted({issue["check"] for issue in issues[i] if issue["severity"] == "critical"}) for i in ids],
        "judge_score": float("nan"),
        **dict.fromkeys(_BASELINE_COLUMNS),
    }
    return with_verdicts(score_episodes(pd.DataFrame(columns), config), assessment.issues, config)


def _failed(assertions: list[dict]) -> list[str]:
    return [f"{a['assertion']}: {a['detail']}" for a in assertions if not a["passed"]]


def _reward(value: Any) -> float:
    """`metadata.reward` as the warehouse reads it (TRY_CAST to DOUBLE): NaN where it is not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")


def online_rewards(episodes: list[Episode], name: str, config: EvalConfig, cases: dict[str, Case]) -> list[Reward]:
    """The named reward of each episode, in order."""
    rewards = RewardBook(config.rewards).evaluate_batch([name], reward_inputs(scored_frame(episodes, config, cases)))[name]
    return [rewards[i] for i in range(len(rewards))]
