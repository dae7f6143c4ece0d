"""Nightly runs, reruns and backfills of the same days: every output of a day is the same however the user got there.

Each test is a user's sequence of commands as they reported it, with their files written the way their tools write them.
"""

import json
import xml.etree.ElementTree as ET
from datetime import date

import pytest

from eval_pipeline.cli import main
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.air import episode
from eval_pipeline_tests.conftest import project_environment
from eval_pipeline_tests.episodes.test_transcripts import transcript

pytestmark = pytest.mark.slow


def rows(root, sql: str, params=None):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def test_a_nights_transcripts_are_that_nights_only_and_a_backfill_of_the_nights_keeps_them(project_env, capsys):
    """tau-bench writes each night's trajectories to a new file, and cron runs `eval-pipeline run --date` the night
    after. Transcripts carry no timestamp, so they land on the day the run names. The user's second night said
    "6 episodes" for 3 trajectories: it read the first night's file again (its runs compared with themselves of the
    night before, all passed), and a `run --start --end` over both nights then said "0 episodes" for each: the
    files went to the day they were first seen. A file without timestamps belongs to the day the first run that read it
    named, for every later run."""
    nights = {"2026-11-05": [1.0, 1.0, 1.0], "2026-11-06": [1.0, 0.0, 0.0]}  # each task's reward that night
    (project_env / "episodes").mkdir()
    summaries = {}
    for day, rewards in nights.items():
        records = [transcript(f"task-{n}", 0, reward) for n, reward in enumerate(rewards)]
        (project_env / "episodes" / day).mkdir()
        (project_env / "episodes" / day / "airline.json").write_text(json.dumps(records))
        main(["run", "--date", day, "--fail-on", "never"])
        summaries[day] = next(line for line in capsys.readouterr().out.splitlines() if line.startswith(day))
    tables = {
        "episodes": "SELECT partition_date, episode_id, source FROM episodes",
        "quarantine": "SELECT partition_date, locator FROM quarantine",
        "scores": "SELECT partition_date, episode_id, baseline_episode_id, passed FROM scores",
        "findings": "SELECT partition_date, episode_id, dimension, severity FROM findings",
    }
    nightly = {name: rows(project_env, f"{sql} ORDER BY ALL") for name, sql in tables.items()}
    assert [source for _, _, source in nightly["episodes"]] == [
        *[str(project_env / "episodes" / "2026-11-05" / "airline.json")] * 3,
        *[str(project_env / "episodes" / "2026-11-06" / "airline.json")] * 3,
    ]
    assert " 3 episodes " in summaries["2026-11-06"] and " 2 failed " in summaries["2026-11-06"]

    main(["run", "--start", "2026-11-05", "--end", "2026-11-06", "--fail-on", "never"])
    backfill = capsys.readouterr().out.splitlines()
    for day, summary in summaries.items():
        assert next(line for line in backfill if line.startswith(day)).split("  /")[0] == summary.split("  /")[0]
    assert {name: rows(project_env, f"{sql} ORDER BY ALL") for name, sql in tables.items()} == nightly


