"""The command line as cron, CI and people use it: exit codes, one-line errors, real runs."""

import json
import os
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import dagster as dg
import pytest
from filelock import FileLock

from eval_pipeline.cli import main
from eval_pipeline.episodes.model import Episode
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.runner import _turn
from eval_pipeline_tests.postgres import lake_on

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("backend", ["file", "lake"])
def test_demo_then_query_report_and_status(project_env, capsys, backend, request, monkeypatch):
    lake = None
    if backend == "lake":  # the same commands on a DuckLake warehouse, its catalog on a real Postgres
        lake = lake_on(request.getfixturevalue("postgres_server"), request.getfixturevalue("postgres_db"), project_env)
        monkeypatch.setenv("EVAL_WAREHOUSE", f"ducklake:{lake.catalog}")
        monkeypatch.setenv("EVAL_WAREHOUSE_DATA", lake.data_path)
    assert main(["demo", "--last-day", "2026-11-03"]) == 0
    out = capsys.readouterr().out
    assert "2026-11-02" in out and "18 critical, 9 warning" in out and "/runs/" in out
    assert "46 without a verdict" in out and "the first day of those tasks" in out
    assert "no findings for billing-bot" in out and "leaked a secret" in out
    assert (project_env / "dagster_home" / "dagster.yaml").exists()

    assert main(["query", "SELECT count(*) AS n FROM findings WHERE agent_id = 'billing-bot'", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 0}]
    assert main(["query", "SELECT count(*) AS n FROM scores", "--format", "json"]) == 0  # the data files are read
    assert json.loads(capsys.readouterr().out)[0]["n"] > 100
    assert main(["query", "DELETE FROM scores"]) != 0  # and never written
    capsys.readouterr()

    assert main(["report", "--date", "2026-11-02"]) == 0
    assert "## Regression Alerts" in capsys.readouterr().out
    assert main(["report", "--date", "2026-11-02", "--format", "json", "--output", str(project_env / "r.json")]) == 0
    assert json.loads((project_env / "r.json").read_text())["critical_alerts"] == 18

    # the user's head to head of day 1 and day 2: one task has a score on both days, and it says so
    capsys.readouterr()
    assert main(["compare", "--a", "date=2026-11-01", "--b", "date=2026-11-02", "--format", "json"]) == 0
    h2h = json.loads(capsys.readouterr().out)
    assert (h2h["meta"]["tasks_in_common"], h2h["meta"]["comparable_tasks"]) == (16, 1)
    assert h2h["headToHead"]["winner"] is None and h2h["quality"]["score_delta"] is None
    assert main(["compare", "--a", "date=2026-11-01", "--b", "date=2026-11-02"]) == 0
    assert "No winner: too few comparable tasks (1 < 3) to call a winner." in capsys.readouterr().out

    assert main(["status"]) == 0
    status = capsys.readouterr().out
    assert "2026-11-03" in status
    if lake is None:
        assert str(project_env / "eval.duckdb") in status
    else:
        assert "password=*** dbname=" in status and lake.data_path in status and not (project_env / "eval.duckdb").exists()
        assert f"password={lake.catalog.split('password=')[1].split()[0]}" not in status
    with dg.DagsterInstance.from_config(str(project_env / "dagster_home")) as instance:  # status reads it without Dagster
        run = instance.get_runs(limit=1)[0]
    assert f"latest run       {run.run_id} {run.job_name} partition 2026-11-01...2026-11-03: SUCCESS\n" in status


