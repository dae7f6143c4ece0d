"""Alert sensors evaluated for real: graph materialized into tmp_path, a webhook receiver on 127.0.0.1."""

from datetime import date

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.defs.alerting.sensors import regression_alerts, run_failure_alerts
from eval_pipeline.defs.resources import AlertsResource, EvalConfigResource, WarehouseResource
from eval_pipeline.episodes.samples import LEAKED_KEY, write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, UI_URL, VIEWER_URL, local_resources

pytestmark = pytest.mark.slow


def tick(resources: dict, instance) -> str:
    result = regression_alerts(dg.build_sensor_context(instance=instance, resources=resources))
    return result.skip_message


def test_each_new_finding_is_posted_once_retried_after_a_500_and_never_for_clean_agents(tmp_path, webhook):
    write_samples(tmp_path / "episodes")
    resources = local_resources(tmp_path, webhook_url=webhook.url)
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2026-11-01", "2026-11-02"):
        dg.materialize(GRAPH, partition_key=day, resources=resources, instance=instance)

    webhook.fail_next = 100  # the receiver is down for this tick
    assert "webhook failed" in tick(resources, instance)
    assert webhook.messages == []

    webhook.fail_next = 0
    assert tick(resources, instance).startswith("delivered 27 alert(s) to the webhook, 0 pending")
    with Warehouse(tmp_path / "eval.duckdb").connect(read_only=True) as con:
        expected = {row[0] for row in con.execute("SELECT finding_id FROM findings").fetchall()}
    assert sorted(webhook.finding_ids) == sorted(expected)
    assert {m["text"].split(":")[1].split(" on ")[0].strip() for m in webhook.messages} == {
        "code-assistant",
        "research-agent",
        "support-bot",
    }  # one message per agent and day; billing-bot only got cheaper
    assert all("http://ui.test:3000/runs/" in m["blocks"][0]["text"]["text"] for m in webhook.messages)
    assert not any(LEAKED_KEY in str(m) for m in webhook.messages)

    assert tick(resources, instance).startswith("delivered 0 alert(s)")  # the next tick repeats nothing
    dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    assert tick(resources, instance).startswith("delivered 0 alert(s)")  # nor does a re-run of the day
    assert len(webhook.finding_ids) == len(expected)


def test_a_failed_run_is_announced_once(tmp_path, webhook):
    resources = local_resources(tmp_path, source=str(tmp_path / "missing"), webhook_url=webhook.url)
    instance = dg.DagsterInstance.ephemeral()
    result = dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance, raise_on_error=False)
    assert not result.success
    failure = next(event for event in result.all_events if event.event_type_value == "PIPELINE_FAILURE")
    for _ in range(2):
        context = dg.build_run_status_sensor_context(
            sensor_name="run_failure_alerts",
            dagster_event=failure,
            dagster_instance=instance,
            dagster_run=result.dagster_run,
            resources=resources,
        ).for_run_failure()
        run_failure_alerts(context)
    assert len(webhook.messages) == 1
    assert "run failed" in webhook.messages[0]["text"] and webhook.messages[0]["finding_ids"] == [f"run-failed:{result.run_id}"]
    assert date(2026, 11, 2).isoformat() in webhook.messages[0]["text"]


def test_a_webhook_that_refuses_is_named_by_its_host_in_the_run_and_the_sensor_tick(project_env, monkeypatch, webhook, capsys):
    """Slack answers 4xx to a revoked hook, and httpx's error quotes the URL, whose path is the token."""
    token = "T0AAAAAAA/B0BBBBBBB/" + "Xq7Wd9Lk2Mn4Pb6Vc8Zr1Ty3"
    url = f"{webhook.url}/services/{token}"
    webhook.fail_status, webhook.fail_next = 403, 1000
    write_samples(project_env / "episodes")
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", url)
    assert main(["run", "--date", "2026-11-02", "--fail-on", "never"]) == 0
    printed = capsys.readouterr()
    assert "alert webhook POST to 127.0.0.1 answered HTTP 403" in printed.err
    alerts = AlertsResource(
        directory=str(project_env / "alerts"), webhook_url=url, ui_base_url=UI_URL, viewer_base_url=VIEWER_URL
    )
    warehouse = WarehouseResource(duckdb_path=str(project_env / "eval.duckdb"))
    skipped = tick(
        {"alerts": alerts, "warehouse": warehouse, "eval_config": EvalConfigResource()}, dg.DagsterInstance.ephemeral()
    )
    assert skipped.endswith("webhook failed, retried next tick: alert webhook POST to 127.0.0.1 answered HTTP 403")
    assert "Xq7Wd9Lk2Mn4" not in printed.out + printed.err + skipped
