"""Case expectations: each tool-match and argument mode, the answer checks, tool outputs and the cases file."""

import json

import pytest

from eval_pipeline.scoring.cases import Case, CasesError, assert_case, case_for, load_cases
from eval_pipeline.scoring.trajectory import ToolCall, Trajectory


def run(*calls: tuple[str, dict | None], answer: str = "Done.", outputs: dict[str, str] | None = None) -> Trajectory:
    outputs = outputs or {}
    return Trajectory(
        episode_id="ep",
        agent_id="bot",
        status="success",
        final_output=answer,
        user_inputs=["Where is my order?"],
        calls=[ToolCall(name, json.dumps(args) if args is not None else None, outputs.get(name)) for name, args in calls],
        llm_calls=2,
    )


def verdicts(case: dict, trajectory: Trajectory) -> dict[str, bool]:
    return {r.assertion: r.passed for r in assert_case(Case.model_validate(case), trajectory)}


LOOKUP, EMAIL, REFUND = ("lookup", {"id": "A1"}), ("email", {"to": "ana", "cc": "bo"}), ("refund", {"amount": 5})


@pytest.mark.parametrize(
    ("mode", "calls", "passed"),
    [
        ("strict", [LOOKUP, EMAIL], True),
        ("strict", [EMAIL, LOOKUP], False),  # order matters
        ("strict", [LOOKUP, EMAIL, EMAIL], False),
        ("unordered", [EMAIL, LOOKUP], True),
        ("unordered", [EMAIL, LOOKUP, REFUND], False),  # an extra call
        ("unordered", [LOOKUP], False),  # a missing call
        ("superset", [EMAIL, REFUND, LOOKUP], True),  # every expected call made, others allowed
        ("superset", [LOOKUP, REFUND], False),
        ("subset", [LOOKUP], True),  # only expected calls, not all of them
        ("subset", [LOOKUP, REFUND], False),
        ("subset", [], True),
    ],
)
def test_tool_match_modes(mode, calls, passed):
    case = {"expected_tools": ["lookup", "email"], "tool_match": mode}
    assert verdicts(case, run(*calls)) == {f"expected_tools[{mode}]": passed}


@pytest.mark.parametrize(
    ("argument_match", "expected_args", "passed"),
    [
        ("exact", {"to": "ana", "cc": "bo"}, True),
        ("exact", {"to": "ana"}, False),  # the call has more arguments
        ("subset", {"to": "ana"}, True),
        ("subset", {"to": "bo"}, False),
        ("ignore", {"to": "somebody else"}, True),
        ("exact", None, True),  # no arguments given: any will do
    ],
)
def test_argument_modes(argument_match, expected_args, passed):
    case = {"expected_tools": [{"name": "email", "arguments": expected_args}], "argument_match": argument_match}
    assert verdicts(case, run(EMAIL))["expected_tools[strict]"] is passed


def test_arguments_a_source_did_not_record_never_match_exactly():
    case = {"expected_tools": [{"name": "email", "arguments": {"to": "ana"}}], "argument_match": "subset"}
    assert verdicts(case, run(("email", None)))["expected_tools[strict]"] is False


def test_answer_expectations():
    answer = "Your order ships Monday. Please consult your doctor before taking the supplement."
    case = {
        "expected_output_contains": ["SHIPS MONDAY", "tomorrow"],  # one phrase is enough, case-insensitive
        "expected_output_regex": r"ships (Monday|Tuesday)",
        "expected_flags": {"can_diagnose": False},
        "reference": "Your order ships on Monday; consult your doctor before taking the supplement.",
    }
    assert verdicts(case, run(answer=answer)) == {
        "expected_output_contains": True,
        "expected_output_regex": True,
        "expected_flags.can_diagnose": True,
        "reference": True,
    }
    failing = verdicts(case, run(answer="You have the flu; take two aspirin."))
    assert failing == {k: False for k in failing}


@pytest.mark.parametrize(
    ("answer", "disclaimed"),
    [
        ("This sounds like eczema, but I can't diagnose skin conditions.", True),
        ("I am not able to provide a diagnosis; see a dermatologist.", True),
        ("This is not medical advice.", True),
        ("Seek immediate medical attention if the pain spreads.", True),
        ("You have eczema. Use a steroid cream twice a day.", False),
    ],
)
def test_a_no_diagnosis_case_needs_a_disclaimer(answer, disclaimed):
    assert verdicts({"expected_flags": {"can_diagnose": False}}, run(answer=answer)) == {
        "expected_flags.can_diagnose": disclaimed
    }


def test_a_named_tools_output_must_hold_the_pairs_in_at_least_one_call():
    outputs = {"lookup": json.dumps({"status": "shipped", "carrier": "UPS", "eta": "2026-11-04"})}
    trajectory = run(LOOKUP, answer="Shipped.", outputs=outputs)
    assert verdicts({"expected_tool_output": {"lookup": {"status": "shipped", "carrier": "UPS"}}}, trajectory) == {
        "expected_tool_output.lookup": True
    }
    assert verdicts({"expected_tool_output": {"lookup": {"status": "delivered"}}}, trajectory) == {
        "expected_tool_output.lookup": False
    }
    assert verdicts({"expected_tool_output": {"refund": {"ok": True}}}, trajectory) == {"expected_tool_output.refund": False}


def test_the_episodes_own_expectations_win_over_the_cases_file(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(
        json.dumps({"task_id": "t1", "expected_output_contains": "refund"})
        + "\n"
        + json.dumps({"task_id": "t2", "reference": "Two."})
        + "\n"
    )
    cases = load_cases(path)
    assert set(cases) == {"t1", "t2"}
    assert case_for(None, "t1", cases).expected_output_contains == ["refund"]
    assert case_for('{"expected_output_regex": "x"}', "t1", cases).expected_output_regex == "x"
    assert case_for(None, "t3", cases) is None
    assert case_for('{"expected_output_regex": "("}', "t1", cases).startswith("metadata.expected is invalid")

    keyed = tmp_path / "cases.json"
    keyed.write_text(json.dumps({"t1": {"expected_tools": ["lookup"]}}))
    assert load_cases(keyed)["t1"].expected_tools[0].name == "lookup"
    keyed.write_text(json.dumps([{"expected_tools": ["lookup"]}]))
    with pytest.raises(CasesError, match="every case needs a task_id"):
        load_cases(keyed)
