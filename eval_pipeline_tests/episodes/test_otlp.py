"""OpenTelemetry traces (OTLP JSON, GenAI conventions and OpenInference) read as episodes, through the real file source."""

import json
from datetime import date

import pytest

from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline_tests.episodes.located import each_record

DAY = date(2026, 11, 5)
T0 = 1_793_874_000_000_000_000  # 2026-11-05T10:20:00Z in nanoseconds


def attr(key, value):
    if isinstance(value, bool):
        return {"key": key, "value": {"boolValue": value}}
    if isinstance(value, int):
        return {"key": key, "value": {"intValue": str(value)}}  # OTLP JSON: 64-bit integers as strings
    if isinstance(value, float):
        return {"key": key, "value": {"doubleValue": value}}
    return {"key": key, "value": {"stringValue": value}}


def span(trace, span_id, parent, name, start_ms, end_ms, attributes, error=None):
    body = {
        "traceId": trace, "spanId": span_id, "parentSpanId": parent or "", "name": name,
        "startTimeUnixNano": str(T0 + start_ms * 1_000_000), "endTimeUnixNano": str(T0 + end_ms * 1_000_000),
        "attributes": [attr(k, v) for k, v in attributes.items()],
    }  # fmt: skip
    if error:
        body["status"] = {"code": 2, "message": error}
    return body


def batch(*spans, service="svc"):
    return {"resourceSpans": [{"resource": {"attributes": [attr("service.name", service)]},
                               "scopeSpans": [{"scope": {"name": "test"}, "spans": list(spans)}]}]}  # fmt: skip


