"""Runs narrowed to one agent, to a model or to the first N episodes, and what the day then says: every output that
describes the day describes it as the warehouse holds it, whichever part a run evaluated last.

Each test is a user's sequence of commands as they reported it, with their files written the way their tools write them.
"""

import json
from collections.abc import Iterator

import dagster as dg
import pandas as pd
import pytest

from eval_pipeline.cli import main
from eval_pipeline.warehouse import partitions
from eval_pipeline.warehouse.connection import Warehouse, frames_of
from eval_pipeline_tests.air import episode

pytestmark = pytest.mark.slow


def rows(root, sql: str, params=None):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql, params or []).fetchall()


def two_agents_nights(root, days: list[str], beta_cost) -> None:
    """Each night alpha answers its refund and beta tracks its parcel, beta at `beta_cost(n)` on night n."""
    (root / "episodes").mkdir(exist_ok=True)
    for n, day in enumerate(days):
        records = [
            episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day, agent_id="alpha"),
            episode(f"{day}-b", "t/b", "Where is B-2?", "track", '{"eta": "Mon"}', "Monday.", day=day, agent_id="beta",
                    cost=beta_cost(n)),
        ]  # fmt: skip
        (root / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))


def day_outputs(root, day: str) -> dict:
    """What a dashboard and the UI read of the day: the report file's and the `reports` row's summary, the Dagster
    UI's latest `eval_report` and `scores` metadata, the regression gate's latest verdict and the score checks'."""
    report = json.loads((root / "reports" / f"eval-report-{day}.json").read_text())
    ((row,),) = rows(root, "SELECT summary FROM reports WHERE partition_date = ?", [day])
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        (record,) = instance.fetch_materializations(dg.AssetKey("eval_report"), limit=1).records
        key = dg.AssetCheckKey(dg.AssetKey("regression_findings"), "no_critical_regressions")
        check = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)[0].event
        (scored,) = instance.fetch_materializations(dg.AssetKey("scores"), limit=1).records
        key = dg.AssetCheckKey(dg.AssetKey("scores"), "scores_present_with_baseline")
        present = instance.event_log_storage.get_asset_check_execution_history(key, limit=1)[0].event
    metadata = record.asset_materialization.metadata
    gate = check.dagster_event.event_specific_data
    scores = scored.asset_materialization.metadata
    with_baseline = present.dagster_event.event_specific_data.metadata["episodes_with_baseline"].value
    figures = ("total_episodes", "passed", "failed", "critical_alerts")
    return {
        "file": tuple(report["summary"][name] for name in figures),
        "agents": sorted(agent["agent_id"] for agent in report["agents"]),
        "row": tuple(json.loads(row)[name] for name in figures),
        "ui": tuple(metadata[name].value for name in ("episodes", "passed", "failed", "critical_alerts")),
        "gate": (gate.passed, gate.metadata["critical"].value),
        "scores": (scores["passed"].value, scores["failed"].value, with_baseline),
    }


