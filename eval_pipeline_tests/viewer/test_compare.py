"""The compare view as a user meets it: `eval-pipeline serve` in its own process over the demo's first three days,
the head to head of two selections held to what `eval-pipeline compare --format json` prints for the same ones, a
task opened into its two trials side by side, the timing waterfall, and both the compare page and the labelling form
as Debian's chromium renders them."""

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from html import unescape
from itertools import pairwise
from pathlib import Path

import dagster as dg
import httpx
import pytest

from eval_pipeline.reports.comparison import interval_text
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline_tests.browser import distinct_pixel_bytes, needs_chromium, screenshot, served_dom
from eval_pipeline_tests.defs.graph import GRAPH, local_resources
from eval_pipeline_tests.leaks import LEAKS
from eval_pipeline_tests.viewer.test_serve import DAY, HOSTILE, links, project, serving  # noqa: F401 (the fixture)

pytestmark = pytest.mark.slow

DAY_3 = "2026-11-03"
SUPPORT = (f"date={DAY},agent=support-bot", f"date={DAY_3},agent=support-bot")
SUPPORT_QUERY = {"a": SUPPORT[0], "b": SUPPORT[1]}
ALL_AGENTS = (f"date={DAY}", f"date={DAY_3}")
ROW = re.compile(
    r'<tr class="task">\s*<td><a href="([^"]+)">([^<]+)</a></td>\s*<td class="num">([^<]+)</td><td class="num">([^<]+)</td>'
    r'\s*<td class="num">[^<]+</td>\s*<td class="winner">([^<]+)</td>\s*'
    r'<td class="num">(\d+) / (\d+)(?: \((\d+) without a verdict\))?</td>'
    r'<td class="num">(\d+) / (\d+)(?: \((\d+) without a verdict\))?</td>'
)


@pytest.fixture(scope="module")
def three_days(project) -> Path:  # noqa: F811
    """test_serve's project (the demo's first two days and a hostile episode on day 2) and the demo's third day."""
    instance = dg.DagsterInstance.ephemeral()
    assert dg.materialize(GRAPH, partition_key=DAY_3, resources=local_resources(project), instance=instance).success
    return project


@pytest.fixture(scope="module")
def viewer(three_days) -> Iterator[httpx.Client]:
    with serving(three_days) as client:
        yield client


def cli_compare(root: Path, a: str, b: str) -> subprocess.CompletedProcess:
    """`eval-pipeline compare --a A --b B --format json` as the user runs it, over the same warehouse."""
    env = {**os.environ, "EVAL_DUCKDB_PATH": str(root / "eval.duckdb"), "EVAL_CONFIG": str(PROJECT_ROOT / "eval.toml"),
           "PYTHONPATH": str(PROJECT_ROOT)}  # fmt: skip
    command = [sys.executable, "-m", "eval_pipeline.cli", "compare", "--a", a, "--b", b, "--format", "json"]
    return subprocess.run(command, capture_output=True, text=True, env=env, cwd=root, timeout=120)


def task_rows(page: str) -> list[dict]:
    """The per-task rows of a compare page, as the CLI's JSON writes them."""
    return [
        {"task_id": unescape(task), "a": _number(a), "b": _number(b), "winner": None if won == "–" else won.lower(),
         "a_passed": int(ap), "a_trials": int(at), "a_without_verdict": int(an or 0), "b_passed": int(bp),
         "b_trials": int(bt), "b_without_verdict": int(bn or 0), "href": unescape(href)}
        for href, task, a, b, won, ap, at, an, bp, bt, bn in ROW.findall(page)
    ]  # fmt: skip


def _number(text: str) -> float | None:
    return None if text == "–" else float(text)


@pytest.mark.parametrize("sides", [SUPPORT, ALL_AGENTS], ids=["support-bot", "all-agents"])
def test_the_compare_page_shows_the_clis_per_task_winners_ci_and_counts(three_days, viewer, sides):
    cli = cli_compare(three_days, *sides)
    assert cli.returncode == 0, cli.stderr
    expected = json.loads(cli.stdout)
    page = viewer.get("/compare", params={"a": sides[0], "b": sides[1]})
    assert page.status_code == 200
    rows = task_rows(page.text)
    assert [{key: value for key, value in row.items() if key != "href"} for row in rows] == expected["headToHead"]["tasks"]
    assert sum(row["a_trials"] for row in rows) == expected["quality"]["a"]["episodes"]
    for delta in (expected["quality"]["score_delta"], expected["quality"]["pass_rate_delta"]):
        assert unescape(interval_text(delta)) in unescape(page.text)
    h2h = expected["headToHead"]
    shown = f"Per task: B wins {h2h['b_wins']}, A wins {h2h['a_wins']}, ties {h2h['ties']}."
    assert shown in page.text and unescape(h2h["reason"]) in unescape(page.text)


