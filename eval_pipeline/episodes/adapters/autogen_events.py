"""AutoGen's event log as written: `logging.getLogger(autogen_core.EVENT_LOGGER_NAME)` given a `FileHandler`
(`event.txt`, or any name: the format is told by content).

Checked against autogen-core / autogen-agentchat 0.7.5 (the tests log a real team). Each line is one event
whose `str()` is JSON: bare under the handler's default formatter, or after a formatter's prefix
(`2026-11-05 10:00:00,123 - autogen_core.events - INFO - {...}`), whose time is used where the events carry
none (UTC unless it names an offset). The events:

- `Message`: the runtime passing a message (`payload`, its JSON). A `GroupChatStart` (`{"messages": [the
  task]}`, sent to the team's manager) begins a run of that team, and what the team publishes to its output
  topic (`output_topic_<team>`) is what its `run_stream` yields: each `GroupChatMessage` (`{"message": event}`)
  is one event of the run, read as
  the AgentChat adapter reads them (`autogen.py`: the agent of every step, tool calls paired with their
  results, tokens from `models_usage`, times from `created_at`). Other deliveries repeat these.
- `LLMCall` / `LLMStreamEnd` (model clients): in a team's run each names the model of its agent's next LLM
  step. An agent run on its own has no runtime, so no messages: there each is an LLM call (the `messages`
  sent, the `response`, `prompt_tokens`, `completion_tokens`), and a new first user message begins a run.
- `ToolCall` (tools, on success): outside a team a tool call and its result; a team's own events repeat it.
- `MessageHandlerException` / `AgentConstructionException`: an error step; the run failed.

The logger also carries plain text (model clients' warnings): such a line is read, not an event; at ERROR
it is an error step of the run it falls in. Agents are named from their ids (`planner_<team>/<team>` is the
team's planner; an agent on its own by the `source` of its earlier turns), and events are grouped by team,
so teams logging to one file at once stay apart. A run's episode id is the id of its task message (or of
its first model response), so `run_001/event.txt` and `run_002/event.txt` never collide.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from eval_pipeline.episodes.adapters import autogen
from eval_pipeline.episodes.adapters.base import (
    Count,
    Open,
    Rejected,
    as_text,
    log_message,
    moment,
    rejection,
    timed,
    usage,
)
from eval_pipeline.episodes.records import RawRecord

NAME = "autogen-events"
KINDS = {
    "Message": "payload", "MessageDropped": "payload", "MessageHandlerException": "exception",
    "AgentConstructionException": "exception", "LLMCall": "response", "LLMStreamStart": "messages",
    "LLMStreamEnd": "response", "ToolCall": "tool_name",
}  # fmt: skip  # each event's `type` -> a field it always carries
LLM_CALLS = {"LLMCall", "LLMStreamEnd"}
FAILURES = {"MessageHandlerException", "AgentConstructionException"}
ACTS = LLM_CALLS | FAILURES | {"ToolCall"}  # what an agent did, not the runtime's routing
OUTPUT_TOPIC = "output_topic_"
_LOGGED_AT = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d+)?(?:Z|[+-]\d{2}:?\d{2})?")
_ERROR_LEVEL = re.compile(r"\b(?:ERROR|CRITICAL)\b")


class ModelChoice(Open):
    message: dict[str, Any] | None = None


class ModelResponse(Open):
    """What a model client logged as its answer: OpenAI's ChatCompletion, AutoGen's CreateResult, Anthropic's."""

    model: str | None = None
    choices: list[ModelChoice] | None = None
    content: str | list[Any] | None = None


