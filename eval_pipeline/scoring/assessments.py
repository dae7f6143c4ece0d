"""A partition's per-episode assessments: case assertions where a case exists, deterministic checks everywhere.

These need each run's trajectory, so they are per-row Python (DESIGN §5), kept to what needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.cases import Case, assert_case, case_for
from eval_pipeline.scoring.checks import Check, run_checks
from eval_pipeline.scoring.trajectory import trajectory as trajectory_of

ASSERTION_COLUMNS = ["episode_id", "agent_id", "assertion", "passed", "score", "detail"]
ISSUE_COLUMNS = ["episode_id", "agent_id", "check", "severity", "detail"]


@dataclass(frozen=True)
class Assessment:
    assertions: pd.DataFrame  # ASSERTION_COLUMNS: one row per expectation of each episode with a case
    issues: pd.DataFrame  # ISSUE_COLUMNS: one row per issue the checks found


def _grader_assertion(verdict: dict) -> dict:
    if "error" in verdict:
        return {"assertion": "grader", "passed": False, "score": 0.0, "detail": f"grader error: {verdict['error']}"}
    return {"assertion": "grader", "passed": bool(verdict["pass"]), "score": float(verdict["score"]),
            "detail": verdict.get("reasoning") or ""}  # fmt: skip


def assess(
    candidates: Iterable[dict], cases: dict[str, Case], config: ChecksConfig, checks: Sequence[Check] | None = None
) -> Assessment:
    """`candidates` as `warehouse.assertions.check_inputs` streams them, each with its steps, one at a time; `checks`:
    those that run (every built-in one by default)."""
    assertions, issues = [], []
    for candidate in candidates:
        trajectory = trajectory_of(candidate)
        ids = {"episode_id": trajectory.episode_id, "agent_id": trajectory.agent_id}
        case = case_for(candidate["expected"], candidate["task_id"], cases)
        if isinstance(case, str):  # the episode's expectations are invalid: a failed assertion, not a crash
            assertions.append({**ids, "assertion": "case", "passed": False, "score": 0.0, "detail": case})
        elif case is not None:
            assertions += [{**ids, **vars(result)} for result in assert_case(case, trajectory)]
        if candidate.get("grader"):  # an executable grader's verdict on a captured run
            assertions.append({**ids, **_grader_assertion(json.loads(candidate["grader"]))})
        issues += [{**ids, **vars(issue)} for issue in run_checks(trajectory, config, checks)]
    return Assessment(pd.DataFrame(assertions, columns=ASSERTION_COLUMNS), pd.DataFrame(issues, columns=ISSUE_COLUMNS))