def test_a_late_run_of_an_earlier_day_says_which_later_days_it_left_scored_against_old_baselines(
    project_env, capsys, monkeypatch, tmp_path_factory
):
    """The user's nightly runs compared task t/c with its first run, night 2's (cost $0.006). Then night 1's late file
    arrived, with a run of t/c at $0.0025, and the user ran night 1 again: `baseline list --date 2026-11-03` named the
    late run as t/c's baseline, while night 3's scores, report and exit code still compared with night 2's (+0%,
    passed) and night 2 still said "1 without a baseline: the first day of those tasks". Nothing said so. The run and
    `status` name the days scored against baselines they no longer have and the run that scores them again (which
    then gives what a backfill of all three nights gives); `report --date` says so beside the report that day's run
    wrote."""
    nights = ["2026-11-01", "2026-11-02", "2026-11-03"]

    def write(root, name: str, records: list[dict]) -> None:
        (root / "episodes").mkdir(exist_ok=True)
        (root / "episodes" / name).write_text("".join(json.dumps(record) + "\n" for record in records))

    def night(root, n: int, day: str) -> None:
        records = [episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day)]
        if n:
            records.append(episode(f"{day}-c", "t/c", "Where is C-3?", "track", '{"eta": "Mon"}', "Monday.", day=day, cost=0.006))
        write(root, f"{day}.jsonl", records)

    late = episode("late-c", "t/c", "Where is C-3?", "track", '{"eta": "Mon"}', "Monday.", day=nights[0], cost=0.0025)
    for n, day in enumerate(nights):
        night(project_env, n, day)
        assert main(["run", "--date", day]) == 0
    capsys.readouterr()
    write(project_env, f"{nights[0]}-late.jsonl", [late])

    assert main(["run", "--date", nights[0]]) == 0
    again = "eval-pipeline run --start 2026-11-02 --end 2026-11-03"
    told = (
        "outdated: 2026-11-02 (1 episode(s) scored against a baseline they no longer have; its headline compares with "
        "the day before's figures as they no longer are), "
        "2026-11-03 (1 episode(s) scored against a baseline they no longer have)"
    )
    out = capsys.readouterr().out
    assert told in out and again in out
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert told in out and again in out
    assert main(["report", "--date", "2026-11-03"]) == 0  # the report night 3's run wrote, and beside it that it is old
    report = capsys.readouterr()
    assert report.out.startswith("# Eval report 2026-11-03") and "| 2 | 2 | 0 |" in report.out
    assert report.err.startswith("outdated: 2026-11-03 (1 episode(s) scored against a baseline they no longer have). ")
    assert report.err.rstrip().endswith("eval-pipeline run --date 2026-11-03")

    assert main(["run", "--start", "2026-11-02", "--end", "2026-11-03"]) == 1  # t/c costs 140 % more than its baseline
    assert "outdated" not in capsys.readouterr().out
    assert main(["report", "--date", "2026-11-03"]) == 0
    assert capsys.readouterr().err == ""
    assert main(["status"]) == 0
    assert "outdated" not in capsys.readouterr().out
    scores = "SELECT partition_date, episode_id, baseline_episode_id, cost_delta_pct, passed FROM scores ORDER BY ALL"
    findings = "SELECT partition_date, episode_id, dimension, severity, message FROM findings ORDER BY ALL"
    rerun = rows(project_env, scores), rows(project_env, findings)
    assert [row for row in rerun[0] if row[1].endswith("-c")] == [
        (date(2026, 11, 1), "late-c", None, None, None),
        (date(2026, 11, 2), "2026-11-02-c", "late-c", 140.0, False),
        (date(2026, 11, 3), "2026-11-03-c", "late-c", 140.0, False),
    ]

    backfill = tmp_path_factory.mktemp("backfill")
    for n, day in enumerate(nights):
        night(backfill, n, day)
    write(backfill, f"{nights[0]}-late.jsonl", [late])
    for name, value in project_environment(backfill).items():
        monkeypatch.setenv(name, value)
    assert main(["run", "--start", nights[0], "--end", nights[-1]]) == 1
    capsys.readouterr()
    assert (rows(backfill, scores), rows(backfill, findings)) == rerun


def test_a_night_run_for_one_agent_leaves_the_other_agents_history_to_their_first_full_night(project_env, capsys):
    """The user tried the pipeline on one agent's night (`run --date 2026-11-01 --agent alpha`), then ran the next
    night for all: beta's tripled cost had no verdict, exit 0, "1 without a baseline: the first day of those tasks", though
    beta ran the task the night before. On a fresh warehouse the same `run --date 2026-11-02` compares beta with the
    source's night before (exit 1, cost_delta +200 %): a night evaluated for alpha only is not evaluated for beta."""
    (project_env / "episodes").mkdir()
    for n, day in enumerate(["2026-11-01", "2026-11-02"]):
        records = [
            episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day, agent_id="alpha"),
            episode(f"{day}-b", "t/b", "Where is B-2?", "track", '{"eta": "Mon"}', "Monday.", day=day, agent_id="beta",
                    cost=0.0025 * (1 + 2 * n)),
        ]  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    assert main(["run", "--date", "2026-11-01", "--agent", "alpha"]) == 0
    capsys.readouterr()

    assert main(["run", "--date", "2026-11-02"]) == 1
    out = capsys.readouterr().out
    assert "1 passed      1 failed      0 without a verdict" in out and "1 critical" in out
    assert rows(project_env, "SELECT episode_id, baseline_episode_id, cost_delta_pct FROM scores WHERE agent_id = 'beta'") == [
        ("2026-11-02-b", "2026-11-01-b", pytest.approx(200.0))
    ]


