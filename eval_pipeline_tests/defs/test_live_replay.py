"""Live replay through a real OpenAI-compatible server on 127.0.0.1: the recording is the baseline."""

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
