"""A newcomer's first hour: `make demo` today, then the README's queries and the Dagster UI.

The user saw the README's example queries return nothing and the UI red with a stale freshness check,
because the demo's sample days were fixed weeks in the past.
"""

import json
import os
import re
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.definitions import defs
from eval_pipeline.runner import open_instance
from eval_pipeline.settings import PROJECT_ROOT, Settings

pytestmark = pytest.mark.slow


def _readme_queries() -> list[str]:
    """Every SQL statement of the README: `eval-pipeline query "..."` lines and the ```sql block's statements."""
    readme = (PROJECT_ROOT / "README.md").read_text()
    quoted = re.findall(r'eval-pipeline query "([^"]+)"', readme)
    blocks = re.findall(r"```sql\n(.*?)```", readme, flags=re.S)
    statements = [
        " ".join(line for line in statement.splitlines() if not line.startswith("--")).strip()
        for block in blocks
        for statement in block.split(";")
    ]
    return [" ".join(sql.split()) for sql in quoted + statements if "SELECT" in sql]


def test_after_the_demo_the_readme_queries_return_rows(project_env, capsys):
    assert main(["demo"]) == 0
    yesterday = datetime.now(UTC).date() - timedelta(days=1)
    assert f"dated {yesterday - timedelta(days=2)} to {yesterday}" in capsys.readouterr().out
    # the demo has no judge (pairwise_judgements) and no case-set agent (health-assistant)
    queries = [sql for sql in _readme_queries() if "pairwise_judgements" not in sql and "health-assistant" not in sql]
    assert len(queries) >= 8
    empty = []
    for sql in queries:
        assert main(["query", sql, "--format", "json"]) == 0, sql
        if not json.loads(capsys.readouterr().out):
            empty.append(sql)
    assert empty == []


def test_after_the_demo_the_only_failing_check_is_the_regression_gate(project_env, capsys):
    assert main(["demo"]) == 0
    definitions = defs()
    instance = open_instance(Settings.from_environment())
    definitions.resolve_job_def("report_freshness").execute_in_process(instance=instance)  # the morning check

    keys = list(definitions.resolve_asset_graph().asset_check_keys)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(keys)
    evaluations = {key.name: record.event.dagster_event.event_specific_data for key, record in latest.items() if record.event}
    assert "last_night_reported" in evaluations and "scores_in_range" in evaluations
    failing = {name: evaluation for name, evaluation in evaluations.items() if not evaluation.passed}
    assert list(failing) == ["no_critical_regressions"]
    day2, day3 = (datetime.now(UTC).date() - timedelta(days=n) for n in (2, 1))
    assert failing["no_critical_regressions"].description.startswith(f"Regression gate: findings on {day2} (18 critical")
    assert str(day3) in failing["no_critical_regressions"].description
    runs = instance.get_runs()
    assert runs and all(run.status == dg.DagsterRunStatus.SUCCESS for run in runs)


def test_every_field_of_the_episode_schema_says_what_it_is(capsys):
    assert main(["schemas", "episode", "--json"]) == 0
    schema = json.loads(capsys.readouterr().out)
    objects = [schema, *schema["$defs"].values()]
    undescribed = [name for obj in objects for name, field in obj.get("properties", {}).items() if "description" not in field]
    assert undescribed == []
    metadata = schema["properties"]["metadata"]["description"]
    assert all(key in metadata for key in ("`task_id`", "`trial`", "`category`", "`final_output`", "output_summary"))


