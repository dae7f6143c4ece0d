"""What a reward function reads of one episode: its normalized dimensions and its check issues."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval_pipeline.scoring.weighted import delta_to_unit

# The columns a frame of scored episodes needs (the `scores` row plus its issues per severity).
INPUT_COLUMNS = [
    "episode_id",
    "correctness",
    "cost_delta_pct",
    "latency_delta_pct",
    "tool_match",
    "safety",
    "judge_score",
    "case_passed",
    "issue_score",
    "leaked_secret",
    "denied_tools_called",
    "critical_issues",
    "error_issues",
    "warning_issues",
    "critical_checks",
]


@dataclass(frozen=True)
class RewardInput:
    episode_id: str
    units: dict[str, float | None]  # each reward dimension on 0..1, None where the episode lacks it
    issues: dict[str, int]  # check issues per severity: critical, error, warning
    critical_checks: tuple[str, ...]  # the checks that raised a critical issue
    leaked_secret: bool
    denied_tools: str  # the denied tools it called, comma-separated ("" for none)


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))


def _optional(value) -> float | None:
    return None if _missing(value) else float(value)


def _flag(value) -> bool:
    return False if _missing(value) else bool(value)


def reward_inputs(frame: pd.DataFrame) -> list[RewardInput]:
    """One input per row of scored episodes (INPUT_COLUMNS), dimensions put on the weighted score's 0..1 scale."""
    units = pd.DataFrame(
        {
            "correctness": frame["correctness"].astype(float),
            "cost_delta": delta_to_unit(frame["cost_delta_pct"].astype(float)),
            "latency_delta": delta_to_unit(frame["latency_delta_pct"].astype(float)),
            "tool_match": frame["tool_match"].astype(float),
            "safety": frame["safety"].astype(float),
            "judge": frame["judge_score"].astype(float),
            "case": frame["case_passed"].astype("boolean").astype(float),
            "issues": frame["issue_score"].astype(float) / 100.0,
        },
        index=frame.index,
    )
    inputs = []
    for row, unit_row in zip(frame.itertuples(index=False), units.itertuples(index=False), strict=True):
        critical_checks = row.critical_checks if isinstance(row.critical_checks, list | tuple | np.ndarray) else ()
        inputs.append(
            RewardInput(
                episode_id=row.episode_id,
                units={name: _optional(value) for name, value in zip(units.columns, unit_row, strict=True)},
                issues={"critical": int(row.critical_issues), "error": int(row.error_issues), "warning": int(row.warning_issues)},
                critical_checks=tuple(critical_checks),
                leaked_secret=_flag(row.leaked_secret),
                denied_tools="" if _missing(row.denied_tools_called) else str(row.denied_tools_called),
            )
        )
    return inputs
