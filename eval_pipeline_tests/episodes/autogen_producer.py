"""A real AutoGen AgentChat producer, run with `.venv-autogen/bin/python` (AutoGen's protobuf pin excludes it from .venv).

    .venv-autogen/bin/python eval_pipeline_tests/episodes/autogen_producer.py OUT_DIR

Each agent's model is AutoGen's own `ReplayChatCompletionClient`; the tools are real functions the
agents execute. The event logs are saved the ways users save them, one `model_dump(mode="json")` a line:
- `weather-team.jsonl`: a `RoundRobinGroupChat` (planner with a tool, writer) run on two tasks with
  `run_stream`, every item streamed saved, the `TaskResult` closing each run included; the second
  task's tool fails;
- `weather-assistant.jsonl`: one streaming `AssistantAgent` making two tool calls at once and
  reflecting on their results, every item of `run_stream` saved;
- `weather-results.jsonl`: the team's `TaskResult` of `await team.run(task=...)`, one a line.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import SourceMatchTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

MODEL_INFO = {"vision": False, "function_calling": True, "json_output": False, "family": "unknown", "structured_output": False}


async def get_weather(city: str) -> str:
    """The current weather in a city."""
    if city == "Atlantis":
        raise ValueError("no station in Atlantis")
    return json.dumps({"city": city, "temp_c": 4})


def tool_calls(*calls: tuple[str, str], prompt_tokens: int, completion_tokens: int) -> CreateResult:
    """A model turn asking for tools: (call id, city) each; its usage is reported as given."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name="get_weather", arguments=json.dumps({"city": city})) for call_id, city in calls],
        usage=RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        cached=False,
        thought="I should look the weather up.",
    )


def answer(text: str, prompt_tokens: int, completion_tokens: int) -> CreateResult:
    return CreateResult(
        finish_reason="stop",
        content=text,
        usage=RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=completion_tokens),
        cached=False,
    )


def weather_team(planner_turns: list, writer_turns: list, client=ReplayChatCompletionClient) -> RoundRobinGroupChat:
    planner = AssistantAgent(
        "planner",
        model_client=client(planner_turns, model_info=MODEL_INFO),
        tools=[get_weather],
        system_message="Look the weather up with your tool.",
    )
    writer = AssistantAgent(
        "writer",
        model_client=client(writer_turns, model_info=MODEL_INFO),
        system_message="Answer the user from the weather report.",
    )
    return RoundRobinGroupChat([planner, writer], termination_condition=SourceMatchTermination(["writer"]))


def team_turns() -> tuple[list, list]:
    planner = [
        tool_calls(("call_oslo", "Oslo"), prompt_tokens=30, completion_tokens=6),
        tool_calls(("call_atlantis", "Atlantis"), prompt_tokens=31, completion_tokens=7),
    ]
    writer = [answer("It is 4 C in Oslo.", 50, 9), answer("There is no weather station in Atlantis.", 52, 10)]
    return planner, writer


def save(lines: list, path: Path) -> None:
    path.write_text("".join(json.dumps(item.model_dump(mode="json")) + "\n" for item in lines))


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)

    team = weather_team(*team_turns())
    streamed = []
    for task in ("Weather in Oslo?", "Weather in Atlantis?"):
        streamed += [item async for item in team.run_stream(task=task)]
        await team.reset()
    save(streamed, out / "weather-team.jsonl")

    assistant = AssistantAgent(
        "assistant",
        model_client=ReplayChatCompletionClient(
            [tool_calls(("call_1", "Bergen"), ("call_2", "Tromsø"), prompt_tokens=40, completion_tokens=12),
             "Bergen and Tromsø are both at 4 C."],  # a plain string: streamed in chunks, its usage counted in words
            model_info=MODEL_INFO,
        ),
        tools=[get_weather],
        reflect_on_tool_use=True,
        model_client_stream=True,
    )  # fmt: skip
    save([item async for item in assistant.run_stream(task="Weather in Bergen and Tromsø?")], out / "weather-assistant.jsonl")

    team = weather_team(*team_turns())
    results = []
    for task in ("Weather in Oslo?", "Weather in Atlantis?"):
        results.append(await team.run(task=task))
        await team.reset()
    save(results, out / "weather-results.jsonl")


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
