"""OpenTelemetry traces as OTLP JSON (`resourceSpans` → `scopeSpans` → `spans`): one trace, one episode.

Both the GenAI semantic conventions (`gen_ai.operation.name` chat / text_completion /
generate_content / execute_tool / invoke_agent / create_agent, `gen_ai.request.model`,
`gen_ai.usage.*`, `gen_ai.tool.name`) and OpenInference (`openinference.span.kind` LLM / TOOL /
AGENT / CHAIN, `llm.model_name`, `llm.token_count.*`, `tool.name`, `input.value` /
`output.value`) are read. A trace's spans may be spread over many export batches, so a file is
converted whole: spans are grouped by trace id, ordered by start time. The episode's duration
is the trace's wall time (first start to last end), never a sum of nested spans. The files of a day are
converted together (`JOINS_FILES`), so a trace exported over several files is one episode.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import Any

from eval_pipeline.episodes.adapters.base import MAX_EPOCH_MS, Rejected, as_text, parse_object, rejected, rejection, usage
from eval_pipeline.episodes.collector import check_shape
from eval_pipeline.episodes.records import RawRecord

NAME = "otlp-json"
# A trace's spans may be in several files: the collector's day files (a trace running past midnight UTC), an
# exporter's rotated ones. The source converts the files of a day together, so each trace is whole.
JOINS_FILES = True
MAX_NANOS = MAX_EPOCH_MS * 1_000_000
TOKEN_COUNTS = (
    "gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens", "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens", "llm.token_count.prompt", "llm.token_count.completion",
)  # fmt: skip
LLM_OPERATIONS = {"chat", "text_completion", "generate_content"}
AGENT_OPERATIONS = {"invoke_agent", "create_agent"}
ERROR = {2, "STATUS_CODE_ERROR", "ERROR"}


def detect(record: Any) -> bool:
    return isinstance(record, dict) and "resourceSpans" in record


def _value(any_value: dict) -> Any:
    """An OTLP AnyValue as Python: intValue arrives as a string, arrays and kvlists nest."""
    if not isinstance(any_value, dict):
        return any_value
    for kind, convert in (("stringValue", str), ("boolValue", bool), ("doubleValue", float), ("intValue", int)):
        if kind in any_value:
            return convert(any_value[kind])
    if "arrayValue" in any_value:
        return [_value(v) for v in any_value["arrayValue"].get("values", [])]
    if "kvlistValue" in any_value:
        return {kv["key"]: _value(kv.get("value", {})) for kv in any_value["kvlistValue"].get("values", [])}
    if "bytesValue" in any_value:
        return any_value["bytesValue"]
    return None


def _attributes(items: list[dict] | None) -> dict[str, Any]:
    return {item["key"]: _value(item.get("value", {})) for item in items or [] if "key" in item}


def _spans(record: dict) -> Iterator[dict]:
    """Each span with its resource's attributes under `resource`."""
    for resource_spans in record.get("resourceSpans") or []:
        resource = _attributes((resource_spans.get("resource") or {}).get("attributes"))
        for scope_spans in resource_spans.get("scopeSpans") or resource_spans.get("instrumentationLibrarySpans") or []:
            for span in scope_spans.get("spans") or []:
                yield {**span, "resource": resource, "attrs": _attributes(span.get("attributes"))}


def _nanos(value: Any) -> int:
    return int(value)  # OTLP JSON encodes 64-bit integers as strings


def _iso(nanos: int) -> str:
    return datetime.fromtimestamp(nanos / 1e9, UTC).isoformat().replace("+00:00", "Z")


def checked_spans(raw: str) -> list[dict]:
    """A batch's spans, checked whole (ValueError naming the first fault): the OTLP trace shape the collector
    stores, each span ending no earlier than it starts and before year 10000, token counts whole and not negative."""
    export = parse_object(raw)
    check_shape(export)
    spans = list(_spans(export))
    for span in spans:
        start, end = _nanos(span["startTimeUnixNano"]), _nanos(span["endTimeUnixNano"])
        if not start <= end <= MAX_NANOS:
            raise Rejected(f"span {span['spanId']}: it starts at {start} ns and ends at {end} ns")
        for key in TOKEN_COUNTS:
            count = span["attrs"].get(key)
            if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 0):
                raise Rejected(f"span {span['spanId']}: {key} {count!r} is no count")
    return spans


def days(raw: str) -> set[date]:
    """UTC days a batch's spans start on, for the file index."""
    try:
        return {datetime.fromtimestamp(_nanos(s["startTimeUnixNano"]) / 1e9, UTC).date() for s in checked_spans(raw)}
    except ValueError:
        return set()


def _kind(attrs: dict) -> str:
    """llm, tool, agent or other, from either convention."""
    operation = attrs.get("gen_ai.operation.name")
    if operation in LLM_OPERATIONS:
        return "llm"
    if operation == "execute_tool":
        return "tool"
    if operation in AGENT_OPERATIONS:
        return "agent"
    return {"LLM": "llm", "TOOL": "tool", "AGENT": "agent"}.get(str(attrs.get("openinference.span.kind", "")).upper(), "other")


