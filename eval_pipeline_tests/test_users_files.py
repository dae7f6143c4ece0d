"""Users' own files, written exactly the way their tools write them, through `eval-pipeline run`."""

import gzip
import json
import shutil
import subprocess
import threading
from datetime import UTC, date, datetime

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.model import derived_task_id
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.air import episode
from eval_pipeline_tests.episodes.test_plaited import CAPTURE, START, TRIALS

pytestmark = pytest.mark.slow
needs_node = pytest.mark.skipif(
    shutil.which("node") is None, reason="Debian's nodejs is not installed (make test installs it as root)"
)

DAY = "2026-11-05"


def rows(root, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_gzipped_files_load_as_their_tools_compressed_them(project_env, capsys):
    """The store's export archived with gzip (CRLF lines, as written on Windows) and plaited's results.jsonl gzipped."""
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Where does ticket {n} go?", "route_ticket", "{}", "To billing.")
                for n in range(3)]  # fmt: skip
    lines = "".join(json.dumps(e) + "\r\n" for e in exported)
    (source / "export-2026-11-05.ndjson.gz").write_bytes(gzip.compress(lines.encode()))
    (source / "results.jsonl.gz").write_bytes(gzip.compress((json.dumps(CAPTURE) + "\n").encode()))

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert "4 episodes" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, agent_id FROM episodes ORDER BY 1") == [
        ("ep-0", "triage-bot"), ("ep-1", "triage-bot"), ("ep-2", "triage-bot"), ("results:fix-typo", "results"),
    ]  # fmt: skip  # a plaited file's name is its agent: `results`, as for results.jsonl
    assert rows(project_env, "SELECT count(*) FROM quarantine") == [(0,)]


