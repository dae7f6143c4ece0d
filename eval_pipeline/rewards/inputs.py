"""What reward functions read of a batch of episodes, column by column: normalized dimensions and check issues."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval_pipeline.config import reward_dimensions
from eval_pipeline.scoring.checks import SEVERITIES
from eval_pipeline.scoring.dimensions import dimensions


@dataclass(frozen=True)
class RewardInput:
    """One episode, as a person writes it down (tests, examples); `RewardInputs.of` makes a batch of them."""

    episode_id: str
    units: dict[str, float | None]  # each reward dimension on 0..1, None where the episode lacks it
    issues: dict[str, int]  # check issues per severity: critical, error, warning
    critical_checks: tuple[str, ...]  # the checks that raised a critical issue
    critical_findings: tuple[str, ...]  # the dimensions of its critical findings (they fail its verdict)
    leaked_secret: bool
    denied_tools: str  # the denied tools it called, comma-separated ("" for none)


@dataclass(frozen=True)
class RewardInputs:
    """A batch of episodes, column by column, so a reward is computed for a whole partition at once."""

    episode_ids: list[str]
    units: dict[str, np.ndarray]  # float per dimension, NaN where the episode lacks it
    issues: dict[str, np.ndarray]  # int per severity
    critical_checks: list[tuple[str, ...]]
    critical_findings: list[tuple[str, ...]]
    leaked_secret: np.ndarray  # bool
    denied_tools: list[str]

    def __len__(self) -> int:
        return len(self.episode_ids)

    @classmethod
    def of(cls, episodes: list[RewardInput]) -> RewardInputs:
        return cls(
            episode_ids=[e.episode_id for e in episodes],
            units={
                d: np.array([np.nan if e.units.get(d) is None else e.units[d] for e in episodes], float)
                for d in reward_dimensions()
            },
            issues={s: np.array([e.issues[s] for e in episodes], int) for s in SEVERITIES},
            critical_checks=[tuple(e.critical_checks) for e in episodes],
            critical_findings=[tuple(e.critical_findings) for e in episodes],
            leaked_secret=np.array([e.leaked_secret for e in episodes], bool),
            denied_tools=[e.denied_tools for e in episodes],
        )


def scores_read() -> list[str]:
    """The `scores` columns `reward_inputs` reads (each registered dimension's among them), and the `agent_id` each
    reward row keeps: what the rewards step hands it."""
    verdicts = ["case_passed", "issue_score", "critical_findings", "leaked_secret", "denied_tools_called"]
    return list(dict.fromkeys(["episode_id", "agent_id", *(d.column for d in dimensions()), *verdicts]))


def reward_inputs(frame: pd.DataFrame) -> RewardInputs:
    """The scored episodes of `frame`, dimensions put on the weighted score's 0..1 scale.

    `frame` holds the `scores` columns (`episode_id`, every registered dimension's column, `case_passed,
    issue_score, critical_findings, leaked_secret, denied_tools_called`) and
    the episode's check issues (`critical_issues, error_issues, warning_issues`, and `critical_checks`:
    the checks that raised a critical one), as the warehouse reads them or `online` scores them.
    """

    def floats(column: str) -> np.ndarray:
        return pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float, na_value=np.nan)

    units = {
        **{d.name: d.unit(pd.Series(floats(d.column))).to_numpy(dtype=float, na_value=np.nan) for d in dimensions()},
        "case": frame["case_passed"].astype("boolean").to_numpy(dtype=float, na_value=np.nan),
        "issues": floats("issue_score") / 100.0,
    }
    denied = frame["denied_tools_called"].astype(object)
    return RewardInputs(
        episode_ids=frame["episode_id"].astype(str).tolist(),
        units=units,
        issues={s: frame[f"{s}_issues"].fillna(0).astype(int).to_numpy() for s in SEVERITIES},
        critical_checks=_tuples(frame["critical_checks"]),
        critical_findings=_tuples(frame["critical_findings"]),
        leaked_secret=frame["leaked_secret"].astype("boolean").fillna(False).to_numpy(dtype=bool),
        denied_tools=["" if pd.isna(d) else str(d) for d in denied],
    )


def _tuples(lists: pd.Series) -> list[tuple[str, ...]]:
    """Each list as a tuple (missing: empty); most are empty, and an empty one is not copied."""
    return [tuple(c) if isinstance(c, list | tuple | np.ndarray) and len(c) else () for c in lists]