def _files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` (links too), with its size and modification time."""
    return {str(path.relative_to(root)): (path.lstat().st_size, path.lstat().st_mtime_ns)
            for path in root.rglob("*") if path.is_file() or path.is_symlink()}  # fmt: skip


def test_the_demo_writes_only_under_data_and_make_clean_removes_it_all(tmp_path):
    """A fresh checkout (the repository's files, copied), the demo run in it with no setting given, as `make demo` runs
    it; then `make clean`. Its home and temporary directories are watched as well."""
    checkout, home, scratch = tmp_path / "checkout", tmp_path / "home", tmp_path / "tmp"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
    for name in filter(None, tracked.stdout.split("\0")):
        (checkout / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(PROJECT_ROOT / name, checkout / name)
    home.mkdir(), scratch.mkdir()
    env = {name: value for name, value in os.environ.items() if not name.startswith(("EVAL_", "OPENAI_", "DAGSTER_"))}
    env |= {
        "PYTHONPATH": str(checkout),
        "PYTHONDONTWRITEBYTECODE": "1",
        "HOME": str(home),
        "TMPDIR": str(scratch),
        "EVAL_HISTORY_START": "2026-11-01",
    }  # partitions reaching the pinned days (a new warehouse starts a week ago)
    before = _files(checkout)
    demo = [sys.executable, "-m", "eval_pipeline.cli", "demo", "--last-day", "2026-11-03"]
    ran = subprocess.run(demo, cwd=checkout, env=env, capture_output=True, text=True, timeout=600)
    assert ran.returncode == 0, ran.stderr[-2000:]
    after = _files(checkout)
    written = {name for name, stamp in after.items() if before.get(name) != stamp}
    assert written and {name for name in written if not name.startswith("data/")} == set()
    assert _files(home) == {} and _files(scratch) == {}
    subprocess.run(["make", "clean"], cwd=checkout, env=env, capture_output=True, check=True)
    assert sorted(str(path.relative_to(checkout)) for path in (checkout / "data").rglob("*")) == ["data/README.md"]
    assert _files(checkout) == before


def test_the_readmes_episode_example_loads_as_it_says(project_env, capsys):
    """The commented example in the README, as a user copies it into a file of the source, through a real run."""
    [example] = re.findall(r"```jsonl\n(.*?)```", (PROJECT_ROOT / "README.md").read_text(), flags=re.S)
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "mine.jsonl").write_text(example)
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    columns = "task_id, trial, metadata ->> '$.category' AS category, final_output, total_tokens, total_cost_usd, tools"
    assert main(["query", f"SELECT {columns} FROM episodes", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{
        "task_id": "support-bot/where-is-my-order", "trial": 0, "category": "orders",
        "final_output": "Your order A-10482 shipped and arrives on 7 November.", "total_tokens": 730,
        "total_cost_usd": 0.001, "tools": ["lookup_order"],
    }]  # fmt: skip
    assert main(["query", "SELECT count(*) AS n FROM quarantine", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"n": 0}]


def test_a_demo_dated_before_the_partitions_says_so_and_writes_nothing(project_env, monkeypatch, capsys):
    """`demo --last-day D` weeks ago on a new warehouse, without EVAL_HISTORY_START: one line saying what to set,
    exit 2, and no sample file left behind to make the next demo refuse."""
    monkeypatch.delenv("EVAL_HISTORY_START", raising=False)
    assert main(["demo", "--last-day", "2026-11-03"]) == 2
    assert "2026-11-01 is outside the partitions" in capsys.readouterr().err
    assert not (project_env / "episodes").exists() or not any((project_env / "episodes").iterdir())
    assert not (project_env / "eval.duckdb").exists()


def test_an_episode_without_a_task_id_is_counted_and_named_in_every_report(project_env, capsys):
    """The README's example without `metadata.task_id`, beside it as recorded: the report says one episode had none
    and names it, in the JSON, the Markdown and the HTML alike."""
    [example] = re.findall(r"```jsonl\n(.*?)```", (PROJECT_ROOT / "README.md").read_text(), flags=re.S)
    record = json.loads(example)
    untasked = {**record, "episode_id": "ep-no-task", "metadata": {k: v for k, v in record["metadata"].items() if k != "task_id"}}
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "mine.jsonl").write_text(example.rstrip("\n") + "\n" + json.dumps(untasked) + "\n")
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    reports = project_env / "reports"
    report = json.loads((reports / "eval-report-2026-11-05.json").read_text())
    assert report["summary"]["without_task_id"] == 1
    [note] = [note for note in report["notes"] if "no metadata.task_id" in note]
    assert note.startswith("1 episode(s) had no metadata.task_id") and note.endswith(": ep-no-task")
    for rendering in ("eval-report-2026-11-05.md", "eval-report-2026-11-05.html"):
        assert "no metadata.task_id" in (reports / rendering).read_text() and "ep-no-task" in (reports / rendering).read_text()


def test_the_demo_prints_the_summary_the_readme_shows_and_each_days_counts_add_up(project_env, monkeypatch, capsys):
    """The README's first screen quotes the demo's summary. Its third day said "52 episodes  47 passed  4 failed  0
    without a verdict": 51, and nothing said where the 52nd was (a run still going, which the reports counted). A day
    whose counts leave runs out says why on the line under it, as the reports do."""
    monkeypatch.setenv("EVAL_HISTORY_START", "2026-11-22")
    assert main(["demo", "--last-day", "2026-11-24"]) == 0
    printed = capsys.readouterr().out
    quoted = re.search(r"```\n(2026-11-22 .*?)```", (PROJECT_ROOT / "README.md").read_text(), flags=re.S).group(1)
    shown = re.sub(r"\S*/(eval-report-\S+\.html)", r"…/\1", printed)
    assert shown[shown.index("2026-11-22    ") : shown.index("run in the UI")] == quoted
    for day in re.finditer(r"(\d+) episodes +(\d+) passed +(\d+) failed +(\d+) without a verdict.*\n(?: {12}(.*)\n)?", shown):
        episodes, passed, failed, without = map(int, day.groups()[:4])
        running = re.search(r"Still running (\d+)", day.group(5) or "")
        assert episodes == passed + failed + without + (int(running.group(1)) if running else 0), day.group(0)
