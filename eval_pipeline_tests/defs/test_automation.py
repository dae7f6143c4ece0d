"""The nightly schedule and the new-episodes sensor, evaluated for real (files, and a store on 127.0.0.1)."""

import json
from datetime import UTC, date, datetime, time, timedelta

import dagster as dg
import pytest

from eval_pipeline.defs.automation.freshness import due_day
from eval_pipeline.defs.automation.schedules import nightly_sweep
from eval_pipeline.defs.automation.sensors import new_episodes
from eval_pipeline.defs.resources import EpisodeSourceResource
from eval_pipeline.episodes.changes import days_to_evaluate
from eval_pipeline.episodes.files import UnreadableSource
from eval_pipeline_tests.defs.graph import GRAPH, local_resources
from eval_pipeline_tests.fake_store import make_episode

TODAY = datetime.now(UTC).date()


def ago(days: int) -> date:
    return TODAY - timedelta(days=days)


def write_day(path, day: date, ids: list[str]) -> None:
    start = datetime.combine(day, time(12), tzinfo=UTC)
    with path.open("a") as handle:
        handle.writelines(json.dumps(make_episode(episode_id, start)) + "\n" for episode_id in ids)


def tick(source: EpisodeSourceResource, cursor: str | None):
    context = dg.build_sensor_context(cursor=cursor, resources={"episode_source": source})
    result = new_episodes(context)
    requests = [] if isinstance(result, dg.SkipReason) else result
    return sorted(r.partition_key for r in requests), requests, context.cursor


def test_the_nightly_tick_requests_yesterday():
    context = dg.build_schedule_context(scheduled_execution_time=datetime(2026, 11, 22, 2, 0, tzinfo=UTC))
    request = nightly_sweep(context)
    assert request.partition_key == "2026-11-21"
    assert request.run_key.startswith("nightly-2026-11-21-")


def test_file_sensor_requests_new_and_late_days_once(tmp_path):
    episodes = tmp_path / "episodes"
    episodes.mkdir()
    write_day(episodes / "a.jsonl", ago(2), ["a1"])
    write_day(episodes / "b.jsonl", ago(1), ["b1"])
    write_day(episodes / "c.jsonl", TODAY, ["c1"])  # today is not finished: the nightly sweep takes it
    write_day(episodes / "old.jsonl", ago(30), ["o1"])  # beyond the first tick's lookback
    source = EpisodeSourceResource(location=str(episodes), index_path=str(tmp_path / "index.json"))

    days, requests, cursor = tick(source, None)
    assert days == [ago(2).isoformat(), ago(1).isoformat()]
    assert len({r.run_key for r in requests}) == 2
    assert tick(source, cursor)[0] == []  # nothing changed: nothing requested

    write_day(episodes / "late.jsonl", ago(30), ["o2"])  # a late arrival for an old day
    days, _, cursor = tick(source, cursor)
    assert days == [ago(30).isoformat()]
    assert tick(source, cursor)[0] == []


def test_a_log_appended_all_day_requests_only_the_days_that_gained_records(tmp_path):
    """One JSONL file the agent appends to: each record of today it appended had every finished day in the file
    evaluated again (5 runs every two minutes, for days that gained nothing)."""
    episodes = tmp_path / "episodes"
    episodes.mkdir()
    log = episodes / "agent.jsonl"
    for n in range(5, 0, -1):
        write_day(log, ago(n), [f"e{n}"])
    source = EpisodeSourceResource(location=str(episodes), index_path=str(tmp_path / "index.json"))
    days, _, cursor = tick(source, None)
    assert len(days) == 5

    write_day(log, TODAY, ["t1"])
    days, _, cursor = tick(source, cursor)
    assert days == []  # today is not finished, and no finished day changed
    write_day(log, ago(3), ["late"])  # a late record for an old day
    days, _, cursor = tick(source, cursor)
    assert days == [ago(3).isoformat()]
    with log.open("a") as handle:
        handle.write('{"episode_id": "torn", "started_at": "' + ago(2).isoformat())  # a record half written
    days, _, cursor = tick(source, cursor)
    with log.open("a") as handle:
        handle.write('T09:00:00Z"}\n')  # its end: the record the last tick saw torn may be any day's
    every_day = [ago(n).isoformat() for n in range(5, 0, -1)]
    days, _, cursor = tick(source, cursor)
    assert days == every_day
    with log.open("a") as handle:
        handle.write('{"no day": true}\n')  # a line of no day: it goes to the file's fallback day
    days, _, cursor = tick(source, cursor)
    assert days == every_day
    log.write_text(log.read_text().replace('"e2"', '"E2"'))  # rewritten in place: every day it holds may have changed
    assert len(tick(source, cursor)[0]) == 5


