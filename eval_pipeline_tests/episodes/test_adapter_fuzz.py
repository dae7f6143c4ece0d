"""Fuzzing every non-canonical format: one malformed record between good ones is quarantined alone.

For each format a clean file, as the producer writes it, is loaded through the real file source into a real
warehouse; then, case by case, one malformed record is put between its good records (inside a run, for the
formats whose episodes span many records). Every case must load: the records read are the episodes' records plus
the quarantine rows, the one quarantine row names the format, the bad record's file:line and why, and the good
records load exactly as from the clean file.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pytest

from eval_pipeline.episodes.adapters import (
    autogen,
    autogen_events,
    langgraph,
    langgraph_checkpoint,
    openai_transcript,
    otlp,
    plaited,
)
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline_tests.episodes import test_autogen, test_log_files, test_otlp, test_plaited, test_transcripts

DAY = date(2026, 11, 5)
DEEP = 100_000


def malformed_lines(good: dict) -> dict[str, str]:
    """What breaks any format: JSON that is no record, records cut short, nested or swollen past reason."""
    line = json.dumps(good)
    return {
        "a number": "5",
        "a negative number": "-3",
        "NaN": "NaN",
        "Infinity": "Infinity",
        "a string": '"hello"',
        "null": "null",
        "a list": "[1, 2, 3]",
        "the record in a list": json.dumps([good]),
        "an empty object": "{}",
        "truncated JSON": line[: len(line) // 2],
        "very deep nesting": '{"a": ' * DEEP + "1" + "}" * DEEP,
        "a deeply nested field": json.dumps({**good, "deep": "X"}).replace('"X"', "[" * DEEP + "]" * DEEP),
        "a huge string": json.dumps("x" * 2_000_000),
        "a huge unknown key": json.dumps({"x" * 200_000: 1}),
    }


def without(record: dict, *path: str) -> dict:
    copy = json.loads(json.dumps(record))
    *parents, last = path
    node = copy
    for key in parents:
        node = node[key]
    del node[last]
    return copy


def with_value(record: dict, path: tuple, value) -> dict:
    copy = json.loads(json.dumps(record))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


@dataclass(frozen=True)
class Sample:
    name: str  # the adapter's NAME
    file_name: str
    records: list[dict]  # the clean file's records, a line each
    at: int  # where the malformed record goes: between records[at - 1] and records[at]
    malformed: Callable[[dict], dict[str, dict]]  # from a good record: broken variants of its own shape
    prefix: str = ""  # a log formatter's prefix before each line

    def lines(self, bad: str | None = None) -> list[str]:
        good = [self.prefix + json.dumps(record) for record in self.records]
        return good if bad is None else [*good[: self.at], bad, *good[self.at :]]

    def cases(self) -> dict[str, str]:
        model = self.records[self.at]
        own = {case: json.dumps(record, allow_nan=True) for case, record in self.malformed(model).items()}
        return {**malformed_lines(model), **{case: self.prefix + line for case, line in own.items()}}


def transcript_variants(r: dict) -> dict[str, dict]:
    return {
        "no traj": without(r, "traj"),
        "no task_id": without(r, "task_id"),
        "traj a string": with_value(r, ("traj",), "hello"),
        "traj an object": with_value(r, ("traj",), {"role": "user"}),
        "a message without a role": with_value(r, ("traj", 1), {"content": "hi"}),
        "a message that is a number": with_value(r, ("traj", 1), 5),
        "content a number": with_value(r, ("traj", 1, "content"), 5),
        "tool_calls a string": with_value(r, ("traj", 2, "tool_calls"), "get_reservation"),
        "a tool call's function a list": with_value(r, ("traj", 2, "tool_calls", 0, "function"), [1]),
        "reward a string": with_value(r, ("reward",), "high"),
        "reward NaN": with_value(r, ("reward",), float("nan")),
        "reward Infinity": with_value(r, ("reward",), float("inf")),
        "trial negative": with_value(r, ("trial",), -1),
        "trial a string": with_value(r, ("trial",), "first"),
        "task_id an object": with_value(r, ("task_id",), {"id": 1}),
    }


def plaited_variants(r: dict) -> dict[str, dict]:
    return {
        "no trajectory": without(r, "trajectory"),
        "no timing": without(r, "timing"),
        "output a number": with_value(r, ("output",), 5),
        "trajectory an object": with_value(r, ("trajectory",), {"type": "message"}),
        "a step that is a string": with_value(r, ("trajectory", 0), "thought"),
        "a step of unknown type": with_value(r, ("trajectory", 0, "type"), "dance"),
        "timing.total negative": with_value(r, ("timing", "total"), -5),
        "timing.total NaN": with_value(r, ("timing", "total"), float("nan")),
        "timing.start Infinity": with_value(r, ("timing", "start"), float("inf")),
        "timing.start past year 9999": with_value(r, ("timing", "start"), 1e18),
        "a step's timestamp Infinity": with_value(r, ("trajectory", 0, "timestamp"), float("inf")),
        "a step's duration negative": with_value(r, ("trajectory", 1, "duration"), -35),
        "inputTokens negative": with_value(r, ("timing", "inputTokens"), -900),
        "metadata a list": with_value(r, ("metadata",), [1]),
        "score.pass a string": with_value(r, ("score", "pass"), "maybe"),
    }


def autogen_variants(r: dict) -> dict[str, dict]:  # r: a ToolCallRequestEvent
    return {
        "no source": without(r, "source"),
        "no type": without(r, "type"),
        "type a number": with_value(r, ("type",), 5),
        "source a list": with_value(r, ("source",), ["planner"]),
        "content a number": with_value(r, ("content",), 5),
        "a call that is a string": with_value(r, ("content", 0), "get_weather"),
        "models_usage a string": with_value(r, ("models_usage",), "lots"),
        "prompt_tokens a string": with_value(r, ("models_usage", "prompt_tokens"), "lots"),
        "prompt_tokens negative": with_value(r, ("models_usage", "prompt_tokens"), -30),
        "prompt_tokens NaN": with_value(r, ("models_usage", "prompt_tokens"), float("nan")),
        "completion_tokens Infinity": with_value(r, ("models_usage", "completion_tokens"), float("inf")),
        "created_at a number": with_value(r, ("created_at",), 5),
        "created_at not a time": with_value(r, ("created_at",), "yesterday"),
        "an execution result that is a number": {**r, "type": "ToolCallExecutionEvent", "content": [5]},
        "a TaskResult with messages of numbers": {"messages": [1, 2], "stop_reason": "done"},
        "a TaskResult whose stop_reason is a list": {"messages": [r], "stop_reason": [1]},
    }


def autogen_events_variants(r: dict) -> dict[str, dict]:  # r: a published GroupChatMessage
    llm = test_log_files.llm_call("planner", "gpt-4o", "", 30, 6)
    return {
        "no type": without(r, "type"),
        "type a number": with_value(r, ("type",), 5),
        "payload a number": with_value(r, ("payload",), 5),
        "payload a published list": with_value(r, ("payload",), json.dumps({"message": [1]})),
        "payload a message of numbers": with_value(r, ("payload",), json.dumps({"message": {"type": 5, "source": 1}})),
        "receiver a number": with_value(r, ("receiver",), 5),
        "an LLMCall with tokens negative": {**llm, "prompt_tokens": -30},
        "an LLMCall with tokens NaN": {**llm, "completion_tokens": float("nan")},
        "an LLMCall with tokens Infinity": {**llm, "completion_tokens": float("inf")},
        "an LLMCall with tokens a string": {**llm, "prompt_tokens": "lots"},
        "an LLMCall whose response is a list": {**llm, "response": [1]},
        "an LLMCall whose choices are numbers": {**llm, "response": {"choices": [1]}},
        "an LLMCall whose messages are a string": {**llm, "messages": "hi"},
        "a ToolCall without tool_name": without(test_log_files.tool_call("Oslo", None), "tool_name"),
        "an exception that is a number": {"type": "MessageHandlerException", "exception": 5, "handling_agent": 3},
    }


def langgraph_variants(r: dict) -> dict[str, dict]:  # r: an on_chat_model_end
    return {
        "no run_id": without(r, "run_id"),
        "no event": without(r, "event"),
        "event a number": with_value(r, ("event",), 5),
        "run_id a list": with_value(r, ("run_id",), ["r1"]),
        "parent_ids a string": with_value(r, ("parent_ids",), "r1"),
        "parent_ids of numbers": with_value(r, ("parent_ids",), [1, 2]),
        "data a string": with_value(r, ("data",), "output"),
        "metadata a list": with_value(r, ("metadata",), [1]),
        "output a number": with_value(r, ("data", "output"), 5),
        "output content a number": with_value(r, ("data", "output", "content"), 5),
        "usage_metadata a string": with_value(r, ("data", "output", "usage_metadata"), "lots"),
        "input_tokens negative": with_value(r, ("data", "output", "usage_metadata", "input_tokens"), -30),
        "input_tokens NaN": with_value(r, ("data", "output", "usage_metadata", "input_tokens"), float("nan")),
        "output_tokens Infinity": with_value(r, ("data", "output", "usage_metadata", "output_tokens"), float("inf")),
        "input messages a number": with_value(r, ("data", "input"), {"messages": 5}),
        "events not a list": {"events": {"event": "on_tool_start"}},
    }


def checkpoint_variants(r: dict) -> dict[str, dict]:  # r: a CheckpointTuple
    return {
        "no checkpoint": without(r, "checkpoint"),
        "channel_values a list": with_value(r, ("checkpoint", "channel_values"), [1]),
        "messages a string": with_value(r, ("checkpoint", "channel_values", "messages"), "hi"),
        "a message that is a number": with_value(r, ("checkpoint", "channel_values", "messages", 0), 5),
        "a message without a type or role": with_value(r, ("checkpoint", "channel_values", "messages", 0), {"content": "hi"}),
        "config a string": with_value(r, ("config",), "thread"),
        "configurable a list": with_value(r, ("config", "configurable"), [1]),
        "thread_id an object": with_value(r, ("config", "configurable", "thread_id"), {"id": 1}),
        "ts a number": with_value(r, ("checkpoint", "ts"), 5),
        "ts not a time": with_value(r, ("checkpoint", "ts"), "yesterday"),
        "metadata a list": with_value(r, ("metadata",), [1]),
        "step NaN": with_value(r, ("metadata", "step"), float("nan")),
        "pending_writes a string": with_value(r, ("pending_writes",), "error"),
        "tool_calls a string": with_value(r, ("checkpoint", "channel_values", "messages", 1, "tool_calls"), "x"),
        "input_tokens negative": with_value(
            r, ("checkpoint", "channel_values", "messages", 1, "usage_metadata", "input_tokens"), -30
        ),
        "input_tokens Infinity": with_value(
            r, ("checkpoint", "channel_values", "messages", 1, "usage_metadata", "input_tokens"), float("inf")
        ),
        "checkpoints of numbers": {"checkpoints": [1, 2]},
    }


def otlp_variants(r: dict) -> dict[str, dict]:  # r: a batch of one trace's first spans
    spans = ("resourceSpans", 0, "scopeSpans", 0, "spans")
    return {
        "resourceSpans of a number": {"resourceSpans": [1]},
        "resourceSpans a string": {"resourceSpans": "spans"},
        "scopeSpans of a number": {"resourceSpans": [{"scopeSpans": [1]}]},
        "spans of a number": {"resourceSpans": [{"scopeSpans": [{"spans": [1]}]}]},
        "a span without times": without(r, *spans, 0, "startTimeUnixNano"),
        "a span without traceId": without(r, *spans, 0, "traceId"),
        "traceId a number": with_value(r, (*spans, 0, "traceId"), 5),
        "startTimeUnixNano not a number": with_value(r, (*spans, 0, "startTimeUnixNano"), "soon"),
        "startTimeUnixNano negative": with_value(r, (*spans, 0, "startTimeUnixNano"), "-5"),
        "endTimeUnixNano before its start": with_value(r, (*spans, 0, "endTimeUnixNano"), "1"),
        "endTimeUnixNano NaN": with_value(r, (*spans, 0, "endTimeUnixNano"), float("nan")),
        "endTimeUnixNano Infinity": with_value(r, (*spans, 0, "endTimeUnixNano"), float("inf")),
        "startTimeUnixNano past year 9999": with_value(r, (*spans, 0, "startTimeUnixNano"), "9" * 30),
        "attributes a string": with_value(r, (*spans, 0, "attributes"), "model"),
        "an attribute that is a number": with_value(r, (*spans, 0, "attributes"), [5]),
        "an attribute value a list": with_value(r, (*spans, 0, "attributes"), [{"key": "k", "value": [1]}]),
        "an intValue not a number": with_value(r, (*spans, 1, "attributes"), [{"key": "k", "value": {"intValue": "x"}}]),
        "tokens negative": with_value(
            r,
            (*spans, 1, "attributes"),
            [test_otlp.attr("gen_ai.operation.name", "chat"), test_otlp.attr("gen_ai.usage.input_tokens", -120)],
        ),
        "an arrayValue of a number": with_value(r, (*spans, 0, "attributes"), [{"key": "k", "value": {"arrayValue": 5}}]),
        "resource a list": with_value(r, ("resourceSpans", 0, "resource"), [1]),
        "status a string": with_value(r, (*spans, 0, "status"), "ERROR"),
    }


def _transcripts() -> list[dict]:
    return [test_transcripts.transcript(task, 0, float(task % 2)) for task in (1, 2, 3)]


def _captures() -> list[dict]:
    return [{**test_plaited.CAPTURE, "id": f"case-{n}"} for n in (1, 2, 3)]


def _langgraph_run(root: str, city: str) -> list[dict]:
    asked = {"messages": [[{"type": "human", "content": f"Weather in {city}?"}]]}
    where = {"langgraph_node": "agent", "ls_model_name": "gpt-4o"}
    call = {"name": "get_weather", "args": {"city": city}, "id": f"call-{city}"}
    spent = {"input_tokens": 30, "output_tokens": 6, "total_tokens": 36}
    return [
        {"event": "on_chain_start", "run_id": root, "name": "LangGraph", "parent_ids": [], "data": {"input": asked}},
        {"event": "on_chat_model_end", "run_id": f"{root}-m1", "name": "ChatOpenAI", "parent_ids": [root], "metadata": where,
         "data": {"input": asked, "output": {"type": "ai", "content": "", "tool_calls": [call], "usage_metadata": spent}}},
        {"event": "on_tool_start", "run_id": f"{root}-t", "name": "get_weather", "parent_ids": [root],
         "data": {"input": {"city": city}}},
        {"event": "on_tool_end", "run_id": f"{root}-t", "name": "get_weather", "parent_ids": [root],
         "data": {"output": {"type": "tool", "content": "4 C", "status": "success"}}},
        {"event": "on_chat_model_end", "run_id": f"{root}-m2", "name": "ChatOpenAI", "parent_ids": [root], "metadata": where,
         "data": {"input": asked, "output": {"type": "ai", "content": f"{city}: 4 C.", "usage_metadata": spent}}},
        {"event": "on_chain_end", "run_id": root, "name": "LangGraph", "parent_ids": [], "data": {"output": {}}},
    ]  # fmt: skip


def _checkpoints(thread: str, city: str) -> list[dict]:
    human = {"type": "human", "content": f"Weather in {city}?"}
    call = {"name": "get_weather", "args": {"city": city}, "id": f"call-{city}"}
    spent = {"input_tokens": 30, "output_tokens": 6, "total_tokens": 36}
    ai = {
        "type": "ai",
        "content": "",
        "tool_calls": [call],
        "usage_metadata": spent,
        "response_metadata": {"model_name": "gpt-4o"},
    }
    tool = {"type": "tool", "content": "4 C", "tool_call_id": f"call-{city}", "name": "get_weather", "status": "success"}
    answer = {"type": "ai", "content": f"{city}: 4 C.", "usage_metadata": spent}

    def checkpoint(step: int, messages: list[dict]) -> dict:
        ident = f"{thread}-{step}"
        return {"config": {"configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": ident}},
                "checkpoint": {"id": ident, "ts": f"2026-11-05T10:00:0{step}+00:00", "channel_values": {"messages": messages}},
                "metadata": {"step": step}, "pending_writes": []}  # fmt: skip

    return [checkpoint(0, [human]), checkpoint(1, [human, ai, tool]), checkpoint(2, [human, ai, tool, answer])]


SAMPLES = [
    Sample(openai_transcript.NAME, "airline-agent.jsonl", _transcripts(), 1, transcript_variants),
    Sample(plaited.NAME, "results.jsonl", _captures(), 1, plaited_variants),
    Sample(autogen.NAME, "weather-team.jsonl", test_autogen.run("Oslo") + test_autogen.run("Bergen"), 1, autogen_variants),
    Sample(
        autogen_events.NAME,
        "event.txt",
        test_log_files.team_run("Oslo", 0) + test_log_files.team_run("Bergen", 10),
        3,
        autogen_events_variants,
    ),
    Sample(langgraph.NAME, "events.jsonl", _langgraph_run("r1", "Oslo") + _langgraph_run("r2", "Bergen"), 1, langgraph_variants),
    Sample(
        langgraph_checkpoint.NAME,
        "checkpoints.jsonl",
        _checkpoints("t-oslo", "Oslo") + _checkpoints("t-bergen", "Bergen"),
        1,
        checkpoint_variants,
    ),
]


def _otlp_sample() -> Sample:
    first = test_otlp.batch(
        test_otlp.span(test_otlp.GENAI, "a1", None, "invoke_agent travel", 0, 3000,
                       {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel-agent"}),
        test_otlp.span(test_otlp.GENAI, "a2", "a1", "chat gpt-4o", 10, 900,
                       {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o",
                        "gen_ai.input.messages": test_otlp.USER, "gen_ai.usage.input_tokens": 120,
                        "gen_ai.usage.output_tokens": 30}),
    )  # fmt: skip
    second = test_otlp.batch(
        test_otlp.span(test_otlp.GENAI, "a4", "a1", "chat gpt-4o", 2000, 2900,
                       {"gen_ai.operation.name": "chat", "gen_ai.output.messages": test_otlp.ANSWER}),
    )  # fmt: skip
    other = test_otlp.batch(
        test_otlp.span(test_otlp.OPENINFERENCE, "b1", None, "agent", 0, 1000, {"openinference.span.kind": "AGENT"}),
        service="weather-bot",
    )
    return Sample(otlp.NAME, "traces.jsonl", [other, first, second], 1, otlp_variants)


SAMPLES.append(_otlp_sample())


def ingest(root: Path, sample: Sample, lines: list[str], warehouse: Warehouse):
    path = root / "src" / sample.file_name
    path.parent.mkdir(parents=True)
    path.write_text("".join(f"{line}\n" for line in lines))
    source = FileSource(path.parent, root / "index.json")
    return path, load_episodes(warehouse, DAY, lambda: source.records_for(DAY, undated_day=DAY))


def loaded(warehouse: Warehouse) -> tuple[list, list, list]:
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute("SELECT * EXCLUDE (source, locator, loaded_at) FROM episodes ORDER BY episode_id").fetchall()
        steps = con.execute("SELECT * FROM episode_steps ORDER BY episode_id, step_index").fetchall()
        quarantine = con.execute("SELECT locator, reason FROM quarantine ORDER BY locator").fetchall()
        records = con.execute("SELECT coalesce(sum(source_records), 0) FROM episodes").fetchone()[0]
    return episodes, steps, [*quarantine, records]


def problems(sample: Sample, tmp_path: Path) -> list[str]:
    """Each case that broke the contract, saying how."""
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    _, clean_counts = ingest(tmp_path / "clean", sample, sample.lines(), warehouse)
    clean_episodes, clean_steps, clean_quarantine = loaded(warehouse)
    assert clean_counts.quarantined == 0 and clean_counts.episodes > 0, clean_quarantine
    found = []
    for number, (case, bad) in enumerate(sample.cases().items()):
        lines = sample.lines(bad)
        try:
            path, counts = ingest(tmp_path / f"case-{number}", sample, lines, warehouse)
        except Exception as exc:  # what the fuzz is looking for
            found.append(f"{case}: raised {type(exc).__name__}: {str(exc)[:200]}")
            continue
        episodes, steps, (*quarantine, records) = loaded(warehouse)
        expected_row = (f"{path}:{sample.at + 1}", f"{sample.name}: ")
        if len(quarantine) != 1 or quarantine[0][0] != expected_row[0] or not quarantine[0][1].startswith(expected_row[1]):
            found.append(f"{case}: quarantined {[(loc.rsplit('/', 1)[-1], why[:160]) for loc, why in quarantine]}")
        elif quarantine[0][1] == expected_row[1].strip():
            found.append(f"{case}: no reason given")
        if counts.records_read != len(lines) or records + counts.quarantined != len(lines):
            found.append(
                f"{case}: {len(lines)} lines, {counts.records_read} read, {records} in episodes, {counts.quarantined} quarantined"
            )
        if (episodes, steps) != (clean_episodes, clean_steps):
            found.append(f"{case}: the good records loaded differently ({len(episodes)} episodes, {len(steps)} steps)")
    return found


@pytest.mark.parametrize("sample", SAMPLES, ids=[sample.name for sample in SAMPLES])
def test_one_malformed_record_between_good_ones_is_quarantined_alone_and_the_rest_loads_as_clean(sample, tmp_path):
    assert problems(sample, tmp_path) == []


def test_a_tau_bench_file_whose_second_line_is_a_number_loses_only_that_line(tmp_path):
    """As the red team met it: a tau-bench transcript file whose second line is `5`."""
    lines = [json.dumps(record) for record in _transcripts()]
    path = tmp_path / "src" / "tau-bench.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join([lines[0], "5", *lines[1:]]) + "\n")
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    counts = load_episodes(
        warehouse, DAY, lambda: FileSource(path.parent, tmp_path / "index.json").records_for(DAY, undated_day=DAY)
    )
    assert (counts.episodes, counts.quarantined) == (3, 1)
    with warehouse.connect(read_only=True) as con:
        assert con.execute("SELECT locator, reason FROM quarantine").fetchall() == [
            (f"{path}:2", "openai-transcript: not a JSON object: 5")
        ]


PRETTY = {
    "indented": lambda record: json.dumps(record, indent=2),
    "indented, its first key on the opening line": lambda record: json.dumps(record, indent=2).replace("{\n  ", "{ ", 1),
    "indented, after a byte-order mark": lambda record: "\ufeff" + json.dumps(record, indent=4),
}


@pytest.mark.parametrize("style", PRETTY)
@pytest.mark.parametrize("sample", SAMPLES, ids=[sample.name for sample in SAMPLES])
def test_a_json_file_holding_one_pretty_printed_object_is_one_record(sample, style, tmp_path):
    """The red team's `.json` file of one indented object became 68 "invalid JSON" quarantine rows."""
    path = tmp_path / "src" / "one.json"
    path.parent.mkdir()
    path.write_text(PRETTY[style](sample.records[0]))
    source = FileSource(path.parent, tmp_path / "index.json")
    counts = load_episodes(Warehouse(tmp_path / "eval.duckdb"), DAY, lambda: source.records_for(DAY, undated_day=DAY))
    assert (counts.records_read, counts.episodes, counts.quarantined) == (1, 1, 0)
