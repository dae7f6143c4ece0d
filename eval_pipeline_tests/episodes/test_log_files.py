"""AutoGen's event log (autogen_core.EVENT_LOGGER_NAME through a FileHandler) and files read by content, whatever their name.

The lines here have the shapes AutoGen 0.7.5 writes (see autogen_event_log_producer.py, which the slow test
in test_autogen.py runs for real): `Message` events whose payload is what the runtime passed, `LLMCall`,
`ToolCall` and `MessageHandlerException` events, and the model clients' plain warnings.
"""

import json
from datetime import date

from eval_pipeline.episodes.adapters.autogen_events import NAME
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes

DAY = date(2026, 11, 5)
TEAM = "7471c6c2"
OUTPUT_TOPIC = f"output_topic_{TEAM}/{TEAM}"
MANAGER = f"RoundRobinGroupChatManager_{TEAM}/{TEAM}"
PREFIX = "2026-11-05 09:00:{:06.3f} - autogen_core.events - {} - "


def message(payload, receiver, sender=None, kind="PUBLISH", stage="SEND") -> dict:
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {"payload": text, "sender": sender, "receiver": receiver, "kind": f"MessageKind.{kind}",
            "delivery_stage": f"DeliveryStage.{stage}", "type": "Message"}  # fmt: skip


def agentchat(kind, source, content, second, usage=None) -> dict:
    return {"id": f"{source}-{second}", "source": source, "models_usage": usage, "metadata": {},
            "created_at": f"2026-11-05T10:00:{second:02d}.250000Z", "content": content, "type": kind}  # fmt: skip


def published(event: dict) -> dict:
    return message({"message": event}, OUTPUT_TOPIC, sender=f"{event['source']}_{TEAM}/{TEAM}")


def llm_call(agent: str | None, model: str, text: str, prompt: int, completion: int, **response) -> dict:
    """As AutoGen's OpenAI client logs a call: the messages sent, the ChatCompletion, its usage."""
    answer = {"id": response.pop("id", "chatcmpl-1"), "model": model,
              "choices": [{"message": {"content": text, "tool_calls": response.pop("tool_calls", None)}}]}  # fmt: skip
    return {"type": "LLMCall", "messages": response.pop("messages", []), "response": answer, "prompt_tokens": prompt,
            "completion_tokens": completion, "agent_id": agent and f"{agent}_{TEAM}/{TEAM}"}  # fmt: skip


def tool_call(city: str, agent: str | None, result: str = '{"temp_c": 4}') -> dict:
    """As a tool logs its successful call."""
    return {"type": "ToolCall", "tool_name": "get_weather", "arguments": {"city": city}, "result": result, "agent_id": agent}


def team_run(city: str, start: int) -> list[dict]:
    """One task of a planner (with a tool) and writer team, as the event logger records it."""
    task = agentchat("TextMessage", "user", f"Weather in {city}?", start)
    call = {"id": f"call-{city}", "arguments": json.dumps({"city": city}), "name": "get_weather"}
    result = {"content": '{"temp_c": 4}', "name": "get_weather", "call_id": f"call-{city}", "is_error": False}
    return [
        message({"messages": [task], "output_task_messages": True}, MANAGER, kind="DIRECT"),  # routing
        message({"messages": [task]}, OUTPUT_TOPIC, sender=MANAGER),  # the task, as run_stream yields it
        llm_call("planner", "gpt-4o", "", 30, 6),
        published(agentchat("ToolCallRequestEvent", "planner", [call], start + 1, {"prompt_tokens": 30, "completion_tokens": 6})),
        tool_call(city, f"planner_{TEAM}/{TEAM}"),
        published(agentchat("ToolCallExecutionEvent", "planner", [result], start + 2)),
        message({"message": "delivered"}, None, sender=f"planner_{TEAM}/{TEAM}", stage="DELIVER"),  # routing
        llm_call("writer", "gpt-4o-mini", f"{city}: 4 C.", 50, 9),
        published(agentchat("TextMessage", "writer", f"{city}: 4 C.", start + 4, {"prompt_tokens": 50, "completion_tokens": 9})),
        message("Message could not be serialized", OUTPUT_TOPIC, sender=MANAGER),  # the termination
    ]


def write(path, lines: list) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))


def loaded(tmp_path, source: FileSource, day: date = DAY) -> tuple[Warehouse, object]:
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    return warehouse, load_episodes(warehouse, day, lambda: source.records_for(day, undated_day=day))


