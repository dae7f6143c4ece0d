"""A first night that already works: the source holds weeks of runs, the warehouse is new.

An AIR Blackbox user's first nightly run scored 0 of 20 episodes ("without a baseline 20") and
missed a doubled cost, although the store held weeks of earlier runs.
"""

import json
from datetime import date, timedelta

from eval_pipeline.cli import main
from eval_pipeline_tests.fake_store import make_episode

LAST = date(2026, 11, 14)
TASKS = [f"support-bot/task-{n}" for n in range(5)]


def write_days(directory, doubled: str) -> None:
    """Fourteen days of five tasks, each run once a day; on the last day one task costs twice as much."""
    directory.mkdir()
    for offset in range(14):
        day = LAST - timedelta(days=13 - offset)
        lines = []
        for n, task in enumerate(TASKS):
            episode = make_episode(f"{day}-{n}", f"{day}T0{n}:00:00Z", metadata={"task_id": task})
            if day == LAST and task == doubled:
                for step in episode["steps"]:
                    step["cost_usd"] *= 2
                episode["total_cost_usd"] *= 2
            lines.append(json.dumps(episode))
        (directory / f"{day}.jsonl").write_text("\n".join(lines) + "\n")


def rows(sql: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_first_night_compares_with_the_sources_history_and_catches_a_doubled_cost(project_env, capsys):
    write_days(project_env / "episodes", doubled=TASKS[3])
    assert main(["status"]) == 0
    assert "history missing  14 day(s) in the source are not evaluated (2026-11-01..2026-11-14)" in capsys.readouterr().out

    assert main(["run", "--date", str(LAST)]) == 1  # the doubled cost is a critical regression
    out = capsys.readouterr().out
    assert "5 passed" not in out and "0 without a verdict" in out
    assert "5 compared with a baseline found in the source's earlier days" in out
    scored = rows("SELECT count(*) AS n, count(baseline_episode_id) AS with_baseline FROM scores", capsys)
    assert scored == [{"n": 5, "with_baseline": 5}]
    baselines = rows("SELECT task_id, episode_id, origin, valid_from FROM baselines ORDER BY task_id", capsys)
    first_day = LAST - timedelta(days=13)
    assert [(b["episode_id"], b["origin"], b["valid_from"][:10]) for b in baselines] == [
        (f"{first_day}-{n}", "history", str(LAST)) for n in range(5)
    ]  # the earliest successful run of each task ([baseline] policy first); those days were read, not written
    assert rows("SELECT count(DISTINCT partition_date) AS days FROM episodes", capsys) == [{"days": 1}]
    findings = rows("SELECT task_id, dimension, severity FROM findings WHERE episode_id IS NOT NULL", capsys)
    assert {"task_id": TASKS[3], "dimension": "cost_delta", "severity": "critical"} in findings

    assert main(["run", "--date", str(LAST)]) == 1  # a re-run gives the same baselines and scores
    assert rows("SELECT task_id, episode_id, origin, valid_from FROM baselines ORDER BY task_id", capsys) == baselines