def test_the_support_bots_day_3_beats_day_2_on_two_tasks_with_its_hostile_trial_counted(viewer):
    rows = {row["task_id"]: row for row in task_rows(viewer.get("/compare", params=SUPPORT_QUERY).text)}
    assert [task for task, row in rows.items() if row["winner"] == "b"] == [
        "support-bot/damaged-item",
        "support-bot/where-is-my-order",
    ]
    assert (rows["support-bot/where-is-my-order"]["a_trials"], rows["support-bot/where-is-my-order"]["b_trials"]) == (4, 3)


def test_the_form_offers_what_the_warehouse_has_and_sends_the_browser_to_the_selection(viewer):
    form = viewer.get("/compare")
    assert form.status_code == 200
    for field in ("a_from", "a_to", "a_agent", "a_model", "b_from", "b_to", "b_agent", "b_model"):
        assert f'<select name="{field}">' in form.text
    assert all(f"<option>{value}</option>" in form.text for value in ("2026-11-01", DAY, DAY_3, "support-bot", "gpt-4o"))
    sent = viewer.get("/compare", params={"a_from": DAY, "a_agent": "support-bot", "b_from": DAY_3, "b_to": DAY_3,
                                          "b_agent": "support-bot", "a_model": ""})  # fmt: skip
    assert sent.status_code == 303
    assert sent.headers["location"] == str(httpx.URL("/compare", params=SUPPORT_QUERY))
    shown = viewer.get(sent.headers["location"])
    assert shown.status_code == 200 and task_rows(shown.text) == task_rows(viewer.get("/compare", params=SUPPORT_QUERY).text)
    assert "<option selected>support-bot</option>" in shown.text  # the form shows the selection it made


def test_start_and_end_give_the_days_of_a_side_that_names_none(three_days, viewer):
    page = viewer.get("/compare", params={"a": "agent=support-bot", "b": "agent=billing-bot,date=2026-11-01",
                                          "start": DAY, "end": DAY_3})  # fmt: skip
    assert page.status_code == 200
    assert f"eval-pipeline compare --a date={DAY}..{DAY_3},agent=support-bot --b date=2026-11-01,agent=billing-bot" in page.text


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("agent=support-bot", "colour=blue"),
        ("agent=support-bot", "agent=nobody"),
        ("date=2026-13-01", "agent=x"),
        ("", "agent=x"),
    ],
)
def test_a_bad_selection_is_answered_400_with_the_clis_own_message(three_days, viewer, a, b):
    cli = cli_compare(three_days, a, b)
    assert cli.returncode == 2
    message = cli.stderr.strip().removeprefix("eval-pipeline: error: ")
    page = viewer.get("/compare", params={"a": a, "b": b})
    assert page.status_code == 400
    assert f"<p>{message}</p>" in unescape(page.text)


def test_a_task_opens_its_two_trials_side_by_side(viewer):
    compare = viewer.get("/compare", params=SUPPORT_QUERY)
    row = next(row for row in task_rows(compare.text) if row["task_id"] == "support-bot/damaged-item")
    task = viewer.get(row["href"])
    assert task.status_code == 200
    text = task.text
    first_a, first_b = "ep-2026-11-02-support-bot-damaged-item-t0", "ep-2026-11-03-support-bot-damaged-item-t0"
    assert f'A: <a href="/days/{DAY}/episodes/{first_a}">' in text and f'B: <a href="/days/{DAY_3}/episodes/{first_b}">' in text
    assert "0 of 3 trials passed" in text and "3 of 3 trials passed" in text
    assert "<th>A</th><th>B</th>" in text and "<h3>Answer</h3>" in text  # tools aligned, answers diffed
    assert text.count('<details class="step') == text.count('<div class="wf-row') - 1  # every step in the waterfall, + axis
    other = next(link for link in links(text, "/compare/task?") if "ea=ep-2026-11-02-support-bot-damaged-item-t2" in link)
    chosen = viewer.get(other)
    assert (
        chosen.status_code == 200
        and 'A: <a href="/days/2026-11-02/episodes/ep-2026-11-02-support-bot-damaged-item-t2">' in chosen.text
    )
    assert viewer.get(row["href"] + "&ea=no-such-trial").status_code == 404
    assert viewer.get("/compare/task", params={**SUPPORT_QUERY, "task": "no/such-task"}).status_code == 404