def test_a_backfills_junit_gives_each_night_its_own_findings(project_env, capsys):
    """The user's harness records each case as the same episode id every night. Night 3 tripled the cost; the JUnit
    of `run --start 2026-11-01 --end 2026-11-03` showed night 1's skipped and night 2's passing test case with
    "CRITICAL cost_delta" in their output, night 3's finding: the findings of a test case were those of its episode id
    on any day of the range. Each night's suite is the one a nightly `run --date --junit` writes."""
    nights = ["2026-11-01", "2026-11-02", "2026-11-03"]
    (project_env / "episodes").mkdir()
    for n, day in enumerate(nights):
        record = episode("triage:refund", "t/refund", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.",
                         day=day, cost=0.0075 if n == 2 else 0.0025)  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text(json.dumps(record) + "\n")

    def suites(junit) -> dict[str, str]:
        return {suite.get("name"): ET.tostring(suite, encoding="unicode").strip() for suite in ET.parse(junit).getroot()}

    nightly = {}
    for day in nights:
        main(["run", "--date", day, "--junit", str(project_env / f"{day}.xml")])
        nightly |= suites(project_env / f"{day}.xml")
    assert main(["run", "--start", nights[0], "--end", nights[-1], "--junit", str(project_env / "range.xml")]) == 1
    capsys.readouterr()
    assert "system-out" not in nightly["eval 2026-11-02"]  # it passed, with no finding of its own
    assert suites(project_env / "range.xml") == nightly


def test_a_missed_night_evaluated_after_the_next_says_the_next_counts_its_findings_from_the_wrong_day(project_env, capsys):
    """Night 2026-11-03's run failed, 2026-11-04 ran on time, then the user ran 2026-11-03. The cost had tripled since
    2026-11-02; 2026-11-04's finding still said "new" since 2026-11-04 (its report and alert too), where a backfill of
    the nights says "persisting" since 2026-11-02, and nothing said so. The run of the missed night and `status` name
    the night after and the run that evaluates it again."""
    nights = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    (project_env / "episodes").mkdir()
    for n, day in enumerate(nights):
        record = episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day,
                         cost=0.0025 if n == 0 else 0.0075)  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text(json.dumps(record) + "\n")
    for day in ("2026-11-01", "2026-11-02", "2026-11-04", "2026-11-03"):
        main(["run", "--date", day])
    told = (
        "outdated: 2026-11-04 (1 finding(s) counted since a day that no longer says so; its headline compares with the "
        "day before's figures as they no longer are)"
    )  # it ran when 2026-11-03 had no report: "no previous day"
    again = "eval-pipeline run --date 2026-11-04"
    out = capsys.readouterr().out
    assert told in out and again in out
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert told in out and again in out

    assert main(["run", "--date", "2026-11-04"]) == 1
    assert "outdated" not in capsys.readouterr().out
    findings = "SELECT partition_date, since, lifecycle FROM findings ORDER BY ALL"
    assert rows(project_env, findings) == [
        (date(2026, 11, 2), date(2026, 11, 2), "new"),
        (date(2026, 11, 3), date(2026, 11, 2), "persisting"),
        (date(2026, 11, 4), date(2026, 11, 2), "persisting"),
    ]


