"""A newcomer's first hour: `make demo` today, then the README's queries and the Dagster UI.

The user saw the README's example queries return nothing and the UI red with a stale freshness check,
because the demo's sample days were fixed weeks in the past.
"""

import json
import re
from datetime import UTC, datetime, timedelta

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