def query(warehouse: Warehouse, sql: str) -> list[tuple]:
    with warehouse.connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_team_logged_with_the_default_formatter_is_read_from_event_txt_and_its_bad_lines_quarantined(tmp_path):
    lines = team_run("Oslo", 0) + team_run("Bergen", 10)
    lines[4:4] = [
        '{"payload": "{\\"message\\": {\\"id\\"',  # cut short, as a crash leaves a line
        {"type": "LLMCall", "agent_id": None},  # no response
        "tool_choice parameter specified but is ignored in replay mode",  # a model client's warning: read, no event
        "id='1' source='planner' models_usage=None metadata={} type='ToolCallExecutionEvent'",  # autogen_agentchat's repr
    ]
    path = tmp_path / "src" / "run_001" / "event.txt"
    write(path, lines)
    source = FileSource(path.parent.parent, tmp_path / "index.json")
    assert set(source.refresh_index().files[str(path)].days) == {DAY}
    warehouse, counts = loaded(tmp_path, source)

    assert (counts.episodes, counts.quarantined, counts.records_read) == (2, 3, 24)
    assert query(warehouse, "SELECT locator, reason FROM quarantine ORDER BY locator") == [
        (f"{path}:5", f"{NAME}: invalid JSON: Unterminated string starting at at line 1 column 13"),
        (f"{path}:6", f"{NAME}: not an AutoGen event-logger event (a `type` of Message, MessageDropped, "
                      "MessageHandlerException, AgentConstructionException, LLMCall, LLMStreamStart, LLMStreamEnd, ToolCall, "
                      "with its fields)"),
        (f"{path}:8", f"{NAME}: not a JSON event (text after the JSON object); autogen_core's EVENT_LOGGER_NAME writes JSON"),
    ]  # fmt: skip
    episodes = query(
        warehouse,
        "SELECT episode_id, agent_id, status, tools, total_tokens, final_output, total_duration_ms, source_records, "
        "CAST(metadata -> '$.agents' AS VARCHAR[]) FROM episodes ORDER BY started_at",
    )
    # the episode id is the task message's own: event.txt of run_002 would not collide
    assert episodes == [
        ("event:user-0", "event", "success", ["get_weather"], 95, "Oslo: 4 C.", 4000.0, 11, ["planner", "writer"]),
        ("event:user-10", "event", "success", ["get_weather"], 95, "Bergen: 4 C.", 4000.0, 10, ["planner", "writer"]),
    ]  # every line read is some episode's or quarantined: 11 + 10 + 3 = 24
    assert len(path.read_text().splitlines()) == 24
    columns = "step_type, tool_name, model, agent, tokens"
    steps = query(warehouse, f"SELECT {columns} FROM episode_steps WHERE episode_id = 'event:user-0' ORDER BY step_index")
    assert steps == [
        ("llm_call", None, "gpt-4o", "planner", 36),  # the model its logged LLM call answered with
        ("tool_call", "get_weather", None, "planner", None),
        ("tool_result", "get_weather", None, "planner", None),
        ("llm_call", None, "gpt-4o-mini", "writer", 59),
    ]  # fmt: skip


