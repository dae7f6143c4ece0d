"""`eval-pipeline serve` as a user runs it: its own process on a free loopback port, over a warehouse the demo's days
built, pages fetched over HTTP and one opened in Debian's chromium."""

import http.client
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from html import unescape
from pathlib import Path

import dagster as dg
import httpx
import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline_tests.browser import HEADLESS, distinct_pixel_bytes, needs_chromium, screenshot
from eval_pipeline_tests.defs.graph import GRAPH, VIEWER_URL, local_resources
from eval_pipeline_tests.leaks import LEAKS
from eval_pipeline_tests.test_ui import free_port

pytestmark = pytest.mark.slow

DAY = "2026-11-02"
PAYLOAD = '<script>alert("owned")</script><img src=x onerror=alert(1)>'
EVERY_LEAK = "\n".join(leak.text for leak in LEAKS)
HOSTILE = "ep-hostile"


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """The demo's first two days, plus a support-bot episode on day 2 whose answer, tool call and tool result hold
    markup and every kind of secret."""
    root = tmp_path_factory.mktemp("viewer")
    write_samples(root / "episodes")
    hostile = {
        "episode_id": HOSTILE, "agent_id": "support-bot", "status": "failure", "started_at": f"{DAY}T12:00:00Z",
        "steps": [
            {"step_index": 0, "step_type": "llm_call", "input_summary": "Where is my order A-10482?",
             "output_summary": PAYLOAD, "duration_ms": 900},
            {"step_index": 1, "step_type": "tool_call", "tool_name": "lookup_order", "input_summary": EVERY_LEAK,
             "duration_ms": 100},
            {"step_index": 2, "step_type": "tool_result", "tool_name": "lookup_order", "output_summary": EVERY_LEAK,
             "duration_ms": 100},
        ],
        "metadata": {"task_id": "support-bot/where-is-my-order", "final_output": PAYLOAD + EVERY_LEAK},
    }  # fmt: skip
    (root / "episodes" / "hostile.jsonl").write_text(json.dumps(hostile) + "\n")
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2026-11-01", DAY):
        assert dg.materialize(GRAPH, partition_key=day, resources=local_resources(root), instance=instance).success
    return root


@contextmanager
def serving(
    root: Path, *arguments: str, token: str | None = None, config: Path = PROJECT_ROOT / "eval.toml", log: list[str] | None = None
) -> Iterator[httpx.Client]:
    """`eval-pipeline serve` in its own process, started with SIGTERM ignored as `make` in the background starts it;
    stopped with SIGTERM, which it must obey all the same. `log`, when given, collects its stderr lines as they come."""
    port = free_port()
    env = {**os.environ, "EVAL_DUCKDB_PATH": str(root / "eval.duckdb"), "EVAL_REPORTS_DIR": str(root / "reports"),
           "EVAL_CONFIG": str(config), "PYTHONPATH": str(PROJECT_ROOT)}  # fmt: skip
    env.pop("EVAL_UI_TOKEN", None)
    if token:
        env["EVAL_UI_TOKEN"] = token
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline.cli", "serve", "--port", str(port), *arguments],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE if log is not None else None, text=True, env=env, cwd=root,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN),
    )  # fmt: skip
    if log is not None:
        threading.Thread(target=lambda: log.extend(process.stderr or ()), daemon=True).start()
    try:
        assert process.stdout and f"viewer on http://127.0.0.1:{port}/" in process.stdout.readline()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            yield client
    finally:
        process.send_signal(signal.SIGTERM)
        assert process.wait(10) == 0


@pytest.fixture(scope="module")
def viewer(project) -> Iterator[httpx.Client]:
    with serving(project) as client:
        yield client


def links(html: str, prefix: str) -> list[str]:
    return [unescape(link) for link in re.findall(rf'href="({re.escape(prefix)}[^"]*)"', html)]


