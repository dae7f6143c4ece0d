"""A real LangGraph graph's `astream_events(version="v2")`, saved as users save it, scored end to end."""

import asyncio
import json

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.schemas import LangGraphEvent

pytestmark = pytest.mark.slow


def weather_graph():
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
    return graph.compile()


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
    assert quarantined["locator"].endswith("weather-broken.jsonl:2") and "without `event` and `run_id`" in quarantined["reason"]
