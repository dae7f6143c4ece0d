from datetime import date

from eval_pipeline.warehouse.cases import case_results
from eval_pipeline.warehouse.connection import Warehouse

DAY = date(2026, 11, 5)


def records(frame) -> list[dict]:
    """The rows without their day, NULL as None."""
    return frame.drop(columns="partition_date").astype(object).where(frame.notna(), None).to_dict("records")


def test_a_case_passes_when_every_trial_does_and_says_what_failed_first(tmp_path):
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    trials = [  # agent, case, category, trial, passed, verdict reason, failed assertion
        ("bot", "flaky", "billing", 0, True, None, None),
        ("bot", "flaky", "billing", 1, False, "critical case", ("expected_output_contains", "none of ['refund']")),
        ("bot", "flaky", "billing", 2, False, "critical case", ("expected_tools[superset]", "missing ['lookup']")),
        ("bot", "steady", "billing", 0, True, None, None),
        ("bot", "slow", "auth", 0, False, "critical latency_delta_pct", None),
        ("bot", "unjudged", None, 0, None, None, None),
        ("other-bot", "steady", "billing", 0, False, "critical case", None),  # another agent's run of the case
        ("bot", "not-in-the-set", "billing", 0, False, "critical case", None),
    ]
    with warehouse.transaction() as con:
        for agent, case, category, trial, passed, reason, failed in trials:
            episode = f"{agent}:{case}:{trial}"
            con.execute(
                "INSERT INTO episodes (episode_id, partition_date, agent_id, task_id, trial, status, started_at, category) "
                "VALUES (?, ?, ?, ?, ?, 'success', TIMESTAMPTZ '2026-11-05 09:00:00+00', ?)",
                [episode, DAY, agent, case, trial, category],
            )
            con.execute(
                "INSERT INTO scores (episode_id, partition_date, agent_id, task_id, passed, verdict_reason, config_version) "
                "VALUES (?, ?, ?, ?, ?, ?, 'v1')",
                [episode, DAY, agent, case, passed, reason],
            )
            if failed:
                con.execute(
                    "INSERT INTO assertions (episode_id, partition_date, agent_id, assertion, passed, detail) "
                    "VALUES (?, ?, ?, ?, false, ?)",
                    [episode, DAY, agent, *failed],
                )

    results = case_results(warehouse, [DAY], "bot", ["steady", "flaky", "slow", "unjudged"])

    assert records(results.cases) == [
        {"case_id": "steady", "category": "billing", "passed": True, "trials_passed": 1, "trials": 1, "failed": None},
        {"case_id": "flaky", "category": "billing", "passed": False, "trials_passed": 1, "trials": 3,
         "failed": "expected_output_contains: none of ['refund']"},
        {"case_id": "slow", "category": "auth", "passed": False, "trials_passed": 0, "trials": 1,
         "failed": "critical latency_delta_pct"},
        {"case_id": "unjudged", "category": None, "passed": None, "trials_passed": 0, "trials": 1, "failed": None},
    ]  # fmt: skip
    assert records(results.categories) == [
        {"category": "billing", "cases": 2, "passed": 1, "failed": 1, "pass_rate": 0.5},
        {"category": "auth", "cases": 1, "passed": 0, "failed": 1, "pass_rate": 0.0},
        {"category": "(uncategorized)", "cases": 1, "passed": 0, "failed": 0, "pass_rate": None},
    ]