def test_a_gzip_cut_short_is_an_unreadable_file_naming_itself(project_env, capsys):
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Ticket {n}?", "route_ticket", "{}", "To billing.") for n in range(300)]
    whole = gzip.compress("".join(json.dumps(e) + "\n" for e in exported).encode())
    (source / "export.jsonl.gz").write_bytes(whole[: len(whole) // 2])  # a download cut off halfway

    assert main(["run", "--date", DAY]) == 3
    error = capsys.readouterr().err.strip()
    assert error.startswith("eval-pipeline: error:") and "\n" not in error
    assert f"{source / 'export.jsonl.gz'} is damaged gzip" in error


@pytest.fixture
def traced(project_env, monkeypatch):
    """A real OpenTelemetry SDK exporting each span as it ends (SimpleSpanProcessor) to `eval-pipeline collect`'s
    receiver, whose clock, the day file an export lands in, the test sets: (tracer provider, [received at])."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from eval_pipeline.episodes import collector

    received_at = [datetime(2026, 11, 5, 12, tzinfo=UTC)]

    class Clock(datetime):
        @classmethod
        def now(cls, tz=None):
            return received_at[0]

    monkeypatch.setattr(collector, "datetime", Clock)
    server = collector.serve(collector.TraceSink(project_env / "episodes" / "otlp"), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    provider = TracerProvider(resource=Resource.create({"service.name": "travel-service"}))
    endpoint = f"http://127.0.0.1:{server.server_address[1]}/v1/traces"
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    try:
        yield provider, received_at
    finally:
        provider.shutdown()
        server.shutdown()


SECOND = 1_000_000_000
AGENT = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "travel-agent"}


def chat(prompt_tokens: int, completion_tokens: int, **messages: str) -> dict:
    """A chat span's attributes; `input=` and `output=` give its messages."""
    tokens = {"gen_ai.usage.input_tokens": prompt_tokens, "gen_ai.usage.output_tokens": completion_tokens}
    said = {f"gen_ai.{direction}.messages": text for direction, text in messages.items()}
    return {"gen_ai.operation.name": "chat", "gen_ai.request.model": "gpt-4o", **tokens, **said}


def test_a_trace_running_past_midnight_is_one_episode_though_collect_stored_it_in_two_day_files(project_env, traced):
    """The LLM call and the tool call end before midnight UTC, the agent's root span after it, so the collector's day
    files split the trace."""
    from opentelemetry.trace import set_span_in_context

    provider, received_at = traced
    tracer = provider.get_tracer("travel-agent")
    received_at[0] = datetime(2026, 11, 5, 23, 59, 59, tzinfo=UTC)
    at = int(datetime(2026, 11, 5, 23, 59, 50, tzinfo=UTC).timestamp() * 1e9)  # the run starts 10 s before midnight
    tool = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "book_flight"}
    root = tracer.start_span("invoke_agent travel", start_time=at, attributes={**AGENT, "eval.task_id": "travel/oslo"})
    inside = set_span_in_context(root)
    for name, start, end, attributes in (("chat", 1, 3, chat(120, 30)), ("execute_tool", 4, 8, tool)):
        tracer.start_span(name, inside, start_time=at + start * SECOND, attributes=attributes).end(at + end * SECOND)
    received_at[0] = datetime(2026, 11, 6, 0, 0, 2, tzinfo=UTC)  # midnight passed
    tracer.start_span("chat", inside, start_time=at + 9 * SECOND, attributes=chat(200, 12)).end(at + 11 * SECOND)
    root.end(end_time=at + 12 * SECOND)
    day_files = sorted(path.name for path in (project_env / "episodes" / "otlp").glob("*.jsonl"))
    assert day_files == ["2026-11-05.jsonl", "2026-11-06.jsonl"]

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    sql = "SELECT agent_id, task_id, status, tools, total_tokens, step_count, total_duration_ms FROM episodes"
    episodes = rows(project_env, sql)
    assert episodes == [("travel-agent", "travel/oslo", "success", ["book_flight"], 362, 4, 12000.0)]
    assert rows(project_env, "SELECT count(*) FROM quarantine") == [(0,)]


def test_genai_messages_in_parts_are_read_as_their_text(project_env, traced):
    """The GenAI conventions' messages as instrumentations write them now: `{"role", "parts": [{"type": "text",
    "content": ...}]}`, a tool call a part of its own."""
    from opentelemetry.trace import set_span_in_context

    def said(role: str, *parts: dict) -> dict:
        return {"role": role, "parts": list(parts)}

    def text(content: str) -> dict:
        return {"type": "text", "content": content}

    asked = [said("system", text("Be brief.")), said("user", text("Weather in Oslo?"))]
    calling = {"type": "tool_call", "id": "call_1", "name": "get_weather", "arguments": {"city": "Oslo"}}
    answered = {"type": "tool_call_response", "id": "call_1", "response": {"temp_c": 4}}
    tracer = traced[0].get_tracer("travel-agent")
    at = int(datetime(2026, 11, 5, 10, tzinfo=UTC).timestamp() * 1e9)
    root = tracer.start_span("invoke_agent travel", start_time=at, attributes=AGENT)
    inside = set_span_in_context(root)
    first = chat(20, 5, input=json.dumps(asked), output=json.dumps([said("assistant", calling)]))
    tracer.start_span("chat", inside, start_time=at + SECOND, attributes=first).end(at + 2 * SECOND)
    answer = {**said("assistant", text("It is 4 C "), text("in Oslo.")), "finish_reason": "stop"}
    history = [*asked, said("assistant", calling), said("tool", answered)]
    last = chat(40, 8, input=json.dumps(history), output=json.dumps([answer]))
    tracer.start_span("chat", inside, start_time=at + 3 * SECOND, attributes=last).end(at + 4 * SECOND)
    root.end(end_time=at + 5 * SECOND)

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert rows(project_env, "SELECT task_id, final_output FROM episodes") == [
        (derived_task_id("Weather in Oslo?"), "It is 4 C in Oslo.")
    ]  # the task of any other record of this question, whatever its format
    steps = rows(project_env, "SELECT input, output FROM episode_steps WHERE step_type = 'llm_call' ORDER BY step_index")
    assert steps == [("Weather in Oslo?", json.dumps([calling])), ("Weather in Oslo?", "It is 4 C in Oslo.")]


def test_openinference_messages_given_as_content_parts_keep_their_question(project_env, traced, fake_openai):
    """An agent instrumented with OpenInference asks with content parts (`[{"type": "text", "text": ...}]`, as the
    OpenAI SDK takes them); the instrumentation records each part under `message.contents`."""
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor

    provider, _ = traced
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="sk-otel-test-key-0123456789", max_retries=0)
    questions = {"Weather in Oslo?": ["Weather", " in Oslo?"], "Weather in Bergen?": ["Weather", " in Bergen?"]}
    try:
        for texts in questions.values():
            with provider.get_tracer("weather-agent").start_as_current_span("invoke_agent weather", attributes=AGENT):
                parts = [{"type": "text", "text": text} for text in texts]
                client.chat.completions.create(model="small-1", messages=[{"role": "user", "content": parts}])
    finally:
        instrumentor.uninstrument()

    assert main(["run", "--date", datetime.now(UTC).date().isoformat(), "--fail-on", "never"]) == 0
    sql = "SELECT task_id, s.input FROM episodes JOIN episode_steps s USING (episode_id) WHERE step_type = 'llm_call' ORDER BY 2"
    assert rows(project_env, sql) == [(derived_task_id(question), question) for question in sorted(questions)]


