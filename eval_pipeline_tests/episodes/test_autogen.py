"""AutoGen AgentChat event logs (each event's model_dump(), JSONL) and AutoGen's own event log (event.txt), read as episodes."""

import json
import os
import subprocess
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.adapters.base import log_message
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.episodes.schemas import AutoGenEvent, AutoGenLogEvent, AutoGenTaskResult
from eval_pipeline.settings import PROJECT_ROOT
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
    counts = load_episodes(warehouse, DAY, lambda: source.records_for(DAY))
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


def test_a_user_proxy_reply_stays_in_its_run_and_a_bad_task_result_is_quarantined(tmp_path):
    """A UserProxyAgent named "user" answers after its UserInputRequestedEvent (as AutoGen 0.7.5 streams it)."""
    events = [
        event("TextMessage", "user", "Weather?", 0),
        event("TextMessage", "assistant", "Which city?", 1, usage={"prompt_tokens": 3, "completion_tokens": 2}),
        {**event("UserInputRequestedEvent", "user", "", 2), "request_id": "r1"},
        event("TextMessage", "user", "Oslo", 3),
        event("TextMessage", "assistant", "Oslo is 4 C.", 4, usage={"prompt_tokens": 8, "completion_tokens": 4}),
    ]
    path = tmp_path / "src" / "proxy.jsonl"
    path.parent.mkdir()
    lines = [*events, {"messages": [{"content": "not an event"}], "stop_reason": None}]
    lines.append({"messages": events, "stop_reason": "Maximum number of messages 4 reached, current message count: 4"})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    counts = load_episodes(warehouse, DAY, lambda: FileSource(path.parent, tmp_path / "index.json").records_for(DAY))
    assert (counts.episodes, counts.quarantined) == (1, 1)
    with warehouse.connect(read_only=True) as con:
        episode = con.execute("SELECT total_tokens, final_output, metadata ->> '$.stop_reason' FROM episodes").fetchall()
        inputs = con.execute("SELECT input FROM episode_steps ORDER BY step_index").fetchall()
        [(locator, why)] = con.execute("SELECT locator, reason FROM quarantine").fetchall()
    assert episode == [(17, "Oslo is 4 C.", "Maximum number of messages 4 reached, current message count: 4")]
    assert inputs == [("Weather?",), ("Oslo",)]
    assert locator.endswith("proxy.jsonl:6") and why == "autogen: messages.0.type: Field required"


# A real AutoGen AgentChat team (autogen_producer.py), run in its own venv: autogen-core pins protobuf~=5.29,
# which cannot live beside Dagster's protobuf 6 in .venv. `make test` builds it (`make autogen`).
AUTOGEN_PYTHON = PROJECT_ROOT / ".venv-autogen" / "bin" / "python"
PRODUCER = Path(__file__).with_name("autogen_producer.py")


