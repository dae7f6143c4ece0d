"""The review queues as reviewers use them: `eval-pipeline serve` in its own process over the demo's days, labels
posted from the queue's own form (two reviewers at once), refused without the session's CSRF token, kept through a run
holding the warehouse, counted in the agreement figures, and an episode promoted to a case from its page."""

import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import date
from html import unescape
from pathlib import Path

import httpx
import pytest

from eval_pipeline.capture.cases import load_case_set
from eval_pipeline.cli import main
from eval_pipeline.reports.daily import build_report, write_report_files
from eval_pipeline.reports.document import RunContext
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.reports import report_inputs
from eval_pipeline_tests.viewer.test_serve import DAY, project, serving  # noqa: F401 (the fixture, this module's own)

pytestmark = pytest.mark.slow

QUEUE = f"/days/{DAY}/review/failed"


@pytest.fixture(scope="module")
def config(project) -> Path:  # noqa: F811
    """The project's config, with promoted episodes going to cases/promoted.json beside it."""
    path = project / "eval.toml"
    given = (PROJECT_ROOT / "eval.toml").read_text()
    path.write_text(given.replace('case_set = "data/promoted_cases.json"', 'case_set = "cases/promoted.json"'))
    return path


@pytest.fixture(scope="module")
def log() -> list[str]:
    return []


@pytest.fixture(scope="module")
def viewer(project, config, log) -> Iterator[httpx.Client]:  # noqa: F811
    with serving(project, config=config, log=log) as client:
        yield client


def form_of(page: str) -> dict[str, str]:
    """The hidden fields of the label form on a queue page: the CSRF token and the episode."""
    return {name: unescape(value) for name, value in re.findall(r'<input type="hidden" name="(\w+)" value="([^"]*)"', page)}


def label(client: httpx.Client, reviewer: str, verdict: str, **extra: str) -> tuple[httpx.Response, str | None]:
    """Label the queue's next episode as a reviewer does: open the queue, fill its form, send it."""
    page = client.get(QUEUE)
    assert page.status_code == 200
    if "Failed trials: done" in page.text:
        return page, None
    fields = form_of(page.text)
    sent = client.post(QUEUE, data={**fields, "reviewer": reviewer, "verdict": verdict, **extra})
    return sent, fields["episode_id"]


def labels_in(root: Path) -> list[tuple]:
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute("SELECT reviewer, episode_id, agent_id, verdict, score, note FROM labels ORDER BY ALL").fetchall()


def queue_size(client: httpx.Client) -> int:
    shown = re.search(r"\((\d+) of (\d+) labelled\)", client.get(QUEUE).text)
    assert shown
    return int(shown[2])


def test_two_reviewers_at_once_each_label_the_whole_queue_once(project, viewer):  # noqa: F811
    size = queue_size(viewer)
    assert size >= 3
    base = viewer.base_url
    labelled: dict[str, list[str]] = {"ana": [], "ben": []}

    def review(reviewer: str) -> None:
        with httpx.Client(base_url=base, timeout=60) as client:  # a browser of its own: its own session
            for number in range(size + 1):
                sent, episode = label(client, reviewer, "pass" if number % 2 else "fail", score=str(1 + number % 5))
                if episode is None:
                    return
                assert sent.status_code == 303 and sent.headers["location"] == QUEUE
                labelled[reviewer].append(episode)

    threads = [threading.Thread(target=review, args=(name,)) for name in labelled]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert len(labelled["ana"]) == len(labelled["ben"]) == size
    assert sorted(labelled["ana"]) == sorted(labelled["ben"])  # the same queue for both, each episode once
    rows = list(labels_in(project))
    assert len(rows) == 2 * size and {r[0] for r in rows} == {"ana", "ben"}

    # a second label of the same episode by the same reviewer in the same queue replaces the first
    with httpx.Client(base_url=base, timeout=60) as ana:
        first = labelled["ana"][0]
        csrf = form_of(ana.get(f"/days/{DAY}/episodes/{first}").text)["csrf"]
        relabel = {"csrf": csrf, "episode_id": first, "reviewer": "ana", "verdict": "pass", "note": "on reflection"}
        again = ana.post(QUEUE, data=relabel)
        assert again.status_code == 303
    rows = list(labels_in(project))
    assert len(rows) == 2 * size
    assert [r[3:] for r in rows if r[:2] == ("ana", first)] == [("pass", None, "on reflection")]

    review_page = viewer.get(f"/days/{DAY}/review").text
    assert f"{2 * size} labels by 2 reviewer(s)" in review_page and "episode verdict (grader)" in review_page


