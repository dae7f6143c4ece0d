"""OpenAI chat transcripts (tau-bench's trajectory format) read as episodes, through the real file source and warehouse."""

import json
from datetime import date

import pytest

from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes

DAY = date(2026, 11, 5)


def call(call_id: str, name: str, arguments: dict) -> dict:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def transcript(task_id, trial, reward, *, parallel=False) -> dict:
    calls = [call("c1", "get_reservation", {"id": "R1"})]
    if parallel:
        calls.append(call("c2", "get_user", {"user_id": "u9"}))
    traj = [
        {"role": "system", "content": "You are an airline agent."},
        {"role": "user", "content": "Cancel reservation R1."},
        {"role": "assistant", "content": None, "tool_calls": calls},
        # results arrive in another order than the calls: each is paired by tool_call_id
        *([{"role": "tool", "tool_call_id": "c2", "name": "get_user", "content": '{"name": "Ana"}'}] if parallel else []),
        {"role": "tool", "tool_call_id": "c1", "name": "get_reservation", "content": '{"status": "active"}'},
        {"role": "assistant", "content": "Shall I cancel it?"},
        {"role": "user", "content": "Yes."},
        {"role": "assistant", "content": None, "tool_calls": [call("c3", "cancel_reservation", {"id": "R1"})]},
        {"role": "tool", "tool_call_id": "c3", "name": "cancel_reservation", "content": "Error: reservation is not refundable"},
        {"role": "assistant", "content": "It cannot be cancelled: the fare is not refundable."},
    ]
    return {"task_id": task_id, "trial": trial, "reward": reward, "traj": traj, "info": {"source": "test"}}


@pytest.fixture
def warehouse(tmp_path):
    return Warehouse(tmp_path / "eval.duckdb")


def load(tmp_path, warehouse, records: list, *, as_jsonl: bool = False, undated_day=DAY):
    path = tmp_path / "src" / "airline-agent.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records) if as_jsonl else json.dumps(records))
    source = FileSource(path.parent, tmp_path / "index.json")
    return load_episodes(warehouse, DAY, lambda: source.records_for(DAY, undated_day))


def test_each_record_becomes_an_episode_with_paired_tool_calls(tmp_path, warehouse):
    counts = load(tmp_path, warehouse, [transcript(7, 0, 1.0, parallel=True), transcript(7, 1, 0.0)])
    assert (counts.episodes, counts.quarantined) == (2, 0)
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute(
            "SELECT episode_id, agent_id, task_id, trial, status, tools, final_output, error_steps, "
            "metadata ->> '$.reward' FROM episodes ORDER BY trial"
        ).fetchall()
        steps = con.execute(
            "SELECT step_type, tool_name, input, output, error IS NOT NULL, messages IS NOT NULL FROM episode_steps "
            "WHERE episode_id = 'airline-agent:7:0' ORDER BY step_index"
        ).fetchall()
    answer = "It cannot be cancelled: the fare is not refundable."
    assert episodes == [
        ("airline-agent:7:0", "airline-agent", "7", 0, "success",
         ["get_reservation", "get_user", "cancel_reservation"], answer, 1, "1.0"),
        ("airline-agent:7:1", "airline-agent", "7", 1, "failure", ["get_reservation", "cancel_reservation"], answer, 1, "0.0"),
    ]  # fmt: skip
    assert steps == [
        ("llm_call", None, "Cancel reservation R1.", None, False, True),  # with the system prompt and user turn
        ("tool_call", "get_reservation", '{"id": "R1"}', None, False, False),
        ("tool_result", "get_reservation", None, '{"status": "active"}', False, False),
        ("tool_call", "get_user", '{"user_id": "u9"}', None, False, False),
        ("tool_result", "get_user", None, '{"name": "Ana"}', False, False),
        ("llm_call", None, None, "Shall I cancel it?", False, False),
        ("llm_call", None, "Yes.", None, False, False),
        ("tool_call", "cancel_reservation", '{"id": "R1"}', None, False, False),
        ("tool_result", "cancel_reservation", None, "Error: reservation is not refundable", True, False),
        ("llm_call", None, None, answer, False, False),
    ]


def test_a_malformed_record_is_quarantined_and_its_neighbours_load(tmp_path, warehouse):
    broken = {"task_id": 3, "trial": 0, "reward": 1.0, "traj": "not a list"}
    no_task = {**transcript(4, 0, 1.0), "task_id": None}
    records = [transcript(1, 0, 1.0), broken, no_task, transcript(2, 0, 0.0)]
    counts = load(tmp_path, warehouse, records, as_jsonl=True)
    assert (counts.episodes, counts.quarantined) == (2, 2)
    with warehouse.connect(read_only=True) as con:
        rejected = con.execute("SELECT locator, reason FROM quarantine ORDER BY locator").fetchall()
    path = tmp_path / "src" / "airline-agent.json"
    assert rejected == [
        (f"{path}:2", "openai-transcript: traj: Input should be a valid list"),
        (f"{path}:3", "openai-transcript: task_id.str: Input should be a valid string"),
    ]
    assert load(tmp_path, warehouse, records, as_jsonl=True) == counts  # a re-run gives the same rows


def test_undated_records_go_to_the_day_the_first_run_named_or_the_day_first_seen(tmp_path, warehouse):
    assert load(tmp_path, warehouse, [transcript(1, 0, 1.0)]).episodes == 1
    source = FileSource(tmp_path / "src", tmp_path / "index.json")
    assert list(source.records_for(date(2026, 11, 4), undated_day=DAY)) == []  # named another day: not this one
    other_day = date(2026, 11, 6)
    assert list(source.records_for(other_day, undated_day=other_day)) == []  # a later run named its own day: read on DAY
    assert [r.fallback_day for r in source.records_for(DAY)] == [DAY]  # and there it stays, named or not
    unread = tmp_path / "src" / "retail-agent.json"
    unread.write_text(json.dumps([transcript(2, 0, 1.0)]))
    first_seen = source.refresh_index().files[str(unread)].first_seen
    assert [r.fallback_day for r in source.records_for(first_seen)] == [first_seen]
