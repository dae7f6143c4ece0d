"""The flags AIR Blackbox's eval-harness users type, on the episode store they already run.

`eval-harness run --store-url http://localhost:8100 --limit 20`, `run --agent-id my-agent --model gpt-4
--output results.json` and `report results.json` were refused; `run` without a date too.
"""

import json
import os
from datetime import UTC, datetime, timedelta

from eval_pipeline.cli import main
from eval_pipeline.episodes.model import Episode
from eval_pipeline.episodes.samples import write_samples


def rows(sql: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_the_eval_harness_flags_on_the_episode_store(project_env, fake_store, capsys):
    write_samples(project_env / "files")
    for path in sorted((project_env / "files").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            try:
                fake_store.episodes.append(Episode.model_validate_json(line).model_dump(mode="json"))
            except ValueError:
                continue
    assert not (project_env / "episodes").exists()  # EVAL_EPISODE_SOURCE points nowhere; --store-url is the source

    assert main(["status", "--store-url", fake_store.url]) == 0
    assert f"episode source   {fake_store.url}" in capsys.readouterr().out
    results = project_env / "results.json"
    assert main(["run", "--date", "2026-11-01", "--store-url", fake_store.url, "--agent-id", "research-agent",
                 "--model", "gpt-4o", "--limit", "5", "--output", str(results), "--fail-on", "never"]) == 0  # fmt: skip
    assert rows("SELECT agent_id, model, count(*) AS n FROM episodes GROUP BY ALL", capsys) == [
        {"agent_id": "research-agent", "model": "gpt-4o", "n": 5}
    ]
    report = json.loads(results.read_text())
    assert report["partition_date"] == "2026-11-01" and report["summary"]["total_episodes"] == 5

    capsys.readouterr()
    assert main(["report", str(results)]) == 0
    shown = capsys.readouterr().out
    assert shown.startswith("# ") and "research-agent" in shown
    assert main(["report", str(results), "--format", "html", "--output", str(project_env / "r.html")]) == 0
    assert "<html" in (project_env / "r.html").read_text()
    (project_env / "other.json").write_text('{"not": "a report"}')
    assert main(["report", str(project_env / "other.json")]) == 2
    assert "not a daily report" in capsys.readouterr().err


def test_run_without_a_date_evaluates_yesterday_utc(project_env, fake_store, capsys):
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    from eval_pipeline_tests.fake_store import make_episode

    fake_store.episodes += [make_episode(f"e{i}", f"{yesterday}T0{i}:00:00Z") for i in range(3)]
    os.environ["EVAL_EPISODE_SOURCE"] = fake_store.url
    assert main(["run", "--fail-on", "never"]) == 0
    assert capsys.readouterr().out.startswith(f"{yesterday}      3 episodes")
    assert main(["run", "--start", str(yesterday), "--fail-on", "never"]) == 2  # a half range is still an error


def test_a_ranges_saved_report_is_shown_day_by_day(project_env, capsys):
    """`run --start --end --output` writes a list of the days' reports; `report FILE` refused it as 'not a daily
    report (no partition_date and summary); `run --output` writes one'."""
    write_samples(project_env / "episodes")
    results = project_env / "results.json"
    argv = ["run", "--start", "2026-11-01", "--end", "2026-11-02", "--output", str(results), "--fail-on", "never"]
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["report", str(results)]) == 0
    shown = capsys.readouterr().out
    assert shown.index("# Eval report 2026-11-01") < shown.index("# Eval report 2026-11-02")
    assert "30 passed, 18 failed of 48 episodes with a verdict" in shown
    assert main(["report", str(results), "--format", "json"]) == 0
    assert [day["partition_date"] for day in json.loads(capsys.readouterr().out)] == ["2026-11-01", "2026-11-02"]
    assert main(["report", str(results), "--format", "html"]) == 2
    assert capsys.readouterr().err == (
        f"eval-pipeline: error: {results} holds the reports of 2026-11-01..2026-11-02 (run --output of a range); "
        "an HTML report is of one day: report --date D --format html\n"
    )
