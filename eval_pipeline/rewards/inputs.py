"""What a reward function reads of one episode: its normalized dimensions and its check issues."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval_pipeline.scoring.weighted import delta_to_unit


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


def _flag(value) -> bool:
    return False if _missing(value) else bool(value)


def reward_inputs(frame: pd.DataFrame) -> list[RewardInput]:
    """One input per row of scored episodes, dimensions put on the weighted score's 0..1 scale.

    `frame` holds the `scores` columns (`episode_id, correctness, cost_delta_pct, latency_delta_pct,
    tool_match, safety, judge_score, case_passed, issue_score, leaked_secret, denied_tools_called`) and
    the episode's check issues (`critical_issues, error_issues, warning_issues`, and `critical_checks`:
    the checks that raised a critical one), as the warehouse reads them or `online` scores them.
    """

    def floats(column: str) -> np.ndarray:
        return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    units = {
        "correctness": floats("correctness"),
        "cost_delta": delta_to_unit(pd.Series(floats("cost_delta_pct"))).to_numpy(),
        "latency_delta": delta_to_unit(pd.Series(floats("latency_delta_pct"))).to_numpy(),
        "tool_match": floats("tool_match"),
        "safety": floats("safety"),
        "judge": floats("judge_score"),
        "case": frame["case_passed"].astype("boolean").to_numpy(dtype=float, na_value=np.nan),
        "issues": floats("issue_score") / 100.0,
    }
    names = list(units)
    unit_rows = [[None if v != v else v for v in row] for row in np.column_stack(list(units.values())).tolist()]  # NaN: None
    issue_rows = frame[["critical_issues", "error_issues", "warning_issues"]].fillna(0).astype(int).to_numpy().tolist()
    inputs = []
    for episode_id, unit_row, (critical, error, warning), checks, leaked, denied in zip(
        frame["episode_id"], unit_rows, issue_rows, frame["critical_checks"], frame["leaked_secret"],
        frame["denied_tools_called"], strict=True,
    ):  # fmt: skip
        inputs.append(
            RewardInput(
                episode_id=episode_id,
                units=dict(zip(names, unit_row, strict=True)),
                issues={"critical": critical, "error": error, "warning": warning},
                critical_checks=tuple(checks) if isinstance(checks, list | tuple | np.ndarray) else (),
                leaked_secret=_flag(leaked),
                denied_tools="" if _missing(denied) else str(denied),
            )
        )
    return inputs