def test_a_label_without_the_sessions_csrf_token_is_refused(project, viewer):  # noqa: F811
    before = list(labels_in(project))
    page = viewer.get(QUEUE)
    fields = form_of(page.text)
    filled = {"episode_id": fields["episode_id"], "reviewer": "mallory", "verdict": "fail"}
    assert viewer.post(QUEUE, data=filled).status_code == 403
    assert viewer.post(QUEUE, data={**filled, "csrf": "0" * 64}).status_code == 403
    assert viewer.post(QUEUE, data={**filled, "csrf": fields["csrf"][:-1] + "x"}).status_code == 403
    with httpx.Client(base_url=viewer.base_url) as stranger:  # the right token, but not this browser's session
        assert stranger.post(QUEUE, data={**filled, "csrf": fields["csrf"]}).status_code == 403
    foreign = viewer.post(QUEUE, data={**filled, "csrf": fields["csrf"]}, headers={"Origin": "http://evil.example"})
    assert foreign.status_code == 403
    rebound = viewer.post(QUEUE, data={**filled, "csrf": fields["csrf"]}, headers={"Host": "evil.example"})
    assert rebound.status_code == 403  # a DNS-rebinding page posting to us
    assert list(labels_in(project)) == before
    refused = viewer.post(QUEUE, data={**filled, "csrf": fields["csrf"], "reviewer": " "})
    assert refused.status_code == 400 and "give your name as reviewer" in refused.text
    assert list(labels_in(project)) == before


