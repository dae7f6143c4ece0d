import json
from datetime import date

from eval_pipeline.warehouse.cases import case_results
from eval_pipeline.warehouse.connection import Warehouse

DAY = date(2026, 11, 5)


def records(frame) -> list[dict]:
    """The rows without their day, NULL as None."""
    return frame.drop(columns="partition_date").astype(object).where(frame.notna(), None).to_dict("records")


def test_a_case_passes_when_every_trial_of_its_run_does_and_says_what_failed_first(tmp_path):
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    trials = [  # agent, capture run, started at, case, category, trial, passed, verdict reason, failed assertion
        ("bot", "r2", "10:00", "flaky", "billing", 0, True, None, None),
        ("bot", "r2", "10:00", "flaky", "billing", 1, False, "critical case", ("expected_output_contains", "none of ['refund']")),
        ("bot", "r2", "10:00", "flaky", "billing", 2, False, "critical case", ("expected_tools[superset]", "missing ['lookup']")),
        ("bot", "r2", "10:00", "steady", "billing", 0, True, None, None),
        ("bot", "r2", "10:00", "slow", "auth", 0, False, "critical latency_delta_pct", None),
        ("bot", "r2", "10:00", "unjudged", None, 0, None, None, None),
        ("bot", "r1", "09:00", "steady", "billing", 0, False, "critical case", None),  # an earlier run of the day
        ("other-bot", None, "09:30", "steady", "billing", 0, True, None, None),  # kept before runs had ids
        ("third-bot", "r3", "09:00", "steady", "billing", 0, False, "critical case", None),  # not asked for
        ("bot", "r2", "10:00", "not-in-the-set", "billing", 0, False, "critical case", None),
    ]
    with warehouse.transaction() as con:
        for agent, run, at, case, category, trial, passed, reason, failed in trials:
            episode = f"{agent}:{run}:{case}:{trial}"
            metadata = json.dumps({"capture_run": run, "label": f"{agent}@v{run[1]}"} if run else {})
            con.execute(
                "INSERT INTO episodes (episode_id, partition_date, agent_id, task_id, trial, status, started_at, category, "
                "metadata) VALUES (?, ?, ?, ?, ?, 'success', ?, ?, ?)",
                [episode, DAY, agent, case, trial, f"{DAY} {at}:00+00", category, metadata],
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

    results = case_results(warehouse, [DAY], ["bot", "other-bot"], ["steady", "flaky", "slow", "unjudged"])

    earlier = {"agent_id": "bot", "capture_run": "r1", "label": "bot@v1"}
    later = {"agent_id": "bot", "capture_run": "r2", "label": "bot@v2"}
    unnamed = {"agent_id": "other-bot", "capture_run": "", "label": "other-bot"}
    assert records(results.cases) == [
        {**earlier, "case_id": "steady", "category": "billing", "passed": False, "trials_passed": 0, "trials": 1,
         "failed": "critical case"},
        {**later, "case_id": "steady", "category": "billing", "passed": True, "trials_passed": 1, "trials": 1, "failed": None},
        {**later, "case_id": "flaky", "category": "billing", "passed": False, "trials_passed": 1, "trials": 3,
         "failed": "expected_output_contains: none of ['refund']"},
        {**later, "case_id": "slow", "category": "auth", "passed": False, "trials_passed": 0, "trials": 1,
         "failed": "critical latency_delta_pct"},
        {**later, "case_id": "unjudged", "category": None, "passed": None, "trials_passed": 0, "trials": 1, "failed": None},
        {**unnamed, "case_id": "steady", "category": "billing", "passed": True, "trials_passed": 1, "trials": 1,
         "failed": None},
    ]  # fmt: skip
    assert records(results.categories) == [
        {**earlier, "category": "billing", "cases": 1, "passed": 0, "failed": 1, "pass_rate": 0.0},
        {**later, "category": "billing", "cases": 2, "passed": 1, "failed": 1, "pass_rate": 0.5},
        {**later, "category": "auth", "cases": 1, "passed": 0, "failed": 1, "pass_rate": 0.0},
        {**later, "category": "(uncategorized)", "cases": 1, "passed": 0, "failed": 0, "pass_rate": None},
        {**unnamed, "category": "billing", "cases": 1, "passed": 1, "failed": 0, "pass_rate": 1.0},
    ]