def test_from_the_days_to_a_day_2_finding_to_its_episode_beside_the_baseline(viewer):
    days = viewer.get("/")
    assert days.status_code == 200 and "2026-11-01" in days.text
    day = viewer.get(f"/days/{DAY}")
    assert day.status_code == 200
    assert "New findings" in day.text and "Persisting findings" in day.text and "Resolved since the day before" in day.text
    finding = next(link for link in links(day.text, f"/days/{DAY}/episodes/") if "code-assistant-rename-config-key" in link)
    episode = viewer.get(finding)
    assert episode.status_code == 200
    text = episode.text
    assert "Beside its baseline" in text and "ep-2026-11-01-code-assistant-rename-config-key" in text
    assert "<del>Renamed max_retry " in text and "<ins>I&#39;m sorry, I could not " in text  # the answers diffed
    assert text.count('class="same"') == 3  # search_code, edit_file, run_tests in both runs
    assert "correctness 0.03 vs limit 0.50" in text  # its finding, with the reason
    assert text.count('<details class="step') == 16  # 8 steps each side
    assert f"http://127.0.0.1:8765/days/{DAY}/episodes/ep-2026-11-02-code-assistant-rename-config-key" in text


def test_every_number_links_to_the_episodes_it_counts(viewer):
    page = viewer.get(f"/days/{DAY}", params={"agent": "support-bot", "severity": "critical"})
    episodes = links(page.text.split('id="episodes"')[1], f"/days/{DAY}/episodes/")
    assert episodes and all("support-bot" in link or link.endswith(HOSTILE) for link in episodes)
    figures = dict(re.findall(r'<a class="figure" href="([^"]+)"><span class="label">([^<]+)</span>', page.text))
    failed = viewer.get(unescape(next(href for href, label in figures.items() if label == "failed")))
    shown = re.search(r'<span class="label">failed</span><span class="value">(\d+)</span>', page.text)
    assert shown and len(links(failed.text.split('id="episodes"')[1], f"/days/{DAY}/episodes/")) == int(shown[1])
    assert viewer.get(f"/days/{DAY}", params={"verdict": "maybe"}).status_code == 400
    assert viewer.get(f"/days/{DAY}/episodes/no-such-episode").status_code == 404


def test_a_hostile_episode_shows_as_text_with_its_secrets_redacted(viewer):
    page = viewer.get(f"/days/{DAY}/episodes/{HOSTILE}")
    assert page.status_code == 200
    assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in page.text and "<script" not in page.text
    assert "<img" not in page.text
    leaked = [tell for leak in LEAKS for tell in leak.tells if tell in page.text]
    assert not leaked and "…[redacted]" in page.text
    assert "script-src" not in page.headers["content-security-policy"]  # default-src 'none': no script would run