@pytest.mark.parametrize("started_at", ["2026-11-05T24:00:00Z", "2026-11-05T10:00:00+24:00"])
def test_a_time_the_file_index_cannot_date_is_quarantined_not_lost(project_env, started_at):
    """ISO 8601's end of day (24:00), and an offset of a day or more: DuckDB read a day from them that the file index
    did not, so the record was never on the day it was read for nor read on its own."""
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Where does ticket {n} go?", "route_ticket", "{}", "To billing.")
                for n in range(3)]  # fmt: skip
    exported[1]["started_at"] = started_at
    (source / "export.jsonl").write_text("".join(json.dumps(e) + "\n" for e in exported))

    for day in ("2026-11-04", DAY, "2026-11-06"):
        assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    assert rows(project_env, "SELECT partition_date, episode_id FROM episodes ORDER BY 2") == [
        (date(2026, 11, 5), "ep-0"), (date(2026, 11, 5), "ep-2"),
    ]  # fmt: skip
    assert rows(project_env, "SELECT partition_date, locator, reason FROM quarantine") == [
        (date(2026, 11, 5), f"{source / 'export.jsonl'}:2", f"started_at '{started_at}' is not an ISO 8601 timestamp")
    ]


def test_files_windows_powershell_wrote_in_utf16_load(project_env, capsys):
    """`python export.py > episodes.jsonl` in Windows PowerShell 5 writes UTF-16 with a byte-order mark and CRLF lines;
    `ConvertTo-Json | Out-File results.json` an indented JSON array, the same way."""
    source = project_env / "episodes"
    source.mkdir()
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Où va le ticket {n} ?", "route_ticket", "{}", "À la facturation.")
                for n in range(3)]  # fmt: skip
    (source / "episodes.jsonl").write_bytes("".join(json.dumps(e) + "\r\n" for e in exported).encode("utf-16"))
    (source / "results.json").write_bytes(json.dumps([CAPTURE], indent=4).replace("\n", "\r\n").encode("utf-16"))

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert "4 episodes" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, task_id, final_output FROM episodes ORDER BY 1") == [
        ("ep-0", "triage/0", "À la facturation."), ("ep-1", "triage/1", "À la facturation."),
        ("ep-2", "triage/2", "À la facturation."), ("results:fix-typo", "fix-typo", "Fixed and committed."),
    ]  # fmt: skip
    assert rows(project_env, "SELECT count(*) FROM quarantine") == [(0,)]


def test_plaited_results_whose_prompts_metadata_says_status_or_agent_id_are_read_as_plaited_wrote_them(project_env):
    """plaited copies each prompt's `metadata` into its CaptureResult; the user's keys are theirs, not our export's."""
    source = project_env / "episodes"
    source.mkdir()
    metadata = {**CAPTURE["metadata"], "status": "needs-review", "agent_id": "claude-code", "episode_id": "case-7"}
    (source / "results.jsonl").write_text(json.dumps({**CAPTURE, "metadata": metadata}) + "\n")

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert rows(project_env, "SELECT locator, reason FROM quarantine") == []
    episodes = rows(project_env, "SELECT episode_id, agent_id, status, metadata ->> '$.status' FROM episodes")
    assert episodes == [("results:fix-typo", "results", "success", "needs-review")]  # the file's name is its agent