class AutoGenLogEvent(Open):
    """One event of AutoGen's event logger (`autogen_core.EVENT_LOGGER_NAME`) as a FileHandler writes it: a
    line of JSON, bare or after the formatter's prefix (`2026-11-05 10:00:00,123 - autogen_core.events - INFO - `)."""

    type: Literal[tuple(KINDS)]  # type: ignore[valid-type]
    payload: str | None = Field(None, description="Message: what the runtime passed, as JSON")
    sender: str | None = None
    receiver: str | None = Field(None, description="Message: `output_topic_<team>/<team>` carries what run_stream yields")
    kind: str | None = Field(None, description="Message: MessageKind.DIRECT, .PUBLISH or .RESPOND")
    delivery_stage: str | None = Field(None, description="Message: DeliveryStage.SEND or .DELIVER")
    agent_id: str | None = Field(None, description="`<agent>_<team>/<team>` in a team; null for an agent on its own")
    handling_agent: str | None = None
    messages: list[dict[str, Any]] | None = Field(None, description="LLMCall: the messages sent")
    response: ModelResponse | None = Field(None, description="LLMCall: the model's response, with its `model`")
    prompt_tokens: Count | None = None
    completion_tokens: Count | None = None
    tool_name: str | None = Field(None, description="ToolCall, logged when a tool succeeded")
    arguments: dict[str, Any] | str | None = None
    result: str | None = None
    exception: str | None = Field(None, description="MessageHandlerException, AgentConstructionException: the run failed")


def detect(record: Any) -> bool:
    return isinstance(record, dict) and isinstance(record.get("type"), str) and KINDS.get(record["type"], "") in record


@dataclass(frozen=True)
class _Line:
    event: dict | None  # None: a plain text message of the logger
    logged_at: datetime | None  # the formatter's time, where it wrote one
    text: str


def _read(raw: str) -> _Line:
    """A line checked whole: an event of the logger (and what a team published in it), or its plain text."""
    if "{" not in raw:
        try:
            json.loads(raw)  # NaN and Infinity too: JSON to Python, though not to the warehouse
        except ValueError:
            event, prefix = None, raw
        except RecursionError:
            raise Rejected("nested too deeply") from None
        else:  # JSON, yet no object: neither an event nor the logger's text
            raise Rejected(f"not an event: {raw.strip()[:80]}")
    else:
        try:
            event, prefix = log_message(raw)
        except json.JSONDecodeError:
            raise
        except ValueError as exc:  # as autogen_agentchat's logger writes its events: Python reprs
            raise Rejected(f"not a JSON event ({exc}); autogen_core's EVENT_LOGGER_NAME writes JSON") from None
        if not detect(event):
            raise Rejected(f"not an AutoGen event-logger event (a `type` of {', '.join(KINDS)}, with its fields)")
        AutoGenLogEvent.model_validate(event)
        _check_published(event)
    stamp = _LOGGED_AT.search(prefix)
    return _Line(event, moment(stamp.group().replace(",", ".")) if stamp else None, raw.strip())


def _payload(event: dict) -> Any:
    """A message's payload as JSON; AutoGen writes "Message could not be serialized" for some."""
    try:
        return json.loads(event.get("payload") or "")
    except ValueError:
        return None


def _started(event: dict) -> list[dict] | None:
    """The task messages of a GroupChatStart (sent to the team's manager, then published to its topics)."""
    payload = _payload(event) if event["type"] == "Message" else None
    messages = payload.get("messages") if isinstance(payload, dict) else None
    return [message for message in messages if isinstance(message, dict)] if isinstance(messages, list) else None


def _published(event: dict) -> dict:
    """What a team published to its output topic (a GroupChatStart or GroupChatMessage), else {}."""
    if event["type"] != "Message" or not str(event.get("receiver") or "").startswith(OUTPUT_TOPIC):
        return {}
    if (event.get("kind"), event.get("delivery_stage")) != ("MessageKind.PUBLISH", "DeliveryStage.SEND"):
        return {}  # its deliveries repeat it
    payload = _payload(event)
    return payload if isinstance(payload, dict) else {}


def _check_published(event: dict) -> None:
    """What a team published is events of its run: a GroupChatMessage's `message`, a GroupChatStart's `messages`."""
    published = _published(event)
    if "message" in published:
        autogen.checked_event(published["message"])
    elif "messages" in published:
        if not isinstance(published["messages"], list):
            raise Rejected("a GroupChatStart whose messages are no list")
        for message in published["messages"]:
            autogen.checked_event(message)


def days(raw: str) -> set[date]:
    """The UTC days of a line: its published events' `created_at`, else the formatter's time."""
    try:
        line = _read(raw)
    except ValueError:
        return set()
    published = _published(line.event) if line.event else {}
    events = [published["message"]] if isinstance(published.get("message"), dict) else published.get("messages") or []
    stamps = [at for e in events if isinstance(e, dict) and (at := moment(e.get("created_at")))]
    return {at.date() for at in stamps or ([line.logged_at] if line.logged_at else [])}


