"""Agent data written to attack the outputs, run through the real pipeline: every secret kind in an answer, a
tool's output and a tool's name; Slack markup, Rich markup, HTML and control characters in ids; a 3,000-character
id. No output may show a secret or let the data format it."""

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.defs.alerting.sensors import regression_alerts
from eval_pipeline.defs.resources import AlertsResource, EvalConfigResource, WarehouseResource
from eval_pipeline_tests.browser import needs_chromium, page_width
from eval_pipeline_tests.defs.graph import UI_URL, VIEWER_URL
from eval_pipeline_tests.leaks import LEAKS

pytestmark = pytest.mark.slow

GITHUB_TOKEN = next(leak for leak in LEAKS if leak.kind == "GitHub token")
AGENT = "leaky-bot <!channel> <@U012ABCDEF> <http://evil.example|click> [/bold] <b>bold</b>"
EPISODE = "ep-2-\x1b[31m\x07\x01-" + "w" * 3000  # a control sequence, bell, SOH, then a very long tail
EVERY_LEAK = "\n".join(leak.text for leak in LEAKS)
TELLS = [tell for leak in LEAKS for tell in leak.tells]
RAW = {"episodes", "eval.duckdb", "eval.duckdb.wal", "index.json"}  # the source and the warehouse keep data as recorded


def _episode(episode_id: str, day: str, status: str, tool: str, tool_output: str, answer: str) -> dict:
    return {
        "episode_id": episode_id,
        "agent_id": AGENT,
        "status": status,
        "started_at": f"{day}T12:00:00Z",
        "ended_at": f"{day}T12:00:03Z",
        "total_cost_usd": 0.01,
        "total_duration_ms": 3000,
        "steps": [
            {"step_index": 0, "step_type": "llm_call", "input_summary": "Refund order A-1", "output_summary": "calling",
             "cost_usd": 0.01, "duration_ms": 1000},
            {"step_index": 1, "step_type": "tool_call", "tool_name": tool, "input_summary": "A-1", "duration_ms": 1000},
            {"step_index": 2, "step_type": "tool_result", "tool_name": tool, "output_summary": tool_output,
             "duration_ms": 1000},
        ],
        "metadata": {"task_id": "refund <!here>", "final_output": answer},
    }  # fmt: skip


@pytest.fixture
def hostile_run(project_env, monkeypatch, webhook, capsys) -> tuple[Path, str]:
    """Day 1 sets the baseline; on day 2 the same task fails, calls a tool named with a token and leaks everything.
    The webhook refuses, so the alerts stay in the outbox."""
    source = project_env / "episodes"
    source.mkdir()
    day_1 = _episode("ep-1", "2026-11-01", "success", "lookup_order", "order A-1 found", "Refund issued.")
    day_2 = _episode(EPISODE, "2026-11-02", "failure", "lookup_" + GITHUB_TOKEN.text, EVERY_LEAK, EVERY_LEAK)
    (source / "hostile.jsonl").write_text("".join(json.dumps(e) + "\n" for e in (day_1, day_2)))
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    webhook.fail_status, webhook.fail_next = 404, 1000
    junit = project_env / "junit.xml"
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--junit", str(junit), "--fail-on", "never"]) == 0
    captured = capsys.readouterr()
    assert "alert webhook POST to 127.0.0.1 answered HTTP 404" in captured.err
    return project_env, captured.out + captured.err


def _leaked(text: str) -> list[str]:
    return [tell for tell in TELLS if tell in text]


def test_no_output_file_log_or_message_shows_a_secret(hostile_run):
    root, printed = hostile_run
    assert _leaked(printed) == []
    outputs = [path for path in root.rglob("*") if path.is_file() and path.relative_to(root).parts[0] not in RAW]
    assert {"reports", "alerts", "dagster_home", "junit.xml"} <= {path.relative_to(root).parts[0] for path in outputs}
    assert list((root / "alerts" / "outbox").glob("*.json"))  # what the webhook refused waits there
    leaks = {str(path.relative_to(root)): found for path in outputs if (found := _leaked(path.read_bytes().decode("latin-1")))}
    assert leaks == {}


def test_slack_markup_is_escaped_in_every_alert(hostile_run, webhook):
    root, _ = hostile_run
    webhook.fail_next = 0  # the webhook is back: the alert sensor delivers what waited
    alerts = AlertsResource(
        directory=str(root / "alerts"), webhook_url=webhook.url, ui_base_url=UI_URL, viewer_base_url=VIEWER_URL
    )
    context = dg.build_sensor_context(
        instance=dg.DagsterInstance.ephemeral(),
        resources={
            "alerts": alerts,
            "warehouse": WarehouseResource(duckdb_path=str(root / "eval.duckdb")),
            "eval_config": EvalConfigResource(),
        },
    )
    assert regression_alerts(context).skip_message.startswith("delivered 4 alert(s) to the webhook")
    assert _leaked(json.dumps(webhook.messages)) == []
    for message in webhook.messages:
        for text in (message["text"], message["blocks"][0]["text"]["text"]):
            assert "&lt;!channel&gt;" in text and "&lt;@U012ABCDEF&gt;" in text and "&lt;http://evil.example|click&gt;" in text
            assert text.count("<") == text.count(f"<{UI_URL}/runs/") + text.count(f"<{VIEWER_URL}/days/")  # its own links only


def test_markdown_shows_html_as_text_and_junit_stays_xml(hostile_run):
    root, _ = hostile_run
    markdown = (root / "reports" / "eval-report-2026-11-02.md").read_text()
    assert "&lt;b&gt;bold&lt;/b&gt;" in markdown and "<b>" not in markdown and "<!channel>" not in markdown
    suites = ET.parse(root / "junit.xml").getroot()  # parses: the control characters XML forbids were dropped
    names = [case.get("name") for case in suites.iter("testcase")]
    assert any(name.startswith("refund <!here> [ep-2-[31m-www") for name in names)


def test_a_terminal_shows_markup_and_control_characters_as_text(hostile_run, monkeypatch, capsys):
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # Rich draws its table as on a terminal
    monkeypatch.setenv("COLUMNS", "5000")
    assert main(["query", "SELECT agent_id, episode_id, tools, final_output FROM episodes ORDER BY partition_date"]) == 0
    out = capsys.readouterr().out
    assert "[/bold]" in out and "\\x1b[31m\\x07\\x01" in out  # shown, not obeyed
    assert "\x07" not in out and "\x01" not in out and "\x1b[31m" not in out
    assert _leaked(out) == [] and "lookup_ghp_…[redacted]" in out


@needs_chromium
def test_a_long_id_wraps_in_the_html_report(hostile_run, tmp_path_factory):
    root, _ = hostile_run
    page = root / "reports" / "eval-report-2026-11-02.html"
    assert EPISODE[-3000:] in page.read_text()  # the whole id is there, and still the page fits its window
    assert page_width(page, tmp_path_factory.mktemp("chromium") / "profile") <= 1280
