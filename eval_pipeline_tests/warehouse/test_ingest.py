import hashlib
import json
from datetime import date
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eval_pipeline.episodes.files import FileSource
from eval_pipeline.episodes.model import Episode
from eval_pipeline.episodes.records import RawRecord, RawRecords, RecordLines
from eval_pipeline.episodes.samples import MALFORMED_LINES_PER_DAY, SAMPLE_DAYS, write_samples
from eval_pipeline.warehouse import ingest
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline_tests.warehouse import warehouse_of_version

DAY = date(2026, 11, 1)


def good(episode_id="ep-1", **overrides) -> dict:
    return {
        "episode_id": episode_id,
        "agent_id": "support-bot",
        "status": "success",
        "started_at": "2026-11-01T10:00:00Z",
        "ended_at": "2026-11-01T10:00:05Z",
        "steps": [
            {"step_index": 2, "step_type": "tool_call", "tool_name": "send_email", "tokens": 0, "cost_usd": 0, "duration_ms": 5},
            {
                "step_index": 0,
                "step_type": "llm_call",
                "input_summary": "Where is my order?",
                "output_summary": "plan",
                "model": "m1",
            },
            {"step_index": 1, "step_type": "tool_call", "tool_name": "lookup_order", "duration_ms": 10},
            {"step_index": 3, "step_type": "llm_call", "output_summary": "It ships Monday.", "tokens": 7},
            {"step_index": 4, "step_type": "tool_call", "tool_name": "lookup_order", "error": "timeout"},
        ],
        "metadata": {"task_id": "t-1", "trial": 2, "category": "orders"},
        **overrides,
    }


def records(*items: str | dict) -> list[RawRecord]:
    return [
        RawRecord("test.jsonl", f"test.jsonl:{n}", item if isinstance(item, str) else json.dumps(item), DAY)
        for n, item in enumerate(items, 1)
    ]