def test_a_failed_tick_loses_nothing(tmp_path):
    episodes = tmp_path / "episodes"
    episodes.mkdir()
    write_day(episodes / "a.jsonl", ago(1), ["a1"])
    source = EpisodeSourceResource(location=str(episodes), index_path=str(tmp_path / "index.json"))
    _, _, cursor = tick(source, None)
    write_day(episodes / "a.jsonl", ago(1), ["a2"])
    broken = EpisodeSourceResource(location=str(tmp_path / "gone"), index_path=str(tmp_path / "index.json"))
    with pytest.raises(UnreadableSource):  # a tick that raises leaves Dagster's stored cursor as it was
        tick(broken, cursor)
    assert tick(source, cursor)[0] == [ago(1).isoformat()]


def test_store_sensor_sees_new_episodes_and_status_changes(fake_store, tmp_path):
    fake_store.episodes.append(make_episode("s1", datetime.combine(ago(1), time(9), tzinfo=UTC), status="running"))
    source = EpisodeSourceResource(location=fake_store.url, index_path=str(tmp_path / "index.json"))
    days, first, cursor = tick(source, None)
    assert days == [ago(1).isoformat()]
    assert tick(source, cursor)[0] == []

    fake_store.episodes[0]["status"] = "success"  # the store finished the run in place
    days, second, cursor = tick(source, cursor)
    assert days == [ago(1).isoformat()] and second[0].run_key != first[0].run_key

    fake_store.episodes.append(make_episode("s2", datetime.combine(ago(2), time(9), tzinfo=UTC)))
    assert tick(source, cursor)[0] == [ago(2).isoformat()]


def test_days_to_evaluate_rules():
    fingerprints = {"2026-11-01": "a", "2026-11-20": "b", "2026-11-21": "c", "2026-11-22": "d"}
    today = date(2026, 11, 22)
    assert days_to_evaluate(fingerprints, None, today, 7) == ["2026-11-20", "2026-11-21"]
    assert days_to_evaluate(fingerprints, {**fingerprints, "2026-11-01": "old"}, today, 7) == ["2026-11-01"]
    assert days_to_evaluate(fingerprints, fingerprints, today, 7) == []


def test_a_missed_night_fails_the_morning_check(tmp_path):
    from eval_pipeline.definitions import defs

    (tmp_path / "episodes").mkdir()
    due = due_day(datetime.now(UTC)).isoformat()
    job = defs().resolve_job_def("report_freshness")
    instance = dg.DagsterInstance.ephemeral()
    evaluation = job.execute_in_process(instance=instance).get_asset_check_evaluations()[0]
    assert not evaluation.passed and evaluation.metadata["expected_partition"].value == due

    dg.materialize(GRAPH, partition_key=due, resources=local_resources(tmp_path), instance=instance)
    assert job.execute_in_process(instance=instance).get_asset_check_evaluations()[0].passed


def test_last_nights_report_is_not_missed_before_it_is_due():
    """The check runs in every evaluation run too: a backfill of an old day at 01:00 UTC, before the 02:00 sweep,
    recorded `last_night_reported` failed ("missed night") on eval_report for a night not due until 06:00."""
    assert due_day(datetime(2026, 11, 22, 1, 0, tzinfo=UTC)) == date(2026, 11, 20)
    assert due_day(datetime(2026, 11, 22, 5, 59, tzinfo=UTC)) == date(2026, 11, 20)
    assert due_day(datetime(2026, 11, 22, 6, 0, tzinfo=UTC)) == date(2026, 11, 21)  # the morning check's tick
    assert due_day(datetime(2026, 11, 22, 23, 59, tzinfo=UTC)) == date(2026, 11, 21)