def test_a_plaited_record_refused_after_its_conversion_is_quarantined_as_plaited_wrote_it(project_env):
    """A CI runner whose clock said 2031 ran plaited's harness: its CaptureResult converts, then is refused as a broken
    clock. Its quarantine row held our converted episode as `raw`, a record the user never wrote; now it holds their
    line, and the record after it loads."""
    source = project_env / "episodes"
    source.mkdir()
    years = 5 * 365 * 24 * 3600 * 1000
    broken = {**CAPTURE, "id": "fix-clock", "timing": {**CAPTURE["timing"], "start": START + years, "end": START + years + 4000}}
    lines = [json.dumps(broken), json.dumps(CAPTURE)]
    (source / "results.jsonl").write_text("\n".join(lines) + "\n")

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    ((locator, reason, raw),) = rows(project_env, "SELECT locator, reason, raw FROM quarantine")
    assert locator == f"{source / 'results.jsonl'}:1" and reason.endswith("(tomorrow): a broken clock")
    assert raw == lines[0]
    assert rows(project_env, "SELECT episode_id FROM episodes") == [("results:fix-typo",)]


def test_json_arrays_appended_night_after_night_all_load(project_env):
    """The user's exporter appends each night's episodes to history.json as an indented array (json.dump in mode "a")."""
    source = project_env / "episodes"
    source.mkdir()
    with (source / "history.json").open("a") as history:
        for day in ("2026-11-04", DAY):
            night = [episode(f"ep-{day}-{n}", f"triage/{n}", f"Ticket {n}?", "route_ticket", "{}", "To billing.", day=day)
                     for n in range(2)]  # fmt: skip
            json.dump(night, history, indent=2)
            history.write("\n")

    for day in ("2026-11-04", DAY):
        assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    assert rows(project_env, "SELECT partition_date, episode_id FROM episodes ORDER BY 2") == [
        (date(2026, 11, 4), "ep-2026-11-04-0"), (date(2026, 11, 4), "ep-2026-11-04-1"),
        (date(2026, 11, 5), "ep-2026-11-05-0"), (date(2026, 11, 5), "ep-2026-11-05-1"),
    ]  # fmt: skip
    assert rows(project_env, "SELECT count(*) FROM quarantine") == [(0,)]


def test_numbers_given_as_text_in_another_tools_format_are_rejected_as_in_ours(project_env):
    """A team's own trials runner writes plaited's TrialResult, but with the duration as text and the grader's verdict
    as a word: that record is quarantined naming the field (as `"tokens": "300"` is in our format); the next loads."""
    source = project_env / "episodes"
    source.mkdir()
    written = {**TRIALS, "id": "fix-typo", "trials": [{**TRIALS["trials"][0], "duration": "1200", "pass": "yes"}]}
    (source / "trials.jsonl").write_text(json.dumps(written) + "\n" + json.dumps(TRIALS) + "\n")

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert rows(project_env, "SELECT locator, reason FROM quarantine") == [
        (f"{source / 'trials.jsonl'}:1", "plaited: trials.0.duration: Input should be a valid number")
    ]
    assert rows(project_env, "SELECT episode_id, total_duration_ms FROM episodes ORDER BY 1") == [
        ("trials:add-test:1", 1200.0), ("trials:add-test:2", 900.0),
    ]  # fmt: skip


