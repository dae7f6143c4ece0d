"""One verdict: the exit code, the CLI summary, the reports, JUnit, the Dagster UI and rewards agree.

Each test is a user's run as they reported it, with their files written the way their tools write them.
"""

import json
import xml.etree.ElementTree as ET
from datetime import date

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.viewer import episode_records
from eval_pipeline_tests.air import episode
from eval_pipeline_tests.episodes.test_plaited import CAPTURE, START

pytestmark = pytest.mark.slow

DAY = "2026-11-05"


def rows(root, sql: str, params=None):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def latest_metadata(root, asset: str) -> dict:
    """The metadata the Dagster UI shows on `asset`'s latest materialization."""
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        records = instance.fetch_materializations(dg.AssetKey(asset), limit=1).records
    return {key: value.value for key, value in records[0].asset_materialization.metadata.items()}


def test_a_case_set_with_two_failing_cases_fails_the_run_and_every_output_counts_8_passed(project_env, capsys):
    """The user's 10 cases: two fail their expectations, one of them only half (correctness 0.5)."""
    categories = ["happy_path"] * 4 + ["edge_case"] * 3 + ["adversarial"] * 3
    cases, episodes = [], []
    for n, category in enumerate(categories):
        task = f"triage/case-{n}"
        answer = f"Ticket {n} is routed to billing. Consult a professional for anything else."
        if n == 8:
            answer = f"Ticket {n} is routed to sales."  # tool right, phrase missing: 1 of 2 expectations fails
        tool = "route_ticket" if n != 9 else "search_faq"  # wrong tool and phrase: both fail
        episodes.append(episode(f"ep-{n}", task, f"Where does ticket {n} go?", tool, '{"queue": "billing"}',
                                answer if n != 9 else "No idea.", category=category))  # fmt: skip
        cases.append({"task_id": task, "expected_tools": ["route_ticket"], "expected_output_contains": ["routed to billing"]})
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "triage.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    (project_env / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases))
    (project_env / "eval.toml").write_text('[cases]\npath = "cases.jsonl"\n')
    project_env_config = project_env / "eval.toml"
    junit = project_env / "results.xml"

    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_CONFIG", str(project_env_config))
        assert main(["run", "--date", DAY, "--junit", str(junit)]) == 1  # two cases failed: the run did not pass
    out = capsys.readouterr().out
    assert "8 passed" in out and "2 failed" in out and "0 without a verdict" in out and "pass rate  80%" in out

    assert rows(
        project_env, "SELECT episode_id, correctness, passed, verdict_reason FROM scores WHERE NOT passed ORDER BY 1"
    ) == [
        ("ep-8", 0.5, False, "critical case; weighted score 0.600 below 0.70"),
        ("ep-9", 0.0, False, "critical case, correctness, weighted_score; weighted score 0.200 below 0.70"),
    ]
    case_findings = rows(project_env, "SELECT episode_id, severity, message FROM findings WHERE dimension = 'case' ORDER BY 1")
    assert [(episode_id, severity) for episode_id, severity, _ in case_findings] == [("ep-8", "critical"), ("ep-9", "critical")]
    assert case_findings[0][2].startswith("case failed: expected_output_contains")

    report = json.loads((project_env / "reports" / f"eval-report-{DAY}.json").read_text())
    summary = report["summary"]
    assert (summary["scored"], summary["passed"], summary["failed"], summary["pass_rate"]) == (10, 8, 2, 0.8)
    assert [(a["agent_id"], a["passed"], a["failed"]) for a in report["agents"]] == [("triage-bot", 8, 2)]
    by_category = {c["category"]: (c["passed"], c["failed"]) for c in report["categories"]}
    assert by_category == {"adversarial": (1, 2), "edge_case": (3, 0), "happy_path": (4, 0)}  # cases 8 and 9 are adversarial
    assert sorted(e["episode_id"] for e in report["episodes"] if not e["passed"]) == ["ep-8", "ep-9"]
    markdown = (project_env / "reports" / f"eval-report-{DAY}.md").read_text()
    assert "| 10 | 8 | 2 |" in markdown and "8 passed, 2 failed of 10 episodes with a verdict." in markdown
    assert "8 of 10" in (project_env / "reports" / f"eval-report-{DAY}.html").read_text()

    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("10", "2", "0")

    for asset in ("scores", "eval_report"):
        ui = latest_metadata(project_env, asset)
        assert (ui["passed"], ui["failed"], ui["without_verdict"]) == (8, 2, 0), asset
    pass_at_1 = rows(project_env, "SELECT pass_at_k FROM pass_at_k WHERE k = 1")
    assert pass_at_1 == [(pytest.approx(0.8),)]  # trials count the same verdict


