"""Live replay through a real OpenAI-compatible server on 127.0.0.1: the recording is the baseline."""

import json

import dagster as dg
import pytest

from eval_pipeline.defs.resources import ReplayResource
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, local_resources

pytestmark = pytest.mark.slow


def rows(root, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def live(fake_openai) -> ReplayResource:
    return ReplayResource(mode="live", base_url=fake_openai.base_url, api_key="k", candidate_model="candidate-1")


def test_each_episode_is_replayed_live_and_scored_against_its_recording(tmp_path, fake_openai):
    write_samples(tmp_path / "episodes")
    resources = {**local_resources(tmp_path), "replay": live(fake_openai)}
    result = dg.materialize(GRAPH, partition_key="2026-11-01", resources=resources, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    replays = rows(tmp_path, "SELECT mode, model, status, count(*) FROM replays GROUP BY ALL")
    assert replays == [("live", "candidate-1", "success", 48)]
    # the fake candidate calls each recorded tool once, in first-use order: repeats in a recording are lost
    matches = rows(tmp_path, "SELECT count(*) FILTER (WHERE tool_match = 1.0), count(*) FROM scores")
    assert matches[0][1] == 48 and matches[0][0] > 0
    assert rows(tmp_path, "SELECT count(*) FROM scores WHERE mode = 'live' AND baseline_episode_id = episode_id") == [(48,)]
    assert rows(tmp_path, "SELECT count(*) FROM scores WHERE weighted_score IS NULL") == [(0,)]  # every replay has a baseline


def test_a_tool_the_recording_never_answered_ends_the_replay_as_diverged(tmp_path, fake_openai):
    write_samples(tmp_path / "episodes")
    fake_openai.rogue_tool = "delete_everything"
    resources = {**local_resources(tmp_path), "replay": live(fake_openai)}
    assert dg.materialize(GRAPH, partition_key="2026-11-01", resources=resources, instance=dg.DagsterInstance.ephemeral()).success
    assert rows(tmp_path, "SELECT DISTINCT status, error FROM replays WHERE tools <> []") == [
        ("diverged", "called delete_everything, which the recording has no result for")
    ]
    assert rows(
        tmp_path, "SELECT max(tool_match) < 0.5 FROM scores s JOIN replays r USING (episode_id) WHERE r.status = 'diverged'"
    ) == [(True,)]


def test_recorded_messages_are_re_sent_whole_where_the_source_has_them(tmp_path, fake_openai):
    """A transcript's first LLM call carries its full context (system prompt and all); an AIR summary does not."""
    context = [
        {"role": "system", "content": "You are the billing agent. Never promise refunds."},
        {"role": "user", "content": "Where is my refund?"},
    ]
    steps = [
        {"step_index": 0, "step_type": "llm_call", "input_summary": "Where is my refund?", "metadata": {"messages": context}},
        {"step_index": 1, "step_type": "tool_call", "tool_name": "lookup_refund"},
        {"step_index": 2, "step_type": "tool_result", "tool_name": "lookup_refund", "output_summary": '{"status": "sent"}'},
        {"step_index": 3, "step_type": "llm_call", "output_summary": "It was sent."},
    ]
    episode = {"agent_id": "billing", "status": "success", "started_at": "2026-11-01T10:00:00Z"}
    episodes = [
        {**episode, "episode_id": "with-context", "steps": steps},
        {**episode, "episode_id": "summary-only", "steps": [{**step, "metadata": {}} for step in steps]},
    ]
    (tmp_path / "episodes").mkdir()
    (tmp_path / "episodes" / "day.jsonl").write_text("\n".join(json.dumps(e) for e in episodes) + "\n")
    resources = {**local_resources(tmp_path), "replay": live(fake_openai)}
    assert dg.materialize(GRAPH, partition_key="2026-11-01", resources=resources, instance=dg.DagsterInstance.ephemeral()).success

    openings = sorted(json.dumps(r["body"]["messages"]) for r in fake_openai.requests if len(r["body"]["messages"]) <= 2)
    assert openings == sorted([json.dumps(context), json.dumps([{"role": "user", "content": "Where is my refund?"}])])
    tool_turn = next(
        r["body"]["messages"]
        for r in fake_openai.requests
        if r["body"]["messages"][0]["role"] == "system" and len(r["body"]["messages"]) > 2
    )
    assert tool_turn[-1] == {"role": "tool", "tool_call_id": "call_0", "content": '{"status": "sent"}'}  # the recorded result
    assert rows(tmp_path, "SELECT episode_id, status, tools FROM replays ORDER BY 1") == [
        ("summary-only", "success", ["lookup_refund"]),
        ("with-context", "success", ["lookup_refund"]),
    ]
