"""Nightly runs, reruns and backfills of the same days: every output of a day is the same however the user got there.

Each test is a user's sequence of commands as they reported it, with their files written the way their tools write them.
"""

import json

import pytest

from eval_pipeline.cli import main
from eval_pipeline.warehouse.connection import Warehouse
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