@needs_chromium
def test_a_browser_shows_the_episode_page_with_the_payload_as_text(viewer, tmp_path):
    base = str(viewer.base_url).rstrip("/")
    url = f"{base}/days/{DAY}/episodes/{HOSTILE}"
    dom = subprocess.run(
        ["chromium", *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout  # fmt: skip
    assert '&lt;script&gt;alert("owned")&lt;/script&gt;' in dom and "<script" not in dom and "Beside its baseline" in dom
    shot = screenshot(f"{base}/days/{DAY}", tmp_path / "day.png", tmp_path / "profile")
    assert distinct_pixel_bytes(shot) > 50


def test_a_busy_warehouse_answers_503_and_the_next_page_works(project, viewer):
    """A writer that does not take our lock (a `duckdb` shell), then a run that holds it past the viewer's wait."""
    for writer in (
        "import duckdb; con = duckdb.connect(PATH)",
        "from pathlib import Path; from eval_pipeline.warehouse.connection import Warehouse; "
        "session = Warehouse(Path(PATH)).transaction(); session.__enter__()",
    ):
        holder = subprocess.Popen(
            [sys.executable, "-c", f"PATH = {str(project / 'eval.duckdb')!r}; {writer}; print('holding', flush=True); input()"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
        )  # fmt: skip
        try:
            assert holder.stdout and holder.stdout.readline() == "holding\n"
            busy = viewer.get(f"/days/{DAY}")
            assert busy.status_code == 503 and "Warehouse busy, retry" in busy.text and busy.headers["retry-after"]
        finally:
            holder.communicate("\n", timeout=30)
        assert viewer.get(f"/days/{DAY}").status_code == 200  # nothing was held: the page works again


def test_beyond_loopback_only_with_a_token(project_env, capsys):
    assert main(["serve", "--host", "0.0.0.0"]) == 2
    assert "refusing to serve on 0.0.0.0 without a token: set EVAL_UI_TOKEN" in capsys.readouterr().err


def test_with_a_token_every_request_carries_it(project):
    with serving(project, token="t0ken-for-tests") as client:
        assert client.get("/").status_code == 401
        assert client.get("/", params={"token": "wrong"}).status_code == 401
        assert client.get(f"/reports/eval-report-{DAY}.html").status_code == 401  # the reports too
        assert client.get("/", headers={"Authorization": "Bearer t0ken-for-tests"}).status_code == 200
        entry = client.get(f"/days/{DAY}", params={"token": "t0ken-for-tests", "agent": "support-bot"})
        assert entry.status_code == 303 and entry.headers["location"] == f"/days/{DAY}?agent=support-bot"
        assert "HttpOnly" in entry.headers["set-cookie"]
        assert client.get(entry.headers["location"]).status_code == 200  # the cookie carries it now
        assert client.get(f"/reports/eval-report-{DAY}.html").status_code == 200


def test_without_a_token_it_answers_only_loopback_names(viewer):
    assert viewer.get("/", headers={"Host": "evil.example"}).status_code == 403  # a DNS-rebinding page
    assert viewer.get(f"/reports/eval-report-{DAY}.html", headers={"Host": "evil.example"}).status_code == 403
    assert viewer.get("/", headers={"Host": "localhost:1"}).status_code == 200


def test_the_reports_directory_is_served_with_its_types_and_its_links_open(project, viewer):
    """The report file a Dagster UI link opens, and from its findings the episode pages (the report's links are made
    with the tests' pinned viewer address: here they are followed on the running viewer)."""
    reports = project / "reports"
    for name, content_type in ((f"eval-report-{DAY}.html", "text/html; charset=utf-8"),
                               (f"eval-report-{DAY}.md", "text/markdown; charset=utf-8"),
                               (f"eval-report-{DAY}.json", "application/json")):  # fmt: skip
        answer = viewer.get(f"/reports/{name}")
        assert answer.status_code == 200 and answer.content == (reports / name).read_bytes()
        assert answer.headers["content-type"] == content_type and answer.headers["x-content-type-options"] == "nosniff"
    report = viewer.get(f"/reports/eval-report-{DAY}.html").text
    finding = next(link for link in links(report, f"{VIEWER_URL}/days/{DAY}/episodes/") if "rename-config-key" in link)
    episode = viewer.get(finding.removeprefix(VIEWER_URL))
    assert episode.status_code == 200 and "Beside its baseline" in episode.text


def test_only_the_reports_directorys_own_files_are_served(project, viewer):
    (project / "outside.txt").write_text("not a report")
    (project / "reports" / ".hidden.json").write_text("{}")
    (project / "reports" / "escape.html").unlink(missing_ok=True)
    (project / "reports" / "escape.html").symlink_to(project / "outside.txt")
    (project / "reports" / "nested").mkdir(exist_ok=True)
    (project / "reports" / "nested" / "inner.md").write_text("#")
    address = str(viewer.base_url).removeprefix("http://").rstrip("/")
    refused = ["../outside.txt", "..%2Foutside.txt", "%2E%2E%2Foutside.txt", "", ".hidden.json", "escape.html", "nested",
               "nested/inner.md", "nested%2Finner.md", "%00", "x" * 5000, "no-such-report.html"]  # fmt: skip
    for path in (f"/reports/{name}" for name in refused):
        connection = http.client.HTTPConnection(address, timeout=30)  # the path goes out as written, dots and all
        connection.request("GET", path)
        answer = connection.getresponse()
        assert (answer.status, path) == (404, path) and b"not a report" not in answer.read()
        connection.close()
