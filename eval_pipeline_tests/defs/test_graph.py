"""The whole graph, materialized for real over the sample days (DuckDB under tmp_path)."""

import json
from datetime import date
from pathlib import Path

import dagster as dg
import pytest

from eval_pipeline.episodes.samples import EXPECTED_REGRESSIONS, SAMPLE_DAYS, write_samples
from eval_pipeline.warehouse import connection
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, VIEWER_URL, local_resources, table_metadata

pytestmark = pytest.mark.slow


KIND_TO_FINDING = {
    "cost_critical": ("cost_delta", "critical"),
    "cost_warning": ("cost_delta", "warning"),
    "latency_critical": ("latency_delta", "critical"),
    "latency_warning": ("latency_delta", "warning"),
    "tool_sequence": ("tool_match", "warning"),
    "failed_outcome": ("correctness", "critical"),
    "leaked_secret": ("safety", "critical"),
    "error_steps": ("safety", "critical"),
    "fabricated_number": ("numeric_fabrication", "critical"),
}
# The timed-out run's weighted score. No per-agent (aggregate) finding: two regressed tasks of four
# are not evidence against noise (the bootstrap CI of the mean includes no change).
EXTRA_FINDINGS = {
    (date(2026, 11, 3), "research-agent", "research-agent/market-size-estimate", "weighted_score", "critical"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    write_samples(root / "episodes")
    resources = local_resources(root)
    instance = dg.DagsterInstance.ephemeral()
    results = {
        day: dg.materialize(GRAPH, partition_key=day.isoformat(), resources=resources, instance=instance) for day in SAMPLE_DAYS
    }
    return root, resources, instance, results


def query(root: Path, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_findings_are_exactly_the_injected_regressions(project):
    root, *_ = project
    found = set(query(root, "SELECT DISTINCT partition_date, agent_id, task_id, dimension, severity FROM findings"))
    expected = {(day, agent, task, *KIND_TO_FINDING[kind]) for day, agent, task, kind in EXPECTED_REGRESSIONS}
    assert found == expected | EXTRA_FINDINGS


def test_every_trial_of_an_injected_task_is_flagged_and_the_cheaper_agent_never(project):
    root, *_ = project
    per_task = dict(
        query(
            root,
            "SELECT task_id, count(DISTINCT episode_id) FROM findings "
            "WHERE partition_date = DATE '2026-11-02' AND episode_id IS NOT NULL GROUP BY ALL",
        )
    )
    assert set(per_task.values()) == {3}
    assert query(root, "SELECT count(*) FROM findings WHERE agent_id = 'billing-bot'") == [(0,)]
    cheaper = query(
        root,
        "SELECT max(cost_delta_pct), min(weighted_score) FROM scores "
        "WHERE agent_id = 'billing-bot' AND partition_date = DATE '2026-11-02'",
    )
    assert cheaper[0][0] < -30 and cheaper[0][1] == pytest.approx(1.0)


def test_baselines_come_from_earlier_days_or_pins_never_the_episode_itself(project):
    root, *_ = project
    assert query(root, "SELECT count(*) FROM scores WHERE episode_id = baseline_episode_id") == [(0,)]
    # day 1 has no history: only the pinned task's other trials are scored
    day1 = query(root, "SELECT count(*), count(weighted_score) FROM scores WHERE partition_date = DATE '2026-11-01'")
    assert day1 == [(48, 2)]
    stale = query(
        root,
        "SELECT count(*) FROM scores s JOIN episodes b ON b.episode_id = s.baseline_episode_id "
        "WHERE b.partition_date >= s.partition_date AND NOT b.pinned_baseline",
    )
    assert stale == [(0,)]


def test_running_episodes_wait_and_every_table_is_filled(project):
    root, *_ = project
    assert query(root, "SELECT count(*) FROM episodes WHERE status = 'running'") == [(1,)]
    assert query(root, "SELECT count(*) FROM scores s JOIN episodes e USING (episode_id) WHERE e.status = 'running'") == [(0,)]
    for table in ("episodes", "episode_steps", "quarantine", "baselines", "replays", "scores", "findings", "reports"):
        assert query(root, f"SELECT count(*) FROM {table}")[0][0] > 0, table


def test_rematerializing_a_partition_changes_nothing(project):
    root, resources, instance, _ = project
    tables = ("episodes", "episode_steps", "quarantine", "baselines", "replays", "scores", "findings", "reports")
    snapshot = lambda: {t: query(root, f"SELECT count(*) FROM {t}")[0][0] for t in tables}  # noqa: E731
    before, ids_before = snapshot(), query(root, "SELECT finding_id FROM findings ORDER BY 1")
    dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    assert snapshot() == before
    assert query(root, "SELECT finding_id FROM findings ORDER BY 1") == ids_before


def test_checks_flag_the_bad_day_without_blocking_the_report(project):
    root, _, _, results = project
    day2 = {e.check_name: e for e in results[date(2026, 11, 2)].get_asset_check_evaluations()}
    assert not day2["no_critical_regressions"].passed
    assert day2["no_critical_regressions"].severity == dg.AssetCheckSeverity.ERROR
    assert day2["scores_in_range"].passed and day2["scores_present_with_baseline"].passed
    day1 = {e.check_name: e for e in results[date(2026, 11, 1)].get_asset_check_evaluations()}
    assert day1["no_critical_regressions"].passed
    report = json.loads((root / "reports" / "eval-report-2026-11-02.json").read_text())
    assert report["critical_alerts"] == 18 and report["summary"]["quarantined"] == 2  # 15 breaches, 3 fabricated numbers
    assert "## Regression Alerts" in (root / "reports" / "eval-report-2026-11-02.md").read_text()
    assert query(root, "SELECT count(*) FROM reports WHERE markdown_path IS NOT NULL") == [(3,)]


def test_materializations_carry_useful_metadata(project):
    _, _, _, results = project
    scores = table_metadata(results[date(2026, 11, 2)], "scores")
    assert (scores["passed"].value, scores["failed"].value, scores["without_verdict"].value) == (30, 18, 0)
    assert scores["dagster/row_count"].value == 48 and "worst_episodes" in scores
    quarantine = table_metadata(results[date(2026, 11, 2)], "quarantine")
    assert quarantine["dagster/row_count"].value == 2


def test_the_report_and_findings_metadata_link_to_the_viewer_over_http(project):
    """The Dagster UI will not open a `file://` link: the report is the viewer's /reports/ file, the findings link to
    the day's page and each to its episode's page, all under the one viewer address."""
    _, _, _, results = project
    report = table_metadata(results[date(2026, 11, 2)], "eval_report")
    assert report["html_report"].value == f"{VIEWER_URL}/reports/eval-report-2026-11-02.html"
    assert report["in_viewer"].value == f"{VIEWER_URL}/days/2026-11-02"
    findings = table_metadata(results[date(2026, 11, 2)], "regression_findings")
    assert findings["in_viewer"].value == f"{VIEWER_URL}/days/2026-11-02"
    episode = "ep-2026-11-02-code-assistant-rename-config-key-t0"
    assert f"[{episode}]({VIEWER_URL}/days/2026-11-02/episodes/{episode})" in findings["findings"].value


def test_a_day_without_episodes_is_a_source_health_finding(tmp_path):
    write_samples(tmp_path / "episodes")
    resources = local_resources(tmp_path)
    result = dg.materialize(GRAPH, partition_key="2026-11-04", resources=resources, instance=dg.DagsterInstance.ephemeral())
    assert result.success  # an empty day still gets its findings and its report
    assert query(tmp_path, "SELECT agent_id, dimension, severity, value FROM findings") == [
        ("(source)", "source_health", "critical", 0.0)
    ]


def test_views_answer_the_usual_questions(project):
    root, *_ = project
    daily = query(root, "SELECT partition_date, agent_id, episodes, pass_rate, critical_findings FROM agent_daily ORDER BY ALL")
    day2 = {agent: (episodes, rate, critical) for day, agent, episodes, rate, critical in daily if day == date(2026, 11, 2)}
    assert day2["billing-bot"] == (12, 1.0, 0) and day2["code-assistant"] == (12, 0.5, 6)
    assert query(root, "SELECT DISTINCT partition_date FROM latest_findings") == [(date(2026, 11, 3),)]
    # day 3's timed-out trial fails where the task's other trials pass
    assert query(root, "SELECT partition_date, task_id, trials, passes FROM flaky_tasks") == [
        (date(2026, 11, 3), "research-agent/market-size-estimate", 6, 5)
    ]
    lifecycle = dict(query(root, "SELECT lifecycle, count(*) FROM findings WHERE partition_date = '2026-11-03' GROUP BY ALL"))
    assert lifecycle == {"persisting": 3, "new": 2}  # the leak persists since day 2; the timeout is new
    assert query(root, "SELECT DISTINCT since FROM findings WHERE dimension = 'safety' AND partition_date = '2026-11-03'") == [
        (date(2026, 11, 2),)
    ]


def test_a_run_checks_the_warehouse_schema_once_not_at_every_step(tmp_path, monkeypatch):
    """Each check opens the file (tens of milliseconds): a run's eleven steps share one warehouse and so one check."""
    checks = []
    original = connection.migrate
    monkeypatch.setattr(connection, "migrate", lambda con: checks.append(1) or original(con))
    write_samples(tmp_path / "episodes")
    result = dg.materialize(
        GRAPH,
        partition_key=SAMPLE_DAYS[0].isoformat(),
        resources=local_resources(tmp_path),
        instance=dg.DagsterInstance.ephemeral(),
    )
    assert result.success and len(result.get_asset_materialization_events()) >= len(GRAPH)
    assert len(checks) == 1
