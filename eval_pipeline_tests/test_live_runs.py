"""`eval-pipeline run` against a real OpenAI-compatible server on 127.0.0.1, as a user runs it with the
judge or live replay on."""

import json
import xml.etree.ElementTree as ET

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.air import episode as air_episode

pytestmark = pytest.mark.slow


def episode(episode_id: str, day: str, answer: str, trial: int | None = None) -> dict:
    steps = [
        {"step_index": 0, "step_type": "llm_call", "input_summary": "Where is my refund?"},
        {"step_index": 1, "step_type": "tool_call", "tool_name": "lookup_refund"},
        {"step_index": 2, "step_type": "tool_result", "tool_name": "lookup_refund", "output_summary": '{"status": "sent"}'},
        {"step_index": 3, "step_type": "llm_call", "output_summary": answer},
    ]
    return {
        "episode_id": episode_id, "agent_id": "billing", "status": "success",
        "started_at": f"{day}T10:00:00Z", "final_output": answer, "steps": steps,
        "metadata": {"task_id": "refund", **({"trial": trial} if trial is not None else {})},
    }  # fmt: skip


def write_episodes(directory, episodes: list[dict]) -> None:
    directory.mkdir(exist_ok=True)
    (directory / "day.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))


def rows(root, sql: str) -> list[tuple]:
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_range_with_the_judge_on_scores_every_day_when_the_first_has_no_pairs(project_env, fake_openai, monkeypatch):
    """A new agent's first day has no baseline, so no pairwise comparison; the next has one; the last has no episode."""
    write_episodes(
        project_env / "episodes",
        [episode("first-day", "2026-11-01", "It was sent."), episode("second-day", "2026-11-02", "Sent on Monday.")],
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")

    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-03", "--fail-on", "never"]) == 0

    assert rows(project_env, "SELECT partition_date::VARCHAR, status, reasoning FROM pairwise_judgements ORDER BY 1") == [
        ("2026-11-01", "skipped", "skipped: no baseline"),
        ("2026-11-02", "judged", rows(project_env, "SELECT reasoning FROM pairwise_judgements WHERE status = 'judged'")[0][0]),
    ]
    assert rows(project_env, "SELECT partition_date::VARCHAR, count(*) FROM scores GROUP BY 1 ORDER BY 1") == [
        ("2026-11-01", 1),
        ("2026-11-02", 1),
    ]
    assert rows(project_env, "SELECT count(*), count(*) FILTER (WHERE status = 'judged') FROM judgements") == [(4, 4)]
    assert rows(project_env, "SELECT count(*) FROM reports") == [(3,)]


def live_replay_env(monkeypatch, fake_openai) -> None:
    monkeypatch.setenv("EVAL_REPLAY_MODE", "live")
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-never-stored-0123456789abcdef")
    monkeypatch.setenv("EVAL_CANDIDATE_MODEL", "candidate-1")


REPLAY_ROWS = "SELECT * EXCLUDE (cached) FROM replays ORDER BY episode_id"


def test_a_rerun_of_a_live_replay_day_makes_no_model_call_and_no_cache_asks_again(project_env, fake_openai, monkeypatch, capsys):
    """Three trials of one case are three samples; a re-run reuses each; `--no-cache` samples them afresh."""
    write_episodes(project_env / "episodes", [episode(f"trial-{n}", "2026-11-01", "It was sent.", trial=n) for n in (1, 2, 3)])
    live_replay_env(monkeypatch, fake_openai)
    run = ["run", "--date", "2026-11-01", "--fail-on", "never"]

    assert main(run) == 0
    first_calls = len(fake_openai.requests)
    assert first_calls == 6  # per trial: the tool call, then the answer
    first_rows = rows(project_env, REPLAY_ROWS)
    assert [(r[0], r[5]) for r in first_rows] == [(f"trial-{n}", "success") for n in (1, 2, 3)]
    assert "Live replays: 0 reused from the cache, 3 called the model." in capsys.readouterr().out

    assert main(run) == 0
    assert len(fake_openai.requests) == first_calls  # not one new model call
    assert rows(project_env, REPLAY_ROWS) == first_rows
    assert rows(project_env, "SELECT count(*) FILTER (WHERE cached) FROM replays") == [(3,)]
    assert "Live replays: 3 reused from the cache, 0 called the model." in capsys.readouterr().out
    report = json.loads(next((project_env / "reports").rglob("*.json")).read_text())
    assert report["summary"]["replays"] == {"live": 3, "reused": 3, "called": 0, "failed": 0}

    assert main([*run, "--no-cache"]) == 0
    assert len(fake_openai.requests) == 2 * first_calls
    assert "Live replays: 0 reused from the cache, 3 called the model." in capsys.readouterr().out
    assert main(run) == 0  # the fresh samples are what the cache holds now
    assert len(fake_openai.requests) == 2 * first_calls
    assert not any("sk-test-never-stored" in str(row) for row in rows(project_env, "SELECT * FROM llm_cache"))


def write_triage_episodes(directory, count: int) -> dict[str, str]:
    """AIR episodes whose recorded answers are what the fake candidate answers, so a replay matches its recording;
    their questions by episode id."""
    questions = {f"ep-{n}": f"Where does ticket {n} go?" for n in range(count)}
    answers = [
        air_episode(
            episode_id, f"triage/{episode_id}", question, "lookup_refund", '{"calls": 1}', f"Done after 1 tool calls: {question}"
        )
        for episode_id, question in questions.items()
    ]
    write_episodes(directory, answers)
    return questions


def test_a_gateway_failing_one_episodes_live_replay_leaves_it_without_a_verdict_in_every_output(
    project_env, fake_openai, monkeypatch, capsys, webhook
):
    """The gateway answers 500 to every retry of one episode's replay: that episode has no candidate run, so no
    verdict and no findings (no regression of the agent, no alert), and the day line and JUnit say why."""
    questions = write_triage_episodes(project_env / "episodes", 3)
    live_replay_env(monkeypatch, fake_openai)
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    fake_openai.fail_when = lambda body: questions["ep-1"] in json.dumps(body["messages"])
    junit = project_env / "results.xml"

    for fail_on in ("critical", "warning"):  # no regression, but an infrastructure error
        assert main(["run", "--date", "2026-11-05", "--fail-on", fail_on, "--junit", str(junit)]) == 3

    out = capsys.readouterr().out
    assert "2 passed      0 failed      1 without a verdict" in out
    assert "1 without a verdict: 1 live replay failed" in out
    assert rows(project_env, "SELECT episode_id, passed FROM scores ORDER BY 1") == [
        ("ep-0", True), ("ep-1", None), ("ep-2", True)
    ]  # fmt: skip
    assert rows(project_env, "SELECT count(*) FROM findings") == [(0,)]
    assert webhook.messages == []
    error = ET.parse(junit).getroot().find(".//testcase[@name='triage/ep-1 [ep-1]']/error")
    assert error is not None and error.get("message").startswith("no verdict: live replay failed: GatewayError")
    report = json.loads((project_env / "reports" / "eval-report-2026-11-05.json").read_text())
    assert (report["summary"]["passed"], report["summary"]["without_verdict"], report["summary"]["replays"]["failed"]) == (
        2, 1, 1
    )  # fmt: skip
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:
        scores = instance.fetch_materializations(dg.AssetKey("scores"), limit=1).records[0].asset_materialization
        key = dg.AssetCheckKey(dg.AssetKey("scores"), "scores_present_with_baseline")
        check = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)[0].event
    assert (scores.metadata["passed"].value, scores.metadata["without_verdict"].value) == (2, 1)
    evaluation = check.dagster_event.event_specific_data
    assert evaluation.passed and evaluation.metadata["failed_live_replays"].value == 1


def test_a_gateway_echoing_the_api_key_in_its_error_leaks_it_nowhere(project_env, fake_openai, monkeypatch, capsys):
    """A LiteLLM-style key of no vendor's shape, which a gateway answers 401 to by quoting it: neither the replays'
    errors nor the judge's failed verdicts, the reports, JUnit or the terminal keep it."""
    key = "gw-" + "7f3a9c1e5b2d8046aa"
    write_episodes(project_env / "episodes", [episode("ep-1", "2026-11-01", "It was sent.")])
    live_replay_env(monkeypatch, fake_openai)
    monkeypatch.setenv("OPENAI_API_KEY", key)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    fake_openai.echo_key = True
    junit = project_env / "results.xml"

    def kept_anywhere() -> list[str]:
        tables = [name for (name,) in rows(project_env, "SELECT table_name FROM information_schema.tables")]
        files = [path for path in project_env.rglob("*") if path.suffix in {".xml", ".html", ".md", ".json", ".jsonl"}]
        assert junit in files
        return [name for name in tables if key in str(rows(project_env, f'SELECT * FROM "{name}"'))] + [
            str(path) for path in files if key in path.read_text(errors="replace")
        ]

    assert main(["run", "--date", "2026-11-01", "--junit", str(junit)]) == 3
    assert rows(project_env, "SELECT count(*) FROM replays WHERE error LIKE '%Incorrect API key provided%'") == [(1,)]
    assert kept_anywhere() == []
    monkeypatch.setenv("EVAL_REPLAY_MODE", "dry")  # the judge then reads the recording's answer, and fails on it
    assert main(["run", "--date", "2026-11-01", "--junit", str(junit)]) == 3
    assert rows(project_env, "SELECT count(*) FROM judgements WHERE reasoning LIKE '%Incorrect API key provided%'") == [(2,)]
    assert kept_anywhere() == []
    out = capsys.readouterr()
    assert key not in out.out + out.err


def test_a_gateway_cutting_an_answer_short_is_retried_and_then_recorded_not_a_crashed_run(
    project_env, fake_openai, monkeypatch, capsys
):
    """A proxy drops the connection midway through a 200's JSON: asked again, the judge's verdict stands; when every
    answer comes cut short, the run still ends, each judgement failed with the reason, and the replays too."""
    write_episodes(project_env / "episodes", [episode("ep-1", "2026-11-01", "It was sent.")])
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    run = ["run", "--date", "2026-11-01"]

    fake_openai.truncated_next = 1
    assert main(run) == 0
    assert rows(project_env, "SELECT rubric, status FROM judgements ORDER BY 1") == [("relevance", "judged"), ("tone", "judged")]

    fake_openai.truncated_next = 1000
    live_replay_env(monkeypatch, fake_openai)
    assert main([*run, "--no-cache"]) == 3
    assert "1 without a verdict: 1 live replay failed" in capsys.readouterr().out
    ((error,),) = rows(project_env, "SELECT error FROM replays")
    assert "answered a body that is not JSON" in error
    monkeypatch.setenv("EVAL_REPLAY_MODE", "dry")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-2")  # a judge whose answers are not cached yet
    assert main(run) == 3
    assert rows(project_env, "SELECT DISTINCT status, reasoning LIKE 'judge failed: judge-2 answered a body that is not JSON%' "
                             "FROM judgements") == [("failed", True)]  # fmt: skip


def test_a_rate_limited_live_replay_is_not_slower_for_the_wait(project_env, fake_openai, monkeypatch, capsys):
    """The gateway answers one call 429 with Retry-After: 4, the SDK waits and asks again: the candidate answered as fast
    as ever, so its latency is its answers' time, not the wait, and nothing regressed."""
    write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.fail_next = [(429, "4")]

    assert main(["run", "--date", "2026-11-05", "--fail-on", "warning"]) == 0

    assert "2 passed      0 failed      0 without a verdict" in capsys.readouterr().out
    assert len(fake_openai.requests) == 5  # the 429, then each replay's tool call and answer
    assert rows(project_env, "SELECT count(*) FROM replays WHERE total_duration_ms < 1000") == [(2,)]
    assert rows(project_env, "SELECT count(*) FROM findings") == [(0,)]


def test_an_episode_whose_live_replay_failed_has_no_checks_issues_or_rewards(project_env, fake_openai, monkeypatch):
    """No candidate answered, so no check can have found an empty answer in it, and a trainer gets no reward for it
    (not 0 for a closed safety gate, not 1 for a run without issues)."""
    questions = write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.fail_when = lambda body: questions["ep-1"] in json.dumps(body["messages"])

    assert main(["run", "--date", "2026-11-05"]) == 3

    assert rows(project_env, "SELECT DISTINCT episode_id FROM issues UNION SELECT DISTINCT episode_id FROM rewards") == [
        ("ep-0",)
    ]  # fmt: skip
    assert rows(project_env, "SELECT episode_id, issue_score, issue_grade, passed FROM scores ORDER BY 1") == [
        ("ep-0", 95.0, "A", True), ("ep-1", None, None, None)
    ]  # fmt: skip


def test_the_judges_counts_of_failed_verdicts_agree_with_its_table_in_the_ui_and_the_report(
    project_env, fake_openai, monkeypatch
):
    """The gateway fails every call about one of three episodes: its two rubric verdicts failed, and its pairwise
    comparison; the Dagster UI and the report count rubric verdicts as the `judgements` table holds them, and say
    the failed pair apart."""
    write_episodes(
        project_env / "episodes",
        [episode(f"day1-{n}", "2026-11-01", f"Refund {n} was sent.", trial=n) for n in range(3)]
        + [episode(f"day2-{n}", "2026-11-02", f"Refund {n} is on its way.", trial=n) for n in range(3)],
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    fake_openai.fail_when = lambda body: "Refund 1 is on its way." in json.dumps(body["messages"])

    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0

    by_status = "SELECT status, count(*) FROM {} WHERE partition_date = '2026-11-02' GROUP BY 1 ORDER BY 1"
    assert rows(project_env, by_status.format("judgements")) == [("failed", 2), ("judged", 4)]
    assert rows(project_env, by_status.format("pairwise_judgements")) == [("failed", 1), ("judged", 2)]
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:
        shown = {
            record.asset_materialization.partition: {k: v.value for k, v in record.asset_materialization.metadata.items()}
            for record in instance.fetch_materializations(dg.AssetKey("judgements"), limit=2).records
        }
    ui = shown["2026-11-02"]
    assert (ui["judged"], ui["failed"], ui["skipped"], ui["dagster/row_count"]) == (4, 2, 0, 6)
    assert (ui["pairs_compared"], ui["pairs_failed"]) == (2, 1)
    first_day = shown["2026-11-01"]  # no baseline yet: three rubric pairs judged, every pairwise comparison skipped
    assert (first_day["judged"], first_day["failed"], first_day["skipped"], first_day["pairs_skipped"]) == (6, 0, 0, 3)
    report = json.loads((project_env / "reports" / "eval-report-2026-11-02.json").read_text())["judge"]
    assert (report["judged"], report["failed"], report["pairs_failed"]) == (4, 2, 1)
    markdown = (project_env / "reports" / "eval-report-2026-11-02.md").read_text()
    assert "Pairwise against the baseline's answer (2 pairs, each asked in both orders; 1 failed):" in markdown


def test_a_judge_score_off_the_rubrics_scale_or_not_a_number_is_a_failed_verdict_saying_why(
    project_env, fake_openai, monkeypatch
):
    """Asked for an integer 1-5, the judge answers `true` for one answer and 7 for another, twice: neither becomes a
    verdict (`true` is not the worst score, 1), and each failure says what was wrong with the score."""
    write_episodes(
        project_env / "episodes", [episode(f"ep-{n}", "2026-11-01", f"Refund {n} was sent.", trial=n) for n in range(3)]
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    fake_openai.score_of = lambda response: {"Refund 1 was sent.": True, "Refund 2 was sent.": 7}.get(response, 4)

    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0

    verdicts = "SELECT episode_id, status, score, CASE WHEN status = 'failed' THEN reasoning END FROM judgements"
    assert rows(project_env, f"{verdicts} WHERE rubric = 'tone' ORDER BY 1") == [
        ("ep-0", "judged", 4, None),
        ("ep-1", "failed", None, "judge failed: invalid JSON from judge-1 twice: score: Input should be a valid integer"),
        (
            "ep-2",
            "failed",
            None,
            "judge failed: invalid JSON from judge-1 twice: score: Input should be less than or equal to 5",
        ),
    ]


def test_a_candidate_that_refuses_is_recorded_with_its_refusal_not_an_empty_answer(project_env, fake_openai, monkeypatch):
    """OpenAI's models answer a refusal in `refusal`, with no `content`: the replay's answer is the refusal, so the
    report, the viewer and the checks see what the candidate said rather than nothing."""
    questions = write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.refuse_when = lambda body: questions["ep-1"] in json.dumps(body["messages"])

    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0

    assert rows(project_env, "SELECT episode_id, status, final_output FROM replays ORDER BY 1") == [
        ("ep-0", "success", f"Done after 1 tool calls: {questions['ep-0']}"),
        ("ep-1", "success", "I'm sorry, I can't help with that."),
    ]
    assert rows(project_env, "SELECT count(*) FROM issues WHERE episode_id = 'ep-1' AND \"check\" = 'empty_answer'") == [(0,)]


def test_a_judge_that_refuses_is_a_failed_verdict_that_says_so_and_is_not_asked_again(project_env, fake_openai, monkeypatch):
    """A refusal is no malformed JSON: the failed verdict quotes it, and no re-ask spends a second call on it."""
    write_episodes(
        project_env / "episodes", [episode(f"ep-{n}", "2026-11-01", f"Refund {n} was sent.", trial=n) for n in range(2)]
    )
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    fake_openai.refuse_when = lambda body: "Refund 1 was sent." in json.dumps(body["messages"])

    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0

    assert rows(
        project_env, "SELECT episode_id, rubric, status, reasoning FROM judgements WHERE status <> 'judged' ORDER BY 2"
    ) == [
        ("ep-1", rubric, "failed", "judge failed: judge-1 refused: I'm sorry, I can't help with that.")
        for rubric in ("relevance", "tone")
    ]
    assert len(fake_openai.requests) == 4  # one call per rubric and answer


def test_a_live_answer_without_a_message_fails_that_replay_not_the_run(project_env, fake_openai, monkeypatch, capsys):
    """A gateway's content filter answers 200 with `"message": null` for one episode: that replay failed, saying why,
    and the other is scored; the run was an opaque `'NoneType' object has no attribute 'get'` and exit code 3."""
    questions = write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.filter_when = lambda body: questions["ep-1"] in json.dumps(body["messages"])

    assert main(["run", "--date", "2026-11-05"]) == 3

    assert "1 passed      0 failed      1 without a verdict" in capsys.readouterr().out
    assert rows(project_env, "SELECT episode_id, status, error FROM replays ORDER BY 1") == [
        ("ep-0", "success", None),
        ("ep-1", "failure", "GatewayError: candidate-1 answered without a message"),
    ]


def day_outputs(project_env, junit, day: str) -> tuple[ET.Element, dict]:
    """The day's JUnit suite and its report's summary, as CI and a dashboard read them."""
    suite = ET.parse(junit).getroot().find(f"testsuite[@name='eval {day}']")
    assert suite is not None
    return suite, json.loads((project_env / "reports" / f"eval-report-{day}.json").read_text())["summary"]


def test_a_gateway_down_all_night_fails_every_live_replay_and_the_run_exits_3(project_env, fake_openai, monkeypatch, capsys):
    """Every call answers 500, retries included: no episode has a verdict, so none failed and nothing regressed, yet
    nothing was evaluated either; the run exited 0 under every --fail-on. It is an infrastructure error (3), counted
    in every output, except that `--fail-on never` still exits 0."""
    write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.fail_when = lambda body: True
    junit = project_env / "results.xml"

    for fail_on, code in (("critical", 3), ("warning", 3), ("never", 0)):
        assert main(["run", "--date", "2026-11-05", "--fail-on", fail_on, "--junit", str(junit)]) == code

    out, err = capsys.readouterr()
    assert "0 passed      0 failed      2 without a verdict" in out
    assert "2 without a verdict: 2 live replays failed (see `replays.error`)." in out
    assert err.count(
        "eval-pipeline: 2 live replays and 0 judge verdicts failed after retries on 2026-11-05: see replays.error / "
        "judgements.reasoning\n"
    ) == 2  # fmt: skip
    suite, summary = day_outputs(project_env, junit, "2026-11-05")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("2", "0", "2", "0")
    error = suite.find("testcase/error").get("message")
    assert error.startswith("no verdict: live replay failed: GatewayError: InternalServerError (HTTP 500)")
    assert (summary["replays"]["failed"], summary["judge_failed"]) == (2, 0)
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:
        report = instance.fetch_materializations(dg.AssetKey("eval_report"), limit=1).records[0].asset_materialization
    assert (report.metadata["failed_live_replays"].value, report.metadata["failed_judge_verdicts"].value) == (2, 0)


def test_a_gateway_down_all_night_fails_every_judge_verdict_and_the_run_exits_3(project_env, fake_openai, monkeypatch, capsys):
    """The judge's gateway answers 500 to every call: the episodes passed on their recorded runs, but none of the
    judge's verdicts exists, and the day line said nothing of them; the run exited 0."""
    write_episodes(project_env / "episodes", [episode("ep-1", "2026-11-01", "It was sent.")])
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    fake_openai.fail_when = lambda body: True
    junit = project_env / "results.xml"

    for fail_on, code in (("critical", 3), ("warning", 3), ("never", 0)):
        assert main(["run", "--date", "2026-11-01", "--fail-on", fail_on, "--junit", str(junit)]) == code

    out, err = capsys.readouterr()
    assert "2 judge verdicts failed (see `judgements.reasoning`)." in out
    assert "eval-pipeline: 0 live replays and 2 judge verdicts failed after retries on 2026-11-01" in err
    suite, summary = day_outputs(project_env, junit, "2026-11-01")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "0", "1")
    judge_case = suite.find("testcase[@name='judge verdicts']/error")
    assert judge_case.get("message") == "2 judge verdicts failed after retries: see judgements.reasoning"
    assert summary["judge_failed"] == 2
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:
        report = instance.fetch_materializations(dg.AssetKey("eval_report"), limit=1).records[0].asset_materialization
    assert report.metadata["failed_judge_verdicts"].value == 2


def test_only_the_chosen_agents_failed_live_replays_decide_its_exit_code(project_env, fake_openai, monkeypatch, capsys):
    """The gateway fails every replay of one agent: a run of that agent exits 3, and a run of the other agent alone
    afterwards is clean (0), though the day holds the first one's failed replay."""
    questions = write_triage_episodes(project_env / "episodes", 1)
    other = air_episode("other-1", "triage/other-1", "Who owns it?", "lookup_refund", '{"calls": 1}',
                        "Done after 1 tool calls: Who owns it?", agent_id="other-bot")  # fmt: skip
    with (project_env / "episodes" / "day.jsonl").open("a") as records:
        records.write(json.dumps(other) + "\n")
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.fail_when = lambda body: questions["ep-0"] in json.dumps(body["messages"])

    assert main(["run", "--date", "2026-11-05", "--agent", "triage-bot"]) == 3
    assert main(["run", "--date", "2026-11-05", "--agent", "other-bot"]) == 0  # beside triage-bot's failed replay
    assert capsys.readouterr().err.count("eval-pipeline: 1 live replay and 0 judge verdicts failed after retries") == 1


def test_a_call_the_gateway_answered_only_after_a_retry_is_counted_and_a_failed_one_says_its_attempts(
    project_env, fake_openai, monkeypatch, capsys
):
    """The SDK retried a 503 silently, and a replay that failed said nothing of the five requests behind it: the
    run now warns how many calls needed retries (no table has a column for it: the steps' Dagster metadata and log
    hold it), and each failed replay's error says how many attempts it took."""
    write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.fail_next = [(503, "0")]

    assert main(["run", "--date", "2026-11-05"]) == 0

    assert "eval-pipeline: warning: 1 gateway call answered only after retries on 2026-11-05" in capsys.readouterr().err
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:
        replays = instance.fetch_materializations(dg.AssetKey("replays"), limit=1).records[0].asset_materialization
    assert (replays.metadata["llm_calls"].value, replays.metadata["llm_calls_retried"].value) == (4, 1)

    fake_openai.fail_when = lambda body: True
    assert main(["run", "--date", "2026-11-05", "--no-cache"]) == 3
    assert rows(project_env, "SELECT DISTINCT error FROM replays") == [
        ("GatewayError: InternalServerError (HTTP 500): Error code: 500 - injected (5 attempts)",)
    ]


def test_a_slow_self_hosted_model_gets_the_timeout_and_retries_the_config_gives_it(project_env, fake_openai, monkeypatch, capsys):
    """A team's candidate runs on its own GPU box and takes longer per answer than a hosted model. The gateway's
    per-request timeout and retries were fixed (60 s, 4 retries): a slower model failed every replay after five
    timed-out attempts, and nothing in eval.toml could change it. `[gateway]` sets both, and how many calls run at
    once, for live replay and the judge alike."""
    write_triage_episodes(project_env / "episodes", 2)
    live_replay_env(monkeypatch, fake_openai)
    fake_openai.latency_seconds = 1.0
    config = project_env / "eval.toml"
    monkeypatch.setenv("EVAL_CONFIG", str(config))

    config.write_text("[gateway]\ntimeout_seconds = 0.3\nmax_retries = 1\nconcurrency = 1\n")
    assert main(["run", "--date", "2026-11-05"]) == 3
    timed_out = "GatewayError: APITimeoutError: Request timed out. (2 attempts)"
    assert rows(project_env, "SELECT DISTINCT error FROM replays") == [(timed_out,)]
    assert len(fake_openai.requests) == 2 * 2  # each replay's first try and its one retry

    config.write_text("[gateway]\ntimeout_seconds = 5\n")
    assert main(["run", "--date", "2026-11-05", "--no-cache"]) == 0
    assert rows(project_env, "SELECT count(*) FILTER (error IS NULL), count(*) FROM replays") == [(2, 2)]