def test_a_switch_to_rolling_baselines_says_the_earlier_nights_baselines_are_firsts_until_run_again(project_env, capsys):
    """The user's nights ran under `[baseline] policy = "first"`; then eval.toml said "rolling" and the next night was
    compared with night 1's run (+45 %, critical), not the latest earlier one, night 3's (+11 %): under `first` nights 2
    and 3 added no baseline for the task. Nothing said so in `run` or `status` (the Dagster UI marks `baselines`
    stale). They name the days and the run that remakes them, which gives what a backfill under `rolling` gives."""
    nights = ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"]
    (project_env / "episodes").mkdir()
    for n, day in enumerate(nights):
        record = episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day,
                         cost=0.0025 * (1 + 0.15 * n))  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text(json.dumps(record) + "\n")
    for day in nights[:3]:
        assert main(["run", "--date", day]) == 0
    capsys.readouterr()
    (project_env / "rolling.toml").write_text('[baseline]\npolicy = "rolling"\n')
    told = "outdated: the baselines from 2026-11-01 on were made under another [baseline] policy than 'rolling'"
    again = "eval-pipeline run --start 2026-11-01 --end 2026-11-04"
    with pytest.MonkeyPatch.context() as env:
        env.setenv("EVAL_CONFIG", str(project_env / "rolling.toml"))
        assert main(["run", "--date", nights[3]]) == 1  # +45 % against night 1
        out = capsys.readouterr().out
        assert told in out and again in out
        assert main(["status"]) == 0
        out = capsys.readouterr().out
        assert told in out and again in out
        assert main(["run", "--start", nights[0], "--end", nights[3]]) == 0
        assert "outdated" not in capsys.readouterr().out
    night_4 = "SELECT baseline_episode_id, round(cost_delta_pct, 1) FROM scores WHERE partition_date = '2026-11-04'"
    assert rows(project_env, night_4) == [("2026-11-03-a", 11.5)]  # below the warning's 20 %: passed, no finding


def test_a_pin_reaching_back_says_which_later_days_were_scored_against_the_baseline_it_replaced(project_env, capsys):
    """Three nights compared task t/a with its first run; then the user pinned night 2's run as its baseline. Night 3
    was scored against night 1's: `status` names it, and the run that scores it against the pin."""
    (project_env / "episodes").mkdir()
    for day, cost in [("2026-11-01", 0.0025), ("2026-11-02", 0.004), ("2026-11-03", 0.004)]:
        record = episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day, cost=cost)
        (project_env / "episodes" / f"{day}.jsonl").write_text(json.dumps(record) + "\n")
        main(["run", "--date", day, "--fail-on", "never"])
    assert main(["status"]) == 0
    assert "outdated" not in capsys.readouterr().out
    assert main(["baseline", "pin", "2026-11-02-a"]) == 0
    capsys.readouterr()
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert "outdated: 2026-11-03 (1 episode(s) scored against a baseline they no longer have)" in out
    assert "eval-pipeline run --date 2026-11-03" in out
    main(["run", "--date", "2026-11-03", "--fail-on", "never"])
    assert rows(project_env, "SELECT baseline_episode_id FROM scores WHERE partition_date = '2026-11-03'") == [("2026-11-02-a",)]
    assert "outdated" not in capsys.readouterr().out


def test_a_harness_reusing_its_ids_every_night_can_join_each_score_to_the_one_baseline_it_was_compared_with(project_env):
    """A harness captures case `support:refund` every night under the same id. The user's SQL joined `scores` to
    the baseline's episode on `baseline_episode_id` and got one row per night the id was recorded: night 3's score
    showed three baselines, two of them at costs it was never compared with. `baseline_partition_date` names the day
    of the baseline's episode, so the join gives exactly the run each score was compared with."""
    (project_env / "episodes").mkdir()
    for day, cost in [("2026-11-01", 0.0025), ("2026-11-02", 0.004), ("2026-11-03", 0.003)]:
        record = episode("support:refund", "t/refund", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day,
                         cost=cost)  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text(json.dumps(record) + "\n")
        main(["run", "--date", day, "--fail-on", "never"])
    joined = rows(
        project_env,
        "SELECT s.partition_date::VARCHAR, b.partition_date::VARCHAR, b.total_cost_usd = s.baseline_total_cost_usd "
        "FROM scores s JOIN episodes b ON b.episode_id = s.baseline_episode_id AND b.partition_date = s.baseline_partition_date "
        "ORDER BY ALL",
    )
    assert joined == [("2026-11-02", "2026-11-01", True), ("2026-11-03", "2026-11-01", True)]
    assert rows(project_env, "SELECT count(*) FROM scores WHERE baseline_partition_date IS NULL") == [(1,)]  # night 1: none
