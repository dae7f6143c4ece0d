"""A day's reads hold one part in memory, whatever the day's size: no step aggregates the whole day in a way DuckDB
cannot spill (a DISTINCT, a list or an ordered string aggregate), so a day larger than the memory limit still runs.
The checks (each episode's distinct tool calls and offered tools), scores (its failed assertions) and rewards (its
critical checks) are held to it here, each beside the proof that the whole day's aggregate does not fit the limit."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date

import duckdb
import numpy as np
import pytest

from eval_pipeline.scoring.assessments import Reading
from eval_pipeline.warehouse import assertions, export, rewards, scores
from eval_pipeline.warehouse.connection import Warehouse

DAY = date(2026, 11, 2)
EPISODES = 100_000
TOOL_CALLS = 4  # each with arguments of 128 characters, all distinct: some 50 MB of them in the day
LIMIT = "96MB"  # DuckDB's memory limit: not enough to hold the day's distinct calls and offered tools at once


def _episodes_replayed(con: duckdb.DuckDBPyConnection, episodes: int) -> None:
    """The day's `episodes` episodes, ep-0 on, and their dry replays."""
    con.execute(
        """INSERT INTO episodes BY NAME
        SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id, 'task-' || (i % 100) AS task_id,
               'success' AS status, TIMESTAMPTZ '2026-11-02 09:00:00+00' AS started_at, 'done' AS final_output,
               'file' AS source, 'f:' || i AS locator
        FROM range($n) t(i)""",
        {"day": DAY, "n": episodes},
    )
    con.execute(
        """INSERT INTO replays BY NAME
        SELECT episode_id, partition_date, agent_id, 'dry' AS mode, status, final_output FROM episodes""",
    )


def _a_day_larger_than_the_limit(warehouse: Warehouse) -> None:
    """The day's episodes, their dry replays and their steps, written by DuckDB itself (no Python row per step)."""
    with warehouse.transaction() as con:
        _episodes_replayed(con, EPISODES)
        con.execute(
            """INSERT INTO episode_steps BY NAME
            SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id, s AS step_index,
                   'tool_call' AS step_type, 'search' AS tool_name, repeat(md5(i || '-' || s), 4) AS input,
                   'result ' || s AS output
            FROM range($n) t(i), range($calls) c(s)""",
            {"day": DAY, "n": EPISODES, "calls": TOOL_CALLS},
        )
        con.execute(  # and an LLM call offered a dozen tools (as LangGraph records them) before each tool call
            """INSERT INTO episode_steps BY NAME
            SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id, $calls + s AS step_index,
                   'llm_call' AS step_type, list_transform(range(12), lambda k: 'tool-' || ((i + k) % 1000)) AS offered_tools
            FROM range($n) t(i), range($calls) c(s)""",
            {"day": DAY, "n": EPISODES, "calls": TOOL_CALLS},
        )


def _limited(tmp_path, make_day: Callable[[Warehouse], None]) -> Warehouse:
    """A new warehouse holding the day `make_day` writes, opened again under LIMIT."""
    make_day(Warehouse(tmp_path / "eval.duckdb"))
    return Warehouse(tmp_path / "eval.duckdb", memory_limit=LIMIT)


def _each_episode(value: int) -> dict[str, int]:
    return dict.fromkeys((f"ep-{i}" for i in range(EPISODES)), value)


def test_the_checks_read_a_day_larger_than_duckdbs_memory_limit_a_part_at_a_time(tmp_path, monkeypatch):
    limited = _limited(tmp_path, _a_day_larger_than_the_limit)
    monkeypatch.setattr(assertions, "CHECK_PART_EPISODES", 1_000)
    counted: dict[str, int] = {}

    def read(summaries):
        for episode, calls in zip(summaries.episode_ids, summaries.tool_calls, strict=True):
            counted[episode] = int(calls)
        nothing = len(summaries.episode_ids)
        return Reading(checks=np.zeros(nothing, np.int64), steps=np.zeros(nothing, bool))

    assert list(assertions.check_inputs(limited, DAY, read=read)) == []  # none to check: every part's summaries read
    assert counted == _each_episode(TOOL_CALLS)


