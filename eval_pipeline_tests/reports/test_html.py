"""The HTML report as a person opens it, and the Markdown/JSON reports against golden files."""

import json
import os
import re
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.reports import findings_digest
from eval_pipeline_tests.browser import distinct_pixel_bytes, needs_chromium, rendered_dom, screenshot
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
    for section in ("What regressed", "Agents", "Trends over 2 days", "Worst episodes"):
        assert section in html


@needs_chromium
def test_a_browser_renders_the_report(reports, tmp_path):
    shot = screenshot((reports / "eval-report-2026-11-02.html").resolve().as_uri(), tmp_path / "report.png", tmp_path / "profile")
    assert distinct_pixel_bytes(shot) > 50  # a blank page has one or two


def _texts(dom: str, pattern: str) -> list[str]:
    """The text of every match of `pattern`'s first group, its tags stripped and its spaces collapsed."""
    return [" ".join(re.sub(r"<[^>]+>", " ", m).split()) for m in re.findall(pattern, dom, flags=re.S)]


@needs_chromium
def test_the_day_2_report_groups_regressions_per_task_in_units_and_shows_failed_trials_first(reports, tmp_path):
    """Issue 21: one row per trial (27 where 9 tasks regressed), raw values (`70.001`), a Baseline of 0.0 for every
    cost and latency delta, worst episodes cut behind passing ones, categories at 0 % pass saying nothing of why."""
    day = "2026-11-02"
    dom = rendered_dom(reports / f"eval-report-{day}.html", tmp_path / "profile")
    document = json.loads((reports / f"eval-report-{day}.json").read_text())
    digest = findings_digest(Warehouse(reports.parent / "eval.duckdb"), [date.fromisoformat(day)])  # what the CLI prints

    groups = _texts(dom, r'<details class="regression">\s*<summary>(.*?)</summary>')
    assert len(groups) == len(digest) == len(document["regressions"]) == 12  # one line per task, as the CLI says it
    assert sum(g["trials_flagged"] for g in document["regressions"]) == len(document["alerts"]) == int(digest["episodes"].sum())
    latency = next(g for g in groups if "code-assistant/fix-failing-test" in g)
    assert "latency_delta · 3 of 3 trials" in latency
    assert "value +70.0% · limit +60.0% · baseline 18,429 ms" in latency and "70.001" not in dom
    cost = next(g for g in groups if "research-agent/compare-vector-databases" in g)
    assert "value +50.0% · limit +40.0% · baseline $0.0855" in cost
    assert "value 0.03 · limit 0.50 · baseline 1.00" in next(g for g in groups if "rename-config-key" in g)
    assert "tool_match · 4 of 4 trials" in next(g for g in groups if "where-is-my-order" in g and "tool_match" in g)
    assert "1 of 4 trials" in next(g for g in groups if "where-is-my-order" in g and "correctness" in g)  # ep-hostile
    trials = re.findall(r'<details class="regression">.*?<tbody>(.*?)</tbody>', dom, re.S)
    assert [t.count("<tr>") for t in trials] == [g["trials_flagged"] for g in document["regressions"]]  # a click away

    categories = dict(re.findall(r"<tr><td>([a-z_]+)</td>.*?<td class=\"failed-on\">(.*?)</td></tr>", dom))
    assert categories["bugfix"] == "latency_delta ×3" and categories["comparison"] == "cost_delta ×3"
    assert categories["account"] == "–"

    verdicts = [("FAILED" in e) for e in _texts(dom, r'<details class="episode"[^>]*>\s*<summary>(.*?)</summary>')]
    failed = document["summary"]["failed"]
    assert verdicts[:failed] == [True] * failed and not any(verdicts[failed:])  # every failed one, before any other
    assert f"Showing {failed} of {failed} failed episodes" in dom

    assert re.findall(r"<h2>Agents</h2>.*?<tbody>(.*?)</tbody>", dom, re.S)[0].count("<tr>") == len(document["agents"])
    ticks = _texts(dom, r'<text[^>]*class="tick"[^>]*>(.*?)</text>')
    assert "200%" not in ticks and not any(t.startswith("-0.0") for t in ticks) and {"0%", "100%"} <= set(ticks)
    assert _texts(dom, r'<text[^>]*class="tick day"[^>]*>(.*?)</text>')[:2] == ["2026-11-01", day]  # no empty days


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


def test_the_html_report_counts_the_running_and_the_quarantined_as_the_markdown_does(reports):
    """The HTML showed "30 passed, 19 failed of 49 episodes with a verdict." and nowhere the 2 records
    of the day that were quarantined (nor, on a day with one, the episode still running), which the Markdown states."""
    markdown = (reports / "eval-report-2026-11-02.md").read_text()
    said = "30 passed, 19 failed of 49 episodes with a verdict. Still running 0; quarantined records 2."
    assert said in markdown
    meta = re.search(r'<p class="meta">(\d+ passed.*?)</p>', (reports / "eval-report-2026-11-02.html").read_text(), re.S)
    assert meta and " ".join(meta.group(1).split()) == said
