"""Which runs a step waits for: runs recorded in a real (ephemeral) instance as Dagster and `eval-pipeline run` tag
them, their steps finished by the events Dagster writes."""

from __future__ import annotations

import time
import uuid
from datetime import date

import dagster as dg
from dagster import DagsterRunStatus
from dagster._core.events import DagsterEvent, StepSuccessData
from dagster._core.events.log import EventLogEntry

from eval_pipeline.defs.pipeline.day_order import RunSpan, earlier_runs_of_step, run_span


def add_run(instance: dg.DagsterInstance, first: str, last: str | None = None, **fields) -> str:
    """A run of the evaluate job over `first`..`last` (one day: Dagster's partition tag; a range: its range tags)."""
    tags = {"dagster/partition": first} if last is None else {
        "dagster/asset_partition_range_start": first, "dagster/asset_partition_range_end": last}  # fmt: skip
    run_id = str(uuid.uuid4())
    instance.add_run(dg.DagsterRun(job_name="evaluate_partition", run_id=run_id, tags=tags,
                                   status=fields.pop("status", DagsterRunStatus.STARTED), **fields))  # fmt: skip
    time.sleep(0.01)  # creation times in the order added
    return run_id


def finish_step(instance: dg.DagsterInstance, run_id: str, step: str) -> None:
    event = DagsterEvent("STEP_SUCCESS", "evaluate_partition", step_key=step, event_specific_data=StepSuccessData(1.0))
    instance.handle_new_event(EventLogEntry(None, "DEBUG", "", run_id, time.time(), step, "evaluate_partition", event))


def span(instance: dg.DagsterInstance, run_id: str) -> RunSpan:
    record = instance.get_run_record_by_id(run_id)
    assert record is not None
    found = run_span(record)
    assert found is not None
    return found


def waits_for(instance: dg.DagsterInstance, run_id: str, step: str = "baselines") -> tuple[list[str], list[str]]:
    pending, broken = earlier_runs_of_step(instance, span(instance, run_id), step)
    return [p.run_id for p in pending], broken


def test_a_step_waits_for_runs_ordered_before_its_own_that_have_that_step_to_do():
    with dg.DagsterInstance.ephemeral() as instance:
        day_one = add_run(instance, "2026-11-01")
        range_two_three = add_run(instance, "2026-11-02", "2026-11-03")
        day_three = add_run(instance, "2026-11-03")
        later_four = add_run(instance, "2026-11-04")
        earlier_day_one_again = add_run(instance, "2026-11-01")  # created last, but its first day is the earliest
        assert span(instance, range_two_three) == RunSpan(
            range_two_three, date(2026, 11, 2), date(2026, 11, 3), span(instance, range_two_three).created
        )

        assert waits_for(instance, day_one) == ([], [])  # nothing is ordered before the first day's first run
        assert waits_for(instance, earlier_day_one_again) == ([day_one], [])  # the same day: created first goes first
        assert set(waits_for(instance, day_three)[0]) == {day_one, range_two_three, earlier_day_one_again}
        assert day_three not in waits_for(instance, range_two_three)[0]  # overlapping: never both ways

        finish_step(instance, day_one, "baselines")
        finish_step(instance, earlier_day_one_again, "baselines")
        assert waits_for(instance, range_two_three) == ([], [])
        assert set(waits_for(instance, range_two_three, "regression_findings")[0]) == {day_one, earlier_day_one_again}
        instance.report_run_failed(instance.get_run_by_id(range_two_three), "its process ended")
        pending, broken = waits_for(instance, later_four)
        assert pending == [day_three]
        assert broken == [f"run {range_two_three} of 2026-11-02..2026-11-03 ended FAILURE before its baselines"]


def test_runs_that_do_not_run_the_step_and_runs_that_ended_before_this_one_are_not_waited_for():
    with dg.DagsterInstance.ephemeral() as instance:
        failed_long_ago = add_run(instance, "2026-10-30")
        instance.report_run_failed(instance.get_run_by_id(failed_long_ago), "a past night")
        time.sleep(0.01)
        rewards_only = add_run(instance, "2026-10-31", asset_selection=frozenset({dg.AssetKey("rewards")}))
        succeeded = add_run(instance, "2026-11-01", status=DagsterRunStatus.SUCCESS)
        not_started = add_run(instance, "2026-11-02", status=DagsterRunStatus.NOT_STARTED)
        undated = str(uuid.uuid4())
        instance.add_run(dg.DagsterRun(job_name="evaluate_partition", run_id=undated, status=DagsterRunStatus.STARTED))
        mine = add_run(instance, "2026-11-03")
        assert waits_for(instance, mine) == ([not_started], [])
        assert rewards_only and succeeded and waits_for(instance, rewards_only, "rewards") == ([], [])
