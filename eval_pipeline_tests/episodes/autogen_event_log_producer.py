"""A real AutoGen run logged by AutoGen's own event logger, run with `.venv-autogen/bin/python`.

    .venv-autogen/bin/python eval_pipeline_tests/episodes/autogen_event_log_producer.py OUT_DIR

`logging.getLogger(autogen_core.EVENT_LOGGER_NAME)` gets a `FileHandler` to `OUT_DIR/event.txt` with a
typical formatter (`asctime - name - level - message`, in UTC), as users set it up; nothing else is saved.
Logged there, in this order:
- the weather team of `autogen_producer.py` (a `RoundRobinGroupChat`: planner with a tool, writer) run on
  two tasks with `team.run`; the second task's tool fails;
- one `AssistantAgent` on its own (no runtime, so no messages are logged for it) calling the tool twice at
  once and reflecting on the results.
The replayed model clients log each call as AutoGen's OpenAI client does (`LLMCallEvent`: the messages
sent, the response with its model, the usage); the tools log their own successful calls (`ToolCallEvent`).
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from pathlib import Path

from autogen_agentchat.agents import AssistantAgent
from autogen_core import EVENT_LOGGER_NAME
from autogen_core.logging import LLMCallEvent
from autogen_core.models import CreateResult
from autogen_ext.models.replay import ReplayChatCompletionClient
from autogen_producer import MODEL_INFO, get_weather, team_turns, tool_calls, weather_team

MODEL = "gpt-4o-mini"  # the model the replayed answers stand for, as an OpenAI response names it
FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"


class LoggedReplayClient(ReplayChatCompletionClient):
    """Replayed answers, each call logged as `OpenAIChatCompletionClient.create` logs it."""

    async def create(self, messages, **kwargs) -> CreateResult:
        result = await super().create(messages, **kwargs)
        logging.getLogger(EVENT_LOGGER_NAME).info(
            LLMCallEvent(
                messages=[message.model_dump(mode="json") for message in messages],
                response={"model": MODEL, **result.model_dump(mode="json")},
                prompt_tokens=result.usage.prompt_tokens,
                completion_tokens=result.usage.completion_tokens,
            )
        )
        return result


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(out / "event.txt")
    formatter = logging.Formatter(FORMAT)
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    logger = logging.getLogger(EVENT_LOGGER_NAME)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)

    team = weather_team(*team_turns(), client=LoggedReplayClient)
    for task in ("Weather in Oslo?", "Weather in Atlantis?"):
        await team.run(task=task)
        await team.reset()

    assistant = AssistantAgent(
        "assistant",
        model_client=LoggedReplayClient(
            [tool_calls(("call_1", "Bergen"), ("call_2", "Tromsø"), prompt_tokens=40, completion_tokens=12),
             "Bergen and Tromsø are both at 4 C."],  # a plain string: its usage counted in words
            model_info=MODEL_INFO,
        ),
        tools=[get_weather],
        reflect_on_tool_use=True,
    )  # fmt: skip
    await assistant.run(task="Weather in Bergen and Tromsø?")
    handler.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1])))
