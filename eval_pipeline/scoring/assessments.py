"""A partition's per-episode assessments: case assertions where a case exists, deterministic checks everywhere.

These need each run's trajectory, so they are per-row Python (DESIGN §5), kept to what needs it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.cases import Case, assert_case, case_for
from eval_pipeline.scoring.checks import AnswerRule, Check, MayFind, all_checks, issues_of, run_checks
from eval_pipeline.scoring.trajectory import Summaries
from eval_pipeline.scoring.trajectory import trajectory as trajectory_of

ASSERTION_COLUMNS = ["episode_id", "agent_id", "assertion", "passed", "score", "detail"]
ISSUE_COLUMNS = ["episode_id", "agent_id", "check", "severity", "detail"]
FRAME_ROWS = 20_000  # rows `assess` holds as dicts before they become a frame (Arrow strings)


@dataclass(frozen=True)
class Assessment:
    assertions: pd.DataFrame  # ASSERTION_COLUMNS: one row per expectation of each episode with a case
    issues: pd.DataFrame  # ISSUE_COLUMNS: one row per issue the checks found


def _grader_assertion(verdict: dict) -> dict:
    if "error" in verdict:
        return {"assertion": "grader", "passed": False, "score": 0.0, "detail": f"grader error: {verdict['error']}"}
    return {"assertion": "grader", "passed": bool(verdict["pass"]), "score": float(verdict["score"]),
            "detail": verdict.get("reasoning") or ""}  # fmt: skip


@dataclass(frozen=True)
class Reading:
    """How `assess` reads each episode of a part: which checks could find an issue in it (bit i: the i-th check run),
    and whether it needs the episode's steps (a case, a grader's verdict, or a check that reads steps)."""

    checks: np.ndarray  # int64 bits; an episode without any, and without steps to read, is not read at all
    steps: np.ndarray  # bool


MAX_SCREENED_CHECKS = 63  # the bits of an int64


class Screen:
    """How `assess` reads a day, part by part, from the parts' summaries (`Check.may_find`; called as
    `check_inputs` reads it): only the checks that could find an issue in an episode run on it, only on the episodes
    some check or a case wants, and with steps only where one reads them. A check of the answer alone
    (`Check.on_answer`) is not run on any episode: its rule is applied once to each distinct answer it could fault,
    and what it finds is gathered here, for `assess` to add."""

    def __init__(self, cases: dict[str, Case], config: ChecksConfig, screens: Sequence[tuple[Check, MayFind]]):
        """`screens`: each check that runs, in order (bit i is the i-th), with its `may_find`."""
        self.cases, self.config, self.screens = cases, config, screens
        self.found = _Rows(ISSUE_COLUMNS)

    def __call__(self, summaries: Summaries) -> Reading:
        with_case = np.array([task in self.cases for task in summaries.task_ids], dtype=bool)
        steps = with_case | summaries.with_expected | summaries.with_grader
        bits = np.zeros(len(summaries), dtype=np.int64)
        for index, (check, may_find) in enumerate(self.screens):
            found = may_find(summaries, self.config)
            if check.on_answer is not None:
                self._answered(check, check.on_answer, summaries, np.flatnonzero(found))
                continue
            bits |= found.astype(np.int64) << index
            steps |= found & check.reads_steps
        return Reading(bits, steps)

    def _answered(self, check: Check, rule: AnswerRule, summaries: Summaries, entries: np.ndarray) -> None:
        """What `rule` finds in the answers of `entries`, asked once per distinct answer: each issue an answer holds is a
        row of every entry that gave it, in entry order, gathered by numpy (the answers of a million episodes found
        half a million issues: gathered entry by entry, the day's screen took 2.71 s, 2.07 s so)."""
        codes, distinct = summaries.answers
        entry_codes = codes[entries]
        asked = np.unique(entry_codes)
        found = [issues_of(check, rule(distinct[code], self.config)) for code in asked.tolist()]
        issues = [issue for answer_issues in found for issue in answer_issues]
        if not issues:
            return
        per_answer = np.array([len(answer_issues) for answer_issues in found], dtype=np.int64)
        answer_of_entry = np.searchsorted(asked, entry_codes)
        counts = per_answer[answer_of_entry]
        row_entry = np.repeat(np.arange(len(entries)), counts)  # each row's entry among `entries`
        nth = np.arange(len(row_entry)) - np.repeat(np.cumsum(counts) - counts, counts)  # its issue's place in the answer's
        row_issue = (np.cumsum(per_answer) - per_answer)[answer_of_entry][row_entry] + nth
        row_entries = entries[row_entry].tolist()
        columns = {
            "episode_id": [summaries.episode_ids[entry] for entry in row_entries],
            "agent_id": [summaries.agent_ids[entry] for entry in row_entries],
            **{
                name: np.array([getattr(issue, name) for issue in issues], dtype=object)[row_issue]
                for name in ("check", "severity", "detail")
            },
        }
        self.found.add_frame(pd.DataFrame(columns, columns=ISSUE_COLUMNS))


def reading(cases: dict[str, Case], config: ChecksConfig, checks: Sequence[Check] | None = None) -> Screen | None:
    """The `Screen` a day is read with, or None (every episode, every check, with steps) when a check cannot tell which
    episodes it could find an issue in, as a plug-in may not."""
    chosen = all_checks() if checks is None else tuple(checks)
    screens = [(check, check.may_find) for check in chosen if check.may_find is not None]
    if len(screens) < len(chosen) or len(chosen) > MAX_SCREENED_CHECKS:
        return None
    return Screen(cases, config, screens)


def assess(
    candidates: Iterable[dict],
    cases: dict[str, Case],
    config: ChecksConfig,
    checks: Sequence[Check] | None = None,
    screen: Screen | None = None,
) -> Assessment:
    """`candidates` as `warehouse.assertions.check_inputs` streams them, each with its steps, one at a time; `checks`:
    those that run (every built-in one by default), on a candidate read by `screen` only those its `check_bits` name;
    the issues `screen` found on the way (pass the one `candidates` were read with) are the assessment's too."""
    chosen = all_checks() if checks is None else tuple(checks)
    assertions, issues = _Rows(ASSERTION_COLUMNS), _Rows(ISSUE_COLUMNS)
    for candidate in candidates:
        bits = candidate.get("check_bits")
        run_here = chosen if bits is None else [check for index, check in enumerate(chosen) if bits >> index & 1]
        trajectory = trajectory_of(candidate)
        ids = {"episode_id": trajectory.episode_id, "agent_id": trajectory.agent_id}
        case = case_for(candidate["expected"], candidate["task_id"], cases)
        if isinstance(case, str):  # the episode's expectations are invalid: a failed assertion, not a crash
            assertions.add([{**ids, "assertion": "case", "passed": False, "score": 0.0, "detail": case}])
        elif case is not None:
            assertions.add({**ids, **vars(result)} for result in assert_case(case, trajectory))
        if candidate.get("grader"):  # an executable grader's verdict on a captured run
            assertions.add([{**ids, **_grader_assertion(json.loads(candidate["grader"]))}])
        issues.add({**ids, **vars(issue)} for issue in run_checks(trajectory, config, run_here))
    if screen is not None:
        issues.absorb(screen.found)
    return Assessment(assertions.frame(), issues.frame())


class _Rows:
    """Rows gathered as dicts and turned into a frame every FRAME_ROWS: a day of a million episodes can find half a
    million issues, which as dicts held about 0.35 GiB until the day's end, and as frames a fraction of it."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.rows: list[dict] = []
        self.frames: list[pd.DataFrame] = []

    def add(self, rows: Iterable[dict]) -> None:
        self.rows.extend(rows)
        if len(self.rows) >= FRAME_ROWS:
            self._to_frame()

    def add_frame(self, frame: pd.DataFrame) -> None:
        """Rows already a frame of these columns, after those added before (an empty one adds nothing: its columns are
        objects, see `frame`)."""
        if len(frame):
            self._flush()
            self.frames.append(frame)

    def absorb(self, other: _Rows) -> None:
        """`other`'s rows after these."""
        self._flush()
        self.frames.extend(other.frames)
        self.add(other.rows)

    def _flush(self) -> None:
        if self.rows:
            self._to_frame()

    def frame(self) -> pd.DataFrame:
        if self.rows or not self.frames:  # an empty frame's columns are objects: concatenated, every column would be
            self._to_frame()
        return pd.concat(self.frames, ignore_index=True) if len(self.frames) > 1 else self.frames[0]

    def _to_frame(self) -> None:
        self.frames.append(pd.DataFrame(self.rows, columns=self.columns))
        self.rows = []
