"""Deterministic checks over a trajectory: small named scorers, each in its own module.

A module here defines `CHECK`: a `Check` with a name and a function from a trajectory and the
checks' config to the issues it finds. Adding a check is one file; this package finds it. The
issues of an episode add up to a 0-100 score and a letter grade. A check whose issues are also
regression findings is named in `[policies] finding_severity`, with the severity they get.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

from eval_pipeline.config import DEFAULT_FINDING_SEVERITY, ISSUE_PENALTY, ChecksConfig
from eval_pipeline.scoring.trajectory import Trajectory

SEVERITIES = ("critical", "error", "warning")  # counted per episode; "info" issues cost nothing


@dataclass(frozen=True)
class Issue:
    check: str
    severity: str
    detail: str


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Trajectory, ChecksConfig], list[tuple[str, str]]]  # (severity, detail) per issue


@cache
def all_checks() -> tuple[Check, ...]:
    modules = sorted(info.name for info in pkgutil.iter_modules(__path__))
    return tuple(importlib.import_module(f"{__name__}.{name}").CHECK for name in modules)


def run_checks(trajectory: Trajectory, config: ChecksConfig) -> list[Issue]:
    return [Issue(check.name, severity, detail) for check in all_checks() for severity, detail in check.run(trajectory, config)]


def issue_score(issues: list[Issue]) -> float:
    return float(max(0, 100 - sum(ISSUE_PENALTY[issue.severity] for issue in issues)))


def grade(score: float) -> str:
    return next(letter for floor, letter in ((90, "A"), (80, "B"), (70, "C"), (60, "D"), (0, "F")) if score >= floor)


FINDING_CHECKS = frozenset(check.name for check in all_checks() if check.name in DEFAULT_FINDING_SEVERITY)