def test_one_agents_rerun_leaves_the_days_report_the_whole_days(project_env, capsys):
    """The beta team's cost tripled on night 2 (exit 1, "2 episodes 1 passed 1 failed", 1 critical). The alpha team
    then reran its agent (`run --date 2026-11-02 --agent alpha`, exit 0): the day's report files, its `reports` row
    and the UI's eval_report said "1 episodes 1 passed 0 failed, 0 critical" and the regression gate turned green,
    while the warehouse still held beta's failed episode and its critical finding. The day's outputs stay the whole
    day's; the run's own line says what alpha's figures were, and they decide its exit code (0)."""
    days = ["2026-11-01", "2026-11-02"]
    two_agents_nights(project_env, days, lambda n: 0.0025 * (1 + 2 * n))
    assert main(["run", "--date", days[0]]) == 0
    assert main(["run", "--date", days[1]]) == 1
    capsys.readouterr()
    whole = day_outputs(project_env, days[1])
    assert whole == {
        "file": (2, 1, 1, 1),
        "agents": ["alpha", "beta"],
        "row": (2, 1, 1, 1),
        "ui": (2, 1, 1, 1),
        "gate": (False, 1),
        "scores": (1, 1, 2),
    }

    assert main(["run", "--date", days[1], "--agent", "alpha"]) == 0  # alpha's verdict: its episode passed
    out = capsys.readouterr().out
    assert "2026-11-02      2 episodes      1 passed      1 failed" in out  # the day, as its report says
    assert "agent alpha (this run; its figures decide the exit code):     1 episodes      1 passed      0 failed" in out
    assert day_outputs(project_env, days[1]) == whole
    assert main(["report", "--date", days[1], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["summary"]["failed"] == 1

    assert main(["run", "--date", days[1], "--agent", "beta"]) == 1  # beta's verdict: its episode failed
    out = capsys.readouterr().out
    assert "agent beta (this run; its figures decide the exit code):     1 episodes      0 passed      1 failed" in out
    assert day_outputs(project_env, days[1]) == whole


def test_one_agents_rerun_counts_the_days_other_agents_a_batch_at_a_time(project_env, capsys, monkeypatch):
    """A rerun of one agent on a big day read every other agent's scores whole into memory to count them: on a day of
    200,000 episodes, 190,000 rows took its scores step to 749 MiB, near the 917 MiB of the whole day's ingest.
    Read a batch at a time (here 3 rows), they give the day's outputs the whole day's run gave."""
    days, agents, tasks = ["2026-11-01", "2026-11-02"], ("alpha", "beta", "gamma"), 4
    (project_env / "episodes").mkdir()
    for n, day in enumerate(days):
        records = [
            episode(f"{day}-{agent}-{task}", f"t/{agent}/{task}", f"Order {task}?", "lookup_order", '{"order": 1}',
                    "Shipped.", day=day, agent_id=agent, cost=0.0025 * (3 if n and agent == "beta" and task % 2 else 1))
            for agent in agents for task in range(tasks)
        ]  # fmt: skip
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    assert main(["run", "--date", days[0]]) == 0
    assert main(["run", "--date", days[1]]) == 1
    whole = day_outputs(project_env, days[1])
    assert whole["scores"] == (10, 2, 12)
    batches: list[int] = []

    def counted(*args) -> Iterator[pd.DataFrame]:
        for frame in frames_of(*args):
            batches.append(len(frame))
            yield frame

    monkeypatch.setattr(partitions, "PARTITION_BATCH_ROWS", 3)
    monkeypatch.setattr(partitions, "frames_of", counted)
    assert main(["run", "--date", days[1], "--agent", "alpha"]) == 0
    assert batches == [3, 3, 2]  # beta's and gamma's 8 scores
    assert day_outputs(project_env, days[1]) == whole
    assert "2026-11-02     12 episodes     10 passed      2 failed" in capsys.readouterr().out


def test_one_agents_rerun_writes_that_agents_report_to_output_as_its_exit_code_and_junit_count(project_env, capsys):
    """The alpha team gates its deploys on `run --date 2026-11-02 --agent alpha --output alpha.json --junit alpha.xml`:
    exit 0 and a JUnit suite of 1 passed test, but alpha.json said "total_episodes": 2, "failed": 1, "critical_alerts": 1
    and listed beta, whose cost had tripled: the CI step that reads the file failed the deploy the exit code passed.
    What `--output` writes is what the run evaluated, as `--junit` and the exit code count it: alpha's part of the day,
    saying so (`summary.agent_id`); the day's own report stays the whole day's."""
    import xml.etree.ElementTree as ET

    days = ["2026-11-01", "2026-11-02"]
    two_agents_nights(project_env, days, lambda n: 0.0025 * (1 + 2 * n))
    assert main(["run", "--date", days[0]]) == 0
    assert main(["run", "--date", days[1]]) == 1
    whole = day_outputs(project_env, days[1])
    output, junit = project_env / "alpha.json", project_env / "alpha.xml"

    code = main(["run", "--date", days[1], "--agent", "alpha", "--output", str(output), "--junit", str(junit)])

    report = json.loads(output.read_text())
    suite = ET.parse(junit).getroot()
    summary = report["summary"]
    assert code == 0
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")
    assert (summary["total_episodes"], summary["passed"], summary["failed"], summary["critical_alerts"]) == (1, 1, 0, 0)
    assert summary["agent_id"] == "alpha" and [agent["agent_id"] for agent in report["agents"]] == ["alpha"]
    assert report["alerts"] == [] and list(report["trend"]["agents"]) == ["alpha"]
    assert day_outputs(project_env, days[1]) == whole  # the day's report, row and UI: still both agents

    code = main(["run", "--start", days[0], "--end", days[1], "--agent", "beta", "--output", str(output)])
    reports = json.loads(output.read_text())
    assert code == 1
    assert [(r["partition_date"], r["summary"]["agent_id"], r["summary"]["failed"], r["summary"]["critical_alerts"])
            for r in reports] == [(days[0], "beta", 0, 0), (days[1], "beta", 1, 1)]  # fmt: skip
    assert [alert["agent_id"] for alert in reports[1]["alerts"]] == ["beta"]


def test_a_night_run_with_limit_leaves_the_tasks_it_left_out_to_the_sources_history(project_env, capsys):
    """The user tried the pipeline on the first episode of a night (`run --date 2026-11-01 --limit 1`, as with
    eval-harness), then ran the next night whole: the parcel task's tripled cost had no verdict, exit 0, "1 without a
    baseline: the first day of those tasks", though the night before held a run of it. A fresh warehouse's
    `run --date 2026-11-02` compares it with that run (exit 1, cost_delta +200 %): a night read in part is not
    evaluated for the tasks it left out, with `--limit` as with `--model`."""
    days = ["2026-11-01", "2026-11-02"]
    (project_env / "episodes").mkdir()
    for n, day in enumerate(days):
        records = [
            episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day),
            episode(f"{day}-b", "t/b", "Where is B-2?", "track", '{"eta": "Mon"}', "Monday.", day=day, cost=0.0025 * (1 + 2 * n)),
        ]
        records[1]["started_at"] = records[1]["started_at"].replace("T09:", "T10:")  # the later run of the night
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    assert main(["run", "--date", days[0], "--limit", "1"]) == 0
    assert rows(project_env, "SELECT episode_id FROM episodes") == [(f"{days[0]}-a",)]
    capsys.readouterr()

    assert main(["run", "--date", days[1]]) == 1
    out = capsys.readouterr().out
    assert "1 passed      1 failed      0 without a verdict" in out and "1 critical" in out
    night_2 = "SELECT episode_id, baseline_episode_id, cost_delta_pct FROM scores WHERE partition_date = ? ORDER BY 1"
    assert rows(project_env, night_2, [days[1]]) == [
        (f"{days[1]}-a", f"{days[0]}-a", 0.0),
        (f"{days[1]}-b", f"{days[0]}-b", pytest.approx(200.0)),
    ]


def _three_quiet_nights(project_env) -> list[str]:
    """Three nights of two runs each (tasks t/a and t/u), each evaluated as it came: the nights' days."""
    nights = ["2026-11-01", "2026-11-02", "2026-11-03"]
    (project_env / "episodes").mkdir()
    for day in nights:
        records = [
            episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day),
            episode(f"{day}-u", "t/u", "Where is U-2?", "track", '{"eta": "Mon"}', "Monday.", day=day),
        ]
        (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
        assert main(["run", "--date", day]) == 0
    return nights


def test_a_rerun_of_an_earlier_night_says_the_next_nights_report_lists_other_resolved_findings(project_env, capsys):
    """Three quiet nights; then night 2's late file arrived, with a second trial of the parcel task at three times the
    cost, and the user ran night 2 again (exit 1, a critical cost finding). Night 3's report still said "0 resolved
    since yesterday", where a backfill of the nights lists the parcel's cost finding as resolved, and neither the run
    nor `status` said night 3 was outdated: its baselines and findings were unchanged, only what it resolved was not.
    They name it, and the run that writes it again."""
    nights = _three_quiet_nights(project_env)
    capsys.readouterr()
    late = episode("late-u", "t/u", "Where is U-2?", "track", '{"eta": "Mon"}', "Monday.", day=nights[1], cost=0.0075, trial=1)
    (project_env / "episodes" / f"{nights[1]}-late.jsonl").write_text(json.dumps(late) + "\n")

    assert main(["run", "--date", nights[1]]) == 1
    told = (
        "outdated: 2026-11-03 (1 finding(s) resolved since the day before that its report lists otherwise; "
        "its headline compares with the day before's figures as they no longer are)"
    )
    again = "eval-pipeline run --date 2026-11-03"
    out = capsys.readouterr().out
    assert told in out and again in out
    assert main(["status"]) == 0
    out = capsys.readouterr().out
    assert told in out and again in out

    assert main(["run", "--date", nights[2]]) == 0
    assert "outdated" not in capsys.readouterr().out
    report = json.loads((project_env / "reports" / f"eval-report-{nights[2]}.json").read_text())
    assert [(r["task_id"], r["dimension"], r["severity"]) for r in report["resolved"]] == [("t/u", "cost_delta", "critical")]
    assert main(["status"]) == 0
    assert "outdated" not in capsys.readouterr().out


def test_a_day_read_in_part_says_so_in_its_report_until_it_is_read_whole(project_env, capsys):
    """The user ran a night with `--limit 1`, as eval-harness's flag, to try the pipeline: the night's report, which a
    dashboard and the team open, said "1 episodes, 1 passed" for a night of two runs and nothing of the limit. The
    report and `status` say which agents' runs the day was read in part for, until a run reads the day whole."""
    day = "2026-11-01"
    (project_env / "episodes").mkdir()
    records = [
        episode(f"{day}-a", "t/a", "Refund A-1?", "lookup_order", '{"order": "A-1"}', "Refunded.", day=day),
        episode(f"{day}-b", "t/b", "Where is B-2?", "track", '{"eta": "Mon"}', "Monday.", day=day),
    ]
    (project_env / "episodes" / f"{day}.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    told = "Read in part: run --limit 1 left out some of triage-bot's episodes of the day; they are not counted here."

    def notes() -> list[str]:
        return json.loads((project_env / "reports" / f"eval-report-{day}.json").read_text())["notes"]

    assert main(["run", "--date", day, "--limit", "1"]) == 0
    assert told in notes()
    assert main(["report", "--date", day]) == 0
    assert told in capsys.readouterr().out
    assert main(["status"]) == 0
    assert (
        "read in part     2026-11-01 (triage-bot: --limit 1): what was left out is in no table and no figure; "
        "to read them whole: eval-pipeline run --date 2026-11-01"
    ) in capsys.readouterr().out
    assert main(["run", "--date", day]) == 0
    assert not [note for note in notes() if "Read in part" in note]
    assert main(["status"]) == 0
    assert "read in part" not in capsys.readouterr().out


def test_a_rerun_of_an_earlier_night_says_the_next_nights_headline_compares_with_figures_it_no_longer_has(project_env, capsys):
    """Night 2's late file brought a third run, which passed, and the user ran night 2 again (3 episodes). Night 3's
    report still showed "+0 vs previous day" beside its 2 episodes, as against night 2's 2 of before: a backfill says
    "-1". Its baselines, findings and resolved findings were unchanged, so nothing said it was outdated."""
    nights = _three_quiet_nights(project_env)
    capsys.readouterr()
    late = episode("late-u", "t/u", "Where is U-2?", "track", '{"eta": "Mon"}', "Monday.", day=nights[1], trial=1)
    (project_env / "episodes" / f"{nights[1]}-late.jsonl").write_text(json.dumps(late) + "\n")

    assert main(["run", "--date", nights[1]]) == 0
    told = "outdated: 2026-11-03 (its headline compares with the day before's figures as they no longer are)"
    out = capsys.readouterr().out
    assert told in out and "eval-pipeline run --date 2026-11-03" in out
    assert main(["run", "--date", nights[2]]) == 0
    assert "outdated" not in capsys.readouterr().out
    report = json.loads((project_env / "reports" / f"eval-report-{nights[2]}.json").read_text())
    assert report["previous_summary"]["total_episodes"] == 3


def test_a_day_read_with_limit_is_no_spike_of_quarantined_records(project_env, capsys):
    """The user tried the sample night with `run --date 2026-11-01 --limit 5`: exit 1, "1 critical", a source_health
    finding "4 of 9 records read quarantined (44.4%)", where the night's 52 records hold those 4 (7.7 %, no finding when
    run whole). The limit kept 5 episodes but every rejected record; a run narrowed by `--limit` or `--model` does not
    judge the source, as a run narrowed by `--agent` does not."""
    from eval_pipeline.episodes.samples import write_samples

    write_samples(project_env / "episodes")
    for narrowed in (["--limit", "5"], ["--model", "no-such-model"]):
        assert main(["run", "--date", "2026-11-01", *narrowed]) == 0
        assert "0 critical, 0 warning  4 quarantined" in capsys.readouterr().out
        assert rows(project_env, "SELECT dimension FROM findings") == []
