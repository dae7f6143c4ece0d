"""A real OpenTelemetry producer exporting to `eval-pipeline collect`, and the traces scored end to end."""

import gzip
import json
import os
import subprocess
import sys
from datetime import UTC, datetime

import httpx
import pytest

from eval_pipeline.cli import main
from eval_pipeline_tests.test_ui import free_port

pytestmark = pytest.mark.slow


@pytest.fixture
def collector(project_env):
    tmp_path = project_env
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline.cli", "collect", "--port", str(port)],
        stdout=subprocess.PIPE, text=True, env=os.environ.copy(),
    )  # fmt: skip
    try:
        assert "collecting OTLP/HTTP traces" in process.stdout.readline()
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        process.terminate()
        process.wait(10)


def test_an_instrumented_agent_exports_to_collect_and_its_runs_are_scored(collector, fake_openai, capsys):
    import openai
    from openinference.instrumentation.openai import OpenAIInstrumentor
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    endpoint, root = collector
    provider = TracerProvider(resource=Resource.create({"service.name": "otel-agent-service"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{endpoint}/v1/traces")))  # protobuf
    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    tracer = provider.get_tracer("test-agent")
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="sk-otel-test-key-0123456789", max_retries=0)
    try:
        for trial in range(2):  # a tiny agent: ask, call a tool, answer
            with tracer.start_as_current_span("invoke_agent weather", attributes={
                "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": "weather-agent",
                "eval.task_id": "weather/oslo", "eval.trial": trial,
            }):  # fmt: skip
                client.chat.completions.create(model="small-1", messages=[{"role": "user", "content": "Weather in Oslo?"}])
                with tracer.start_as_current_span("execute_tool get_weather", attributes={
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather",
                    "gen_ai.tool.call.arguments": '{"city": "Oslo"}', "gen_ai.tool.call.result": '{"temp_c": 4}',
                }):  # fmt: skip
                    pass
                client.chat.completions.create(model="small-1", messages=[{"role": "user", "content": "Summarize: 4 C"}])
        provider.force_flush()
    finally:
        instrumentor.uninstrument()
        provider.shutdown()

    today = datetime.now(UTC).date().isoformat()
    received = (root / "episodes" / "otlp" / f"{today}.jsonl").read_text().splitlines()
    assert received and all("resourceSpans" in json.loads(line) for line in received)
    assert main(["run", "--date", today, "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["query", "SELECT agent_id, task_id, trial, status, tools FROM episodes ORDER BY trial", "--format", "json"]) == 0
    episodes = json.loads(capsys.readouterr().out)
    assert episodes == [
        {"agent_id": "weather-agent", "task_id": "weather/oslo", "trial": t, "status": "success", "tools": ["get_weather"]}
        for t in range(2)
    ]
    assert main(["query", "SELECT count(*) AS n, count(issue_grade) AS graded FROM scores", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 2, "graded": 2}]
    sql = "SELECT step_type, model, input FROM episode_steps WHERE step_type = 'llm_call' ORDER BY episode_id, step_index"
    assert main(["query", sql, "--format", "json"]) == 0
    calls = json.loads(capsys.readouterr().out)  # the OpenInference instrumentation's LLM spans
    assert len(calls) == 4 and {c["model"] for c in calls} == {"small-1"}
    assert [c["input"] for c in calls[:2]] == ["Weather in Oslo?", "Summarize: 4 C"]


def test_collect_takes_json_and_gzip_and_refuses_what_is_not_an_export(collector):
    endpoint, root = collector
    export = {"resourceSpans": []}
    assert httpx.post(f"{endpoint}/v1/traces", json=export).status_code == 200
    zipped = gzip.compress(json.dumps(export).encode())
    headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
    assert httpx.post(f"{endpoint}/v1/traces", content=zipped, headers=headers).status_code == 200
    bad = httpx.post(f"{endpoint}/v1/traces", content=b"\x08\x96", headers={"Content-Type": "application/x-protobuf"})
    assert bad.status_code == 400 and "ExportTraceServiceRequest" in bad.json()["error"]
    assert httpx.post(f"{endpoint}/v1/traces", content=b"{not json").status_code == 400
    assert httpx.post(f"{endpoint}/v1/metrics", json=export).status_code == 404
    lines = next((root / "episodes" / "otlp").glob("*.jsonl")).read_text().splitlines()
    assert lines == ['{"resourceSpans":[]}'] * 2  # what was refused was not written


def test_sigterm_stops_collect_even_where_it_was_inherited_as_ignored(project_env):
    """Under CI's make, collect inherited SIGTERM as ignored and outlived its tests; a supervisor's stop must work."""
    import signal

    process = subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline.cli", "collect", "--port", str(free_port())], stdout=subprocess.PIPE, text=True,
        env=os.environ.copy(), preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )  # fmt: skip
    try:
        assert "collecting OTLP/HTTP traces" in process.stdout.readline()
        process.terminate()
        assert process.wait(10) == 0
    finally:
        process.kill()