GENAI = "a" * 32
OPENINFERENCE = "b" * 32
USER = json.dumps([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Book a flight to Oslo."}])
ANSWER = json.dumps([{"role": "assistant", "content": "Booked: flight SK4455 to Oslo."}])


@pytest.fixture
def records(tmp_path):
    genai_first = batch(
        span(GENAI, "a1", None, "invoke_agent travel", 0, 3000,
             {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel-agent"}),
        span(GENAI, "a2", "a1", "chat gpt-4o", 10, 900, {
            "gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", "gen_ai.input.messages": USER,
            "gen_ai.usage.input_tokens": 120, "gen_ai.usage.output_tokens": 30}),
    )  # fmt: skip
    genai_second = batch(  # the same trace's later spans, exported in another batch
        span(GENAI, "a3", "a1", "execute_tool book_flight", 950, 1900, {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_flight",
            "gen_ai.tool.call.arguments": '{"to": "OSL"}', "gen_ai.tool.call.result": '{"flight": "SK4455"}'}),
        span(GENAI, "a4", "a1", "chat gpt-4o", 2000, 2900, {
            "gen_ai.operation.name": "chat", "gen_ai.response.model": "gpt-4o-2024", "gen_ai.output.messages": ANSWER,
            "gen_ai.usage.prompt_tokens": 200, "gen_ai.usage.completion_tokens": 12}),
    )  # fmt: skip
    openinference = batch(
        span(OPENINFERENCE, "b1", None, "agent", 0, 1000, {"openinference.span.kind": "AGENT"}, error="gave up"),
        span(OPENINFERENCE, "b2", "b1", "llm", 5, 400, {
            "openinference.span.kind": "LLM", "llm.model_name": "llama-3", "llm.input_messages.0.message.role": "user",
            "llm.input_messages.0.message.content": "Weather in Oslo?", "llm.token_count.prompt": 50,
            "llm.token_count.completion": 5, "output.value": "Let me check."}),
        span(OPENINFERENCE, "b3", "b1", "weather", 410, 900, {
            "openinference.span.kind": "TOOL", "tool.name": "get_weather", "input.value": '{"city": "Oslo"}'}, error="HTTP 503"),
        service="weather-bot",
    )  # fmt: skip
    broken = {"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "c" * 32, "name": "no times"}]}]}]}
    path = tmp_path / "src" / "traces.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(json.dumps(r) for r in (genai_first, broken, openinference, genai_second)) + "\n")
    return path


def test_each_trace_becomes_an_episode_across_batches(tmp_path, records):
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    source = FileSource(records.parent, tmp_path / "index.json")
    assert set(source.refresh_index().files[str(records)].days) == {DAY}  # dated by the spans, not undated
    counts = load_episodes(warehouse, DAY, lambda: source.records_for(DAY))
    assert (counts.episodes, counts.quarantined) == (2, 1)
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute(
            "SELECT episode_id, agent_id, status, model, tools, final_output, total_duration_ms, total_tokens, error_steps "
            "FROM episodes ORDER BY 1"
        ).fetchall()
        steps = con.execute(
            f"SELECT step_type, tool_name, input, output, tokens, agent FROM episode_steps WHERE episode_id = 'trace-{GENAI}' "
            "ORDER BY step_index"
        ).fetchall()
        quarantined = con.execute("SELECT locator, reason FROM quarantine").fetchall()
    assert episodes == [
        (
            f"trace-{GENAI}",
            "travel-agent",
            "success",
            "gpt-4o",
            ["book_flight"],
            "Booked: flight SK4455 to Oslo.",
            3000.0,
            362,
            0,
        ),
        (f"trace-{OPENINFERENCE}", "weather-bot", "failure", "llama-3", ["get_weather"], "Let me check.", 1000.0, 55, 2),
    ]  # wall time of the trace, never a sum of nested spans; failure: the root span's status is ERROR
    assert steps == [
        ("llm_call", None, "Book a flight to Oslo.", None, 150, "travel-agent"),
        ("tool_call", "book_flight", '{"to": "OSL"}', None, None, "travel-agent"),
        ("tool_result", "book_flight", None, '{"flight": "SK4455"}', None, "travel-agent"),
        ("llm_call", None, None, "Booked: flight SK4455 to Oslo.", 212, "travel-agent"),
    ]
    assert quarantined == [
        (f"{records}:2", "otlp-json: resourceSpans[0].scopeSpans[0].spans[0].spanId: expected an id, a non-empty string")
    ]


def test_each_step_keeps_the_agent_it_ran_under(tmp_path):
    trace = "d" * 32
    chat = {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o"}
    nested = batch(
        span(trace, "d1", None, "invoke_agent supervisor", 0, 900, {"gen_ai.operation.name": "invoke_agent",
                                                                    "gen_ai.agent.name": "supervisor"}),
        span(trace, "d2", "d1", "chat", 10, 100, chat),
        span(trace, "d3", "d1", "invoke_agent researcher", 110, 600, {"gen_ai.operation.name": "invoke_agent",
                                                                      "gen_ai.agent.id": "researcher-7"}),
        span(trace, "d4", "d3", "chat", 120, 300, chat),
        span(trace, "d5", "d4", "execute_tool search", 310, 500, {"gen_ai.operation.name": "execute_tool",
                                                                  "gen_ai.tool.name": "search"}),
        span(trace, "d6", "d1", "chat", 700, 800, chat),
    )  # fmt: skip
    path = tmp_path / "src" / "nested.json"
    path.parent.mkdir()
    path.write_text(json.dumps(nested))
    [record] = FileSource(path.parent, tmp_path / "index.json").records_for(DAY)
    steps = json.loads(record.raw)["steps"]
    assert [(s["step_type"], (s.get("metadata") or {}).get("agent")) for s in steps] == [
        ("llm_call", "supervisor"), ("llm_call", "researcher-7"), ("tool_call", "researcher-7"), ("tool_result", "researcher-7"),
        ("llm_call", "supervisor"),
    ]  # fmt: skip
    assert json.loads(record.raw)["agent_id"] == "supervisor"  # the outermost agent names the run


def test_a_configured_format_wins_over_detection(tmp_path, records):
    source = FileSource(records.parent, tmp_path / "index.json", formats={"*.jsonl": "episode"})
    assert source.refresh_index().files[str(records)].days == {}  # read as canonical episodes: nothing dated
    rejected = each_record(source.records_for(source.refresh_index().files[str(records)].first_seen))
    assert len(rejected) == 4 and all(r.rejected is None for r in rejected)  # left to the canonical validation


def test_a_trace_without_its_root_waits_for_the_quiet_period(tmp_path):
    from datetime import UTC, datetime

    from eval_pipeline.episodes.adapters import otlp
    from eval_pipeline.episodes.records import RawRecord

    now = datetime(2026, 11, 5, 12, 0, tzinfo=UTC)
    child = span("d" * 32, "d2", "d1", "chat", 0, 10, {"gen_ai.operation.name": "chat"})  # its parent d1 never arrived
    for key in ("startTimeUnixNano", "endTimeUnixNano"):  # ended 60 s before now
        child[key] = str(int(now.timestamp() - 60) * 1_000_000_000)
    record = RawRecord("f", "f:1", json.dumps(batch(child)), DAY)
    assert list(otlp.convert(iter([record]), "agent", DAY, quiet_seconds=300, now=now)) == []  # still running
    [late] = otlp.convert(iter([record]), "agent", DAY, quiet_seconds=30, now=now)  # quiet for longer than 30 s
    episode = json.loads(late.raw)
    assert episode["status"] == "killed" and "no root span" in episode["metadata"]["cut_short"]


def test_trace_steps_are_costed_from_the_price_table(tmp_path, records):
    from eval_pipeline.config import Price

    per_million = {"gpt-4o": Price(input_per_million=2.5, output_per_million=10.0)}
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    source = FileSource(records.parent, tmp_path / "index.json", prices=per_million)
    load_episodes(warehouse, DAY, lambda: source.records_for(DAY))
    with warehouse.connect(read_only=True) as con:
        step = con.execute(f"SELECT cost_usd FROM episode_steps WHERE episode_id = 'trace-{GENAI}' AND step_index = 0").fetchone()
        partly = con.execute(f"SELECT total_cost_usd FROM episodes WHERE episode_id = 'trace-{GENAI}'").fetchone()
    # the second call's model (gpt-4o-2024) has no price: the trace stays unpriced, not half counted
    assert (step[0], partly[0]) == (None, 0.0)
    per_million["gpt-4o-2024"] = Price(input_per_million=2.5, output_per_million=10.0)
    load_episodes(
        warehouse, DAY, lambda: FileSource(records.parent, tmp_path / "index.json", prices=per_million).records_for(DAY)
    )
    with warehouse.connect(read_only=True) as con:
        total = con.execute(f"SELECT total_cost_usd FROM episodes WHERE episode_id = 'trace-{GENAI}'").fetchone()[0]
    assert total == pytest.approx((120 * 2.5 + 30 * 10.0 + 200 * 2.5 + 12 * 10.0) / 1e6)


def test_attributes_shaped_unlike_the_conventions_quarantine_their_trace_not_the_run(tmp_path):
    """An export of valid OTLP shape whose OpenInference key has a name where an index belongs made `run` exit 3."""
    odd, good = "d" * 32, "e" * 32
    exports = [
        batch(
            span(odd, "d1", None, "llm", 0, 400, {"openinference.span.kind": "LLM", "llm.input_messages.x.message.role": "user"})
        ),
        batch(span(good, "e1", None, "llm", 0, 400, {"openinference.span.kind": "LLM", "output.value": "fine"})),
    ]
    path = tmp_path / "src" / "traces.jsonl"
    path.parent.mkdir()
    path.write_text("".join(json.dumps(e) + "\n" for e in exports))
    source = FileSource(tmp_path / "src", tmp_path / "index.json")
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    counts = load_episodes(warehouse, DAY, lambda: source.records_for(DAY))
    assert (counts.episodes, counts.quarantined) == (1, 1)
    with warehouse.connect(read_only=True) as con:
        [(reason,)] = con.execute("SELECT reason FROM quarantine").fetchall()
    assert reason.startswith(f"otlp-json: trace {odd}: ValueError")


def test_an_adapter_that_fails_midway_quarantines_its_file_and_the_run_goes_on(tmp_path, monkeypatch):
    from eval_pipeline.episodes.adapters import otlp

    def broken(records, agent_id, day, **options):
        raise RuntimeError("a bug in the adapter")
        yield  # a generator, like every convert

    monkeypatch.setattr(otlp, "convert", broken)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "traces.jsonl").write_text(json.dumps(batch(span("f" * 32, "f1", None, "x", 0, 10, {}))) + "\n")
    source = FileSource(tmp_path / "src", tmp_path / "index.json")
    counts = load_episodes(Warehouse(tmp_path / "eval.duckdb"), DAY, lambda: source.records_for(DAY))
    assert (counts.episodes, counts.quarantined) == (0, 1)