def _messages(attrs: dict, *keys: str) -> list | str | None:
    """GenAI messages under the first of `keys` present: parsed from their JSON text, or the text itself."""
    messages = next((attrs[key] for key in keys if attrs.get(key)), None)
    if isinstance(messages, str):
        try:
            return json.loads(messages)
        except ValueError:
            return messages
    return messages


def _content(message: dict) -> str | None:
    """A message's words: its `content`, else the text of its `parts` (the conventions' `{"type": "text", "content"}`),
    else the parts as JSON (a tool call's alone)."""
    parts = message.get("parts")
    if "content" in message or not isinstance(parts, list):
        return as_text(message.get("content", parts))
    texts = [part["content"] for part in parts if isinstance(part, dict) and part.get("type") == "text"]
    return "".join(texts) if texts and all(isinstance(t, str) for t in texts) else as_text(parts)


def _flattened(attrs: dict, messages: str) -> list[tuple[Any, Any]]:
    """OpenInference's flattened messages under `messages` (`llm.input_messages`), in order: each one's role and
    words, its `message.content`, else the text of its `message.contents` parts (content given as parts) in order."""
    fields: dict[int, dict[str, Any]] = defaultdict(dict)
    for key, value in attrs.items():
        if key.startswith(f"{messages}."):
            place, _, field = key.removeprefix(f"{messages}.").partition(".")
            fields[int(place)][field] = value  # a name where the index belongs: ValueError, and the trace is quarantined
    flattened = []
    for _, message in sorted(fields.items()):
        parts = sorted(
            (int(name.split(".")[2]), text)
            for name, text in message.items()
            if name.startswith("message.contents.") and name.endswith(".message_content.text") and isinstance(text, str)
        )
        text = message.get("message.content", "".join(text for _, text in parts) if parts else None)
        flattened.append((message.get("message.role"), text))
    return flattened


def _last_user_message(attrs: dict) -> str | None:
    """The user's words from GenAI `gen_ai.input.messages`, OpenInference's flattened messages, or `input.value`."""
    messages = _messages(attrs, "gen_ai.input.messages", "gen_ai.prompt")
    if isinstance(messages, str):
        return messages
    if isinstance(messages, list):
        users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
        if users:
            return _content(users[-1])
    users_said = [text for role, text in _flattened(attrs, "llm.input_messages") if role == "user"]
    if users_said:
        return users_said[-1]
    return as_text(attrs.get("input.value"))


def _output_text(attrs: dict) -> str | None:
    messages = _messages(attrs, "gen_ai.output.messages", "gen_ai.completion")
    if isinstance(messages, str):
        return messages
    if isinstance(messages, list) and messages and isinstance(messages[-1], dict):
        return _content(messages[-1])
    said = [text for _, text in _flattened(attrs, "llm.output_messages") if text is not None]
    if said:
        return said[-1]
    return as_text(attrs.get("output.value"))


def _usage(attrs: dict) -> dict:
    prompt = attrs.get("gen_ai.usage.input_tokens", attrs.get("gen_ai.usage.prompt_tokens", attrs.get("llm.token_count.prompt")))
    completion = attrs.get(
        "gen_ai.usage.output_tokens", attrs.get("gen_ai.usage.completion_tokens", attrs.get("llm.token_count.completion"))
    )
    return usage(prompt, completion)


def _agent_name(attrs: dict) -> str | None:
    return attrs.get("gen_ai.agent.name") or attrs.get("gen_ai.agent.id")


def _acting_agents(spans: list[dict]) -> dict[str | None, str]:
    """Per span id, the agent it runs under: its nearest `invoke_agent` / AGENT ancestor (or itself)."""
    by_id = {span.get("spanId"): span for span in spans}
    acting: dict[str | None, str] = {}
    for span in spans:
        current: dict | None = span
        seen = set()
        while current is not None and current.get("spanId") not in seen:
            seen.add(current.get("spanId"))
            if _kind(current["attrs"]) == "agent" and (name := _agent_name(current["attrs"]) or current.get("name")):
                acting[span.get("spanId")] = str(name)
                break
            current = by_id.get(current.get("parentSpanId"))
    return acting


