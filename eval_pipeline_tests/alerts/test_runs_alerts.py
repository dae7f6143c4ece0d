"""Alerts as `eval-pipeline run` delivers them, to a real webhook receiver on 127.0.0.1, across re-runs of a day."""

import dagster as dg
from filelock import FileLock

from eval_pipeline.alerts import outbox as outbox_module
from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.runner import open_instance
from eval_pipeline.settings import PROJECT_ROOT, Settings
from eval_pipeline.warehouse.connection import Warehouse


def test_a_run_for_an_agent_named_with_a_slash_delivers_its_alerts(project_env, monkeypatch, webhook, capsys):
    """`run --agent acme/support-bot` failed (exit 3) on the outbox's file name, and its findings were never alerted."""
    write_samples(project_env / "episodes")
    for path in (project_env / "episodes").glob("*.json*"):
        path.write_text(path.read_text().replace("support-bot", "acme/support-bot"))
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    assert main(["run", "--date", "2026-11-02", "--agent", "acme/support-bot", "--fail-on", "never"]) == 0
    assert "alerts: 9 delivered to the webhook" in capsys.readouterr().out
    assert [m["text"] for m in webhook.messages] == [
        "eval_pipeline: acme/support-bot on 2026-11-02: 6 critical, 3 warning regression(s)"
    ]


def test_a_rerun_for_one_agent_withdraws_that_agents_undelivered_alerts_it_no_longer_finds(
    project_env, monkeypatch, webhook, capsys
):
    """The night's alerts wait out a webhook outage; meanwhile a stricter limit makes research-agent's 3 cost warnings
    critical, and `run --agent research-agent` records 9 critical, 0 warning. Its alert said "9 critical, 3 warning"
    and carried the 3 warnings the findings table no longer holds (the night's batch still had them)."""
    write_samples(project_env / "episodes")
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    webhook.fail_next = 1000
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert "alerts: 27 not delivered" in capsys.readouterr().err

    stricter = project_env / "eval.toml"
    stricter.write_text(
        PROJECT_ROOT.joinpath("eval.toml").read_text()
        + '\n[agents."research-agent".thresholds]\ncost_delta = { warning = 20, critical = 24 }\n'
    )
    monkeypatch.setenv("EVAL_CONFIG", str(stricter))
    webhook.fail_next = 0
    assert main(["run", "--date", "2026-11-02", "--agent", "research-agent", "--fail-on", "never"]) == 0
    assert "alerts: 27 delivered to the webhook" in capsys.readouterr().out
    with Warehouse(project_env / "eval.duckdb").connect(read_only=True) as con:
        findings = con.execute("SELECT finding_id, agent_id, severity FROM findings").fetchall()
    assert sorted(webhook.finding_ids) == sorted(finding_id for finding_id, _, _ in findings)
    research = next(m["text"] for m in webhook.messages if "research-agent" in m["text"])
    assert research == "eval_pipeline: research-agent on 2026-11-02: 9 critical, 0 warning regression(s)"
    assert sum(agent == "research-agent" and severity == "critical" for _, agent, severity in findings) == 9


def test_an_alert_of_escalated_findings_says_how_many_the_day_holds_in_all(project_env, monkeypatch, webhook):
    """A re-run under a stricter limit escalates research-agent's 3 cost warnings: their alert said "3 critical,
    0 warning regression(s)" for a day whose findings table and report hold 9 critical, 0 warning for it."""
    write_samples(project_env / "episodes")
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert "eval_pipeline: research-agent on 2026-11-02: 6 critical, 3 warning regression(s)" in [
        m["text"] for m in webhook.messages
    ]  # the first alert of a day is all of it
    stricter = project_env / "eval.toml"
    stricter.write_text(
        PROJECT_ROOT.joinpath("eval.toml").read_text()
        + '\n[agents."research-agent".thresholds]\ncost_delta = { warning = 20, critical = 24 }\n'
    )
    monkeypatch.setenv("EVAL_CONFIG", str(stricter))
    webhook.messages.clear()
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert [m["text"] for m in webhook.messages] == [
        "eval_pipeline: research-agent on 2026-11-02: 3 new critical, 0 new warning regression(s); 9 critical, 0 warning in all"
    ]


def test_a_run_that_finds_the_outbox_busy_still_gives_its_verdict(project_env, monkeypatch, webhook, capsys):
    """The alert sensor (or another run) delivering to a slow webhook holds the outbox: the run itself succeeded, yet
    `run` exited 3 with "The file lock … could not be acquired" and never printed the day's line nor its verdict."""
    write_samples(project_env / "episodes")
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    monkeypatch.setattr(outbox_module, "OUTBOX_WAIT_SECONDS", 0.5)
    (project_env / "alerts").mkdir()
    with FileLock(str(project_env / "alerts" / ".lock")):  # another deliverer, mid-delivery
        assert main(["run", "--date", "2026-11-02"]) == 1  # critical findings: the verdict, not an error
    printed = capsys.readouterr()
    assert "2026-11-02     48 episodes" in printed.out
    assert "alerts: not delivered now: another deliverer held the outbox" in printed.err and webhook.messages == []
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert len(webhook.finding_ids) == 27  # they waited in the outbox


def test_a_run_for_a_clean_agent_leaves_the_days_regression_gate_failed(sample_root, capsys):
    """`run --agent billing-bot` (no finding of its own) turned the UI's no_critical_regressions check on
    regression_findings green, "Regression gate: no findings", for a day whose findings hold 18 critical, 9 warning."""
    key = dg.AssetCheckKey(dg.AssetKey("regression_findings"), "no_critical_regressions")

    def gate() -> tuple[bool, str]:
        with open_instance(Settings.from_environment()) as instance:
            record = instance.event_log_storage.get_latest_asset_check_execution_by_key([key])[key]
        evaluation = record.event.dagster_event.event_specific_data
        return evaluation.passed, evaluation.description

    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    assert gate() == (False, "Regression gate: findings on 2026-11-02 (18 critical, 9 warning); see those days' reports")
    assert main(["run", "--date", "2026-11-02", "--agent", "billing-bot"]) == 0  # its exit code judges billing-bot alone
    # the day's report, which the gate points to, covers every agent whichever one a run evaluated again
    assert gate() == (False, "Regression gate: findings on 2026-11-02 (18 critical, 9 warning); see those days' reports")
