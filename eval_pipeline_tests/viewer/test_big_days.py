"""The viewer's long lists as a big day, or a long history, makes them: the day page (where the alerts' and the report's
day links lead) of more episodes and findings than a page shows, the head to head of more tasks, and the days listed on
the home page. A day of 200,000 episodes was one page of 72 MB, built in 13.5 s by a server then holding 532 MB; two such
days' head to head, a page of 9.3 MB; the home page listed every day since the first, counted from every score kept."""

import json
import re
from collections.abc import Callable, Iterator
from datetime import date, timedelta
from html import unescape
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import dagster as dg
import duckdb
import httpx
import pandas as pd
import pytest

from eval_pipeline.cli import main
from eval_pipeline.reports.document import REGRESSIONS_LISTED
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline.viewer.pages import FINDINGS_SHOWN, TASKS_PER_PAGE
from eval_pipeline.warehouse import compare as warehouse_compare
from eval_pipeline.warehouse.connection import frame_of
from eval_pipeline.warehouse.viewer import AGENTS_PER_DAY, DAYS_PER_PAGE, EPISODES_PER_PAGE
from eval_pipeline_tests.defs.graph import GRAPH, local_resources
from eval_pipeline_tests.viewer.test_serve import links, serving

pytestmark = pytest.mark.slow

FIRST, DAY = "2026-11-01", "2026-11-02"
AGENTS, TASKS, TRIALS = 3, 200, 3  # 1,800 episodes a day of 600 tasks: pages of both


def _episode(agent: int, task: int, trial: int, day: str, failed: bool) -> dict:
    """One agent run (an LLM call, a tool call, the answer), in the README's episode shape."""
    episode_id = f"ep-{day}-a{agent}-t{task:03d}-{trial}"
    return {
        "episode_id": episode_id, "agent_id": f"agent-{agent}", "status": "failure" if failed else "success",
        "started_at": f"{day}T09:{task % 60:02d}:{trial:02d}Z",
        "steps": [
            {"step_index": 0, "step_type": "llm_call", "model": "gpt-4o-mini", "input_summary": f"task {task}",
             "output_summary": "call lookup", "tokens": 300, "cost_usd": 0.0004, "duration_ms": 800},
            {"step_index": 1, "step_type": "tool_call", "tool_name": "lookup", "input_summary": "{}", "duration_ms": 5},
            {"step_index": 2, "step_type": "llm_call", "model": "gpt-4o-mini", "input_summary": "tool result",
             "output_summary": "Your order shipped yesterday and arrives later this week; the tracking link is in your "
                               "account under Orders.", "tokens": 400, "cost_usd": 0.0005,
             "duration_ms": 900},
        ],
        "metadata": {"task_id": f"agent-{agent}/task-{task:03d}", "trial": trial},
    }  # fmt: skip


@pytest.fixture(scope="module")
def big_day(tmp_path_factory) -> Path:
    """Two days of 1,800 episodes; on the second, one trial of three tasks in four failed."""
    root = tmp_path_factory.mktemp("big_day")
    (root / "episodes").mkdir()
    for day in (FIRST, DAY):
        lines = (
            json.dumps(_episode(a, t, k, day, failed=day == DAY and (a * TASKS + t) * TRIALS % 4 == k))
            for a in range(AGENTS)
            for t in range(TASKS)
            for k in range(TRIALS)
        )
        (root / "episodes" / f"episodes-{day}.jsonl").write_text("\n".join(lines) + "\n")
    instance = dg.DagsterInstance.ephemeral()
    for day in (FIRST, DAY):
        assert dg.materialize(GRAPH, partition_key=day, resources=local_resources(root), instance=instance).success
    return root


@pytest.fixture(scope="module")
def viewer(big_day) -> Iterator[httpx.Client]:
    with serving(big_day) as client:
        yield client


def _counted(root: Path, sql: str) -> int:
    with duckdb.connect(str(root / "eval.duckdb"), read_only=True) as con:
        ((count,),) = con.execute(sql, {"day": DAY}).fetchall()
    return count


def _verdicts(root: Path) -> dict[str, int]:
    scored = "FROM current_scores WHERE partition_date = $day"
    return {
        "episodes": _counted(root, f"SELECT count(*) {scored}"),
        "failed": _counted(root, f"SELECT count(*) {scored} AND NOT passed"),
    }


def _figure(page: str, label: str) -> int:
    shown = re.search(rf'<span class="label">{label}</span><span class="value">([\d,]+)</span>', page)
    assert shown, label
    return int(shown[1].replace(",", ""))


def _episode_links(page: str) -> list[str]:
    return links(page.split('id="episodes"')[1], f"/days/{DAY}/episodes/")