def test_run_exit_codes_follow_fail_on(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02"]) == 1  # criticals on the 2nd
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert main(["run", "--date", "2026-11-01", "--fail-on", "warning"]) == 0  # day 1 has no findings
    assert main(["run", "--date", "2026-11-02", "--agent", "billing-bot", "--fail-on", "warning"]) == 0  # only its own count
    assert main(["run", "--date", "2026-11-02", "--agent", "support-bot"]) == 1
    capsys.readouterr()


def test_query_is_read_only_and_errors_are_one_line(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01"]) == 0
    capsys.readouterr()
    assert main(["query", "DELETE FROM episodes"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "read-only" in err
    outside = project_env / "exfiltrated.csv"
    for sql in (f"COPY (SELECT * FROM episodes) TO '{outside}'", "SELECT * FROM read_csv('/etc/passwd')",
                "SET enable_external_access = true"):  # fmt: skip
        assert main(["query", sql]) == 2  # the warehouse only: no other file is read or written
    assert not outside.exists() and capsys.readouterr().err.count("\n") == 3
    assert main(["query", "SELECT count(*) AS n FROM episodes", "--format", "csv"]) == 0
    assert capsys.readouterr().out.strip() == "n\n48"


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--date", "2026-13-01"],
        ["run", "--start", "2026-11-02", "--end", "2026-11-01"],
        ["run", "--start", "2026-11-02"],
        ["run", "--date", "2019-01-01"],
        ["run", "--date", "2999-01-01"],
        ["report", "--date", "2026-11-09"],
    ],
)
def test_usage_errors_exit_2(project_env, argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        code = exc.code
    assert code == 2
    assert "Traceback" not in capsys.readouterr().err


def test_unreachable_store_exits_3_with_one_line_and_writes_nothing(project_env, capsys):
    env = {**os.environ, "EVAL_EPISODE_SOURCE": "http://127.0.0.1:9/"}  # the discard port: nothing listens
    result = subprocess.run(
        [sys.executable, "-m", "eval_pipeline.cli", "run", "--date", "2026-11-02"],
        env=env,
        cwd=project_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 3, result.stderr
    assert result.stderr.count("\n") == 1 and "unreachable" in result.stderr and "Traceback" not in result.stderr
    assert not (project_env / "eval.duckdb").exists()  # the store is asked before the warehouse is touched
    assert main(["query", "SELECT 1"]) == 2
    assert "no warehouse" in capsys.readouterr().err


def test_a_run_against_the_episode_store(project_env, fake_store, capsys):
    write_samples(project_env / "files")
    for path in sorted((project_env / "files").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:  # the store itself only holds episodes that validate
                fake_store.episodes.append(Episode.model_validate_json(line).model_dump(mode="json"))
            except ValueError:
                continue
    os.environ["EVAL_EPISODE_SOURCE"] = fake_store.url
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    assert "18 critical, 9 warning" in capsys.readouterr().out
    assert main(["status"]) == 0
    assert '"status": "ok"' in capsys.readouterr().out


def test_a_bad_config_is_a_usage_error_before_any_run(project_env, monkeypatch, capsys):
    (project_env / "eval.toml").write_text('[thresholds]\ncost_delta = { warning = "high" }\n')
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    assert main(["run", "--date", "2026-11-02"]) == 2
    err = capsys.readouterr().err
    assert "thresholds.cost_delta.warning" in err and err.count("\n") == 1
    assert not (project_env / "dagster_home").exists()


def test_run_delivers_its_alerts_itself_once(project_env, monkeypatch, webhook, capsys):
    write_samples(project_env / "episodes")
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    assert "alerts: 27 delivered to the webhook" in capsys.readouterr().out
    assert len(webhook.finding_ids) == 27 and len(webhook.messages) == 3
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0  # the same findings again
    assert len(webhook.finding_ids) == 27
    assert webhook.url not in capsys.readouterr().out  # the URL carries a token: never printed


def test_promoted_baselines_change_later_days_only(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-03", "--fail-on", "never"]) == 0
    sql = "SELECT * EXCLUDE (scored_at) FROM scores WHERE partition_date <= '2026-11-02' ORDER BY episode_id"
    capsys.readouterr()
    assert main(["query", sql, "--format", "csv"]) == 0
    earlier_days = capsys.readouterr().out

    # after an intended change on the 2nd, support-bot is compared with that day's behaviour from then on
    assert main(["baseline", "promote", "--agent", "support-bot", "--date", "2026-11-02"]) == 0
    assert main(["run", "--date", "2026-11-03", "--fail-on", "never"]) == 0
    capsys.readouterr()
    finding = "SELECT dimension FROM findings WHERE task_id = 'support-bot/where-is-my-order' AND partition_date = '2026-11-03'"
    assert main(["query", finding, "--format", "csv"]) == 0
    assert "tool_match" in capsys.readouterr().out  # day 3 went back to the old tools: now a change against the promotion

    assert main(["query", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out == earlier_days  # history before valid_from is never rewritten
    assert main(["baseline", "list", "--date", "2026-11-03", "--agent", "support-bot"]) == 0
    assert capsys.readouterr().out.count("promote") == 4

    assert main(["baseline", "pin", "ep-2026-11-01-support-bot-where-is-my-order-t1", "--from", "2026-11-03"]) == 0
    assert main(["baseline", "list", "--date", "2026-11-03", "--agent", "support-bot"]) == 0
    assert "ep-2026-11-01-support-bot-where-is-my-order-t1" in capsys.readouterr().out
    assert main(["baseline", "pin", "no-such-episode"]) == 2


def test_two_runs_and_a_query_at_once_never_fail_on_the_warehouse_lock(project_env):
    write_samples(project_env / "episodes")
    command = [sys.executable, "-m", "eval_pipeline.cli"]
    runs = [
        subprocess.Popen(
            [*command, "run", "--date", day, "--fail-on", "never"],
            cwd=project_env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for day in ("2026-11-01", "2026-11-02")
    ]
    query = subprocess.run([*command, "query", "SELECT count(*) FROM reports"], cwd=project_env, capture_output=True, text=True)
    outcomes = [(run.wait(120), run.stderr.read().decode()) for run in runs]
    assert [code for code, _ in outcomes] == [0, 0]  # they take turns; the one that waits says so
    assert sorted(error for _, error in outcomes)[0] == "" and all(
        error in ("", "eval-pipeline: waiting for another run of this warehouse to finish\n") for _, error in outcomes
    )
    assert query.returncode in (0, 2), query.stderr  # 2: no warehouse yet, if it came first
    assert "lock" not in query.stderr.lower()


def test_a_run_that_meets_the_lock_held_for_a_glance_at_the_tickets_does_not_say_it_waits(tmp_path, capsys):
    """A later day's run holds the lock only while it finds the earlier ticket (the CI flake of stop 28: both said so)."""
    warehouse = tmp_path / "warehouse.duckdb"
    held, glance_over = threading.Event(), threading.Event()

    def glance() -> None:  # the run of the day after, which looks at the tickets and gives way
        later_ticket = tmp_path / "warehouse.duckdb.runs" / f"2026-11-02.{os.getpid()}"
        later_ticket.touch()
        with FileLock(str(tmp_path / "warehouse.duckdb.runs" / "lock")):
            held.set()
            time.sleep(0.5)
        glance_over.set()

    with _turn(warehouse, date(2026, 11, 1)) as take:
        threading.Thread(target=glance).start()
        held.wait(10)
        take()
        assert glance_over.is_set()
    assert capsys.readouterr().err == ""


def test_a_run_that_meets_the_lock_held_by_an_earlier_days_run_says_at_once_that_it_waits(tmp_path, capsys):
    warehouse = tmp_path / "warehouse.duckdb"
    runs = tmp_path / "warehouse.duckdb.runs"
    held = threading.Event()
    said: list[str] = []

    def earlier_run() -> None:  # the day before, running: it holds the lock until it ends and takes its ticket away
        ticket = runs / f"2026-10-31.{os.getpid()}"
        ticket.touch()
        with FileLock(str(runs / "lock")):
            held.set()
            time.sleep(0.5)
            said.append(capsys.readouterr().err)  # while it still runs
            ticket.unlink()

    with _turn(warehouse, date(2026, 11, 1)) as take:
        threading.Thread(target=earlier_run).start()
        held.wait(10)
        take()
    assert said == ["eval-pipeline: waiting for another run of this warehouse to finish\n"]


def _a_week_of_episodes(directory: Path) -> None:
    """Four episodes a day of four tasks, 2026-10-01 to 2026-10-07, in one file."""
    from datetime import UTC, datetime, timedelta

    from eval_pipeline_tests.fake_store import make_episode

    directory.mkdir()
    first = datetime(2026, 10, 1, 9, tzinfo=UTC)
    with (directory / "week.jsonl").open("w") as handle:
        for day in range(7):
            for task in range(4):
                episode = make_episode(
                    f"ep-{day}-{task}", first + timedelta(days=day, minutes=task), metadata={"task_id": f"t{task}"}
                )
                handle.write(json.dumps(episode) + "\n")


def test_a_seven_day_backfill_writes_each_day_once_and_repeats_identically(project_env, capsys):
    _a_week_of_episodes(project_env / "episodes")
    command = ["run", "--start", "2026-10-01", "--end", "2026-10-07", "--fail-on", "never"]
    counts = "SELECT partition_date, (SELECT count(*) FROM episodes e WHERE e.partition_date = r.partition_date) FROM reports r"
    tables = " UNION ALL ".join(
        f"SELECT '{t}', count(*) FROM {t}"
        for t in ("episodes", "episode_steps", "quarantine", "baselines", "replays", "scores", "findings", "reports")
    )
    snapshots = []
    for _ in range(2):
        assert main(command) == 0
        capsys.readouterr()
        assert main(["query", f"{counts} ORDER BY 1", "--format", "csv"]) == 0
        assert main(["query", tables, "--format", "csv"]) == 0
        snapshots.append(capsys.readouterr().out)
    assert snapshots[0] == snapshots[1]
    assert [f"2026-10-0{day},4" for day in range(1, 8)] == snapshots[0].strip().splitlines()[1:8]


def test_a_backfill_of_files_holds_the_warehouse_across_its_days_in_every_step(project_env, monkeypatch):
    """Each day of a backfill opened (and closed, checkpointing) the file once in `episodes` and twice in `baselines`,
    which read the source: 31 days of 10 episodes took 19.8-20.1 s. Files are read as the day is written, so these
    steps hold one connection across the days as the others do (16.5-17.0 s); a store's days still open their own."""
    from eval_pipeline.defs.pipeline import assets
    from eval_pipeline.warehouse.connection import Warehouse

    _a_week_of_episodes(project_env / "episodes")
    opened = []
    opens = Warehouse._open

    def counted(self, *args, **kwargs):
        opened.append(1)
        return opens(self, *args, **kwargs)

    monkeypatch.setattr(Warehouse, "_open", counted)
    monkeypatch.setattr(assets, "HELD_SECONDS", 600.0)  # no turn given to another process within these runs
    assert main(["run", "--date", "2026-10-01", "--fail-on", "never"]) == 0
    one_day = len(opened)
    opened.clear()
    assert main(["run", "--start", "2026-10-02", "--end", "2026-10-07", "--fail-on", "never"]) == 0
    assert len(opened) - one_day < 6  # no step opens it once a day (before: 27 against 12)


def test_a_transcript_file_of_repeated_trials_gives_pass_at_k_with_one_command(project_env, capsys):
    from eval_pipeline_tests.episodes.test_transcripts import transcript

    rewards = {1: [1.0, 1.0, 1.0], 2: [1.0, 0.0, 0.0], 3: [0.0, 0.0, 0.0]}  # task -> its trials' rewards
    records = [
        transcript(task, trial, reward) for task, trial_rewards in rewards.items() for trial, reward in enumerate(trial_rewards)
    ]
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "airline.json").write_text(json.dumps(records))
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["query", "SELECT k, pass_at_k, pass_hat_k, n_tasks FROM pass_at_k ORDER BY k", "--format", "json"]) == 0
    per_k = json.loads(capsys.readouterr().out)
    # task 1: 3 of 3, task 2: 1 of 3, task 3: 0 of 3
    assert [row["k"] for row in per_k] == [1, 2, 3] and {row["n_tasks"] for row in per_k} == {3}
    assert per_k[0]["pass_at_k"] == pytest.approx((1 + 1 / 3 + 0) / 3)
    assert per_k[1]["pass_at_k"] == pytest.approx((1 + (1 - 1 / 3) + 0) / 3)
    assert per_k[2]["pass_hat_k"] == pytest.approx(1 / 3)
    report = (project_env / "reports" / "eval-report-2026-11-05.md").read_text()
    assert "## Repeated Trials" in report and "| airline | 2 | 3 | 1 |" in report  # the flaky task


def test_compare_two_agents_on_the_same_tasks_head_to_head(project_env, capsys):
    from eval_pipeline_tests.episodes.test_transcripts import transcript

    passes = {"model-a": {1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 0}, "model-b": {1: 3, 2: 3, 3: 0, 4: 0, 5: 1, 6: 0}}
    (project_env / "episodes").mkdir()
    for agent, per_task in passes.items():
        records = [transcript(task, trial, 1.0 if trial < n else 0.0) for task, n in per_task.items() for trial in range(3)]
        (project_env / "episodes" / f"{agent}.json").write_text(json.dumps(records))
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["compare", "--a", "agent=model-a", "--b", "agent=model-b,date=2026-11-05", "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert list(comparison) == ["meta", "quality", "performance", "reliability", "headToHead"]
    assert comparison["meta"]["tasks_in_common"] == 6
    h2h = comparison["headToHead"]
    assert (h2h["a_wins"], h2h["b_wins"], h2h["ties"]) == (3, 0, 3)
    assert [t["winner"] for t in h2h["tasks"]] == ["tie", "tie", "a", "a", "a", "tie"]
    quality = comparison["quality"]
    assert quality["pass_rate_delta"]["mean"] == pytest.approx((0 + 0 - 1 - 1 - 2 / 3 + 0) / 6, abs=1e-4)
    assert quality["mcnemar"] == {"a_pass_b_fail": 3, "a_fail_b_pass": 0, "p_value": 0.25}
    assert comparison["reliability"]["b"]["flaky_tasks"] == 1  # task 5: one of three trials
    assert comparison["reliability"]["a"]["pass_at_k"]["1"] == pytest.approx(5 / 6, abs=1e-4)

    assert main(["compare", "--a", "agent=model-a", "--b", "agent=model-b"]) == 0
    markdown = capsys.readouterr().out
    assert "Per task: B wins 0, A wins 3, ties 3." in markdown and "McNemar p = 0.25" in markdown
    assert "6 tasks in common (0 only in A, 0 only in B), 6 of them comparable" in markdown
    assert main(["compare", "--a", "agent=model-a", "--b", "colour=blue"]) == 2
    assert "unknown selector key 'colour'" in capsys.readouterr().err
    assert main(["compare", "--a", "agent=model-a", "--b", "agent=nobody"]) == 2


def test_junit_xml_for_ci(project_env, capsys):
    import xml.etree.ElementTree as ET

    write_samples(project_env / "episodes")
    junit = project_env / "out" / "results.xml"
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--junit", str(junit)]) == 1
    assert f"JUnit XML: {junit}" in capsys.readouterr().out
    root = ET.parse(junit).getroot()
    suites = {suite.get("name"): suite for suite in root}
    assert list(suites) == ["eval 2026-11-01", "eval 2026-11-02"]
    day2 = suites["eval 2026-11-02"]
    assert (day2.get("tests"), day2.get("failures"), day2.get("skipped")) == ("48", "18", "0")  # 30 of 48 passed
    failed = day2.find("testcase[@name='support-bot/refund-request [ep-2026-11-02-support-bot-refund-request-t0]']/failure")
    assert failed.get("type") == "critical" and "leaked a secret" in failed.text and "sk-live" not in failed.text
    assert suites["eval 2026-11-01"].get("skipped") == "46"  # no baseline yet: no verdict, not a pass
    assert root.get("tests") == str(int(day2.get("tests")) + int(suites["eval 2026-11-01"].get("tests")))
    assert main(["report", "--date", "2026-11-02", "--open"]) == 0
    assert capsys.readouterr().out.strip().endswith("eval-report-2026-11-02.html")


def test_a_run_reports_each_step_as_it_finishes(project_env):
    from datetime import date

    from eval_pipeline.runner import RunRequest, run_days
    from eval_pipeline.settings import Settings

    write_samples(project_env / "episodes")
    heard: list[tuple[int, int, str]] = []
    request = RunRequest([date(2026, 11, 1), date(2026, 11, 2)])
    run_days(Settings.from_environment(), request, progress=lambda *step: heard.append(step))
    done = [count for count, _, _ in heard]
    assert done == sorted(done) and heard[-1][0] == heard[-1][1] == 12  # twelve assets, each heard once
    assert {now for _, _, now in heard} >= {"episodes done", "scores done", "eval_report done"}


def test_a_run_says_which_step_waits_for_an_earlier_days_run_until_that_run_has_done_it(project_env):
    """The earlier day's run here is one another host executes: it finishes its steps while this run waits."""
    import threading
    from datetime import date

    from eval_pipeline.runner import RunRequest, open_instance, run_days
    from eval_pipeline.settings import Settings
    from eval_pipeline_tests.defs.test_day_order import add_run, finish_step

    write_samples(project_env / "episodes")
    settings = Settings.from_environment()
    heard: list[str] = []
    with open_instance(settings) as instance:
        earlier = add_run(instance, "2026-11-01")
        request = RunRequest([date(2026, 11, 2)])
        later = threading.Thread(target=run_days, args=(settings, request, lambda *now: heard.append(now[2])))
        later.start()
        for step in ("baselines", "regression_findings", "eval_report"):
            deadline = time.monotonic() + 120
            while f"{step} waits for earlier days" not in heard:
                assert later.is_alive() and time.monotonic() < deadline, heard
                time.sleep(0.1)
            assert f"{step} done" not in heard
            finish_step(instance, earlier, step)
        later.join(120)
    assert not later.is_alive()
    for step in ("baselines", "regression_findings", "eval_report"):
        assert heard.index(f"{step} waits for earlier days") < heard.index(f"{step} done"), heard


def test_plaited_export_round_trips(project_env, capsys, tmp_path_factory):
    from datetime import date

    from eval_pipeline.episodes.files import FileSource
    from eval_pipeline.warehouse.connection import Warehouse
    from eval_pipeline.warehouse.ingest import load_episodes

    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    exported = project_env / "plaited" / "results.jsonl"
    exported.parent.mkdir()
    assert main(["export", "--format", "plaited", "--date", "2026-11-02", "--output", str(exported)]) == 0
    captures = [json.loads(line) for line in exported.read_text().splitlines()]
    assert len(captures) == 48 and all({"id", "input", "output", "trajectory", "timing", "metadata"} <= set(c) for c in captures)
    ours = [c["metadata"]["eval_pipeline"] for c in captures]
    assert sum(verdict["passed"] is True for verdict in ours) == 30 and all(v["weighted_score"] is not None for v in ours)
    assert not any("score" in c for c in captures)  # `score` is the run's own grader's verdict: these had none

    other = tmp_path_factory.mktemp("reimport")
    columns = "episode_id, agent_id, task_id, trial, status, category, tools, final_output, total_duration_ms, total_tokens"
    counts = load_episodes(
        Warehouse(other / "eval.duckdb"),
        date(2026, 11, 2),
        lambda: FileSource(exported.parent, other / "i.json").records_for(date(2026, 11, 2)),
    )
    assert counts.quarantined == 0
    with Warehouse(other / "eval.duckdb").connect(read_only=True) as con:
        back = con.execute(f"SELECT {columns} FROM episodes ORDER BY 1").fetchall()
    with Warehouse(project_env / "eval.duckdb").connect(read_only=True) as con:
        original = con.execute(f"SELECT {columns} FROM episodes WHERE partition_date = '2026-11-02' ORDER BY 1").fetchall()
    assert back == original


def test_a_plaited_export_read_back_is_scored_as_the_days_were(project_env, capsys, tmp_path_factory, monkeypatch):
    """Imported again, the export's runs keep their cost, model, pin and failed tool calls, so the same regressions
    are found: the cost regressions and the errored tool calls (safety) of 2026-11-02 were lost, and the day passed
    36 of 48 episodes instead of 30."""
    from eval_pipeline_tests.conftest import project_environment

    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    other = tmp_path_factory.mktemp("reimport")
    (other / "episodes").mkdir()
    for day in ("2026-11-01", "2026-11-02"):
        exported = other / "episodes" / f"results-{day}.jsonl"
        assert main(["export", "--format", "plaited", "--date", day, "--output", str(exported)]) == 0
    failed_tool = next(
        step
        for line in (other / "episodes" / "results-2026-11-02.jsonl").read_text().splitlines()
        for step in json.loads(line)["trajectory"]
        if step.get("status") == "failed"
    )
    assert failed_tool["output"].startswith("HTTP ")  # the error the tool answered, as plaited's graders read it
    verdicts = (
        "SELECT s.episode_id, s.passed, s.verdict_reason, round(s.safety, 6), round(s.cost_delta_pct, 6), e.model, "
        "e.total_cost_usd FROM scores s JOIN episodes e USING (episode_id, partition_date) ORDER BY ALL"
    )
    findings = "SELECT partition_date, episode_id, dimension, severity FROM findings ORDER BY ALL"
    original = [run_query(capsys, sql) for sql in (verdicts, findings)]
    for name, value in project_environment(other).items():
        monkeypatch.setenv(name, value)
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    assert "2026-11-02     48 episodes     30 passed     18 failed" in capsys.readouterr().out
    assert [run_query(capsys, sql) for sql in (verdicts, findings)] == original


def run_query(capsys, sql: str) -> list[dict]:
    capsys.readouterr()
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_an_agent_the_days_do_not_hold_is_a_usage_error_naming_the_ones_they_do(project_env, capsys):
    """On a first night the warehouse held no episode yet, and the run, narrowed to the agent, wrote none: the error
    said "agents there: none" of a file holding four agents. It names those the run read."""
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01", "--agent", "nosuch-agent"]) == 2
    err = capsys.readouterr().err
    assert (
        "--agent nosuch-agent: no episode of that agent on 2026-11-01; "
        "agents there: billing-bot, code-assistant, research-agent, support-bot" in err
    )
    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0
    assert main(["run", "--date", "2026-11-01", "--agent", "support-bott"]) == 2
    assert "agents there: billing-bot, code-assistant, research-agent, support-bot" in capsys.readouterr().err


@pytest.fixture
def bare_warehouse(project_env):
    """A warehouse file and nothing evaluated yet: enough for `query`."""
    import duckdb

    duckdb.connect(str(project_env / "eval.duckdb")).close()
    return project_env


def test_query_json_keeps_every_column_of_a_join_whose_sides_share_names(bare_warehouse, capsys):
    """A JSON object holds a key once: `SELECT s.*, e.*` gave one partition_date of two, the other silently lost."""
    sql = "SELECT 1 AS a, 2 AS a, 3 AS a_1, 4 AS A"
    assert main(["query", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"a": 1, "a_1": 2, "a_1_1": 3, "A_2": 4}]  # as DuckDB's frames name them
    assert main(["query", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out == "a,a,a_1,A\n1,2,3,4\n"


def test_query_shows_a_blob_as_duckdb_writes_it_in_every_format(bare_warehouse, capsys):
    """--format json of a BLOB was 'internal error: TypeError: Object of type bytes is not JSON serializable', exit 3."""
    sql = r"SELECT '\x00a\x5Cb\xff\x22'::BLOB AS raw, octet_length(raw) AS n"
    shown = r"\x00a\x5Cb\xFF\x22"  # DuckDB's own text of it (raw::VARCHAR)
    assert main(["query", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"raw": shown, "n": 6}]
    assert main(["query", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out == f"raw,n\n{shown},6\n"
    assert main(["query", sql]) == 0
    assert capsys.readouterr().out.split() == ["raw", "n", shown, "6"]


@pytest.mark.parametrize("sql", ["", "  \n", "-- the week's findings, to do"])
def test_query_without_a_statement_is_a_usage_error(bare_warehouse, capsys, sql):
    """It was 'internal error: AttributeError: 'NoneType' object has no attribute 'description'', exit 3."""
    assert main(["query", sql]) == 2
    assert capsys.readouterr().err == "eval-pipeline: error: no SQL statement to run: give one, e.g. SELECT * FROM agent_daily\n"


def test_a_run_still_running_cannot_be_pinned_as_a_baseline(project_env, capsys):
    """Pinned, its first half was every later trial's yardstick: the task's runs of the day before, run again, all
    failed critical (cost +150 %, latency +110 %, correctness 0.6 against a plan for an answer)."""
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-03", "--fail-on", "never"]) == 0
    running = "ep-2026-11-03-code-assistant-explain-function-t3"
    capsys.readouterr()
    assert main(["baseline", "pin", running, "--from", "2026-11-02"]) == 2
    assert capsys.readouterr().err == (
        f"eval-pipeline: error: {running} is still running: a baseline is a finished run; pin it once it has ended\n"
    )
    assert main(["baseline", "list", "--date", "2026-11-03", "--agent", "code-assistant"]) == 0
    assert running not in capsys.readouterr().out


def test_an_export_of_nothing_says_so_instead_of_writing_an_empty_file(project_env, capsys):
    """A day not evaluated, or a mistyped agent, wrote an empty results.jsonl and 'wrote results.jsonl', exit 0: plaited's
    tools then read a night without runs. summarize and calibrate of stored runs printed nothing, exit 0."""
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0
    results = project_env / "results.jsonl"
    capsys.readouterr()
    assert main(["export", "--format", "plaited", "--date", "2026-11-02", "--output", str(results)]) == 2
    assert capsys.readouterr().err == (
        "eval-pipeline: error: no finished episode stored for 2026-11-02; run `eval-pipeline run --date 2026-11-02` first\n"
    )
    for argv in (["export", "--format", "plaited"], ["summarize"], ["calibrate"]):
        assert main([*argv, "--date", "2026-11-01", "--agent", "support-bott"]) == 2
        assert capsys.readouterr().err == (
            "eval-pipeline: error: --agent support-bott: no episode of that agent on 2026-11-01; agents there: billing-bot, "
            "code-assistant, research-agent, support-bot\n"
        )
    assert not results.exists()
    assert main(["export", "--format", "plaited", "--date", "2026-11-01", "--agent", "support-bot"]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 12


@pytest.mark.parametrize("command", ["serve-rewards", "serve", "collect", "ui"])
@pytest.mark.parametrize("port", ["99999", "-1"])
def test_a_port_out_of_range_is_a_usage_error(project_env, capsys, command, port):
    """It was 'internal error: OverflowError: bind(): port must be 0-65535.', exit 3, as if the machine were at fault."""
    with pytest.raises(SystemExit) as exited:
        main([command, "--port", port])
    assert exited.value.code == 2
    assert capsys.readouterr().err.endswith(f"argument --port: not a port (0-65535): {port!r}\n")


@pytest.mark.parametrize(
    ("selector", "key"),
    [("date=2026-11-01,date=2026-11-02", "date"), ("agent=model-a,model=x,agent=model-b", "agent")],
)
def test_a_selector_naming_a_key_twice_is_refused_not_read_as_its_last(bare_warehouse, capsys, selector, key):
    """`--a date=2026-11-01,date=2026-11-02` compared 2026-11-02 alone (meta.a 'date=2026-11-02'), exit 0."""
    assert main(["compare", "--a", selector, "--b", "agent=model-a"]) == 2
    assert capsys.readouterr().err == (
        f"eval-pipeline: error: selector {selector!r} gives {key} twice; one value each (several days: date=D1..D2)\n"
    )


def test_calibrate_refuses_a_negative_sample_as_the_config_does(project_env, capsys):
    """`--sample -1` wrote a calibration page of '0 of 1 failures', exit 0, where `[cases] calibration_sample = -1` is
    refused as a config error."""
    capture = {"id": "c1", "input": "q", "output": "a", "trajectory": [], "score": {"pass": False, "score": 0.0},
               "timing": {"start": 1795927708000, "end": 1795927709000, "total": 1000}}  # fmt: skip
    (project_env / "results.jsonl").write_text(json.dumps(capture) + "\n")
    assert main(["calibrate", "results.jsonl", "--sample", "-1"]) == 2
    assert capsys.readouterr().err == "eval-pipeline: error: --sample must be 0 or more, not -1\n"
    assert main(["calibrate", "results.jsonl", "--sample", "1"]) == 0
    assert "1 of 1 failures" in capsys.readouterr().out


def test_query_writes_nested_values_as_json_in_csv_and_table(bare_warehouse, capsys):
    """Lists and structs were Python's repr: `[1, None]` for a NULL, `{'x': Decimal('0.5')}` for a DECIMAL, which no CSV
    reader or person reads as the SQL value; `tools` and the other list columns came out as `['a', 'b']`."""
    sql = "SELECT [1, NULL] AS l, {'x': 0.5, 'tools': ['a', 'b']} AS s"
    assert main(["query", sql, "--format", "csv"]) == 0
    assert capsys.readouterr().out == 'l,s\n"[1, null]","{""x"": 0.5, ""tools"": [""a"", ""b""]}"\n'
    assert main(["query", sql]) == 0
    assert capsys.readouterr().out.splitlines()[1].split(maxsplit=2) == ["[1,", "null]", '{"x": 0.5, "tools": ["a", "b"]}']


def test_compare_counts_trials_without_a_verdict_apart_from_failures(project_env, capsys):
    """The first day's trials have no baseline, so no verdict ('46 without a verdict' in its report); compare showed
    them as 'A Passed 0/3', three failures, and the pinned task's own baseline as a failed third trial ('2/3')."""
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["compare", "--a", "date=2026-11-01", "--b", "date=2026-11-02"]) == 0
    rows = {line.split(" | ")[0].strip("| "): line for line in capsys.readouterr().out.splitlines() if line.startswith("| ")}
    assert rows["billing-bot/apply-outage-credit"].endswith("| 0/3 (3 without a verdict) | 3/3 |")
    assert rows["billing-bot/explain-invoice"].endswith("| 2/3 (1 without a verdict) | 3/3 |")
    assert main(["compare", "--a", "date=2026-11-01", "--b", "date=2026-11-02", "--format", "json"]) == 0
    tasks = {t["task_id"]: t for t in json.loads(capsys.readouterr().out)["headToHead"]["tasks"]}
    first = tasks["billing-bot/apply-outage-credit"]
    assert (first["a_trials"], first["a_passed"], first["a_without_verdict"], first["b_without_verdict"]) == (3, 0, 3, 0)


def test_a_saved_report_rendered_as_html_is_the_days_html(project_env, capsys, fake_openai, monkeypatch):
    """`report FILE.json --format html` left out what the day's HTML shows beside the JSON's tables: the judge's
    tokens and cost line here (and the case set's balance, the calibration file, the human labels' agreement)."""
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    write_samples(project_env / "episodes")
    saved = project_env / "saved.json"
    assert main(["run", "--date", "2026-11-01", "--output", str(saved), "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["report", "--date", "2026-11-01", "--format", "html"]) == 0
    days_html = capsys.readouterr().out
    assert "judge calls" in days_html.lower() or "tokens" in days_html
    assert main(["report", str(saved), "--format", "html"]) == 0
    assert capsys.readouterr().out == days_html


def test_baseline_list_of_an_agent_the_warehouse_does_not_have_names_the_ones_it_has(project_env, capsys):
    """`baseline list --agent support-bott` said 'no baselines on 2026-11-02', exit 0, as for an agent without any yet."""
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["baseline", "list", "--date", "2026-11-02", "--agent", "support-bott"]) == 2
    assert capsys.readouterr().err == (
        "eval-pipeline: error: no agent support-bott in the warehouse; agents there: billing-bot, code-assistant, "
        "research-agent, support-bot\n"
    )
    assert main(["baseline", "list", "--date", "2026-10-01", "--agent", "support-bot"]) == 0
    assert capsys.readouterr().out == "no baselines of support-bot on 2026-10-01\n"
