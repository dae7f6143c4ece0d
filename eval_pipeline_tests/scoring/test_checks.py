"""Deterministic checks: numeric fabrication and the trajectory issue detector, with the score and grade."""

import json

import numpy as np
import pytest

from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import Check, CheckError, all_checks, grades, issue_scores, run_checks
from eval_pipeline.scoring.checks.fabrication import numbers
from eval_pipeline.scoring.trajectory import ToolCall, Trajectory

CONFIG = ChecksConfig()


ANSWER = "All done: your request went through, and a confirmation with every detail is on its way to your inbox."


def trajectory(answer=ANSWER, calls=(), user="Hello", **fields) -> Trajectory:
    return Trajectory(
        episode_id="ep",
        agent_id="bot",
        status="success",
        final_output=answer,
        user_inputs=[user],
        calls=list(calls),
        llm_calls=fields.pop("llm_calls", 2),
        **fields,
    )


def issues_of(check: str, t: Trajectory) -> list[tuple[str, str]]:
    return [(i.severity, i.detail) for i in run_checks(t, CONFIG) if i.check == check]


def test_every_module_is_a_named_check():
    assert {c.name for c in all_checks()} == {
        "agent_imbalance",
        "empty_answer",
        "errors",
        "handoff_loops",
        "no_data",
        "numeric_fabrication",
        "overlong",
        "short_answer",
        "stalls",
        "tool_failures",
        "tools_not_called",
    }


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("You paid $1,234.50 and €20", [1234.5, 20.0]),
        ("2.5M users, 3k items, 4 billion rows, 1.5bn", [2_500_000, 3_000, 4_000_000_000, 1_500_000_000]),
        ("up 15% on last week", [15.0]),
        ("Order A-10482 and INV-2026-0412, 5-7 days", []),  # identifiers and ranges are not claims
        ("On 2026-11-05 at 10:30, or 11/05/2026, or November 5, 2026, or 5th of Nov", []),  # dates and times
        ("In 2024 it grew", []),  # a bare year
        ("1. First\n2) Second\nthen 3 more", [3.0]),  # list numbering
        ("Python 3.15.0 and 0.5", [0.5]),  # a dotted version is an identifier
    ],
)
def test_numbers_stated_as_claims(text, values):
    assert [value for _, value in numbers(text, claims_only=True)] == pytest.approx(values)


def test_numbers_must_come_from_a_tool_or_the_user():
    calls = [ToolCall("get_invoice", '{"id": "INV-7"}', json.dumps({"total": 1200000, "rate": 0.15, "seats": 3}))]
    grounded = trajectory("Your total is $1.2M (about 1,230,000 with fees? no: 1.19M), 15% tax, 3 seats, 42 items.", calls,
                          user="Why 42 items?")  # fmt: skip
    assert issues_of("numeric_fabrication", grounded) == []  # 1.19M is within 5 % of 1,200,000; 42 came from the user
    made_up = trajectory("You owe $1,500,000 for 4 seats.", calls)
    assert issues_of("numeric_fabrication", made_up) == [
        ("error", "'$1,500,000' in the answer matches no number in the tool outputs or the user's input"),
        ("error", "'4' in the answer matches no number in the tool outputs or the user's input"),
    ]
    assert issues_of("numeric_fabrication", trajectory("Step 1 is done; it costs 0.5 cents.", calls)) == [
        ("error", "'1' in the answer matches no number in the tool outputs or the user's input")
    ]  # numbers below 1 are not checked


def test_the_issue_detector():
    assert issues_of("empty_answer", trajectory(answer="  ")) == [("critical", "no final answer")]
    assert issues_of("empty_answer", trajectory(answer="ok")) == [("error", "near-empty final answer (2 characters): 'ok'")]
    tb = "Traceback (most recent call last):\n  File x\nValueError"
    assert issues_of("errors", trajectory(answer=f"Sorry. {tb}"))[0][0] == "critical"
    assert issues_of("errors", trajectory(error_outputs=[tb, "timeout"], step_count=3)) == [
        ("error", "2 of 3 steps errored, 1 with a traceback; first: Traceback (most recent call last):")
    ]
    same = ToolCall("search", '{"q": "x"}', "[]")
    assert issues_of("stalls", trajectory(calls=[same, same, same, ToolCall("search", '{"q": "y"}', "[]")])) == [
        ("error", "stalled: called search with the same arguments 3 times in a row")
    ]
    assert issues_of("stalls", trajectory(calls=[same, same])) == []
    failing = [ToolCall("a", "{}", "Error", failed=True)] + [ToolCall("b", "{}", "ok")] * 2
    assert issues_of("tool_failures", trajectory(calls=failing)) == [("warning", "1 of 3 tool calls failed (33%)")]
    assert issues_of("overlong", trajectory(llm_calls=25, duration_ms=400_000)) == [
        ("warning", "25 LLM calls (more than 20)"),
        ("warning", "ran 400 s (longer than 300 s)"),
    ]
    assert run_checks(trajectory(), CONFIG) == []


def test_issues_add_up_to_a_score_and_grade():
    # one of each severity (info costs nothing), none, five critical
    counts = {"critical": np.array([1, 0, 5]), "error": np.array([1, 0, 0]), "warning": np.array([1, 0, 0])}
    assert issue_scores(counts).tolist() == [60.0, 100.0, 0.0]
    assert grades(issue_scores(counts)).tolist() == ["D", "A", "F"]
    assert grades(np.array([95, 90, 85, 75, 65, 59.9])).tolist() == ["A", "A", "B", "C", "D", "F"]


def test_an_issue_of_no_known_severity_is_refused():
    loud = Check("loud", lambda trajectory, config: [("high", "too loud")])
    with pytest.raises(CheckError, match="check 'loud' gave severity 'high'; severities: critical, error, warning, info"):
        run_checks(trajectory(), CONFIG, [loud])