def _task_links(page: str) -> list[str]:
    return list(dict.fromkeys(links(page.split('id="tasks"')[1], "/compare/task?")))  # each task's row links it twice


def _every_page(viewer: httpx.Client, first: str, listed: Callable[[str], list[str]]) -> list[list[str]]:
    """What `listed` finds on each of a list's pages, following each page's link to the next."""
    pages, url = [], first
    while url:
        page = viewer.get(url)
        assert page.status_code == 200 and len(page.content) < 1_000_000
        pages.append(listed(page.text))
        following = re.search(r'<a rel="next" href="([^"]+)"', page.text)
        url = unescape(following[1]) if following else ""
    return pages


def _paged(total: int, size: int) -> list[int]:
    return [size] * (total // size) + ([total % size] if total % size else [])


def test_a_day_of_more_episodes_than_a_page_pages_through_them_and_counts_them_all(big_day, viewer):
    truth = _verdicts(big_day)
    assert truth["episodes"] == AGENTS * TASKS * TRIALS and 0 < truth["failed"] < EPISODES_PER_PAGE
    day = viewer.get(f"/days/{DAY}")
    assert _figure(day.text, "episodes") == truth["episodes"] and _figure(day.text, "failed") == truth["failed"]
    assert f"Episodes ({truth['episodes']:,})" in day.text
    pages = _every_page(viewer, f"/days/{DAY}", _episode_links)
    assert [len(page) for page in pages] == _paged(truth["episodes"], EPISODES_PER_PAGE)
    every = [link for page in pages for link in page]
    assert len(set(every)) == len(every) == truth["episodes"]  # each episode once
    assert not any(FIRST in link for link in every)
    failed_first = pages[0][: truth["failed"]]  # the worst first: the failed runs open the first page
    failed = viewer.get(f"/days/{DAY}", params={"verdict": "failed"})
    assert _episode_links(failed.text) == failed_first and _figure(failed.text, "failed") == truth["failed"]


def test_a_page_past_the_last_says_how_many_there_are_and_a_page_that_is_no_number_is_refused(viewer):
    past = viewer.get(f"/days/{DAY}", params={"page": 9})
    assert past.status_code == 200 and not _episode_links(past.text)
    assert f"No episode on page 9: these {AGENTS * TASKS * TRIALS:,} episodes fill pages 1 to 4." in past.text
    for wrong in ("0", "-1", "two", "1.5", str(2**63)):
        refused = viewer.get(f"/days/{DAY}", params={"page": wrong})
        assert refused.status_code == 400 and "page must be a whole number from 1" in refused.text


def test_a_day_of_more_findings_than_a_list_shows_counts_them_all_and_says_how_to_narrow_them(big_day, viewer):
    new = _counted(big_day, "SELECT count(*) FROM findings WHERE partition_date = $day AND lifecycle = 'new'")
    assert new > FINDINGS_SHOWN
    day = viewer.get(f"/days/{DAY}").text
    listed = day.split("<h2>New findings")[1].split("<h2>")[0]
    assert f"({new:,})" in listed and listed.count("<tr>") == FINDINGS_SHOWN + 1  # its header row
    assert f"The first {FINDINGS_SHOWN} of {new:,}, the critical first: narrow them with the filters above" in listed
    of_one = _counted(big_day, "SELECT count(*) FROM findings WHERE partition_date = $day AND agent_id = 'agent-1'")
    narrowed = viewer.get(f"/days/{DAY}", params={"agent": "agent-1"}).text.split("<h2>New findings")[1].split("<h2>")[0]
    assert of_one <= FINDINGS_SHOWN and narrowed.count("<tr>") == of_one + 1 and "The first" not in narrowed


def test_a_head_to_head_of_more_tasks_than_a_page_pages_through_them_as_the_cli_lists_them(big_day, viewer, monkeypatch):
    monkeypatch.setenv("EVAL_DUCKDB_PATH", str(big_day / "eval.duckdb"))
    monkeypatch.setenv("EVAL_CONFIG", str(PROJECT_ROOT / "eval.toml"))
    sides = ["--a", f"date={FIRST}", "--b", f"date={DAY}"]
    assert main(["compare", *sides, "--format", "json", "--output", str(big_day / "h2h.json")]) == 0
    cli = [task["task_id"] for task in json.loads((big_day / "h2h.json").read_text())["headToHead"]["tasks"]]
    assert len(cli) == AGENTS * TASKS > TASKS_PER_PAGE
    first = f"/compare?a=date%3D{FIRST}&b=date%3D{DAY}"
    assert f"Per task ({len(cli):,})" in viewer.get(first).text
    pages = _every_page(viewer, first, _task_links)
    assert [len(page) for page in pages] == _paged(len(cli), TASKS_PER_PAGE)
    shown = [parse_qs(urlsplit(link).query)["task"][0] for page in pages for link in page]
    assert shown == cli  # every task once, in the CLI's order
    past = viewer.get(f"{first}&page=7").text
    assert f"No task on page 7: these {len(cli):,} tasks fill pages 1 to 2." in past


def test_a_head_to_head_of_two_nights_against_one_reads_a_row_per_task_and_counts_every_run(big_day, monkeypatch):
    """Both nights against the second: the runs a comparison weighs grow with the days it spans, what it reads of them
    does not (two nights of 200,000 runs each against one took 4.4 s and 670 MB, reading every run into pandas)."""
    monkeypatch.setenv("EVAL_DUCKDB_PATH", str(big_day / "eval.duckdb"))
    monkeypatch.setenv("EVAL_CONFIG", str(PROJECT_ROOT / "eval.toml"))
    read: list[int] = []

    def counted(result: duckdb.DuckDBPyConnection) -> pd.DataFrame:
        frame = frame_of(result)
        read.append(len(frame))
        return frame

    monkeypatch.setattr(warehouse_compare, "frame_of", counted)
    sides = ["--a", f"date={FIRST}..{DAY}", "--b", f"date={DAY}"]
    assert main(["compare", *sides, "--format", "json", "--output", str(big_day / "nights.json")]) == 0
    h2h = json.loads((big_day / "nights.json").read_text())
    assert read == [AGENTS * TASKS, AGENTS * TASKS]  # a row per task of each side, not 3,600 and 1,800 runs
    with duckdb.connect(str(big_day / "eval.duckdb"), read_only=True) as con:
        runs = con.execute(
            "SELECT e.partition_date = $day AS second_night, e.task_id, s.weighted_score, s.passed "
            "FROM episodes e LEFT JOIN scores s USING (episode_id, partition_date)",
            {"day": date.fromisoformat(DAY)},
        ).df()
    for side, of_side in (("a", runs), ("b", runs[runs["second_night"]])):
        judged = of_side["passed"].dropna().astype(bool)
        assert h2h["quality"][side] | {"mean_cost_usd": None, "mean_latency_ms": None} == {
            "episodes": len(of_side), "tasks": AGENTS * TASKS, "pass_rate": round(judged.mean(), 4),
            "mean_score": round(of_side["weighted_score"].mean(), 4), "mean_cost_usd": None, "mean_latency_ms": None,
        }  # fmt: skip
        per_task = of_side.groupby("task_id")
        expected = {
            task: (len(trials), int(trials["passed"].fillna(False).astype(bool).sum()), int(trials["passed"].isna().sum()))
            for task, trials in per_task
        }
        assert {row["task_id"]: (row[f"{side}_trials"], row[f"{side}_passed"], row[f"{side}_without_verdict"])
                for row in h2h["headToHead"]["tasks"]} == expected  # fmt: skip
    assert (len(runs), int(runs["second_night"].sum())) == (2 * AGENTS * TASKS * TRIALS, AGENTS * TASKS * TRIALS)


HISTORY = DAYS_PER_PAGE + 5  # days evaluated, each of two agents' one run; the earliest of AGENTS_PER_DAY + 3 agents


@pytest.fixture(scope="module")
def long_history(tmp_path_factory) -> Iterator[tuple[Path, httpx.Client]]:
    """HISTORY days of two agents' runs: the last two evaluated by the graph, the days before them holding the scores of
    the first of those, copied (the graph takes about a second a day, even of two runs); the earliest day a fleet's."""
    root = tmp_path_factory.mktemp("long_history")
    (root / "episodes").mkdir()
    last = date(2026, 10, 5)
    instance = dg.DagsterInstance.ephemeral()
    for day in (last - timedelta(days=1), last):
        runs = (json.dumps(_episode(agent, 0, 0, day.isoformat(), failed=agent == day.day % 2)) for agent in range(2))
        (root / "episodes" / f"episodes-{day}.jsonl").write_text("\n".join(runs) + "\n")
        assert dg.materialize(GRAPH, partition_key=day.isoformat(), resources=local_resources(root), instance=instance).success
    with duckdb.connect(str(root / "eval.duckdb")) as con:
        con.execute(
            "INSERT INTO scores SELECT s.* REPLACE (s.partition_date - n::INTEGER AS partition_date) "
            "FROM scores s, range(1, $copies + 1) r(n) WHERE s.partition_date = $first",
            {"copies": HISTORY - 2, "first": last - timedelta(days=1)},
        )
        con.execute(
            "INSERT INTO scores SELECT s.* REPLACE ('fleet-' || n || '-' || s.agent_id AS agent_id, s.episode_id || n "
            "AS episode_id) FROM scores s, range(1, $copies + 1) r(n) "
            "WHERE s.partition_date = $earliest AND s.agent_id = 'agent-0'",
            {"copies": AGENTS_PER_DAY + 1, "earliest": last - timedelta(days=HISTORY - 1)},
        )
    with serving(root) as client:
        yield root, client


def _day_rows(page: str) -> list[tuple[str, str, str]]:
    """Each agent's row of the days' table: its day (the day's first row only names it), agent, and failed count."""
    rows, day = [], ""
    for row in page.split("<tbody>")[1].split("</tbody>")[0].split("<tr>")[1:]:
        if "more agents</a>" in row:
            continue
        named = re.search(r'<td><a href="/days/([\d-]+)">', row)
        day = named[1] if named else day
        agent = re.search(r'<td><a href="/days/[\d-]+\?agent=([^"&]+)">', row)
        failed = re.search(r'verdict=failed#episodes">([\d,]+)</a>', unescape(row))
        assert agent and failed
        rows.append((day, agent[1], failed[1]))
    return rows


def test_a_long_history_lists_its_days_a_page_at_a_time_the_latest_first(long_history):
    root, viewer = long_history
    with duckdb.connect(str(root / "eval.duckdb"), read_only=True) as con:
        truth = [
            (str(day), agent, str(failed))
            for day, agent, failed in con.execute(
                "SELECT partition_date, agent_id, count(*) FILTER (NOT passed) FROM current_scores GROUP BY ALL "
                "ORDER BY partition_date DESC, agent_id"
            ).fetchall()
        ]
    assert len(truth) == 2 * HISTORY + AGENTS_PER_DAY + 1
    pages = _every_page(viewer, "/", _day_rows)
    assert [len(page) for page in pages] == [2 * DAYS_PER_PAGE, 2 * (HISTORY - DAYS_PER_PAGE - 1) + AGENTS_PER_DAY]
    # each day and agent once, with its own figures; of a fleet's day, its first agents by name
    assert [row for page in pages for row in page] == truth[:-3]
    assert viewer.get("/?page=2").text.count(f"3 more agents</a>: the day's page lists all {AGENTS_PER_DAY + 3}") == 1
    first = viewer.get("/").text
    assert f"1–{DAYS_PER_PAGE} of {HISTORY}, the latest first (page 1 of 2)" in first
    last_of_first_page, first_of_second_page = truth[2 * DAYS_PER_PAGE - 1][0], truth[2 * DAYS_PER_PAGE][0]
    against = links(first, "/compare?")[-1]  # the page's last day is compared with the day before, on the next page
    assert parse_qs(urlsplit(against).query)["a"] == [f"date={first_of_second_page},agent=agent-1"]
    assert parse_qs(urlsplit(against).query)["b"] == [f"date={last_of_first_page},agent=agent-1"]
    assert not links(viewer.get("/?page=2").text.split("</tbody>")[0].split("<tr>")[-1], "/compare?")  # the first day
    past = viewer.get("/?page=5")
    assert past.status_code == 200 and f"No day on page 5: these {HISTORY} days fill pages 1 to 2." in past.text
    assert viewer.get("/?page=0").status_code == 400


def test_the_report_files_of_a_day_of_more_regressions_than_they_list_count_them_all(big_day):
    reports = big_day / "reports"
    whole = json.loads((reports / f"eval-report-{DAY}.json").read_text())
    regressions = whole["regressions"]
    assert len(regressions) > REGRESSIONS_LISTED
    note = f"The first {REGRESSIONS_LISTED} of {len(regressions):,} regressions are listed (the new and critical first)."
    html = (reports / f"eval-report-{DAY}.html").read_text()
    assert html.count('<details class="regression">') == REGRESSIONS_LISTED and note in html
    assert f"{len(regressions)} regressions ({len(whole['alerts'])} findings)" in html  # the headline counts them all
    markdown = (reports / f"eval-report-{DAY}.md").read_text()
    listed = markdown.split("## Regression Alerts")[1].split("\n\n")[2]  # the table, below its headline
    assert len(listed.splitlines()) == 2 + REGRESSIONS_LISTED and note in markdown  # below its header and separator
    shown = [(row["agent_id"], row["task_id"]) for row in regressions[:REGRESSIONS_LISTED]]
    assert [tuple(cells.split(" | ")[1:3]) for cells in listed.splitlines()[2:]] == shown  # the JSON's first ones
