"""Alerts as `eval-pipeline run` delivers them, to a real webhook receiver on 127.0.0.1, across re-runs of a day."""

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples


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