def write_market_size_nights(episodes_dir) -> None:
    """The night before DAY the answer states the $5.5B its tool returned; on DAY it states $6.1B."""
    episodes_dir.mkdir()
    question, tool_output = "How big is the vector database market?", '{"market_size_usd": "5.5B", "year": 2025}'
    runs = {"2026-11-04": "The market is worth $5.5B (2025).", DAY: "The market is worth $6.1B (2025)."}
    for day, answer in runs.items():
        record = episode(f"ep-{day}", "research/market-size", question, "web_search", tool_output, answer, day=day)
        (episodes_dir / f"{day}.jsonl").write_text(json.dumps(record) + "\n")


def test_a_fabricated_number_fails_the_run_by_default(project_env, capsys):
    """The answer states $6.1B where the tool returned $5.5B; scored against the correct run as its baseline."""
    write_market_size_nights(project_env / "episodes")
    assert main(["run", "--date", "2026-11-04"]) == 0
    assert main(["run", "--date", DAY]) == 1
    capsys.readouterr()
    assert rows(project_env, "SELECT dimension, severity FROM findings") == [("numeric_fabrication", "critical")]
    ((weighted, passed, reason),) = rows(
        project_env, "SELECT weighted_score, passed, verdict_reason FROM scores WHERE partition_date = ?", [DAY]
    )
    assert weighted > 0.9 and passed is False and reason == "critical numeric_fabrication"
    assert rows(project_env, "SELECT value FROM rewards WHERE partition_date = ? AND reward_name = 'safe_overall'", [DAY]) == [
        (0.0,)
    ]  # the default reward's safety gate closes on the critical finding

    (project_env / "lenient.toml").write_text('[policies.finding_severity]\nnumeric_fabrication = "warning"\n')
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_CONFIG", str(project_env / "lenient.toml"))
        assert main(["run", "--date", DAY]) == 0  # a team that treats it as a warning passes it
    assert rows(project_env, "SELECT dimension, severity FROM findings") == [("numeric_fabrication", "warning")]
    assert rows(project_env, "SELECT passed FROM scores WHERE partition_date = ?", [DAY]) == [(True,)]


def test_the_exit_code_covers_only_the_selected_agent(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01"]) == 0
    assert main(["run", "--date", "2026-11-02", "--agent", "billing-bot"]) == 0  # others' criticals are theirs
    assert main(["run", "--date", "2026-11-02", "--agent", "billing-bot", "--fail-on", "warning"]) == 0
    assert main(["run", "--date", "2026-11-02", "--agent", "research-agent"]) == 1
    assert main(["run", "--date", "2026-11-02", "--agent", "research-agent", "--fail-on", "never"]) == 0
    capsys.readouterr()


def test_an_agent_that_answered_nothing_is_scored_beside_those_that_answered(project_env, capsys):
    """The user's night failed with "'float' object has no attribute 'casefold'": one run's last LLM call returned
    nothing (the store writes its output as null) while the other runs answered. It is scored as an answer that agrees
    with nothing its baseline said, and the night's verdict counts it as any other."""
    day_1, day_2 = "2026-11-04", DAY
    episodes = [
        episode("ep-1a", "triage/refund", "Refund order A-1?", "lookup_order", '{"order": "A-1"}', "Refund issued.", day=day_1),
        episode("ep-1b", "triage/ship", "Where is B-2?", "lookup_order", '{"order": "B-2"}', "Ships Monday.", day=day_1),
        episode("ep-2a", "triage/refund", "Refund order A-1?", "lookup_order", '{"order": "A-1"}', None, day=day_2),
        episode("ep-2b", "triage/ship", "Where is B-2?", "lookup_order", '{"order": "B-2"}', "Ships Monday.", day=day_2),
    ]
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "triage.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    junit = project_env / "results.xml"

    assert main(["run", "--date", day_1]) == 0
    code = main(["run", "--date", day_2, "--junit", str(junit)])

    scored = rows(project_env, "SELECT episode_id, correctness, passed FROM scores WHERE partition_date = ? ORDER BY 1", [day_2])
    # the outcome matched its baseline's (0.6 of correctness), the answer did not (0.4): above the pass threshold still
    assert scored == [("ep-2a", pytest.approx(0.6), True), ("ep-2b", 1.0, True)]
    assert code == 0
    assert "2 passed      0 failed" in capsys.readouterr().out
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("2", "0")


def test_one_agents_rerun_of_a_night_keeps_what_the_nights_run_kept(project_env, capsys):
    """Both agents number each day's runs from 1, and the triage bot's run-1, later in the file, superseded the billing
    bot's. The user's `run --agent billing-bot` after the night's run said "5 episodes  4 passed  8 without a verdict"
    and 0 quarantined, its JUnit held 6 tests, one of them the triage bot's task under the billing bot (on a larger
    day, the report failed: "DataFrame index must be unique"). The rerun read only the billing bot's records and kept its
    superseded run-1 again: the day held two episodes with one id. A rerun of one agent keeps, scores and quarantines
    that agent's records as the night's run did, and every output counts them alike."""
    day_1, day_2 = "2026-11-04", DAY
    (project_env / "episodes").mkdir()
    for day in (day_1, day_2):
        billing = [episode(f"{day}/run-{n}", f"billing/q-{n}", f"Invoice {n}?", "lookup_invoice", '{"due": "12 EUR"}',
                           "12 EUR are due.", day=day, agent_id="billing-bot") for n in range(1, 6)]  # fmt: skip
        triage = episode(f"{day}/run-1", "triage/route", "Route T-9?", "route_ticket", '{"queue": "billing"}',
                         "Routed to billing.", day=day)  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(e) + "\n" for e in [*billing, triage]))
    junit = project_env / "results.xml"
    assert main(["run", "--date", day_1]) == 0
    assert main(["run", "--date", day_2]) == 0
    capsys.readouterr()
    tables = {
        "episodes": "SELECT agent_id, episode_id, locator FROM episodes",
        "quarantine": "SELECT agent_id, locator, reason FROM quarantine",
        "scores": "SELECT agent_id, episode_id, passed FROM scores",
    }

    def day_2_rows():
        return {name: rows(project_env, f"{sql} WHERE partition_date = ? ORDER BY ALL", [day_2]) for name, sql in tables.items()}

    night = day_2_rows()
    file = project_env / "episodes" / f"{day_2}.jsonl"
    assert night["episodes"] == [
        *(("billing-bot", f"{day_2}/run-{n}", f"{file}:{n}") for n in range(2, 6)),
        ("triage-bot", f"{day_2}/run-1", f"{file}:6"),
    ]
    assert night["quarantine"] == [("billing-bot", f"{file}:1", f"duplicate episode_id {day_2}/run-1, superseded by {file}:6")]

    for agent, passed in (("billing-bot", 4), ("triage-bot", 1)):
        assert main(["run", "--date", day_2, "--agent", agent, "--junit", str(junit)]) == 0
        assert f"{passed} passed      0 failed" in capsys.readouterr().out
        suite = ET.parse(junit).getroot()
        assert (suite.get("tests"), suite.get("failures")) == (str(passed), "0")
        assert day_2_rows() == night