def test_a_file_windows_python_wrote_in_its_ansi_code_page_is_quarantined_where_a_byte_is_no_utf8(project_env, capsys):
    """Python on Windows opens files in the ANSI code page (cp1252) unless told otherwise: an exporter's
    `open("export.jsonl", "w")` and `json.dumps(e, ensure_ascii=False)` write "À" as the byte 0xc0. Such records were
    loaded with U+FFFD in place of each letter, their answers scored as if the agent had written it; now each is
    quarantined naming the byte, and the records around it load. The same for an indented array (`json.dump`)."""
    source = project_env / "episodes"
    source.mkdir()
    answers = ["To billing.", "À la facturation.", "To billing."]
    exported = [episode(f"ep-{n}", f"triage/{n}", f"Ticket {n}?", "route_ticket", "{}", a) for n, a in enumerate(answers)]
    with (source / "export.jsonl").open("w", encoding="cp1252") as export:
        for record in exported:
            export.write(json.dumps(record, ensure_ascii=False) + "\n")
    night = [episode(f"arr-{n}", f"triage/{n}", q, "route_ticket", "{}", "Done.") for n, q in enumerate(["Où ?", "Where?"])]
    with (source / "history.json").open("w", encoding="cp1252") as history:
        json.dump(night, history, ensure_ascii=False, indent=2)
    gave_up = {**TRIALS, "id": "fix-typo", "trials": [{**TRIALS["trials"][1], "output": "Abandonné."}]}
    with (source / "trials.jsonl").open("w", encoding="cp1252") as trials:  # a team's own runner, in plaited's format
        trials.write(json.dumps(gave_up, ensure_ascii=False) + "\n" + json.dumps(TRIALS, ensure_ascii=False) + "\n")

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert "3 quarantined" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, final_output FROM episodes ORDER BY 1") == [
        ("arr-1", "Done."), ("ep-0", "To billing."), ("ep-2", "To billing."),
        ("trials:add-test:1", "Added."), ("trials:add-test:2", "Gave up."),
    ]  # fmt: skip
    trial = json.dumps(gave_up, ensure_ascii=False).encode("cp1252")
    line = json.dumps(exported[1], ensure_ascii=False).encode("cp1252")
    array = (source / "history.json").read_bytes()
    reason = "not UTF-8: byte 0x{:02x} at byte {} of the record (text is read as UTF-8, or UTF-16 with its byte-order mark)"
    assert rows(project_env, "SELECT locator, reason, contains(raw, '\ufffd') FROM quarantine ORDER BY 1") == [
        (f"{source / 'export.jsonl'}:2", reason.format(0xC0, line.index(b"\xc0")), True),
        (f"{source / 'history.json'}:2", reason.format(0xF9, array.index(b"\xf9") - array.index(b"{")), True),
        (f"{source / 'trials.jsonl'}:1", reason.format(0xE9, trial.index(b"\xe9")), True),
    ]


