"""Finding lifecycle: new, persisting since the first day of an unbroken run, and resolved."""

import json
from datetime import date

import pandas as pd
import pytest

from eval_pipeline.cli import main
from eval_pipeline.regression.lifecycle import resolved, with_lifecycle
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.air import episode

D1, D2, D3 = date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)


def findings(day, *rows, since=None):
    frame = pd.DataFrame(
        [(day, a, t, d, "warning", "m") for a, t, d in rows],
        columns=["partition_date", "agent_id", "task_id", "dimension", "severity", "message"],
    )
    return frame.assign(since=since) if since is not None else frame


def test_a_finding_keeps_the_first_day_of_its_run_and_new_ones_are_new():
    day1 = with_lifecycle(findings(D1, ("bot", "t1", "cost_delta")), findings(D1).iloc[:0], D1)
    assert day1[["since", "lifecycle"]].values.tolist() == [[D1, "new"]]
    day2 = with_lifecycle(
        findings(D2, ("bot", "t1", "cost_delta"), ("bot", "t1", "cost_delta"), ("bot", None, "pass_rate")), day1, D2
    )
    assert day2[["since", "lifecycle"]].values.tolist() == [[D1, "persisting"], [D1, "persisting"], [D2, "new"]]
    day3 = with_lifecycle(findings(D3, ("bot", None, "pass_rate")), day2, D3)
    assert day3[["since", "lifecycle"]].values.tolist() == [[D2, "persisting"]]  # per-agent: the task is empty
    gone = resolved(findings(D3, ("bot", None, "pass_rate")), day2)
    assert gone[["task_id", "dimension", "since"]].values.tolist() == [["t1", "cost_delta", D1]]  # once, not per episode


def test_a_break_of_one_day_starts_a_new_run():
    day1 = with_lifecycle(findings(D1, ("bot", "t1", "tool_match")), findings(D1).iloc[:0], D1)
    quiet = with_lifecycle(findings(D2).iloc[:0], day1, D2)
    assert resolved(quiet, day1)["dimension"].tolist() == ["tool_match"]
    again = with_lifecycle(findings(D3, ("bot", "t1", "tool_match")), quiet, D3)
    assert again[["since", "lifecycle"]].values.tolist() == [[D3, "new"]]


@pytest.mark.slow
def test_a_night_with_a_persisting_and_a_new_regression_records_both(project_env):
    """The user's third night failed with "object of type <class 'datetime.date'> cannot be converted to int": a
    regression found the night before persisted (its first day read back from the warehouse) beside a new one."""
    days = ["2026-11-03", "2026-11-04", "2026-11-05"]
    cost = {  # the cost of each task's run, night by night: refund triples on the 4th, shipping on the 5th
        "triage/refund": [0.002, 0.006, 0.006],
        "triage/shipping": [0.002, 0.002, 0.006],
    }
    episodes = [
        episode(f"ep-{task}-{n}", task, f"On {task}?", "lookup_order", "{}", "Done.", day=day, cost=costs[n])
        for task, costs in cost.items()
        for n, day in enumerate(days)
    ]
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "triage.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))

    for day in days:
        assert main(["run", "--date", day, "--fail-on", "never"]) == 0, day

    with Warehouse(project_env / "eval.duckdb").connect(read_only=True) as con:
        found = con.execute(
            "SELECT DISTINCT task_id, strftime(since, '%Y-%m-%d') FROM findings "
            "WHERE partition_date = DATE '2026-11-05' AND dimension = 'cost_delta' ORDER BY 1"
        ).fetchall()
    assert found == [("triage/refund", "2026-11-04"), ("triage/shipping", "2026-11-05")]