def test_a_hostile_trial_side_by_side_shows_as_text_with_its_secrets_redacted(viewer):
    page = viewer.get("/compare/task", params={**SUPPORT_QUERY, "task": "support-bot/where-is-my-order", "ea": HOSTILE})
    assert page.status_code == 200 and f'A: <a href="/days/{DAY}/episodes/{HOSTILE}">' in page.text
    assert "&lt;script&gt;" in page.text and "<script" not in page.text and "<img" not in page.text
    assert not [tell for leak in LEAKS for tell in leak.tells if tell in page.text] and "[redacted]" in page.text


def test_the_waterfall_places_each_step_by_its_start_and_duration(viewer):
    """Recorded timestamps place the demo's steps; the hostile episode's steps have none and follow one another."""
    page = viewer.get(f"/days/{DAY}/episodes/{HOSTILE}").text
    timing = page.split("<h2>Timing</h2>")[1].split("<h2>Trajectory</h2>")[0]
    own = timing.split('<div class="wf-run">this run</div>')[1]  # below its baseline's steps, on the same axis
    assert re.findall(r'<span class="wf-time">([^<]+)</span>', own) == ["0 + 900 ms", "900 + 100 ms", "1,000 + 100 ms"]
    bars = [(float(left), float(width)) for left, width in re.findall(r'style="left: ([\d.]+)%; width: ([\d.]+)%"', own)]
    assert bars[0][0] == 0 and all(after[0] == pytest.approx(sum(before), abs=0.02) for before, after in pairwise(bars))
    demo = viewer.get(f"/days/{DAY}/episodes/ep-2026-11-02-code-assistant-rename-config-key-t0").text
    timing = demo.split("<h2>Timing</h2>")[1].split("<h2>Trajectory</h2>")[0]
    assert timing.count('<div class="wf-run">') == 2  # the baseline and this run, on one axis
    bars = [(float(left), float(width)) for left, width in re.findall(r'style="left: ([\d.]+)%; width: ([\d.]+)%"', timing)]
    assert len(bars) == 16 and max(left + width for left, width in bars) == pytest.approx(100, abs=0.02)


def test_the_days_and_a_day_link_to_the_compare_view(viewer):
    days = viewer.get("/").text
    against = next(link for link in links(days, "/compare?") if "support-bot" in link and DAY_3 in link)
    assert task_rows(viewer.get(against).text) == task_rows(viewer.get("/compare", params=SUPPORT_QUERY).text)
    day = viewer.get(f"/days/{DAY_3}").text
    whole_day = viewer.get(next(link for link in links(day, "/compare?") if "agent" not in link))
    assert whole_day.status_code == 200 and len(task_rows(whole_day.text)) == 16


@needs_chromium
def test_a_browser_renders_the_compare_page_and_the_label_form(three_days, viewer, tmp_path):
    base = str(viewer.base_url).rstrip("/")
    url = str(httpx.URL(f"{base}/compare", params=SUPPORT_QUERY))
    dom = served_dom(url, tmp_path / "profile")
    assert dom.count('<tr class="task">') == 4 and "Per task: B wins 2, A wins 0, ties 2." in dom
    assert distinct_pixel_bytes(screenshot(url, tmp_path / "compare.png", tmp_path / "profile")) > 50

    queue = served_dom(f"{base}/days/{DAY}/review/failed", tmp_path / "profile")
    form = re.search(r'<form class="label" method="post" action="/days/2026-11-02/review/failed">(.*?)</form>', queue, re.S)
    assert form, "the label form is not on the queue page"
    assert re.search(r'<input type="hidden" name="csrf" value="[0-9a-f]{64}">', form[1])
    assert 'name="reviewer"' in form[1] and 'name="verdict" value="fail"' in form[1]
    page = viewer.get(f"/days/{DAY}/review/failed")  # the HTTP client's own session, and its token
    fields = dict(re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page.text))
    sent = viewer.post(f"/days/{DAY}/review/failed", data={**fields, "reviewer": "ana", "verdict": "fail"})
    assert sent.status_code == 303
    review = served_dom(f"{base}/days/{DAY}/review", tmp_path / "profile")
    assert "1 labels by 1 reviewer(s): 0 pass, 1 fail." in review