def _team_and_agent(ident: Any) -> tuple[str | None, str | None]:
    """An agent or topic id `type/key` as (its team, its name): in a team the key is the team's id and the
    type `<name>_<team>`; an agent outside a runtime has no id."""
    if not isinstance(ident, str) or "/" not in ident:
        return None, None
    kind, _, key = ident.partition("/")
    return key, kind.removesuffix(f"_{key}")


def _team(event: dict) -> str | None:
    ids = (event.get("receiver"), event.get("sender")) if event["type"] == "Message" else (event.get("agent_id"),)
    return next((team for ident in (*ids, event.get("handling_agent")) if (team := _team_and_agent(ident)[0])), None)


def _agent(event: dict) -> str | None:
    return _team_and_agent(event.get("agent_id") or event.get("handling_agent"))[1]


def _messages(llm_call: dict) -> list[dict]:
    return [message for message in llm_call.get("messages") or [] if isinstance(message, dict)]


def _users(llm_call: dict) -> list[str | None]:
    """What the user said in the messages an LLM call was sent (provider messages, or AutoGen's own)."""
    said = [
        m for m in _messages(llm_call) if m.get("role") == "user" or (m.get("type"), m.get("source")) == ("UserMessage", "user")
    ]
    return [as_text(message.get("content")) for message in said]


def _answer(response: dict) -> tuple[str | None, list[str]]:
    """A model's text and the tools it called: OpenAI's ChatCompletion, AutoGen's CreateResult (a stream's
    end) or Anthropic's content blocks."""
    choices = response.get("choices")
    message = (choices[0].get("message") or {}) if isinstance(choices, list) and choices else response
    content = message.get("content")
    calls = [(call.get("function") or call).get("name") for call in message.get("tool_calls") or []]
    if isinstance(content, list):
        parts = [part for part in content if isinstance(part, dict)]
        calls += [part.get("name") for part in parts if part.get("type") == "tool_use" or "arguments" in part]
        content = "".join(part.get("text", "") for part in parts if part.get("type") == "text") or None
    return as_text(content), [str(name) for name in calls]


@dataclass
class _Run:
    first: RawRecord
    task_id: str | None = None  # the id of what began it: its task message, or its first model response
    opening: str | None = None  # outside a team: the first thing the user said in its LLM calls
    events: list[dict] = field(default_factory=list)  # what the team published, as run_stream yields it
    calls: list[dict] = field(default_factory=list)  # LLMCall / LLMStreamEnd / ToolCall events, in order
    errors: list[tuple[str | None, str, bool]] = field(default_factory=list)  # agent, what, whether the run failed
    logged: list[datetime] = field(default_factory=list)
    lines: int = 0


def _calls_episode(run: _Run, episode_id: str, agent_id: str, day: date) -> dict:
    """A run outside a team: its LLM calls and tool calls, as the model clients and tools logged them."""
    own_turns = [m.get("source") for call in run.calls for m in _messages(call) if m.get("type") == "AssistantMessage"]
    who = {"agent": next((source for source in own_turns if source), None)}
    steps: list[dict] = []
    asked, final = None, None
    for call in run.calls:
        if call["type"] == "ToolCall":
            name, arguments = call.get("tool_name"), call.get("arguments")
            given = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            steps.append({"step_type": "tool_call", "tool_name": name, "input_summary": given, "metadata": who})
            steps.append(
                {"step_type": "tool_result", "tool_name": name, "output_summary": as_text(call.get("result")), "metadata": who}
            )
            continue
        question = (_users(call) or [None])[-1]
        response: dict = call["response"] if isinstance(call.get("response"), dict) else {}
        text, tools = _answer(response)
        prompt, completion = int(call.get("prompt_tokens") or 0), int(call.get("completion_tokens") or 0)
        steps.append(
            {"step_type": "llm_call", "model": response.get("model"), "input_summary": question if question != asked else None,
             "output_summary": f"call {', '.join(tools)}" if tools else text, "tokens": prompt + completion,
             "metadata": {**who, **usage(prompt, completion)}}
        )  # fmt: skip
        asked, final = question, final if tools else text
    return {
        "episode_id": episode_id,
        "agent_id": agent_id,
        "status": "success",
        **timed(run.logged, day),
        "steps": [{"step_index": i, **step} for i, step in enumerate(steps)],
        "metadata": {**({"final_output": final} if final else {}), **({"agents": [who["agent"]]} if who["agent"] else {})},
    }


