"""The HTML report as a person opens it, and the Markdown/JSON reports against golden files."""

import json
import os
import re
from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline.episodes.samples import write_samples
from eval_pipeline_tests.browser import distinct_pixel_bytes, needs_chromium, screenshot
from eval_pipeline_tests.defs.graph import GRAPH, VIEWER_URL, local_resources

pytestmark = pytest.mark.slow
GOLDEN = Path(__file__).parent / "golden"
PAYLOAD = '<script>alert("owned")</script><img src=x onerror=alert(1)> Your order is lost.'


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("html")
    write_samples(root / "episodes")
    hostile = {
        "episode_id": "ep-hostile", "agent_id": "support-bot", "status": "failure", "started_at": "2026-11-02T12:00:00Z",
        "steps": [{"step_index": 0, "step_type": "llm_call", "input_summary": "Where is my order A-10482? It was due on Monday.",
                   "output_summary": PAYLOAD}],
        "metadata": {"task_id": "support-bot/where-is-my-order", "final_output": PAYLOAD},
    }  # fmt: skip
    (root / "episodes" / "hostile.jsonl").write_text(json.dumps(hostile) + "\n")
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2026-11-01", "2026-11-02"):
        assert dg.materialize(GRAPH, partition_key=day, resources=local_resources(root), instance=instance).success
    return root / "reports"


def test_agent_output_is_escaped_nothing_is_fetched_and_episodes_link_to_the_viewer(reports):
    html = (reports / "eval-report-2026-11-02.html").read_text()
    assert "ep-hostile" in html
    assert "&lt;script&gt;alert(&#34;owned&#34;)&lt;/script&gt;" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<script" not in html and "<img" not in html  # the page runs nothing
    assert not re.search(r"""<[^>]*\ssrc\s*=|url\(|@import|<link""", html)  # self-contained
    hrefs = re.findall(r"""<(\w+)[^>]*\shref\s*=\s*["']?([^"' >]+)""", html)
    assert hrefs and all(tag == "a" and target.startswith(f"{VIEWER_URL}/days/2026-11-02") for tag, target in hrefs)
    assert f'<a class="mono" href="{VIEWER_URL}/days/2026-11-02/episodes/ep-hostile">ep-hostile</a>' in html
    assert (html.count("<svg") >= 5 and "<polyline" in html) or "<circle" in html
    for section in ("What regressed", "Agents", "Trends over the last 30 days", "Worst episodes"):
        assert section in html


@needs_chromium
def test_a_browser_renders_the_report(reports, tmp_path):
    shot = screenshot((reports / "eval-report-2026-11-02.html").resolve().as_uri(), tmp_path / "report.png", tmp_path / "profile")
    assert distinct_pixel_bytes(shot) > 50  # a blank page has one or two


def _stable(text: str) -> str:
    """Run ids and the config version change from run to run and release to release."""
    text = re.sub(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", "RUN_ID", text)
    return re.sub(r"(config[ _]version\W+|Config `)[0-9a-f]{12}", r"\1CONFIG", text)


@pytest.mark.parametrize("name", ["eval-report-2026-11-02.md", "eval-report-2026-11-02.json"])
def test_reports_match_the_golden_files(reports, name):
    """Set UPDATE_GOLDEN=1 to rewrite them after an intended change, then review the diff."""
    produced = _stable((reports / name).read_text())
    golden = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(produced)
    assert produced == golden.read_text()