def holding(root: Path) -> subprocess.Popen:
    """Another process in a run's write transaction, holding the warehouse until told to stop."""
    writer = "from pathlib import Path; from eval_pipeline.warehouse.connection import Warehouse; " \
             f"session = Warehouse(Path({str(root / 'eval.duckdb')!r})).transaction(); session.__enter__()"  # fmt: skip
    holder = subprocess.Popen(
        [sys.executable, "-c", f"{writer}; print('holding', flush=True); input()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(PROJECT_ROOT)},
    )  # fmt: skip
    assert holder.stdout and holder.stdout.readline() == "holding\n"
    return holder


def test_a_label_sent_while_a_run_holds_the_warehouse_waits_and_lands(project, viewer, log):  # noqa: F811
    fields = form_of(viewer.get(QUEUE).text)
    filled = {**fields, "reviewer": "cleo", "verdict": "fail", "note": "sent during the nightly run"}
    holder = holding(project)
    answers: list[httpx.Response] = []
    try:
        sender = threading.Thread(target=lambda: answers.append(viewer.post(QUEUE, data=filled)))
        sender.start()
        while not any("label: warehouse busy, retrying" in line for line in log):  # the server met the run's lock
            sender.join(0.05)
            assert sender.is_alive(), "answered without waiting for the run"
    finally:
        holder.communicate("\n", timeout=30)
    sender.join(60)
    assert answers[0].status_code == 303
    assert ("cleo", fields["episode_id"]) in [r[:2] for r in labels_in(project)]


def test_a_label_sent_while_a_run_holds_the_warehouse_too_long_comes_back_in_its_form(project, viewer):  # noqa: F811
    fields = form_of(viewer.get(QUEUE).text)
    filled = {**fields, "reviewer": "dana <b>", "verdict": "pass", "score": "4", "note": "long note & <i>markup</i>"}
    holder = holding(project)
    try:
        busy = viewer.post(QUEUE, data=filled)
    finally:
        holder.communicate("\n", timeout=30)
    assert busy.status_code == 503 and "Warehouse busy, label not recorded" in busy.text
    kept = form_of(busy.text)
    assert kept["episode_id"] == fields["episode_id"] and kept["csrf"] == fields["csrf"]
    assert 'value="dana &lt;b&gt;"' in busy.text and "long note &amp; &lt;i&gt;markup&lt;/i&gt;</textarea>" in busy.text
    assert 'value="pass" required checked' in busy.text and "<option selected>4</option>" in busy.text
    assert "dana <b>" not in [r[0] for r in labels_in(project)]
    resent = viewer.post(QUEUE, data=filled)  # the form as it came back, sent again
    assert resent.status_code == 303
    assert [r[3:] for r in labels_in(project) if r[0] == "dana <b>"] == [("pass", 4, "long note & <i>markup</i>")]


def test_an_episode_promoted_from_its_page_is_a_case_the_loader_reads(project, viewer):  # noqa: F811
    episode = f"ep-{DAY}-code-assistant-rename-config-key-t0"
    page = viewer.get(f"/days/{DAY}/episodes/{episode}")
    csrf = form_of(page.text)["csrf"]
    assert viewer.post(f"/days/{DAY}/episodes/{episode}/promote", data={}).status_code == 403
    promoted = viewer.post(f"/days/{DAY}/episodes/{episode}/promote", data={"csrf": csrf})
    assert promoted.status_code == 200 and f"promoted-{episode}" in promoted.text
    path = project / "cases" / "promoted.json"
    written = json.loads(path.read_text())
    assert [case["id"] for case in written] == [f"promoted-{episode}"]
    assert written[0]["expected_tools"] == ["search_code", "edit_file", "run_tests"]
    (case,) = load_case_set(path)
    assert (
        case.id == f"promoted-{episode}" and case.turns == [written[0]["query"]] and case.expectations["tool_match"] == "superset"
    )
    viewer.post(f"/days/{DAY}/episodes/{episode}/promote", data={"csrf": csrf})
    assert len(json.loads(path.read_text())) == 1  # promoted again: replaced, not repeated


def test_labels_are_counted_in_the_daily_report_and_by_reward_bench(project, viewer, tmp_path, monkeypatch, capsys):  # noqa: F811
    sent, episode = label(viewer, "eve", "fail", note="agrees with the grader")
    assert sent.status_code == 303 or episode is None
    labelled = {r[1] for r in labels_in(project)}
    people = len({(r[0], r[1]) for r in labels_in(project)})  # one per reviewer and episode: the latest counts

    report = build_report(report_inputs(Warehouse(project / "eval.duckdb"), date.fromisoformat(DAY), 30), RunContext(None, "v"))
    paths = write_report_files(report, tmp_path)
    section = json.loads(paths["json"].read_text())["labels"]
    assert section["labels"] == people and section["passed"] + section["failed"] == people
    assert section["grader"]["pairs"] == people  # every labelled episode has a verdict
    grader = section["grader"]
    assert grader["both_fail"] + grader["only_human_pass"] == people  # the failed queue: the grader failed them all
    assert "## Human Labels" in paths["md"].read_text() and f"{people} labels by" in paths["md"].read_text()
    assert "<h2>Human labels</h2>" in paths["html"].read_text()

    monkeypatch.setenv("EVAL_DUCKDB_PATH", str(project / "eval.duckdb"))
    monkeypatch.setenv("EVAL_CONFIG", str(PROJECT_ROOT / "eval.toml"))
    assert main(["reward-bench", "--date", DAY, "--format", "json"]) == 0
    bench = json.loads(capsys.readouterr().out)
    assert bench["sources"]["label"] == len(labelled)