def _name_models(steps: list[dict], calls: list[dict]) -> None:
    """Each agent's LLM steps get the models its logged LLM calls answered with, in order."""
    models: dict[str | None, deque] = defaultdict(deque)
    for call in calls:
        if call["type"] in LLM_CALLS:
            models[_agent(call)].append((call.get("response") or {}).get("model"))
    for step in steps:
        queue = models.get(step.get("metadata", {}).get("agent"))
        if step["step_type"] == "llm_call" and queue:
            step["model"] = queue.popleft()


def _episode(run: _Run, number: int, agent_id: str, day: date) -> dict:
    episode_id = f"{agent_id}:{run.task_id or f'{Path(run.first.source).stem}:{number}'}"
    if run.events:
        episode = autogen.run_episode(run.events, None, episode_id, agent_id, day)
        _name_models(episode["steps"], run.calls)
        if "ended_at" not in episode:  # events without created_at: the log's own times
            episode.update(timed(run.logged, day))
    else:
        episode = _calls_episode(run, episode_id, agent_id, day)
    for agent, what, _ in run.errors:
        episode["steps"].append(
            {"step_index": len(episode["steps"]), "step_type": "error", "error": what, "metadata": {"agent": agent}}
        )
    episode["status"] = "failure" if any(failed for *_, failed in run.errors) else episode["status"]
    episode["metadata"] = {**episode["metadata"], "format": NAME}
    return episode


def convert(records: Iterator[RawRecord], agent_id: str, day: date, **options: Any) -> Iterator[RawRecord]:
    """Lines in file order, grouped by team; a team's run lasts from its task to its next task."""
    runs: list[_Run] = []
    current: dict[str | None, _Run] = {}  # by team (None: agents outside a team)
    unclaimed: dict[str | None, int] = defaultdict(int)  # a team's routing lines before its first task
    latest: _Run | None = None  # the run the last event went to

    def begin(team: str | None, record: RawRecord) -> _Run:
        run = current[team] = _Run(record, lines=unclaimed.pop(team, 0))
        runs.append(run)
        return run

    for record in records:
        try:
            line = _read(record.raw)
        except ValueError as exc:
            yield rejection(record, day, NAME, exc)
            continue
        if line.event is None:  # a plain message: read, and an error step where it says ERROR
            if latest:
                latest.lines += 1
                latest.errors += [(None, line.text, False)] if _ERROR_LEVEL.search(line.text) else []
            else:
                unclaimed[None] += 1
            continue
        event, team, kind = line.event, _team(line.event), line.event["type"]
        published, task = _published(event), _started(event)
        task_id = next((str(message["id"]) for message in task or [] if message.get("id")), None)
        if task is not None and (team not in current or current[team].task_id != task_id):  # a team given a task
            run = begin(team, record)
            run.events, run.task_id = task, task_id
        elif (
            kind in LLM_CALLS and team is None and (team not in current or current[team].opening != (_users(event) or [None])[0])
        ):
            run = begin(team, record)  # an agent on its own, given a new task
            run.opening, run.task_id = (_users(event) or [None])[0], (event.get("response") or {}).get("id")
        elif team in current:
            run = current[team]
        elif isinstance(published.get("message"), dict) or kind in ACTS:
            run = begin(team, record)
        else:
            unclaimed[team] += 1
            continue
        latest = run
        run.lines += 1
        run.logged += [line.logged_at] if line.logged_at else []
        if isinstance(published.get("message"), dict):
            run.events.append(published["message"])
        elif kind in FAILURES:
            run.errors.append((_agent(event), str(event.get("exception")), True))
        elif kind in ACTS:
            run.calls.append(event)
    for number, run in enumerate(runs, 1):
        episode = _episode(run, number, agent_id, day)
        yield RawRecord(run.first.source, f"{run.first.locator} run {number}", json.dumps(episode), day, source_records=run.lines)