@pytest.fixture(scope="module")
def autogen_python() -> Path:
    """AutoGen's venv, built with `make autogen` when missing; skipped, with make's words, only if that fails."""
    if not AUTOGEN_PYTHON.exists():
        try:
            built = subprocess.run(["make", "-C", str(PROJECT_ROOT), "autogen"], capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as exc:
            pytest.skip(f"the AutoGen venv could not be built (make autogen): {exc}")
        if built.returncode != 0:
            said = " ".join((built.stderr or built.stdout).split())  # one line, for pytest's summary
            pytest.skip(f"the AutoGen venv could not be built (make autogen): {said[-400:]}")
    return AUTOGEN_PYTHON


def evaluated(days: set[date], capsys) -> Callable[[str], list[dict]]:
    """Run each day the producer wrote (one, unless it ran across midnight UTC); then SQL over the warehouse as JSON."""
    for day in sorted(days):
        assert main(["run", "--date", day.isoformat(), "--fail-on", "never"]) == 0
    capsys.readouterr()

    def query(sql: str) -> list[dict]:
        assert main(["query", sql, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    return query


def micros(stamp: str) -> int:
    return (datetime.fromisoformat(stamp) - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(microseconds=1)


def saved(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
def test_a_real_autogen_team_log_is_evaluated_without_configuration(project_env, autogen_python, capsys):
    episodes_dir = project_env / "episodes"
    subprocess.run([str(autogen_python), str(PRODUCER), str(episodes_dir)], check=True, capture_output=True, timeout=300)

    # what AutoGen 0.7.5 wrote: events, each run closed by its TaskResult (no `type`), or TaskResults alone
    team, assistant, results = (saved(episodes_dir / f"weather-{name}.jsonl") for name in ("team", "assistant", "results"))
    assert [line.get("type") for line in team[:7]] == [
        "TextMessage", "ThoughtEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ToolCallSummaryMessage",
        "TextMessage", None,
    ]  # fmt: skip
    assert team[6]["stop_reason"] == "'writer' answered" and len(team[6]["messages"]) == 6
    for line in team + assistant + results:  # every line fits the schema `eval-pipeline schemas` publishes
        (AutoGenEvent if "type" in line else AutoGenTaskResult).model_validate(line)
    assert team[2]["models_usage"] == {"prompt_tokens": 30, "completion_tokens": 6}
    assert team[3]["content"] == [
        {"content": '{"city": "Oslo", "temp_c": 4}', "name": "get_weather", "call_id": "call_oslo", "is_error": False}
    ]
    assert sum(line.get("type") == "ModelClientStreamingChunkEvent" for line in assistant) == 8
    assert len(results) == 2 and all(set(result) == {"messages", "stop_reason"} for result in results)

    run_days = {datetime.fromisoformat(line["created_at"]).date() for line in team + assistant if line.get("source") == "user"}
    run_days |= {datetime.fromisoformat(result["messages"][0]["created_at"]).date() for result in results}
    query = evaluated(run_days, capsys)

    assert query("SELECT locator, reason FROM quarantine") == []
    columns = (
        "episode_id, status, tools, final_output, total_tokens, step_count, error_steps, metadata ->> '$.stop_reason' AS stop"
    )
    episodes = query(f"SELECT {columns}, CAST(metadata -> '$.agents' AS VARCHAR[]) AS agents FROM episodes")
    # a run's time is its events' `created_at`, first to last
    sql = "SELECT epoch_us(started_at) AS started, epoch_us(ended_at) AS ended FROM episodes WHERE locator LIKE '%team.jsonl:1 %'"
    assert query(sql) == [{"started": micros(team[0]["created_at"]), "ended": micros(team[5]["created_at"])}]
    team_runs = {"tools": ["get_weather"], "step_count": 6, "stop": "'writer' answered", "agents": ["planner", "writer"]}
    oslo = {**team_runs, "final_output": "It is 4 C in Oslo.", "total_tokens": 30 + 6 + 50 + 9, "error_steps": 0}
    atlantis = {**team_runs, "final_output": "There is no weather station in Atlantis.", "total_tokens": 31 + 7 + 52 + 10}
    atlantis["error_steps"] = 1
    solo = {"tools": ["get_weather", "get_weather"], "final_output": "Bergen and Tromsø are both at 4 C.", "step_count": 7}
    # the streamed reflection's usage is the replay client's word count: 25 prompt, 8 completion
    solo |= {"total_tokens": 40 + 12 + 25 + 8, "error_steps": 0, "stop": None, "agents": ["assistant"]}
    assert sorted(episodes, key=lambda e: e["episode_id"]) == [
        {"episode_id": "weather-assistant:weather-assistant:1", "status": "success", **solo},
        {"episode_id": "weather-results:weather-results:1", "status": "success", **oslo},
        {"episode_id": "weather-results:weather-results:2", "status": "success", **atlantis},
        {"episode_id": "weather-team:weather-team:1", "status": "success", **oslo},
        {"episode_id": "weather-team:weather-team:2", "status": "success", **atlantis},
    ]
    usage_in_file = [(line.get("models_usage") or {}).values() for line in team + assistant if "type" in line]
    assert sum(map(sum, usage_in_file)) == oslo["total_tokens"] + atlantis["total_tokens"] + solo["total_tokens"]

    steps = query(
        "SELECT episode_id, step_type, tool_name, input, output, tokens, error, timestamp IS NOT NULL AS dated "
        "FROM episode_steps WHERE agent_id IN ('weather-team', 'weather-assistant') ORDER BY episode_id, step_index"
    )
    by_run: dict[str, list[dict]] = {}
    for step in steps:
        by_run.setdefault(step.pop("episode_id"), []).append(step)
    thought = {"step_type": "decision", "tool_name": None, "input": None, "output": "I should look the weather up."}
    oslo_weather = '{"city": "Oslo", "temp_c": 4}'
    assert by_run["weather-team:weather-team:1"] == [
        {**thought, "tokens": None, "error": None, "dated": True},
        {"step_type": "llm_call", "tool_name": None, "input": "Weather in Oslo?", "output": "call get_weather", "tokens": 36,
         "error": None, "dated": True},
        {"step_type": "tool_call", "tool_name": "get_weather", "input": '{"city": "Oslo"}', "output": None, "tokens": None,
         "error": None, "dated": True},
        {"step_type": "tool_result", "tool_name": "get_weather", "input": None, "output": oslo_weather, "tokens": None,
         "error": None, "dated": True},
        {"step_type": "decision", "tool_name": None, "input": None, "output": oslo_weather, "tokens": None, "error": None,
         "dated": True},  # the planner's ToolCallSummaryMessage
        {"step_type": "llm_call", "tool_name": None, "input": None, "output": "It is 4 C in Oslo.", "tokens": 59, "error": None,
         "dated": True},
    ]  # fmt: skip
    failed = by_run["weather-team:weather-team:2"][3]
    assert (failed["step_type"], failed["output"], failed["error"]) == ("tool_result", *["no station in Atlantis"] * 2)
    calls = [(s["input"], s["output"]) for s in by_run["weather-assistant:weather-assistant:1"] if s["tool_name"]]
    assert [json.loads(text) for pair in calls for text in pair if text] == [
        {"city": "Bergen"}, {"city": "Bergen", "temp_c": 4}, {"city": "Tromsø"}, {"city": "Tromsø", "temp_c": 4}
    ]  # fmt: skip

    # the agent of every step, in the warehouse; the token split rides along in the episodes the pipeline read
    agents = query("SELECT agent FROM episode_steps WHERE episode_id = 'weather-team:weather-team:1' ORDER BY step_index")
    assert [row["agent"] for row in agents] == ["planner"] * 5 + ["writer"]
    source = FileSource(episodes_dir, project_env / "agents-index.json")
    read = [
        json.loads(r.raw) for day in sorted(run_days) for r in source.records_for(day) if "weather-team.jsonl:1 " in r.locator
    ]
    assert read[0]["steps"][1]["metadata"]["usage"] == {"prompt_tokens": 30, "completion_tokens": 6}

    scored = query("SELECT episode_id, mode, error_steps, issue_score, issue_grade FROM scores ORDER BY episode_id")
    grades = [(s["episode_id"].split(":", 1)[1], s["mode"], s["error_steps"], s["issue_score"], s["issue_grade"]) for s in scored]
    assert grades == [  # every answer is under 100 characters (a warning); the failed tool call costs Atlantis its A
        ("weather-assistant:1", "dry", 0, 95.0, "A"),
        ("weather-results:1", "dry", 0, 95.0, "A"),
        ("weather-results:2", "dry", 1, 80.0, "B"),
        ("weather-team:1", "dry", 0, 95.0, "A"),
        ("weather-team:2", "dry", 1, 80.0, "B"),
    ]


EVENT_LOG_PRODUCER = Path(__file__).with_name("autogen_event_log_producer.py")
BROKEN_LINES = [
    '2026-11-05 10:00:00,000 - autogen_core.events - INFO - {"payload": "{\\"message\\": {\\"id\\"',  # a crash cut it short
    '2026-11-05 10:00:00,001 - autogen_core.events - INFO - {"type": "ToolCall", "agent_id": null}',  # no tool_name
    '2026-11-05 10:00:00,002 - autogen_core.events - INFO - {"type": "LLMCall", "messages": [',
]


@pytest.mark.slow
def test_a_real_autogen_run_logged_by_its_event_logger_is_scored_and_compared_end_to_end(project_env, autogen_python, capsys):
    """What agent-eval users have: event.txt, one folder per version, as AutoGen's event logger writes it."""
    episodes_dir = project_env / "episodes"
    for version in ("baseline", "experiment"):
        producer = [str(autogen_python), str(EVENT_LOG_PRODUCER), str(episodes_dir / version)]
        subprocess.run(producer, check=True, capture_output=True, timeout=300)
    with (episodes_dir / "experiment" / "event.txt").open("a") as log:
        log.write("\n".join(BROKEN_LINES) + "\n")
    (project_env / "eval.toml").write_text(
        '[sources]\nagents = { "baseline/*" = "weather-v1", "experiment/*" = "weather-v2" }\n'
        '[prices."gpt-4o-mini"]\ninput_per_million = 0.15\noutput_per_million = 0.6\n'
    )
    os.environ["EVAL_CONFIG"] = str(project_env / "eval.toml")  # project_env restores it

    lines = (episodes_dir / "baseline" / "event.txt").read_text().splitlines()
    assert sum('"type": "Message"' in line for line in lines) > 60 and all(" - autogen_core.events - " in line for line in lines)
    for line in lines:  # every line fits the schema `eval-pipeline schemas` publishes, or is a plain warning
        assert AutoGenLogEvent.model_validate(log_message(line)[0]) if "{" in line else " - WARNING - " in line
    run_days = {datetime.fromisoformat(line[:19]).date() for line in lines}  # the formatter writes UTC here
    query = evaluated(run_days, capsys)

    quarantined = query("SELECT locator, reason FROM quarantine ORDER BY locator")
    at = len((episodes_dir / "experiment" / "event.txt").read_text().splitlines()) - 2
    assert [(row["locator"].removeprefix(f"{episodes_dir}/"), row["reason"]) for row in quarantined] == [
        (f"experiment/event.txt:{at}", "autogen-events: invalid JSON: Unterminated string starting at at line 1 column 68"),
        (f"experiment/event.txt:{at + 1}", "autogen-events: not an AutoGen event-logger event (a `type` of Message, "
         "MessageDropped, MessageHandlerException, AgentConstructionException, LLMCall, LLMStreamStart, LLMStreamEnd, "
         "ToolCall, with its fields)"),
        (f"experiment/event.txt:{at + 2}", "autogen-events: invalid JSON: Expecting value at line 1 column 89"),
    ]  # fmt: skip
    columns = (
        "agent_id, status, tools, total_tokens, final_output, model, CAST(metadata -> '$.agents' AS VARCHAR[]) AS agents, "
        "total_duration_ms, epoch_ms(ended_at) - epoch_ms(started_at) AS wall_ms, round(total_cost_usd * 1e6, 2) AS micro_usd"
    )
    episodes = query(f"SELECT {columns} FROM episodes ORDER BY agent_id, started_at")
    team = {"status": "success", "tools": ["get_weather"], "model": "gpt-4o-mini", "agents": ["planner", "writer"]}
    # priced per model from each LLM step's token split: 0.15 $ per million in, 0.6 out
    oslo = {**team, "total_tokens": 30 + 6 + 50 + 9, "final_output": "It is 4 C in Oslo.", "micro_usd": 21.0}
    atlantis = {**team, "total_tokens": 31 + 7 + 52 + 10, "final_output": "There is no weather station in Atlantis.",
                "micro_usd": 22.65}  # fmt: skip
    # on its own: no runtime, so read from the client's LLMCall and the tool's ToolCall events; the reflection's
    # usage is the replay client's word count (25 prompt, 8 completion)
    solo = {"status": "success", "tools": ["get_weather"] * 2, "total_tokens": 40 + 12 + 25 + 8, "model": "gpt-4o-mini",
            "final_output": "Bergen and Tromsø are both at 4 C.", "agents": ["assistant"], "micro_usd": 21.75}  # fmt: skip
    for agent in ("weather-v1", "weather-v2"):
        runs = [row for row in episodes if row["agent_id"] == agent]
        assert [{key: row[key] for key in oslo} for row in runs] == [oslo, atlantis, solo]
        # timed by their events: the team by created_at (microseconds), the lone agent by the log's own clock
        assert all(row["total_duration_ms"] == pytest.approx(row["wall_ms"], abs=1) for row in runs)
        assert runs[0]["total_duration_ms"] > 0 and runs[1]["total_duration_ms"] > 0
    steps = query(
        "SELECT step_type, tool_name, agent, tokens, error IS NOT NULL AS failed FROM episode_steps "
        "WHERE agent_id = 'weather-v1' AND episode_id IN (SELECT episode_id FROM episodes WHERE final_output LIKE '%Atlantis.') "
        "ORDER BY step_index"
    )
    assert [tuple(step.values()) for step in steps] == [
        ("decision", None, "planner", None, False),  # its thought
        ("llm_call", None, "planner", 38, False),
        ("tool_call", "get_weather", "planner", None, False),
        ("tool_result", "get_weather", "planner", None, True),  # the tool raised: no station in Atlantis
        ("decision", None, "planner", None, False),
        ("llm_call", None, "writer", 62, False),
    ]  # fmt: skip

    # 3 bad lines among the day's ~190: quarantined and counted against the lines read, not the 6 episodes
    health = query("SELECT severity, message FROM findings WHERE dimension = 'source_health'")
    assert all(finding["severity"] != "critical" for finding in health)
    assert query("SELECT sum(source_records)::INT AS lines FROM episodes")[0]["lines"] == 2 * len(lines)

    # the two versions ran the same three tasks: compared task by task
    assert main(["compare", "--a", "agent=weather-v1", "--b", "agent=weather-v2", "--format", "json"]) == 0
    meta = json.loads(capsys.readouterr().out)["meta"]
    assert (meta["tasks_in_common"], meta["tasks_only_in_a"], meta["tasks_only_in_b"]) == (3, 0, 0)

    # what agent-eval's issue detector flags is flagged here: answers under 100 characters, the failed tool call;
    # no run is a clean 1.0 with no issue
    issues = query('SELECT DISTINCT "check" FROM issues ORDER BY ALL')
    assert [row["check"] for row in issues] == ["errors", "short_answer", "tool_failures"]
    best = query("SELECT reward_name, max(value) AS value FROM rewards WHERE reward_name IN ('issues', 'overall') GROUP BY ALL")
    assert {row["reward_name"]: row["value"] for row in best} == {"issues": pytest.approx(0.95), "overall": pytest.approx(0.985)}