def test_a_results_file_a_teams_runner_wrote_in_cp1252_is_refused_naming_the_byte(project_env, capsys):
    """`summarize trials.jsonl` of a team's own runner (plaited's TrialResult) writing Windows' ANSI code page: the
    summary would have shown U+FFFD for each letter; it is an error naming the line and the byte (exit 2)."""
    path = project_env / "trials.jsonl"
    with path.open("w", encoding="cp1252") as trials:
        trials.write(json.dumps(TRIALS) + "\n")
        trials.write(json.dumps({**TRIALS, "input": "Ajoute un test, s'il te plaît"}, ensure_ascii=False))
    at = path.read_bytes().split(b"\n")[1].index(b"\xee")

    assert main(["summarize", str(path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"eval-pipeline: error: results file {path}:2: not UTF-8: byte 0xee at byte {at} of the record "
        "(text is read as UTF-8, or UTF-16 with its byte-order mark)"
    )


# Three JavaScript writers, each cutting an answer for its log with `slice`, which cuts "🎉" between the two halves of
# its UTF-16 surrogate pair: a team's exporter of our episodes (JSONL and an indented array, `JSON.stringify` writing
# the half left as the escape `\ud83c`), plaited's harness writing a CaptureResult line the same way, and an exporter
# that writes its lines by hand as UTF-16 with a byte-order mark (Buffer's `utf16le` keeps the half as it is).
_CUT_WRITERS = """
const fs = require("fs");
const [episodes, capture] = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const cut = (text) => text.slice(0, text.indexOf("🎉") + 1);
const dir = process.argv[3];
const exported = episodes.map((e, n) => n === 1 ? {...e, steps: e.steps.map((s, i) =>
    i === 2 ? {...s, output_summary: cut(s.output_summary)} : s)} : e);
fs.writeFileSync(`${dir}/export.jsonl`, exported.map((e) => JSON.stringify(e)).join("\\n") + "\\n");
fs.writeFileSync(`${dir}/export.json`, JSON.stringify(exported.map((e) => ({...e, episode_id: `arr-${e.episode_id}`})), null, 2));
const runs = [{...capture, id: "whole"}, {...capture, id: "cut", output: cut("Fixed 🎉 and committed.")}];
fs.writeFileSync(`${dir}/claude-headless.jsonl`, runs.map((r) => JSON.stringify(r)).join("\\n") + "\\n");
const byHand = ["Done 🎉.", cut("Done 🎉.")].map((answer, n) => `{"episode_id": "hand-${n}", "agent_id": "triage-bot", ` +
    `"status": "success", "started_at": "${episodes[0].started_at}", "metadata": {"task_id": "hand/${n}"}, ` +
    `"steps": [{"step_index": 0, "step_type": "llm_call", "output_summary": "${answer}"}]}`);
fs.writeFileSync(`${dir}/by-hand.jsonl`, Buffer.from("\\ufeff" + byHand.join("\\r\\n") + "\\r\\n", "utf16le"));
"""


@needs_node
def test_answers_javascript_cut_between_the_halves_of_a_surrogate_pair_are_quarantined_naming_the_field(project_env, capsys):
    """Each such record was quarantined as "invalid JSON" though it is JSON (Python and JavaScript read it): DuckDB
    refuses the half, and said nothing more. A plaited record was converted first, its reason naming our field. The
    record written by hand in UTF-16 was loaded with U+FFFD in place of the half. Now each is quarantined naming the
    user's own field, and the records around it load."""
    source = project_env / "episodes"
    source.mkdir()
    inputs = project_env / "inputs.json"
    answers = ["Routed to billing.", "Routed 🎉 to billing.", "Routed 🎉 to billing."]
    exported = [episode(f"ep-{n}", f"triage/{n}", "Where?", "route_ticket", "{}", a) for n, a in enumerate(answers)]
    inputs.write_text(json.dumps([exported, CAPTURE]))
    (project_env / "writers.js").write_text(_CUT_WRITERS)
    subprocess.run(["node", str(project_env / "writers.js"), str(inputs), str(source)], check=True)

    assert main(["run", "--date", DAY, "--fail-on", "never"]) == 0
    assert "4 quarantined" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, final_output FROM episodes ORDER BY 1") == [
        ("arr-ep-0", "Routed to billing."), ("arr-ep-2", "Routed 🎉 to billing."),
        ("claude-headless:whole", "Fixed and committed."), ("ep-0", "Routed to billing."), ("ep-2", "Routed 🎉 to billing."),
        ("hand-0", "Done 🎉."),
    ]  # fmt: skip
    alone = (
        "holds half of a UTF-16 surrogate pair alone (\\u{}), no character: a text cut between the two halves "
        "(as JavaScript's slice cuts one)"
    )
    surrogate = (
        "not text: half of a UTF-16 surrogate pair, U+D83C, alone at character {} of the record "
        "(text is read as UTF-8, or UTF-16 with its byte-order mark)"
    )
    array = (source / "export.json").read_text().splitlines()
    opening = array.index('    "episode_id": "arr-ep-1",')  # the record opens on the line before: its 1-based number
    hand = (source / "by-hand.jsonl").read_bytes().decode("utf-16", "surrogatepass").splitlines()[1]
    quarantined = rows(project_env, "SELECT locator, reason, raw FROM quarantine ORDER BY 1")
    assert [(locator, reason) for locator, reason, _ in quarantined] == [
        (f"{source / 'by-hand.jsonl'}:2", surrogate.format(hand.index("\ud83c"))),
        (f"{source / 'claude-headless.jsonl'}:2", "output " + alone.format("d83c")),
        (f"{source / 'export.json'}:{opening}", "steps[2].output_summary " + alone.format("d83c")),
        (f"{source / 'export.jsonl'}:2", "steps[2].output_summary " + alone.format("d83c")),
    ]
    claude_line = (source / "claude-headless.jsonl").read_text().splitlines()[1]
    assert quarantined[1][2] == claude_line  # the user's record as written, not what the adapter would have made of it
    assert quarantined[3][2] == (source / "export.jsonl").read_text().splitlines()[1]
