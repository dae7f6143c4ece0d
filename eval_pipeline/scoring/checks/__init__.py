"""Deterministic checks over a trajectory: small named scorers, each in its own module.

A module here defines `CHECK`: a `Check` with a name and a function from a trajectory and the
checks' config to the issues it finds. Adding a check is one file; this package finds it. A
plug-in is a `Check` too, from the user's own package (`eval_pipeline.plugins`), registered
beside the built-in ones under a name of its own; a run may pick some by name. The
issues of an episode add up to a 0-100 score and a letter grade. A check whose issues are also
regression findings is named in `[policies] finding_severity`, with the severity they get.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np

from eval_pipeline.config import DEFAULT_FINDING_SEVERITY, ISSUE_PENALTY, ChecksConfig
from eval_pipeline.errors import UserInputError
from eval_pipeline.scoring.trajectory import Summaries, Trajectory

SEVERITIES = ("critical", "error", "warning")  # counted per episode; "info" issues cost nothing


@dataclass(frozen=True)
class Issue:
    check: str
    severity: str
    detail: str


Found = list[tuple[str, str]]  # (severity, detail) per issue; severity is critical, error, warning or info
MayFind = Callable[[Summaries, ChecksConfig], np.ndarray]
AnswerRule = Callable[[str | None, ChecksConfig], Found]


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Trajectory, ChecksConfig], Found]
    # Of a part of a day's episodes, those the check could find an issue in, from their summaries alone (True for each
    # such episode; others may be True too). Only episodes some check or a case wants are read step by step, which most
    # of a day's episodes are not worth. None: every episode (a plug-in's, unless it says otherwise).
    may_find: MayFind | None = None
    reads_steps: bool = True  # False: `run` reads the final answer only, so an episode only it may fault is read without steps
    # The rule of a check of the final answer alone (`answer_check`): a night applies it to each distinct answer of the
    # episodes `may_find` names, from their summaries, and reads none of those episodes for it.
    on_answer: AnswerRule | None = None


def answer_check(name: str, rule: AnswerRule, may_find: MayFind) -> Check:
    """A check whose issues follow from the final answer alone: `run` is `rule` on the trajectory's answer."""
    return Check(name, lambda trajectory, config: rule(trajectory.final_output, config), may_find, False, rule)


@cache
def all_checks() -> tuple[Check, ...]:
    modules = sorted(info.name for info in pkgutil.iter_modules(__path__))
    return tuple(importlib.import_module(f"{__name__}.{name}").CHECK for name in modules)


class CheckError(UserInputError):
    """The checks asked for cannot run: a name no check has (the message lists those that exist), one name
    taken twice, or an issue of a severity there is no such thing as."""


def registry(plugins: Iterable[Check] = ()) -> dict[str, Check]:
    """The built-in checks and `plugins`, by name; a name is taken once."""
    checks: dict[str, Check] = {}
    for check in (*all_checks(), *plugins):
        if check.name in checks:
            raise CheckError(f"two checks are named {check.name!r}: give the plug-in a name of its own")
        checks[check.name] = check
    return checks


def select(checks: dict[str, Check], names: Sequence[str] | None) -> tuple[Check, ...]:
    """The checks `names` picks (every one without names), in the order given."""
    if names is None:
        return tuple(checks.values())
    unknown = [name for name in names if name not in checks]
    if unknown:
        raise CheckError(f"unknown check(s) {unknown}; known: {', '.join(sorted(checks))}")
    return tuple(checks[name] for name in dict.fromkeys(names))


def run_checks(trajectory: Trajectory, config: ChecksConfig, checks: Iterable[Check] | None = None) -> list[Issue]:
    """The issues `checks` (every built-in one by default) find in the trajectory."""
    chosen = all_checks() if checks is None else checks
    return [issue for check in chosen for issue in issues_of(check, check.run(trajectory, config))]


def issues_of(check: Check, found: Found) -> list[Issue]:
    """What `check` found, as issues; a severity there is no such thing as (a plug-in's) is refused: no count or penalty
    would see it."""
    issues = [Issue(check.name, severity, detail) for severity, detail in found]
    for issue in issues:
        if issue.severity not in ISSUE_PENALTY:
            raise CheckError(f"check {issue.check!r} gave severity {issue.severity!r}; severities: {', '.join(ISSUE_PENALTY)}")
    return issues


def issue_scores(counts: Mapping[str, np.ndarray]) -> np.ndarray:
    """Each episode's issue score: 100 less the penalty of each of its issues (`ISSUE_PENALTY`), not below 0; `counts`:
    its issues of each severity of SEVERITIES."""
    penalty = sum(ISSUE_PENALTY[severity] * counts[severity] for severity in SEVERITIES)
    return np.clip(100.0 - penalty, 0.0, None)


GRADES = (("A", 90), ("B", 80), ("C", 70), ("D", 60))  # each letter from its floor; below the last, F


def grades(scores: np.ndarray) -> np.ndarray:
    """Each issue score's letter grade."""
    return np.select([scores >= floor for _, floor in GRADES], [letter for letter, _ in GRADES], default="F")


FINDING_CHECKS = frozenset(check.name for check in all_checks() if check.name in DEFAULT_FINDING_SEVERITY)