PAGES = 6_000  # episodes whose two tool results each return a page of PAGE_BYTES
PAGE_BYTES = 16_000  # some 190 MB of pages in the day, 32 MB in a part of 1,000 episodes


def _a_day_of_long_tool_outputs(warehouse: Warehouse) -> None:
    """A day of PAGES episodes, each fetching two pages (a tool call and its result, whose output is the page)."""
    with warehouse.transaction() as con:
        _episodes_replayed(con, PAGES)
        con.execute(
            """INSERT INTO episode_steps BY NAME
            SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id, s AS step_index,
                   CASE WHEN s % 2 = 0 THEN 'tool_call' ELSE 'tool_result' END AS step_type, 'fetch_page' AS tool_name,
                   '{"url": "https://example.com/' || i || '/' || s || '"}' AS input,
                   CASE WHEN s % 2 = 1 THEN repeat(md5(i || '-' || s), $page // 32) END AS output
            FROM range($n) t(i), range(4) c(s)""",
            {"day": DAY, "n": PAGES, "page": PAGE_BYTES},
        )


def test_the_checks_read_a_day_of_tool_outputs_larger_than_the_limit_a_part_at_a_time(tmp_path, monkeypatch):
    """DuckDB cannot sort rows of long texts past its limit ('failed to pin block' sorting 100,000 steps of 10 KB
    under 1 GB, in 1.5.5, 1.5.6 and 2.0.1 alike): such a day's steps stay as they came, and each part reads them; their
    outputs reach the checks CHECK_OUTPUT_BYTES at a time, not a count of rows of any length."""
    limited = _limited(tmp_path, _a_day_of_long_tool_outputs)
    monkeypatch.setattr(assertions, "CHECK_PART_EPISODES", 1_000)
    monkeypatch.setattr(assertions, "CHECK_OUTPUT_BYTES", 1 << 20)
    read_bytes: dict[str, int] = {}
    batches: list[int] = []

    def read(summaries):
        for entries, indices, outputs in summaries.tool_outputs():
            batches.append(sum(map(len, outputs)))
            for entry, index in zip(entries, indices, strict=True):
                episode = summaries.episode_ids[entry]
                read_bytes[episode] = read_bytes.get(episode, 0) + len(outputs[index])
        nothing = len(summaries.episode_ids)
        return Reading(checks=np.zeros(nothing, np.int64), steps=np.zeros(nothing, bool))

    assert list(assertions.check_inputs(limited, DAY, read=read)) == []
    assert read_bytes == {f"ep-{i}": 2 * PAGE_BYTES for i in range(PAGES)}
    assert max(batches) <= 1 << 20 < 2 * max(batches)  # 65 pages at a time, not 20,000 (CHECK_BATCH_ROWS * 10)


def test_an_export_reads_a_day_larger_than_the_limit_a_part_at_a_time_in_its_order(tmp_path, monkeypatch):
    """`eval-pipeline export --format plaited` of a day of 200,000 episodes ran out of DuckDB's 1 GiB ('internal error:
    OutOfMemoryException', exit 3): it gathered the whole day's steps at once."""
    limited = _limited(tmp_path, _a_day_of_long_tool_outputs)
    monkeypatch.setattr(export, "EXPORT_PART_EPISODES", 1_000)
    monkeypatch.setattr(export, "EXPORT_PART_BYTES", 8 << 20)  # some 250 of these episodes
    order, read_bytes = [], {}
    for episode in export.export_inputs(limited, DAY):
        order.append((episode["task_id"], episode["episode_id"]))
        read_bytes[episode["episode_id"]] = sum(len(step["output_summary"] or "") for step in episode["steps"])
    assert order == sorted(order) and read_bytes == {f"ep-{i}": 2 * PAGE_BYTES for i in range(PAGES)}


CHECKS = 12  # critical issues an episode has, of checks named at length: some 150 MB of names in the day


