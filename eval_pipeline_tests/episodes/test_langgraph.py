"""A real LangGraph graph's `astream_events(version="v2")` and its checkpoints, saved as users save them, scored end to end."""

import asyncio
import json
from datetime import datetime

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.schemas import LangGraphCheckpoint, LangGraphEvent

pytestmark = pytest.mark.slow


def weather_graph(checkpointer=None):
    """A tiny tool-calling agent on a scripted chat model: ask, call get_weather, answer."""
    from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    @tool
    def get_weather(city: str) -> str:
        """Weather for a city."""
        return json.dumps({"city": city, "temp_c": 4})

    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(content="Checking.", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_1"}],
                      usage_metadata={"input_tokens": 20, "output_tokens": 5, "total_tokens": 25}),
            AIMessage(content="It is 4 C in Oslo.", usage_metadata={"input_tokens": 40, "output_tokens": 8, "total_tokens": 48}),
        ]
    )  # fmt: skip
    graph = StateGraph(MessagesState)
    graph.add_node("agent", lambda state: {"messages": [model.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([get_weather]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


async def events_of(graph, question: str) -> list[dict]:
    from langchain_core.messages import HumanMessage

    return [event async for event in graph.astream_events({"messages": [HumanMessage(question)]}, version="v2")]


def test_langgraph_event_dumps_are_evaluated_without_configuration(project_env, capsys):
    from langchain_core.load import dumpd

    tmp_path = project_env
    (tmp_path / "episodes").mkdir()
    dumped = asyncio.run(events_of(weather_graph(), "Weather in Oslo?"))
    (tmp_path / "episodes" / "weather-dumpd.json").write_text(json.dumps(dumpd(dumped)))  # a JSON list, dumpd messages
    plain = asyncio.run(events_of(weather_graph(), "Weather in Oslo?"))
    as_dicts = json.dumps({"events": plain}, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o))
    (tmp_path / "episodes" / "weather-plain.json").write_text(as_dicts)  # {"events": [...]}, model_dump() messages
    for event in json.loads(as_dicts)["events"] + json.loads(json.dumps(dumpd(dumped))):
        LangGraphEvent.model_validate(event)  # the real events fit the schema `eval-pipeline schemas` publishes
    (tmp_path / "episodes" / "weather-broken.jsonl").write_text(
        json.dumps({"event": "on_chain_start", "run_id": "r1", "data": {}}) + "\n" + json.dumps({"event": "on_tool_start"}) + "\n"
    )

    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    sql = "SELECT agent_id, status, tools, final_output, total_tokens, step_count FROM episodes ORDER BY agent_id"
    assert main(["query", sql, "--format", "json"]) == 0
    episodes = json.loads(capsys.readouterr().out)
    expected = {
        "status": "success",
        "tools": ["get_weather"],
        "final_output": "It is 4 C in Oslo.",
        "total_tokens": 73,
        "step_count": 4,
    }
    # the broken file's readable first event is a run of its own, without steps
    broken = {"agent_id": "weather-broken", "status": "success", "tools": [], "final_output": None, "total_tokens": 0}
    assert episodes == [
        {**broken, "step_count": 0},
        {"agent_id": "weather-dumpd", **expected},
        {"agent_id": "weather-plain", **expected},
    ]
    sql = "SELECT step_type, agent FROM episode_steps WHERE agent_id = 'weather-plain' ORDER BY step_index"
    assert main(["query", sql, "--format", "json"]) == 0
    assert [(s["step_type"], s["agent"]) for s in json.loads(capsys.readouterr().out)] == [
        ("llm_call", "agent"), ("tool_call", "tools"), ("tool_result", "tools"), ("llm_call", "agent"),
    ]  # the graph node that acted  # fmt: skip
    assert main(["query", "SELECT locator, reason FROM quarantine", "--format", "json"]) == 0
    [quarantined] = json.loads(capsys.readouterr().out)
    assert (
        quarantined["locator"].endswith("weather-broken.jsonl:2") and quarantined["reason"] == "langgraph: run_id: Field required"
    )


def failing_graph(checkpointer):
    """A graph whose model node raises: LangGraph keeps the error as a pending `__error__` write."""
    from langgraph.graph import START, MessagesState, StateGraph

    def model_down(state):
        raise RuntimeError("model gateway down")

    graph = StateGraph(MessagesState)
    graph.add_node("agent", model_down)
    graph.add_edge(START, "agent")
    return graph.compile(checkpointer=checkpointer)


def test_langgraph_checkpoints_are_scored_from_each_threads_latest_state(project_env, capsys):
    from langchain_core.load import dumpd
    from langchain_core.messages import HumanMessage
    from langgraph.checkpoint.memory import MemorySaver

    episodes = project_env / "episodes"
    episodes.mkdir()
    memory = MemorySaver()
    graph = weather_graph(memory)
    for thread in ("oslo-1", "oslo-2"):
        graph.invoke({"messages": [HumanMessage("Weather in Oslo?")]}, {"configurable": {"thread_id": thread}})
    with pytest.raises(RuntimeError, match="gateway down"):
        failing_graph(memory).invoke({"messages": [HumanMessage("Weather in Oslo?")]}, {"configurable": {"thread_id": "down"}})
    # MemorySaver's own CheckpointTuples, newest first, messages as dumpd, saved with an indent
    tuples = [t._asdict() for t in memory.list(None)]
    (episodes / "memory.json").write_text(json.dumps(dumpd(tuples), indent=2))
    # one thread's history of StateSnapshots, messages as model_dump(), a JSON line each; and a broken line
    history = [s._asdict() for s in graph.get_state_history({"configurable": {"thread_id": "oslo-1"}})]
    dumped = [json.dumps(s, default=lambda o: o.model_dump() if hasattr(o, "model_dump") else str(o)) for s in history]
    (episodes / "history.jsonl").write_text("\n".join([*dumped, '{"channel_values": {"messages": "none"}}']) + "\n")
    # agent-eval's shape, oldest first, as its README shows it
    agent_eval = {"checkpoints": [
        {"checkpoint_id": "cp-001", "timestamp": "2026-11-05T10:00:00Z", "metadata": {"step": 0},
         "channel_values": {"messages": [{"role": "user", "content": "Weather in Oslo?"}]}},
        {"checkpoint_id": "cp-002", "timestamp": "2026-11-05T10:00:03Z", "metadata": {"step": 2},
         "channel_values": {"messages": [
             {"role": "user", "content": "Weather in Oslo?"},
             {"role": "assistant", "content": "", "tool_calls": [{"name": "get_weather", "args": {"city": "Oslo"}}]},
             {"role": "tool", "name": "get_weather", "content": '{"temp_c": 4}'},
             {"role": "assistant", "content": "It is 4 C in Oslo."}]}},
    ]}  # fmt: skip
    (episodes / "agent-eval.json").write_text(json.dumps(agent_eval, indent=2))

    for record in [*json.loads(json.dumps(dumpd(tuples))), *map(json.loads, dumped), agent_eval]:
        LangGraphCheckpoint.model_validate(record)  # the real checkpoints fit the schema `eval-pipeline schemas` publishes
    today = {datetime.fromisoformat(t["checkpoint"]["ts"]).date() for t in tuples}
    for day in sorted(today | {datetime(2026, 11, 5).date()}):
        assert main(["run", "--date", day.isoformat(), "--fail-on", "never"]) == 0
    capsys.readouterr()

    def query(sql: str) -> list[dict]:
        assert main(["query", sql, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    columns = "episode_id, status, tools, final_output, total_tokens, step_count, error_steps, total_duration_ms > 0 AS timed"
    found = {row.pop("episode_id"): row for row in query(f"SELECT {columns} FROM episodes")}
    oslo = {"status": "success", "tools": ["get_weather"], "final_output": "It is 4 C in Oslo.", "total_tokens": 73,
            "step_count": 4, "error_steps": 0, "timed": True}  # fmt: skip
    assert found == {
        "memory:oslo-1": oslo,
        "memory:oslo-2": oslo,
        "memory:down": {"status": "failure", "tools": [], "final_output": None, "total_tokens": 0, "step_count": 1,
                        "error_steps": 1, "timed": True},  # only the question, and the error the model node raised
        "history:oslo-1": oslo,
        "agent-eval:agent-eval:cp-002": {**oslo, "total_tokens": 0},  # 3 s from its first checkpoint to its latest
    }  # fmt: skip
    assert query("SELECT total_duration_ms FROM episodes WHERE agent_id = 'agent-eval'") == [{"total_duration_ms": 3000.0}]
    [broken] = query("SELECT locator, reason FROM quarantine")
    assert (
        broken["locator"].endswith(f"history.jsonl:{len(dumped) + 1}")
        and broken["reason"] == "langgraph-checkpoint: `messages` is not a list"
    )
    # two files of the same task compare task by task
    assert main(["compare", "--a", "agent=memory", "--b", "agent=history", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["meta"]["tasks_in_common"] == 1