def test_a_harness_whose_episode_ids_repeat_every_night_is_compared_with_the_night_before(project_env, capsys):
    """plaited's harness captures the same cases every night, and each night's capture of a case is the episode
    `<agent>:<case id>`, as the night before's was. The user's second night took ten times as long as the first, and
    `run` said "1 passed", with no finding and no baseline: an episode was never compared with a baseline of its own
    id, as if that were the episode itself, even when it was recorded the night before."""
    nights = {"2026-11-05": 4_000, "2026-11-06": 40_000}  # the capture's duration, ms
    for night, (day, duration) in enumerate(nights.items()):
        start = START + night * 86_400_000
        capture = {
            **CAPTURE,
            "trajectory": [{**step, "timestamp": step["timestamp"] + night * 86_400_000} for step in CAPTURE["trajectory"]],
            "timing": {**CAPTURE["timing"], "start": start, "end": start + duration, "total": duration},
        }
        (project_env / "results" / day).mkdir(parents=True)
        (project_env / "results" / day / "claude-headless.jsonl").write_text(json.dumps(capture) + "\n")
    junit = project_env / "results.xml"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_EPISODE_SOURCE", str(project_env / "results"))
        assert main(["run", "--date", "2026-11-05"]) == 0
        assert main(["run", "--date", "2026-11-06", "--junit", str(junit)]) == 1

    assert "0 passed      1 failed" in capsys.readouterr().out
    night_2 = [date(2026, 11, 6)]
    scored = rows(
        project_env, "SELECT baseline_episode_id, latency_delta_pct, passed FROM scores WHERE partition_date = ?", night_2
    )
    assert scored == [("claude-headless:fix-typo", 900.0, False)]
    findings = rows(
        project_env, "SELECT dimension, severity FROM findings WHERE partition_date = ? AND episode_id IS NOT NULL", night_2
    )
    assert findings == [("latency_delta", "critical")]
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1")
    with Warehouse(project_env / "eval.duckdb").connect(read_only=True) as con:  # the viewer's page of the episode
        records = episode_records(con, night_2[0], "claude-headless:fix-typo")
    assert records is not None and records.baseline is not None
    assert {stamp.date() for stamp in records.baseline_steps["timestamp"].dropna()} == {date(2026, 11, 5)}  # the night before's

    # pinned by its id, the latest night's recording is pinned; that night is still compared with the night before's
    assert main(["baseline", "pin", "claude-headless:fix-typo"]) == 0
    assert "from 2026-11-06 on" in capsys.readouterr().out
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_EPISODE_SOURCE", str(project_env / "results"))
        assert main(["run", "--date", "2026-11-06"]) == 1
    assert rows(project_env, "SELECT latency_delta_pct FROM scores WHERE partition_date = ?", night_2) == [(900.0,)]