def test_an_agent_on_its_own_is_read_from_its_llm_and_tool_calls_and_timed_by_the_formatters_clock(tmp_path):
    """No team, no runtime: only the model client's LLMCall and the tool's ToolCall events are logged."""
    ask = {"role": "user", "content": "Weather in Oslo?"}
    calls = [{"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]
    answered = [ask, {"role": "assistant", "content": None}, {"role": "tool", "content": "4 C"}]
    events = [
        (0.1, "INFO", llm_call(None, "gpt-4o-mini", None, 40, 12, id="chatcmpl-a1", messages=[ask], tool_calls=calls)),
        (0.9, "INFO", tool_call("Oslo", None, result="4 C")),
        (1.5, "ERROR", "Retrying the model after a timeout"),
        (2.6, "INFO", llm_call(None, "gpt-4o-mini", "It is 4 C.", 60, 5, id="chatcmpl-a2", messages=answered)),
        (9.0, "INFO", llm_call(None, "gpt-4o-mini", "Sunny.", 20, 2, id="chatcmpl-b1",
                               messages=[{"role": "user", "content": "And Bergen?"}])),
    ]  # fmt: skip
    path = tmp_path / "src" / "assistant.log"
    write(path, [PREFIX.format(at, level) + (e if isinstance(e, str) else json.dumps(e)) for at, level, e in events])
    warehouse, counts = loaded(tmp_path, FileSource(path.parent, tmp_path / "index.json"))

    assert (counts.episodes, counts.quarantined) == (2, 0)
    columns = "episode_id, status, tools, total_tokens, final_output, total_duration_ms, error_steps"
    assert query(warehouse, f"SELECT {columns} FROM episodes ORDER BY 1") == [
        ("assistant:chatcmpl-a1", "success", ["get_weather"], 117, "It is 4 C.", 2500.0, 1),  # the ERROR line: an error step
        ("assistant:chatcmpl-b1", "success", [], 22, "Sunny.", 0.0, 0),  # a new task: a run of its own
    ]  # fmt: skip
    steps = query(warehouse, "SELECT step_type, input, output FROM episode_steps WHERE episode_id LIKE '%a1' ORDER BY step_index")
    assert steps == [
        ("llm_call", "Weather in Oslo?", "call get_weather"),
        ("tool_call", '{"city": "Oslo"}', None),
        ("tool_result", None, "4 C"),
        ("llm_call", None, "It is 4 C."),
        ("error", None, None),
    ]


def test_an_agents_exception_fails_its_teams_run(tmp_path):
    failed = {"payload": "{}", "handling_agent": f"planner_{TEAM}/{TEAM}", "exception": "ValueError: no station",
              "type": "MessageHandlerException"}  # fmt: skip
    lines = [*team_run("Oslo", 0)[:4], failed]
    path = tmp_path / "src" / "event.txt"
    write(path, lines)
    warehouse, _ = loaded(tmp_path, FileSource(path.parent, tmp_path / "index.json"))
    assert query(warehouse, "SELECT status, error_steps FROM episodes") == [("failure", 1)]
    assert query(warehouse, "SELECT agent, error FROM episode_steps WHERE step_type = 'error'") == [
        ("planner", "ValueError: no station")
    ]


def test_every_file_is_read_by_its_content_and_one_of_no_known_format_is_one_quarantined_record(tmp_path):
    root = tmp_path / "src"
    episode = {"episode_id": "ep-1", "agent_id": "bot", "status": "success", "started_at": "2026-11-05T08:00:00Z", "steps": []}
    write(root / "pretty.json", [json.dumps(episode, indent=2)])  # json.dump(..., indent=2): one record, not eleven lines
    write(
        root / "bracketed.txt", ["[2026-11-05 09:00:00,000] INFO " + json.dumps(llm_call(None, "m", "Hi.", 1, 1))]
    )  # no JSON array
    write(root / "notes.md", ["# Notes", "these are no episodes"])
    write(
        root / "warned.txt",
        ["WARNING - Token count has been done only on string content", json.dumps(llm_call(None, "m", "Hey.", 1, 1))],
    )
    write(root / ".hidden" / "ignored.jsonl", [json.dumps({**episode, "episode_id": "hidden"})])
    (root / "collector.jsonl.lock").write_text("")
    source = FileSource(root, tmp_path / "index.json", formats={"warned.txt": NAME})  # its first line alone tells nothing
    assert sorted(path.removeprefix(f"{root}/") for path in source.refresh_index().files) == [
        "bracketed.txt", "notes.md", "pretty.json", "warned.txt"
    ]  # fmt: skip
    warehouse, _ = loaded(tmp_path, source)
    assert query(warehouse, "SELECT episode_id FROM episodes ORDER BY 1") == [
        ("bracketed:chatcmpl-1",),
        ("ep-1",),
        ("warned:chatcmpl-1",),
    ]
    [(locator, reason)] = query(warehouse, "SELECT locator, reason FROM quarantine")
    assert locator == f"{root}/notes.md:1" and reason.startswith("no known format: the first record is neither an episode nor ")


def test_files_named_alike_in_different_folders_are_the_agents_the_config_names(tmp_path):
    """agent-eval keeps every run as event.txt in a folder of its own; [sources] agents names them by glob."""
    for folder, city in (("baseline", "Oslo"), ("experiment", "Oslo")):
        write(tmp_path / "src" / folder / "event.txt", team_run(city, 0 if folder == "baseline" else 20))
    agents = {"baseline/*": "weather-v1", "experiment/*": "weather-v2"}
    warehouse, _ = loaded(tmp_path, FileSource(tmp_path / "src", tmp_path / "index.json", agents=agents))
    runs = query(warehouse, "SELECT agent_id, task_id FROM episodes ORDER BY agent_id")
    assert [agent for agent, _ in runs] == ["weather-v1", "weather-v2"]
    assert runs[0][1] == runs[1][1]  # the same first message is the same task, whichever agent ran it
