"""AutoGen AgentChat event logs (each event's model_dump(), JSONL) read as episodes, through the real file source."""

import json
from datetime import date

from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes

DAY = date(2026, 11, 5)


def event(kind, source, content, at, **fields):
    return {"type": kind, "source": source, "content": content, "models_usage": fields.pop("usage", None),
            "metadata": {}, "created_at": f"2026-11-05T10:{at:02d}:00Z", **fields}  # fmt: skip


def run(city, failing=False):
    result = {"content": "Error: station offline" if failing else '{"temp_c": 4}', "name": "get_weather",
              "call_id": f"call-{city}", "is_error": failing}  # fmt: skip
    call = {"id": f"call-{city}", "name": "get_weather", "arguments": json.dumps({"city": city})}
    answer = "No data." if failing else f"{city}: 4 C."
    return [
        event("TextMessage", "user", f"Weather in {city}?", 0),
        event("ToolCallRequestEvent", "planner", [call], 1, usage={"prompt_tokens": 30, "completion_tokens": 6}),
        event("ToolCallExecutionEvent", "planner", [result], 2),
        event("ToolCallSummaryMessage", "planner", result["content"], 3),
        event("TextMessage", "writer", answer, 4, usage={"prompt_tokens": 50, "completion_tokens": 9}),
    ]


def test_each_run_of_a_team_log_becomes_an_episode_with_its_agents_per_step(tmp_path):
    path = tmp_path / "src" / "weather-team.jsonl"
    path.parent.mkdir()
    lines = [json.dumps(e) for e in run("Oslo")] + ["{not json"] + [json.dumps(e) for e in run("Bergen", failing=True)]
    path.write_text("\n".join(lines) + "\n")
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    source = FileSource(path.parent, tmp_path / "index.json")
    assert set(source.refresh_index().files[str(path)].days) == {DAY}  # dated by created_at
    counts = load_episodes(warehouse, DAY, source.records_for(DAY))
    assert (counts.episodes, counts.quarantined) == (2, 1)
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute(
            "SELECT episode_id, tools, final_output, total_tokens, error_steps, started_at::VARCHAR FROM episodes ORDER BY 1"
        ).fetchall()
        steps = con.execute(
            "SELECT step_type, tool_name, input, output FROM episode_steps WHERE episode_id LIKE '%:1' ORDER BY step_index"
        ).fetchall()
    assert episodes == [
        ("weather-team:weather-team:1", ["get_weather"], "Oslo: 4 C.", 95, 0, "2026-11-05 10:00:00+00"),
        ("weather-team:weather-team:2", ["get_weather"], "No data.", 95, 1, "2026-11-05 10:00:00+00"),
    ]
    assert steps == [
        ("llm_call", None, "Weather in Oslo?", "call get_weather"),
        ("tool_call", "get_weather", '{"city": "Oslo"}', None),
        ("tool_result", "get_weather", None, '{"temp_c": 4}'),
        ("decision", None, None, '{"temp_c": 4}'),
        ("llm_call", None, None, "Oslo: 4 C."),
    ]