def rows(warehouse: Warehouse, sql: str, params=None):
    with warehouse.connect(read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def test_canonical_columns_follow_the_episode_rules(warehouse):
    load_episodes(warehouse, DAY, lambda: records(good()))
    (episode,) = rows(
        warehouse,
        "SELECT task_id, trial, model, tools, final_output, step_count, error_steps, total_tokens, category FROM episodes",
    )
    # steps ordered by step_index, repeats kept; final output = last llm_call; error steps counted
    assert episode == ("t-1", 2, "m1", ["lookup_order", "send_email", "lookup_order"], "It ships Monday.", 5, 1, 7, "orders")
    assert rows(warehouse, "SELECT step_index, step_type FROM episode_steps ORDER BY step_index")[0] == (0, "llm_call")


def test_metadata_final_output_wins_and_task_id_falls_back_to_a_stable_hash(warehouse):
    a = good("ep-a", metadata={"final_output": "Explicit answer"})
    b = good("ep-b", metadata={})
    other_agent = good("ep-c", agent_id="support-bot-v2", metadata={})
    load_episodes(warehouse, DAY, lambda: records(a, b, other_agent))
    result = dict(rows(warehouse, "SELECT episode_id, final_output || '|' || task_id FROM episodes"))
    assert result["ep-a"].startswith("Explicit answer|auto-")
    # the same first message is the same task, whichever agent ran it: two agents' runs of it compare
    assert result["ep-a"].split("|")[1] == result["ep-b"].split("|")[1] == result["ep-c"].split("|")[1]
    assert Episode.model_validate(other_agent).task_id == result["ep-c"].split("|")[1]


def test_task_ids_an_older_version_derived_with_the_agent_are_rewritten_on_upgrade(tmp_path):
    """Derived task ids used to hash the agent too; the upgrade rewrites them wherever they are kept, so a
    baseline found before the upgrade still matches the same task's runs after it. Given task ids stay."""
    path = tmp_path / "eval.duckdb"
    con = warehouse_of_version(path, 10)
    old = "auto-" + hashlib.md5(b"support-bot\nWhere is my order?").hexdigest()[:16]
    con.execute(f"""
        INSERT INTO episodes (episode_id, partition_date, agent_id, task_id, status, started_at) VALUES
            ('ep-1', DATE '2026-11-01', 'support-bot', '{old}', 'success', TIMESTAMPTZ '2026-11-01 10:00:00+00'),
            ('ep-2', DATE '2026-11-01', 'support-bot', 't-1', 'success', TIMESTAMPTZ '2026-11-01 11:00:00+00');
        INSERT INTO episode_steps (episode_id, partition_date, agent_id, step_index, step_type, input) VALUES
            ('ep-1', DATE '2026-11-01', 'support-bot', 1, 'llm_call', 'And my refund?'),
            ('ep-1', DATE '2026-11-01', 'support-bot', 0, 'llm_call', 'Where is my order?'),
            ('ep-2', DATE '2026-11-01', 'support-bot', 0, 'llm_call', 'Where is my order?');
        INSERT INTO baselines (agent_id, task_id, episode_id, pinned, valid_from, partition_date) VALUES
            ('support-bot', '{old}', 'ep-1', false, DATE '2026-11-02', DATE '2026-11-01'),
            ('support-bot', 't-1', 'ep-2', false, DATE '2026-11-02', DATE '2026-11-01');
        INSERT INTO findings (finding_id, partition_date, agent_id, task_id, dimension, severity, config_version) VALUES
            ('f-1', DATE '2026-11-01', 'support-bot', '{old}', 'correctness', 'critical', 'v1');
    """)  # fmt: skip
    con.close()
    new = Episode.model_validate(good(metadata={})).task_id
    assert new != old
    kept = "SELECT task_id FROM {} ORDER BY episode_id"
    assert rows(Warehouse(path), kept.format("episodes")) == [(new,), ("t-1",)]
    assert rows(Warehouse(path), kept.format("baselines")) == [(new,), ("t-1",)]
    assert rows(Warehouse(path), "SELECT DISTINCT recorded_on FROM baselines") == [(date(2026, 11, 1),)]  # their own day
    assert rows(Warehouse(path), "SELECT task_id FROM findings") == [(new,)]
    assert rows(Warehouse(path), "SELECT source_records FROM episodes") == [(1,), (1,)]


def test_sql_and_pydantic_rules_agree_on_the_samples(warehouse, tmp_path):
    write_samples(tmp_path / "episodes")
    source = FileSource(tmp_path / "episodes", tmp_path / "index.json")
    for day in SAMPLE_DAYS:
        load_episodes(warehouse, day, lambda day=day: source.records_for(day))
    loaded = {
        row[0]: row[1:]
        for row in rows(warehouse, "SELECT episode_id, task_id, tools, final_output, total_tokens, partition_date FROM episodes")
    }
    checked = 0
    for path in sorted((tmp_path / "episodes").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                episode = Episode.model_validate_json(line)
            except ValueError:
                continue
            assert loaded[episode.episode_id] == (
                episode.task_id,
                episode.tools,
                episode.final_output,
                episode.total_tokens,
                episode.partition_date,
            )
            checked += 1
    assert checked > 100


def test_bad_records_are_quarantined_with_locator_and_reason_and_good_ones_load(warehouse):
    bad = [
        '{"episode_id": "ep-x", "agent_id": ',
        "[1, 2]",
        good("ep-2", agent_id=None),
        good("ep-3", status="exploded"),
        good("ep-4", started_at="yesterday"),
        good("ep-5", steps=[{"step_index": 0, "step_type": "dance"}]),
        good("ep-6", total_cost_usd="a lot"),
        good("ep-7", steps="none"),
    ]
    counts = load_episodes(warehouse, DAY, lambda: records(good("ep-1"), *bad, good("ep-9")))
    assert (counts.episodes, counts.quarantined, counts.records_read) == (2, 8, 10)
    reasons = dict(rows(warehouse, "SELECT locator, reason FROM quarantine"))
    assert reasons == {
        "test.jsonl:2": "invalid JSON",
        "test.jsonl:3": "not a JSON object",
        "test.jsonl:4": "missing agent_id",
        "test.jsonl:5": "status 'exploded' is not one of running, success, failure, timeout, killed",
        "test.jsonl:6": "started_at 'yesterday' is not an ISO 8601 timestamp",
        "test.jsonl:7": "step 0: step_index must be an integer, not negative, and step_type one of "
        "llm_call, tool_call, tool_result, decision, error",
        "test.jsonl:8": "total_cost_usd is not a number",
        "test.jsonl:9": "steps is not a list",
    }
    assert rows(warehouse, "SELECT raw FROM quarantine WHERE locator = 'test.jsonl:2'") == [
        ('{"episode_id": "ep-x", "agent_id": ',)
    ]


def test_a_rerun_replaces_the_partition_exactly(warehouse):
    batch = records(good("ep-1"), "garbage", good("ep-2"))
    for _ in range(2):
        load_episodes(warehouse, DAY, lambda: batch)
    counts = rows(
        warehouse,
        "SELECT (SELECT count(*) FROM episodes), (SELECT count(*) FROM episode_steps), (SELECT count(*) FROM quarantine)",
    )
    assert counts == [(2, 10, 1)]


def test_other_days_are_left_alone_and_records_of_other_days_skipped(warehouse):
    other_day = good("ep-next", started_at="2026-11-02T00:00:01+00:00")
    load_episodes(warehouse, date(2026, 11, 2), lambda: records(other_day))
    load_episodes(warehouse, DAY, lambda: records(good("ep-1"), other_day))
    assert rows(warehouse, "SELECT partition_date, episode_id FROM episodes ORDER BY 1") == [
        (DAY, "ep-1"),
        (date(2026, 11, 2), "ep-next"),
    ]


def test_timezone_offsets_decide_the_utc_day(warehouse):
    late_evening_in_new_york = good("ep-ny", started_at="2026-10-31T21:30:00-05:00")  # 02:30 UTC on Nov 1
    load_episodes(warehouse, DAY, lambda: records(late_evening_in_new_york))
    assert rows(warehouse, "SELECT episode_id FROM episodes") == [("ep-ny",)]


def test_duplicate_ids_keep_the_last_and_quarantine_the_rest(warehouse):
    load_episodes(warehouse, DAY, lambda: records(good("ep-1", status="running"), good("ep-1")))
    assert rows(warehouse, "SELECT status, locator FROM episodes") == [("success", "test.jsonl:2")]
    assert rows(warehouse, "SELECT locator, reason FROM quarantine") == [
        ("test.jsonl:1", "duplicate episode_id ep-1, superseded by test.jsonl:2")
    ]


def test_agent_scoped_load_replaces_only_that_agent(warehouse):
    load_episodes(warehouse, DAY, lambda: records(good("ep-1"), good("ep-2", agent_id="billing-bot")))
    load_episodes(warehouse, DAY, lambda: records(good("ep-1b")), agent_id="support-bot")
    assert rows(warehouse, "SELECT episode_id FROM episodes ORDER BY 1") == [("ep-1b",), ("ep-2",)]


def test_failure_midway_leaves_the_previous_partition_intact(warehouse):
    load_episodes(warehouse, DAY, lambda: records(good("ep-1")))

    def exploding():
        yield from records(good("ep-2"))
        raise ConnectionError("store went away")

    with pytest.raises(ConnectionError):
        load_episodes(warehouse, DAY, lambda: exploding())
    assert rows(warehouse, "SELECT episode_id FROM episodes") == [("ep-1",)]


def test_sample_malformed_records_land_in_their_days(warehouse, tmp_path):
    write_samples(tmp_path / "episodes")
    source = FileSource(tmp_path / "episodes", tmp_path / "index.json")
    for day in SAMPLE_DAYS:
        counts = load_episodes(warehouse, day, lambda day=day: source.records_for(day))
        assert counts.quarantined == MALFORMED_LINES_PER_DAY[day]
    locators = [row[0] for row in rows(warehouse, "SELECT locator FROM quarantine")]
    assert all(Path(locator.rsplit(":", 1)[0]).name.startswith("episodes-2026-11-0") for locator in locators)


def step(**overrides) -> dict:
    return {"step_index": 0, "step_type": "llm_call", "input_summary": "hi", "output_summary": "hello", **overrides}


def numbered(episode_id: str, tokens: object = 5, **overrides) -> dict:
    """An episode whose every number is given: its one step's and its totals."""
    totals = {"total_tokens": 5, "total_cost_usd": 0.01, "total_duration_ms": 5.0}
    return good(episode_id, steps=[step(tokens=tokens, cost_usd=0.01, duration_ms=5.0)], **{**totals, **overrides})


# What a red team fed the loader: each kind once. Before, the three marked loaded as if valid (a negative
# step index or cost, text for tokens), a NaN cost scored 1.0, and the timestamps DuckDB reads but Python
# does not (or a broken clock) were neither loaded nor quarantined.
MALFORMED = {
    "negative step index": good("m1", steps=[step(step_index=-3)]),  # loaded before
    "negative cost": good("m2", steps=[step(cost_usd=-5)]),  # loaded before
    "tokens as text": good("m3", steps=[step(tokens="lots")]),  # loaded before
    "NaN cost": '{"episode_id": "m4", "agent_id": "a", "status": "success", "started_at": "2026-11-01T10:00:00Z", '
    '"total_cost_usd": NaN}',
    "infinite cost": good("m5", steps=[step(cost_usd=float("inf"))]),
    "negative duration": good("m6", total_duration_ms=-1),
    "repeated step index": good("m7", steps=[step(), step(step_type="tool_call", tool_name="x")]),
    "zone name": good("m8", started_at="2026-11-01 10:00:00 UTC"),
    "leading space": good("m9", started_at=" 2026-11-01T10:00:00Z"),
    "step time as a zone name": good("m10", steps=[step(timestamp="2026-11-01 10:00:00 Europe/Paris")]),
    "1970": good("m11", started_at="1970-01-01T00:00:00Z"),
    "year 1": good("m12", started_at="0001-01-01T00:00:00Z"),
    "year 9999": good("m13", started_at="9999-12-31T23:59:59Z"),
    "negative tokens": good("m14", total_tokens=-7),
    "tokens as a float": good("m15", steps=[step(tokens=1.5)]),
    "total tokens as a float": good("m16", total_tokens=2.5),
    # numbers as text or booleans, which a lenient parse reads as numbers ("5" as 5, true as 1): loaded before
    "tokens as numeric text": good("m17", steps=[step(tokens="5")]),
    "step cost as numeric text": good("m18", steps=[step(cost_usd="0.01")]),
    "step duration as a boolean": good("m19", steps=[step(duration_ms=False)]),
    "total tokens as a boolean": good("m20", total_tokens=True),
    "total cost as numeric text": good("m21", total_cost_usd="0.5"),
    "total duration as numeric text": good("m22", total_duration_ms="1200"),
    "total tokens beyond a count": good("m23", total_tokens=2**70),
    # as JSON may write them, every other number given, which a look at the raw text for mistyped numbers must not
    # miss: a key spelled with an escape, space before the colon and a tab after it
    "tokens as text, its key escaped": json.dumps(numbered("m24", tokens="5")).replace('"tokens"', '"tok\\u0065ns"'),
    "total cost as text, spaced": json.dumps(numbered("m25", total_cost_usd="0.5")).replace(
        '"total_cost_usd": ', '"total_cost_usd" :\t'
    ),
    "total tokens as a float, the rest given": numbered("m26", total_tokens=2.5),
    "negative step tokens, the rest given": numbered("m27", tokens=-3),  # a number as given, out of range
    "step cost below minus infinity, the rest given": json.dumps(numbered("m28")).replace(
        '"cost_usd": 0.01', '"cost_usd": -Infinity'
    ),
    # text given as something else, which a lenient parse reads as text (7 as '7', ["a"] as '["a"]'), and a step index
    # as text or with a fraction ("0" as 0, 1.5 as 2): loaded before
    "episode id as a number": good(29),
    "agent id as a number": good("m30", agent_id=7),
    "agent id as a list": good("m31", agent_id=["support-bot"]),
    "step index as numeric text": good("m32", steps=[step(step_index="0")]),
    "step index as a float": good("m33", steps=[step(step_index=1.5)]),
    "tool name as a number": good("m34", steps=[step(step_type="tool_call", tool_name=5)]),
    "tool name as a list, its key escaped": json.dumps(good("m35", steps=[step(tool_name=["t"])])).replace(
        '"tool_name"', '"tool_n\\u0061me"'
    ),
    "input as an object": good("m36", steps=[step(input_summary={"question": "hi"})]),
    "model as a boolean": good("m37", steps=[step(model=True)]),
    "error as a number": good("m38", steps=[step(error=500)]),
    # the tags the pipeline reads, given as another type or out of range: TRY_CAST read "2" and 1.5 as trial 2, 3e9 and
    # "abc" as no trial, and "yes" or 1 as a pin
    "trial as numeric text": good("m39", metadata={"task_id": "t", "trial": "2"}),
    "trial as a fraction": good("m40", metadata={"task_id": "t", "trial": 1.5}),
    "negative trial": good("m41", metadata={"task_id": "t", "trial": -1}),
    "trial beyond an integer": good("m42", metadata={"task_id": "t", "trial": 3e9}),
    "trial as a boolean": good("m43", metadata={"task_id": "t", "trial": True}),
    "pin as a word": good("m44", metadata={"task_id": "t", "baseline": "yes"}),
    "pin as a number": good("m45", metadata={"task_id": "t", "baseline": 1}),
    "reward as numeric text": good("m46", metadata={"task_id": "t", "reward": "1"}),
    "infinite reward": json.dumps(good("m47", metadata={"task_id": "t", "reward": 1.0})).replace(
        '"reward": 1.0', '"reward": Infinity'
    ),
}


def test_every_malformed_kind_is_quarantined_naming_its_field_and_the_model_rejects_it_too(warehouse):
    lines = [good("ok-1"), *MALFORMED.values(), good("ok-2")]
    counts = load_episodes(warehouse, DAY, lambda: records(*lines))
    assert counts.records_read == counts.episodes + counts.quarantined == len(lines)  # nothing lost, nothing coerced
    assert counts.episodes == 2
    reasons = dict(rows(warehouse, "SELECT locator, reason FROM quarantine"))
    by_kind = {kind: reasons[f"test.jsonl:{n}"] for n, kind in enumerate(MALFORMED, 2)}
    expected_words = {
        "negative step index": "step_index", "negative cost": "cost_usd", "tokens as text": "tokens",
        "NaN cost": "total_cost_usd", "infinite cost": "cost_usd", "negative duration": "total_duration_ms",
        "repeated step index": "step_index repeats",
        "zone name": "not an ISO 8601", "leading space": "not an ISO 8601", "step time as a zone name": "timestamp",
        "1970": "broken clock", "year 1": "broken clock", "year 9999": "broken clock", "negative tokens": "total_tokens",
        "tokens as a float": "tokens", "total tokens as a float": "total_tokens",
        "tokens as numeric text": "step 0: tokens must be an integer", "step cost as numeric text": "step 0: cost_usd",
        "step duration as a boolean": "step 0: duration_ms", "total tokens as a boolean": "total_tokens is not an integer",
        "total cost as numeric text": "total_cost_usd is not a number",
        "total duration as numeric text": "total_duration_ms is not a number",
        "total tokens beyond a count": "total_tokens is not an integer",
        "tokens as text, its key escaped": "step 0: tokens must be an integer",
        "total cost as text, spaced": "total_cost_usd is not a number",
        "total tokens as a float, the rest given": "total_tokens is not an integer",
        "negative step tokens, the rest given": "step 0: tokens must be an integer, finite and not negative",
        "step cost below minus infinity, the rest given": "step 0: cost_usd must be a number, finite and not negative",
        "episode id as a number": "episode_id is not text", "agent id as a number": "agent_id is not text",
        "agent id as a list": "agent_id is not text",
        "step index as numeric text": "step 0: step_index must be an integer, finite and not negative",
        "step index as a float": "step 0: step_index must be an integer",
        "tool name as a number": "step 0: tool_name is not text",
        "tool name as a list, its key escaped": "step 0: tool_name is not text",
        "input as an object": "step 0: input_summary is not text", "model as a boolean": "step 0: model is not text",
        "error as a number": "step 0: error is not text",
        "trial as numeric text": "metadata.trial must be a whole number, not negative: \"2\"",
        "trial as a fraction": "metadata.trial must be a whole number, not negative: 1.5",
        "negative trial": "metadata.trial", "trial beyond an integer": "metadata.trial", "trial as a boolean": "metadata.trial",
        "pin as a word": "metadata.baseline must be true or false, not \"yes\"", "pin as a number": "metadata.baseline",
        "reward as numeric text": "metadata.reward must be a finite number", "infinite reward": "metadata.reward",
    }  # fmt: skip
    for kind, word in expected_words.items():
        assert word in by_kind[kind], (kind, by_kind[kind])
    for line in MALFORMED.values():  # the model (adapters, the store, `schemas`) draws the same line
        with pytest.raises(ValueError):
            Episode.model_validate_json(line if isinstance(line, str) else json.dumps(line))
    scored = rows(warehouse, "SELECT count(*) FROM episodes WHERE total_cost_usd < 0 OR NOT isfinite(total_cost_usd)")
    assert scored == [(0,)]


def test_an_agents_reload_in_small_batches_narrows_and_supersedes_its_own_episodes_only(tmp_path, monkeypatch):
    """The narrowing and the duplicates' reasons read the day's loaded episodes: of the agent reloaded, whose id that
    comes again a batch later still supersedes the earlier record; the other agent's episodes of the day stay."""
    day = records(
        good("ep-1"),
        good("ep-2", agent_id="billing-bot"),
        good("ep-3", started_at="2026-11-01T09:00:00Z"),
        good("ep-1", status="failure"),  # supersedes line 1, a batch later
        good("ep-4", agent_id="billing-bot"),
        good("ep-5", started_at="2026-11-01T11:00:00Z"),  # the third of the agent's by start: beyond --limit 2
    )
    loaded = {}
    for name, batch_rows, write_rows in (("at once", 1_000, 1_000), ("in batches", 2, 1_000), ("each written", 2, 1)):
        monkeypatch.setattr("eval_pipeline.warehouse.ingest.BATCH_ROWS", batch_rows)
        monkeypatch.setattr("eval_pipeline.warehouse.ingest.WRITE_ROWS", write_rows)
        warehouse = Warehouse(tmp_path / f"{name}.duckdb")
        load_episodes(warehouse, DAY, lambda: day)
        counts = load_episodes(warehouse, DAY, lambda: day, agent_id="support-bot", limit=2)
        loaded[name] = (counts, _tables(warehouse))
    assert loaded["in batches"] == loaded["each written"] == loaded["at once"]
    assert rows(warehouse, "SELECT agent_id, episode_id, status FROM episodes ORDER BY 2") == [
        ("support-bot", "ep-1", "failure"),
        ("billing-bot", "ep-2", "success"),
        ("support-bot", "ep-3", "success"),
        ("billing-bot", "ep-4", "success"),
    ]
    assert rows(warehouse, "SELECT locator, reason FROM quarantine") == [
        ("test.jsonl:1", "duplicate episode_id ep-1, superseded by test.jsonl:4")
    ]


@pytest.mark.parametrize("batch_rows", [1_000, 2], ids=["at once", "in batches"])
def test_a_reload_of_one_agent_keeps_what_a_load_of_the_whole_day_keeps(tmp_path, monkeypatch, batch_rows):
    """Agents that number their runs alike share ids: a later record of another agent supersedes the agent's in a load
    of one agent as in a load of the day. A reload of one agent used to read only its own records, keep its superseded
    one again, and leave the day with two episodes of one id."""
    monkeypatch.setattr("eval_pipeline.warehouse.ingest.BATCH_ROWS", batch_rows)
    day = records(
        good("ep-1"),
        good("ep-1", agent_id="billing-bot"),  # supersedes line 1
        good("ep-2", agent_id="billing-bot"),
        good("ep-2", status="failure"),  # supersedes line 3
        good("ep-3"),
        good("ep-3", agent_id="billing-bot"),
        good("ep-3", status="failure"),  # supersedes lines 5 and 6
        good("ep-4", agent_id="billing-bot"),
        "not json",
    )
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    load_episodes(warehouse, DAY, lambda: day)
    whole_day = _tables(warehouse)
    assert rows(warehouse, "SELECT agent_id, episode_id, locator FROM episodes ORDER BY 2") == [
        ("billing-bot", "ep-1", "test.jsonl:2"),
        ("support-bot", "ep-2", "test.jsonl:4"),
        ("support-bot", "ep-3", "test.jsonl:7"),
        ("billing-bot", "ep-4", "test.jsonl:8"),
    ]
    assert rows(warehouse, "SELECT agent_id, locator, reason FROM quarantine ORDER BY 2") == [
        ("support-bot", "test.jsonl:1", "duplicate episode_id ep-1, superseded by test.jsonl:2"),
        ("billing-bot", "test.jsonl:3", "duplicate episode_id ep-2, superseded by test.jsonl:4"),
        ("support-bot", "test.jsonl:5", "duplicate episode_id ep-3, superseded by test.jsonl:7"),
        ("billing-bot", "test.jsonl:6", "duplicate episode_id ep-3, superseded by test.jsonl:7"),
        (None, "test.jsonl:9", "invalid JSON"),
    ]
    for agent in ("support-bot", "billing-bot"):
        counts = load_episodes(warehouse, DAY, lambda: day, agent_id=agent)
        assert _tables(warehouse) == whole_day
        assert (counts.episodes, counts.quarantined) == (2, 2)
        alone = Warehouse(tmp_path / f"{agent}.duckdb")  # the agent's first load: its rows of the whole day's
        assert load_episodes(alone, DAY, lambda: day, agent_id=agent) == counts
        assert _tables(alone) == _tables(warehouse, agent)


def test_timestamps_python_would_not_read_are_quarantined_on_their_files_day_not_lost(warehouse, tmp_path):
    """Six records in, three episodes and zero quarantined, before: the other three named another day in a form
    DuckDB read and Python did not, so the file index never read the file on that day."""
    (tmp_path / "episodes").mkdir()
    lines = [good(f"ok-{n}", started_at=f"2026-11-01T1{n}:00:00Z") for n in range(3)]
    lines += [good(f"odd-{n}", started_at=text) for n, text in enumerate(
        ["2026-11-02 10:00:00 UTC", " 2026-11-02T10:00:00Z", "2026-11-02T10:00:00 Europe/Paris"])]  # fmt: skip
    (tmp_path / "episodes" / "day.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    source = FileSource(tmp_path / "episodes", tmp_path / "index.json")
    counts = [load_episodes(warehouse, day, lambda day=day: source.records_for(day)) for day in (DAY, date(2026, 11, 2))]
    assert [(c.records_read, c.episodes, c.quarantined) for c in counts] == [(6, 3, 3), (0, 0, 0)]


def _tables(warehouse: Warehouse, agent_id: str | None = None) -> dict[str, list[tuple]]:
    """The three tables a load writes (their rows of `agent_id`, when given), sorted, without the clock columns."""
    kept = {
        "episodes": "* EXCLUDE (loaded_at)",
        "episode_steps": "*",
        "quarantine": "* EXCLUDE (quarantined_at)",
    }
    return {
        table: sorted(map(repr, rows(warehouse, f"SELECT {columns} FROM {table} WHERE $agent IS NULL OR agent_id = $agent",
                                     {"agent": agent_id})))
        for table, columns in kept.items()
    }  # fmt: skip


def _as_lines(singles: list[RawRecord]) -> list[RawRecords]:
    """The same records as a file's reader gives its lines, three at a time, with a single record after each three (as
    captured records follow the files' lines)."""
    items: list[RawRecords] = []
    for start in range(0, len(singles), 4):
        block = singles[start : start + 3]
        lines = pa.array([int(record.locator.rsplit(":", 1)[1]) for record in block], pa.int64())
        items += [RecordLines("test.jsonl", lines, pa.array([record.raw for record in block], pa.string()), DAY)]
        items += singles[start + 3 : start + 4]
    return items


def test_records_are_numbered_in_the_order_they_came_in_batches_of_one_size(monkeypatch):
    """A later record of an id supersedes an earlier one: a file's lines and single records keep their order."""
    monkeypatch.setattr(ingest, "BATCH_ROWS", 2)
    day = records(*(good(f"ep-{n}") for n in range(11)))
    staged = list(ingest._staged(_as_lines(day)))
    assert [table.num_rows for table in staged] == [2, 2, 2, 2, 2, 1]
    assert [(row["seq"], row["locator"], row["raw"]) for row in pa.concat_tables(staged).to_pylist()] == [
        (n, record.locator, record.raw) for n, record in enumerate(day)
    ]


@pytest.mark.parametrize("given", ["one by one", "as a file's lines"])
@pytest.mark.parametrize(
    "narrowing",
    [{}, {"agent_id": "support-bot"}, {"model": "m2"}, {"limit": 3}],
    ids=["whole day", "one agent", "one model", "the first 3"],
)
def test_a_day_in_small_batches_gives_what_it_gives_at_once(tmp_path, monkeypatch, narrowing, given):
    """Batches bound a day's memory; an id that comes again batches later still supersedes the earlier record, whose
    recorded text still lands in quarantine (read again from the source). A file's lines, many records at once, are
    cut into the same batches as single records."""
    later = {"started_at": "2026-11-01T11:00:00Z", "ended_at": "2026-11-01T11:00:09Z"}
    day = records(
        good("ep-1", status="running"),
        good("ep-2", agent_id="billing-bot"),
        "not json",
        good("ep-3", steps=[{"step_index": -3, "step_type": "llm_call"}]),
        good("ep-4", **later),
        good("ep-1", status="failure"),  # supersedes the first, two batches later
        good("ep-5", metadata={"task_id": "t-5", "model": "m2"}),
        good("ep-2", agent_id="billing-bot", **later),
        good("ep-6", steps=[{"step_index": 0, "step_type": "llm_call", "model": "m2", "output_summary": "hi"}]),
        good("ep-1"),  # and this one both
        good("ep-7", started_at="2026-11-01T09:00:00Z"),
    )
    at_once = Warehouse(tmp_path / "at-once.duckdb")
    in_batches = Warehouse(tmp_path / "in-batches.duckdb")
    counts = load_episodes(at_once, DAY, lambda: day, **narrowing)
    monkeypatch.setattr("eval_pipeline.warehouse.ingest.BATCH_ROWS", 2)
    given_day = day if given == "one by one" else _as_lines(day)
    assert load_episodes(in_batches, DAY, lambda: given_day, **narrowing) == counts
    assert _tables(in_batches) == _tables(at_once)
    assert counts.episodes > 0
    if not narrowing:
        assert (counts.episodes, counts.quarantined) == (6, 5)
        winners = {1: 10, 2: 8, 6: 10}  # line: the line that superseded it
        assert rows(in_batches, "SELECT locator, reason, raw FROM quarantine WHERE reason LIKE 'duplicate%' ORDER BY 1") == [
            (f"test.jsonl:{n}", f"duplicate episode_id {json.loads(day[n - 1].raw)['episode_id']}, superseded by test.jsonl:{w}",
             day[n - 1].raw)
            for n, w in winners.items()
        ]  # fmt: skip


def test_long_records_are_parsed_and_written_a_few_at_a_time_keeping_what_one_batch_keeps(tmp_path, monkeypatch):
    """Records of whole fetched pages: a batch of BATCH_ROWS of them held 430 MB of text (two 10 KB tool results an
    episode), so batches and pending writes are bounded in bytes too; the day loads as it does at once."""
    page = "lorem ipsum " * 25_000  # 300 KB
    day = records(*(good(f"ep-{n}", steps=[{"step_index": 0, "step_type": "tool_result", "output_summary": page}])
                    for n in range(12)), good("ep-3", status="failure"))  # fmt: skip
    whole = Warehouse(tmp_path / "whole.duckdb")
    load_episodes(whole, DAY, lambda: day)

    monkeypatch.setattr(ingest, "BATCH_BYTES", 1 << 20)
    monkeypatch.setattr(ingest, "WRITE_BYTES", 1 << 20)
    parsed_text, written_rows = [], []
    parse, write = ingest._parse, ingest._PendingEpisodes.write
    monkeypatch.setattr(ingest, "_parse", lambda scratch, staged, params: (
        parsed_text.append(pc.sum(pc.binary_length(staged["raw"])).as_py()), parse(scratch, staged, params))[1])  # fmt: skip
    monkeypatch.setattr(ingest._PendingEpisodes, "write", lambda pending, con: (
        written_rows.append(sum(t.num_rows for t in pending.episodes)), write(pending, con))[1])  # fmt: skip
    in_parts = Warehouse(tmp_path / "in parts.duckdb")
    load_episodes(in_parts, DAY, lambda: day)

    assert len(parsed_text) == 4 and max(parsed_text) <= 1 << 20  # three records of 300 KB a batch (the last, and ep-3)
    # written once past 1 MB (two batches), and before the batch superseding ep-3 (of the second) is pending
    assert [rows for rows in written_rows if rows] == [6, 3, 4]
    assert _tables(in_parts) == _tables(whole)
    assert rows(in_parts, "SELECT count(*), count(*) FILTER (reason LIKE 'duplicate%') FROM quarantine") == [(1, 1)]
