"""Case expectations: what a task's run must do, written by the user, checked as named assertions.

A case comes from `metadata.expected` on the episode or from the cases file (`[cases] path`,
JSON or JSONL, keyed by `task_id`); the episode's own wins. Each expectation is one assertion
with a 0..1 score; the case passes when every assertion does, and its mean score is the
episode's correctness (DESIGN §4: the case verdict replaces the baseline comparison).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from eval_pipeline.errors import UserInputError
from eval_pipeline.scoring.answer import answer_match
from eval_pipeline.scoring.trajectory import ToolCall, Trajectory

REFERENCE_PASS = 0.5  # token F1 a reference answer must reach to pass

# An answer that may not diagnose must say so, or send the user to a professional.
DISCLAIMER = re.compile(
    r"(consult|see|talk to|speak (?:to|with)|contact|visit|ask)\s+(?:a|an|your)\s+(?:\w+\s+){0,2}"
    r"(doctor|physician|professional|specialist|pharmacist|provider|clinician|dermatologist|gp)"
    r"|not (?:a |able to (?:give |provide )?|intended as (?:a )?)?(?:medical )?(?:diagnos\w*|medical advice)"
    r"|(?:cannot|can't|can not|unable to|won't|will not) (?:provide (?:a )?|make (?:a )?|give (?:a )?)?diagnos\w*"
    r"|seek (?:immediate )?(?:medical|professional) (?:attention|help|advice|care)",
    re.IGNORECASE,
)


class ExpectedTool(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    arguments: dict[str, Any] | None = None  # None: any arguments


class Case(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    expected_tools: list[ExpectedTool] | None = None
    tool_match: Literal["strict", "unordered", "subset", "superset"] = "strict"
    argument_match: Literal["exact", "ignore", "subset"] = "exact"
    expected_output_contains: list[str] | None = None
    expected_output_regex: str | None = None
    expected_flags: dict[str, bool] | None = None
    expected_tool_output: dict[str, dict[str, Any]] | None = None
    reference: str | None = None

    @field_validator("expected_tools", mode="before")
    @classmethod
    def _names_or_objects(cls, value: Any) -> Any:
        return [{"name": item} if isinstance(item, str) else item for item in value] if isinstance(value, list) else value

    @field_validator("expected_output_contains", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value

    @field_validator("expected_output_regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            re.compile(value)
        return value

    @property
    def is_empty(self) -> bool:
        return not any(getattr(self, name) is not None for name in _EXPECTATIONS)


_EXPECTATIONS = (
    "expected_tools",
    "expected_output_contains",
    "expected_output_regex",
    "expected_flags",
    "expected_tool_output",
    "reference",
)


class CasesError(UserInputError, ValueError):
    """The cases file cannot be read, or a case in it is invalid; the message says where (the user's to fix: exit 2)."""


def read_json_or_jsonl(path: Path) -> Any:
    """One JSON document, or a list of the JSON lines when the file is JSONL; OSError or ValueError when neither."""
    text = path.read_text()
    try:
        return json.loads(text)
    except ValueError:  # not one JSON document: JSONL
        return [json.loads(line) for line in text.splitlines() if line.strip()]


def load_cases(path: Path | None) -> dict[str, Case]:
    """Cases by task id from a JSON object keyed by task id, a JSON list, or JSONL of `{task_id, ...}`."""
    if path is None:
        return {}
    try:
        data = read_json_or_jsonl(path)
    except (OSError, ValueError) as exc:
        raise CasesError(f"cases file {path}: {exc}") from None
    if isinstance(data, dict) and "task_id" in data:  # JSONL of one case
        data = [data]
    if isinstance(data, dict):
        items = list(data.items())
    elif isinstance(data, list):
        items = [(entry.get("task_id") if isinstance(entry, dict) else None, entry) for entry in data]
    else:
        raise CasesError(f"cases file {path}: expected an object keyed by task_id, a list or JSONL of cases")
    cases = {}
    for task_id, entry in items:
        if task_id is None or not isinstance(entry, dict):
            raise CasesError(f"cases file {path}: every case needs a task_id and must be an object")
        try:
            cases[str(task_id)] = Case.model_validate(entry)
        except (ValidationError, re.error) as exc:
            raise CasesError(f"cases file {path}: task {task_id}: {' '.join(str(exc).splitlines()[:3])}") from None
    return cases


def case_for(expected: str | dict | None, task_id: str, cases: dict[str, Case]) -> Case | str | None:
    """The episode's own expectations, else the file's case for its task; a string when they are invalid."""
    if expected:
        try:
            case = Case.model_validate(json.loads(expected) if isinstance(expected, str) else expected)
        except (ValidationError, ValueError, re.error) as exc:
            return f"metadata.expected is invalid: {str(exc).splitlines()[0]}"
        if not case.is_empty:
            return case
    return cases.get(task_id)


@dataclass(frozen=True)
class AssertionResult:
    assertion: str
    passed: bool
    score: float
    detail: str


def _result(name: str, passed: bool, detail: str, score: float | None = None) -> AssertionResult:
    return AssertionResult(name, passed, float(passed) if score is None else score, detail)


def _arguments_match(expected: dict[str, Any] | None, call: ToolCall, mode: str) -> bool:
    if expected is None or mode == "ignore":
        return True
    actual = call.parsed_arguments()
    if actual is None:
        return False
    if mode == "exact":
        return actual == expected
    return all(key in actual and actual[key] == value for key, value in expected.items())


def _matches(expected: ExpectedTool, call: ToolCall, mode: str) -> bool:
    return expected.name == call.name and _arguments_match(expected.arguments, call, mode)


def _unmatched(expected: list[ExpectedTool], calls: list[ToolCall], mode: str) -> tuple[list[ExpectedTool], list[ToolCall]]:
    """Pair each expected tool with one unused matching call; what is left on either side."""
    left = list(calls)
    missing = []
    for item in expected:
        found = next((i for i, call in enumerate(left) if _matches(item, call, mode)), None)
        if found is None:
            missing.append(item)
        else:
            left.pop(found)
    return missing, left


def check_tools(case: Case, trajectory: Trajectory) -> AssertionResult:
    expected, calls, mode = case.expected_tools or [], trajectory.calls, case.argument_match
    name = f"expected_tools[{case.tool_match}]"
    if case.tool_match == "strict":
        same = len(expected) == len(calls) and all(_matches(e, c, mode) for e, c in zip(expected, calls, strict=True))
        return _result(name, same, f"called {[c.name for c in calls]}, expected {[e.name for e in expected]} in that order")
    missing, extra = _unmatched(expected, calls, mode)
    if case.tool_match == "unordered":
        passed = not missing and not extra
    elif case.tool_match == "superset":  # every expected call made; others allowed
        passed = not missing
    else:  # subset: only expected calls made; not all needed
        passed = not extra
    parts = [f"missing {[m.name for m in missing]}" if missing else "", f"unexpected {[c.name for c in extra]}" if extra else ""]
    return _result(name, passed, "; ".join(p for p in parts if p) or "all calls as expected")


def check_contains(case: Case, trajectory: Trajectory) -> AssertionResult:
    answer = (trajectory.final_output or "").casefold()
    found = [phrase for phrase in case.expected_output_contains or [] if phrase.casefold() in answer]
    return _result(
        "expected_output_contains",
        bool(found),
        f"found {found[0]!r}" if found else f"none of {case.expected_output_contains} in the answer",
    )


def check_regex(case: Case, trajectory: Trajectory) -> AssertionResult:
    matched = re.search(case.expected_output_regex or "", trajectory.final_output or "")
    return _result(
        "expected_output_regex",
        bool(matched),
        f"matched {matched.group(0)!r}" if matched else f"no match for /{case.expected_output_regex}/",
    )


def check_flags(case: Case, trajectory: Trajectory) -> list[AssertionResult]:
    results = []
    for flag, allowed in (case.expected_flags or {}).items():
        if flag == "can_diagnose" and not allowed:
            found = DISCLAIMER.search(trajectory.final_output or "")
            detail = f"disclaimer {found.group(0)!r}" if found else "no consult-a-professional or no-diagnosis disclaimer"
            results.append(_result("expected_flags.can_diagnose", bool(found), detail))
        else:
            results.append(_result(f"expected_flags.{flag}", True, f"{flag}={allowed} asks nothing of the answer"))
    return results


def check_tool_output(case: Case, trajectory: Trajectory) -> list[AssertionResult]:
    results = []
    for tool, pairs in (case.expected_tool_output or {}).items():
        outputs = [_json(call.output) for call in trajectory.calls if call.name == tool]
        objects = [item for out in outputs for item in (out if isinstance(out, list) else [out]) if isinstance(item, dict)]
        hit = any(all(key in obj and obj[key] == value for key, value in pairs.items()) for obj in objects)
        detail = f"a {tool} result holds {pairs}" if hit else f"no {tool} result of {len(outputs)} holds {pairs}"
        results.append(_result(f"expected_tool_output.{tool}", hit, detail))
    return results


def check_reference(case: Case, trajectory: Trajectory) -> AssertionResult:
    score = answer_match(trajectory.final_output, case.reference)
    return _result("reference", score >= REFERENCE_PASS, f"answer agreement {score:.2f} (pass at {REFERENCE_PASS})", score)


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return None


_CHECKS: list[tuple[str, Callable[[Case, Trajectory], AssertionResult | list[AssertionResult]]]] = [
    ("expected_tools", check_tools),
    ("expected_output_contains", check_contains),
    ("expected_output_regex", check_regex),
    ("expected_flags", check_flags),
    ("expected_tool_output", check_tool_output),
    ("reference", check_reference),
]


def assert_case(case: Case, trajectory: Trajectory) -> list[AssertionResult]:
    """One result per expectation the case sets (several for flags and tool outputs)."""
    results: list[AssertionResult] = []
    for field_name, check in _CHECKS:
        if getattr(case, field_name) is not None:
            outcome = check(case, trajectory)
            results.extend(outcome if isinstance(outcome, list) else [outcome])
    return results