def _steps(spans: list[dict]) -> tuple[list[dict], str | None, str | None]:
    """Steps in start order (each with the agent it ran under), the final answer, and the model of the first LLM call."""
    steps, final, model = [], None, None
    acting = _acting_agents(spans)
    for span in spans:
        attrs, kind = span["attrs"], _kind(span["attrs"])
        who = {"agent": acting[span.get("spanId")]} if span.get("spanId") in acting else {}
        duration = (_nanos(span["endTimeUnixNano"]) - _nanos(span["startTimeUnixNano"])) / 1e6
        failed = (span.get("status") or {}).get("code") in ERROR
        error = (span.get("status") or {}).get("message") or (f"{span.get('name')} failed" if failed else None)
        common = {"duration_ms": duration, "timestamp": _iso(_nanos(span["startTimeUnixNano"]))}
        if kind == "llm":
            span_model = attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model") or attrs.get("llm.model_name")
            model = model or span_model
            output = _output_text(attrs)
            final = output or final
            split = _usage(attrs)
            tokens = split["usage"]["prompt_tokens"] + split["usage"]["completion_tokens"]
            steps.append({"step_type": "llm_call", "model": span_model, "input_summary": _last_user_message(attrs),
                          "output_summary": output, "tokens": tokens, "error": error, "metadata": {**split, **who},
                          **common})  # fmt: skip
        elif kind == "tool":
            name = attrs.get("gen_ai.tool.name") or attrs.get("tool.name") or span.get("name")
            arguments = attrs.get("gen_ai.tool.call.arguments", attrs.get("input.value"))
            result = attrs.get("gen_ai.tool.call.result", attrs.get("output.value"))
            steps.append({"step_type": "tool_call", "tool_name": name, "input_summary": as_text(arguments), "metadata": who,
                          **common})  # fmt: skip
            steps.append({"step_type": "tool_result", "tool_name": name, "output_summary": as_text(result), "error": error,
                          "timestamp": common["timestamp"], "metadata": who})  # fmt: skip
        elif failed:
            steps.append({"step_type": "error", "error": error, **common})
    return [{"step_index": i, **step} for i, step in enumerate(steps)], final, model


def _episode(trace_id: str, spans: list[dict], agent_id: str) -> dict:
    spans.sort(key=lambda s: (_nanos(s["startTimeUnixNano"]), s.get("spanId", "")))
    start = min(_nanos(s["startTimeUnixNano"]) for s in spans)
    end = max(_nanos(s["endTimeUnixNano"]) for s in spans)
    span_ids = {s.get("spanId") for s in spans}
    roots = [s for s in spans if not s.get("parentSpanId") or s.get("parentSpanId") not in span_ids]
    agent_span = next((s for s in spans if _kind(s["attrs"]) == "agent"), None)
    named = agent_span and _agent_name(agent_span["attrs"])
    agent = named or spans[0]["resource"].get("service.name") or agent_id
    steps, final, model = _steps(spans)
    failed = any((s.get("status") or {}).get("code") in ERROR for s in roots)
    attrs = {k: v for s in roots for k, v in s["attrs"].items()}
    metadata = {"format": NAME, "trace_id": trace_id, "final_output": final, "model": model,
                "task_id": attrs.get("eval.task_id"), "trial": attrs.get("eval.trial")}  # fmt: skip
    return {
        "episode_id": f"trace-{trace_id}",
        "agent_id": str(agent),
        "status": "failure" if failed else "success",
        "started_at": _iso(start),
        "ended_at": _iso(end),
        "total_duration_ms": (end - start) / 1e6,
        "total_tokens": sum(step.get("tokens") or 0 for step in steps),
        "steps": steps,
        "metadata": {key: value for key, value in metadata.items() if value is not None},
    }


def convert(
    records: Iterator[RawRecord], agent_id: str, day: date, quiet_seconds: float = 300.0, now: datetime | None = None
) -> Iterator[RawRecord]:
    """The spans of the files read grouped by trace, one episode per trace; an unreadable batch is rejected whole.
    Each record falls back on its own file's day.

    A trace whose root span has not arrived is still running: it waits until no span of it has
    ended for `quiet_seconds`, then becomes an episode cut short (`killed`), its root never seen."""
    traces: dict[str, list[dict]] = defaultdict(list)
    first_seen: dict[str, RawRecord] = {}
    read: dict[str, set[int]] = defaultdict(set)  # the batches each trace was read from
    for position, record in enumerate(records):
        try:
            spans = checked_spans(record.raw)
        except ValueError as exc:
            yield rejection(record, record.fallback_day or day, NAME, exc)
            continue
        for span in spans:
            traces[span["traceId"]].append(span)
            first_seen.setdefault(span["traceId"], record)
            read[span["traceId"]].add(position)
    cutoff = ((now or datetime.now(UTC)).timestamp() - quiet_seconds) * 1e9
    for trace_id, spans in traces.items():
        rooted = any(not s.get("parentSpanId") for s in spans)  # the root span is exported when the run ends
        if not rooted and max(_nanos(s["endTimeUnixNano"]) for s in spans) > cutoff:
            continue  # still receiving spans: read again once the file changes or the quiet period has passed
        origin = first_seen[trace_id]
        origin_day = origin.fallback_day or day
        try:
            episode = _episode(trace_id, spans, agent_id)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:  # attributes shaped unlike the conventions
            yield rejected(origin, origin_day, f"{NAME}: trace {trace_id}: {type(exc).__name__}: {exc}")
            continue
        if not rooted:
            episode["status"] = "killed"
            episode["metadata"]["cut_short"] = f"no root span after {quiet_seconds:g} s without new spans"
        locator = f"{origin.locator} trace {trace_id}"
        yield RawRecord(origin.source, locator, json.dumps(episode), origin_day, source_records=len(read[trace_id]))