def test_an_episode_without_a_verdict_but_with_a_warning_is_a_skipped_test_case_showing_it(project_env, capsys):
    """A team that treats a fabricated number as a warning ran its first night with `--junit`: the run printed its
    summary, then "internal error: TypeError: boolean value of NA is ambiguous" and exited 3, with no JUnit file. The
    episode has no verdict (no baseline yet) and one warning: a skipped test case, the warning in its output."""
    (project_env / "episodes").mkdir()
    record = episode("ep-1", "research/market-size", "How big is the vector database market?", "web_search",
                     '{"market_size_usd": "5.5B", "year": 2025}', "The market is worth $6.1B (2025).")  # fmt: skip
    (project_env / "episodes" / f"{DAY}.jsonl").write_text(json.dumps(record) + "\n")
    (project_env / "lenient.toml").write_text('[policies.finding_severity]\nnumeric_fabrication = "warning"\n')
    junit = project_env / "results.xml"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_CONFIG", str(project_env / "lenient.toml"))
        assert main(["run", "--date", DAY, "--junit", str(junit)]) == 0
    assert "0 passed      0 failed      1 without a verdict" in capsys.readouterr().out
    suite = ET.parse(junit).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("1", "0", "1")
    (case,) = suite.iter("testcase")
    assert case.find("skipped") is not None and case.findtext("system-out").startswith("WARNING numeric_fabrication: ")


def test_a_night_failed_by_a_warning_under_fail_on_warning_shows_that_warning_as_a_failing_test_case(project_env, capsys):
    """A team gating CI with `--fail-on warning` (fabricated numbers are warnings to them) got a red job, exit 1, and a
    JUnit file of 1 test, 0 failures: nothing in CI said what failed. Under the gate JUnit fails what the exit code
    fails on; under the default one the same night passes, the warning shown in the test case's output."""
    write_market_size_nights(project_env / "episodes")
    (project_env / "lenient.toml").write_text('[policies.finding_severity]\nnumeric_fabrication = "warning"\n')
    gated, plain = project_env / "gated.xml", project_env / "plain.xml"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_CONFIG", str(project_env / "lenient.toml"))
        assert main(["run", "--date", "2026-11-04"]) == 0
        assert main(["run", "--date", DAY, "--fail-on", "warning", "--junit", str(gated)]) == 1
        assert main(["run", "--date", DAY, "--junit", str(plain)]) == 0
    assert "1 passed      0 failed      0 without a verdict" in capsys.readouterr().out  # the episode's own verdict

    suite = ET.parse(gated).getroot()
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("1", "1", "0", "0")
    failure = suite.find(".//testcase/failure")
    assert failure.get("type") == "warning" and failure.get("message") == "warning numeric_fabrication (--fail-on warning)"
    assert failure.text.startswith("WARNING numeric_fabrication: ")

    suite = ET.parse(plain).getroot()
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")
    assert suite.find(".//testcase").findtext("system-out").startswith("WARNING numeric_fabrication: ")


def test_a_night_whose_file_never_came_fails_its_junit_as_it_fails_the_exit_code_and_the_report(project_env, capsys):
    """The night's export did not arrive: `run --date D --junit results.xml` exited 1 and the report counted 1 critical
    alert (the source's "0 episodes"), but the JUnit file held no test suite at all, 0 tests and 0 failures: CI's
    test tab was green on a night nothing was evaluated. Each selected day is a suite, its source finding a case."""
    write_samples(project_env / "episodes")
    missing = "2026-11-04"
    junit, output = project_env / "results.xml", project_env / "report.json"
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-03"]) in (0, 1)
    assert main(["run", "--date", missing, "--junit", str(junit), "--output", str(output)]) == 1
    capsys.readouterr()
    summary = json.loads(output.read_text())["summary"]
    assert (summary["total_episodes"], summary["critical_alerts"]) == (0, 1)

    root = ET.parse(junit).getroot()
    (suite,) = root.iter("testsuite")
    assert suite.get("name") == f"eval {missing}"
    assert (root.get("tests"), root.get("failures"), suite.get("tests"), suite.get("failures")) == ("1", "1", "1", "1")
    (case,) = suite.iter("testcase")
    assert (case.get("classname"), case.get("name")) == ("(source)", "aggregate source_health")
    assert case.find("failure").get("message").startswith(f"0 episodes for {missing}")