def _a_day_of_many_issues(warehouse: Warehouse) -> None:
    """The day's episodes scored, each with CHECKS critical issues of distinct checks."""
    _a_day_larger_than_the_limit(warehouse)
    with warehouse.transaction() as con:
        con.execute(
            """INSERT INTO scores BY NAME
            SELECT r.episode_id, r.partition_date, r.agent_id, e.task_id, r.mode, r.status, 'v1' AS config_version
            FROM replays r JOIN episodes e USING (episode_id, partition_date)"""
        )
        con.execute(
            """INSERT INTO issues BY NAME
            SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id,
                   'check-' || c || '-' || repeat('x', 120) AS "check", 'critical' AS severity
            FROM range($n) t(i), range($checks) k(c)""",
            {"day": DAY, "n": EPISODES, "checks": CHECKS},
        )


def test_rewards_read_a_day_of_more_issues_than_the_limit_holds_a_part_at_a_time(tmp_path, monkeypatch):
    limited = _limited(tmp_path, _a_day_of_many_issues)
    monkeypatch.setattr(rewards, "REWARD_PART_EPISODES", 1_000)
    critical_checks: dict[str, int] = {}

    def rewards_of(scored):
        critical_checks.update(zip(scored["episode_id"], scored["critical_checks"].map(len), strict=True))
        return []

    assert rewards.write_rewards(limited, DAY, "v1", rewards_of, ["episode_id", "agent_id"]) == (EPISODES, 0)
    assert critical_checks == _each_episode(CHECKS)


ASSERTIONS = 12  # failed assertions of each episode's case, named and detailed at length: some 150 MB in the day


def _a_day_of_many_failed_assertions(warehouse: Warehouse) -> None:
    _a_day_larger_than_the_limit(warehouse)
    with warehouse.transaction() as con:
        con.execute(
            """INSERT INTO assertions BY NAME
            SELECT 'ep-' || i AS episode_id, $day AS partition_date, 'bot' AS agent_id,
                   'assertion-' || a AS assertion, false AS passed, 0.0 AS score, repeat('y', 120) AS detail
            FROM range($n) t(i), range($assertions) k(a)""",
            {"day": DAY, "n": EPISODES, "assertions": ASSERTIONS},
        )


def test_scores_read_a_day_of_more_failed_assertions_than_the_limit_holds_a_part_at_a_time(tmp_path, monkeypatch):
    limited = _limited(tmp_path, _a_day_of_many_failed_assertions)
    monkeypatch.setattr(scores, "SCORE_PART_EPISODES", 1_000)
    failed: dict[str, int] = {}

    def score(inputs, issues):
        failed.update(zip(inputs["episode_id"], inputs["failed_assertions"].str.count("assertion-"), strict=True))
        return inputs[["episode_id", "agent_id", "task_id"]].assign(partition_date=DAY, config_version="v1")

    assert scores.write_scores(limited, DAY, "rolling", None, score) == EPISODES
    assert failed == _each_episode(ASSERTIONS)


@pytest.mark.parametrize(
    "make_day, whole_day",
    [
        (
            _a_day_larger_than_the_limit,
            "SELECT episode_id, count(DISTINCT {'name': tool_name, 'arguments': input}), flatten(list(offered_tools)) "
            "FROM episode_steps GROUP BY ALL",
        ),
        (_a_day_of_many_issues, """SELECT episode_id, list(DISTINCT "check" ORDER BY "check") FROM issues GROUP BY ALL"""),
        (
            _a_day_of_many_failed_assertions,
            "SELECT episode_id, string_agg(assertion || ': ' || detail, '; ' ORDER BY assertion) FROM assertions GROUP BY ALL",
        ),
        (
            _a_day_of_long_tool_outputs,
            "SELECT episode_id, list({'input': input, 'output': output} ORDER BY step_index) FROM episode_steps GROUP BY ALL",
        ),
    ],
    ids=["checks", "rewards", "scores", "export"],
)
def test_each_day_above_is_indeed_more_than_one_aggregate_over_it_can_hold_under_the_limit(tmp_path, make_day, whole_day):
    """What the checks, rewards, scores and exports did before, over the whole day, runs out of LIMIT (a day of 2,000,000
    episodes ran out of 512 MB in the checks): what the tests above hold is not luck."""
    with _limited(tmp_path, make_day).connect() as con, pytest.raises(duckdb.OutOfMemoryException):
        con.execute(whole_day).fetchall()
