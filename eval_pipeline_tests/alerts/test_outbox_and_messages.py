import json
import threading
import time
from collections.abc import Callable

import pytest

from eval_pipeline.alerts import messages
from eval_pipeline.alerts import outbox as outbox_module
from eval_pipeline.alerts.delivery import deliver_pending
from eval_pipeline.alerts.messages import DIGEST_AGENTS, MessageLinks, message_groups, run_failure_alert, slack_message
from eval_pipeline.alerts.outbox import AlertOutbox, Outbox
from eval_pipeline.retry import Backoff
from eval_pipeline.warehouse.alerts import WarehouseOutbox, open_outbox
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.postgres import lake_on

FAST = Backoff(attempts=2, base_seconds=0.01, max_seconds=0.02)
LEAK = "sk-live-" + "Ab3" * 10
LINKS = MessageLinks(ui_base_url="http://ui.example:3000/", viewer_base_url="http://viewer.example:8765")


def finding(finding_id: str, agent: str = "support-bot", day: str = "2026-11-02", severity: str = "critical", **extra) -> dict:
    return {
        "alert_id": finding_id, "kind": "finding", "run_id": "run-1", "finding_id": finding_id, "partition_date": day,
        "agent_id": agent, "episode_id": f"ep-{finding_id}", "task_id": "t", "dimension": "cost_delta",
        "severity": severity, "value": 52.0, "threshold": 40.0, "baseline_value": 0.0, "message": "cost rose", **extra,
    }  # fmt: skip


@pytest.fixture(params=["files", "lake"])
def outbox_of(request, tmp_path) -> Callable[[], Outbox]:
    """Opens one warehouse's outbox, anew each call as another process would: files beside a single-file warehouse,
    or the tables of a lake whose catalog is on the session's Postgres."""
    lake = None
    if request.param == "lake":
        lake = lake_on(request.getfixturevalue("postgres_server"), request.getfixturevalue("postgres_db"), tmp_path)
    return lambda: open_outbox(Warehouse(tmp_path / "eval.duckdb", lake=lake), tmp_path)


def stored(outbox: Outbox) -> list[str]:
    """The batches the outbox holds, as stored (JSON text)."""
    if isinstance(outbox, AlertOutbox):
        return [path.read_text() for path in sorted(outbox.pending_dir.glob("*.json"))]
    assert isinstance(outbox, WarehouseOutbox)
    with outbox.warehouse.connect(read_only=True) as con:
        return [text for (text,) in con.execute("SELECT alert FROM alert_outbox ORDER BY batch, position").fetchall()]


def test_each_alert_is_sent_once_and_a_failure_keeps_it(outbox_of):
    outbox = outbox_of()
    outbox.enqueue([finding("f1"), finding("f2", agent="billing-bot")], "2026-11-02-all", [])
    sent, failures = [], [1]  # the billing-bot group fails once

    def flaky(alerts):
        if alerts[0]["agent_id"] == "billing-bot" and failures:
            failures.pop()
            raise ConnectionError("webhook down")
        sent.extend(a["alert_id"] for a in alerts)

    first = outbox.deliver(flaky, message_groups)
    assert (first.delivered, first.pending, first.errors) == (1, 1, ["webhook down"])
    second = outbox.deliver(flaky, message_groups)
    assert (second.delivered, second.pending) == (1, 0)
    assert outbox.deliver(flaky, message_groups).delivered == 0  # nothing is repeated
    assert sorted(sent) == ["f1", "f2"]
    assert stored(outbox) == []  # delivered batches are cleared


def test_a_rerun_replaces_the_days_batch_and_delivered_ids_stay_delivered(outbox_of):
    outbox = outbox_of()
    outbox.enqueue([finding("f1")], "day", [])
    outbox.deliver(lambda alerts: None, message_groups)
    outbox.enqueue([finding("f1"), finding("f3")], "day", [])  # the re-run finds f1 again, and f3
    assert [a["alert_id"] for a in outbox.pending()] == ["f3"]
    outbox.enqueue([], "day", [])  # a re-run that finds nothing withdraws what was not sent yet
    assert outbox.pending() == []


def test_a_rerun_for_one_agent_replaces_only_that_agents_alerts_of_the_batch(outbox_of):
    outbox = outbox_of()
    night = [finding("f1"), finding("f2", agent="acme/billing-bot"), finding("src", agent="(source)")]
    outbox.enqueue(night, "day", [])
    outbox.enqueue([finding("f3", agent="acme/billing-bot")], "day", [], agent="acme/billing-bot")
    assert sorted(a["alert_id"] for a in outbox_of().pending()) == ["f1", "f3", "src"]
    outbox.enqueue([], "day", [], agent="support-bot")  # support-bot's re-run finds nothing now
    assert sorted(a["alert_id"] for a in outbox_of().pending()) == ["f3", "src"]
    outbox.enqueue([finding("f4")], "day", [])  # a run for every agent replaces the whole batch
    assert [a["alert_id"] for a in outbox_of().pending()] == ["f4"]


def test_slack_message_groups_links_lists_ids_and_redacts_secrets():
    alerts = [finding("f1", message=f"tools [lookup, {LEAK}]"), finding("f2", severity="warning")]
    message = slack_message(alerts, LINKS, [])
    body = message["blocks"][0]["text"]["text"]
    assert message["text"] == "eval_pipeline: support-bot on 2026-11-02: 1 critical, 1 warning regression(s)"
    assert message["finding_ids"] == ["f1", "f2"]
    assert "value +52.0% vs threshold +40.0%, baseline +0.0%" in body
    assert "<http://ui.example:3000/runs/run-1|" in body
    assert "<http://viewer.example:8765/days/2026-11-02?agent=support-bot|Open the day's episodes in the viewer>" in body
    assert LEAK not in body and "sk-…[redacted]" in body
    assert body.index("CRITICAL") < body.index("WARNING")


def test_slack_markup_in_the_data_is_escaped_and_only_the_messages_links_are_markup():
    hostile = "<!channel> <@U012ABCDEF> <http://evil.example|click> & co"
    alerts = [finding("f1", agent=hostile, episode_id=hostile, message=hostile, dimension=hostile)]
    message = slack_message(alerts, LINKS, [])
    body = message["blocks"][0]["text"]["text"]
    escaped = "&lt;!channel&gt; &lt;@U012ABCDEF&gt; &lt;http://evil.example|click&gt; &amp; co"
    assert message["text"].startswith(f"eval_pipeline: {escaped} on") and body.count(escaped) == 4
    assert body.count("<") == 2 and "<http://ui.example:3000/runs/run-1|Open the run in Dagster>" in body
    assert "<http://viewer.example:8765/days/2026-11-02?agent=%3C%21channel%3E+%3C%40U012ABCDEF%3E" in body  # encoded
    failure = run_failure_alert("run-9", "<!here>", "<!here>", "<@U012ABCDEF> failed")
    assert "<!here>" not in str(slack_message([failure], LINKS, [])) and "&lt;!here&gt;" in str(
        slack_message([failure], LINKS, [])
    )


def test_plain_mentions_and_urls_in_the_data_are_left_plain_by_slack():
    """Slack auto-parses a mrkdwn text object's plain text unless it is `verbatim`: "certain mentions", channel names
    and URLs in an agent's answer quoted by a finding became live mentions and links in the alert."""
    hostile = "ping @channel @here #general, see http://evil.example/login"
    message = slack_message([finding("f1", message=hostile)], LINKS, [])
    section = message["blocks"][0]["text"]
    assert section["type"] == "mrkdwn" and section["verbatim"] is True and hostile in section["text"]
    assert "<http://viewer.example:8765/days/2026-11-02?agent=support-bot|" in section["text"]  # its own links stay links


def test_the_outbox_holds_alerts_redacted(outbox_of):
    outbox = outbox_of()
    outbox.enqueue([finding("f1", message=f"tools [lookup, {LEAK}]", agent=f"bot {LEAK}")], "day", ["lookup"])
    text = "".join(stored(outbox))
    assert LEAK not in text and "sk-\\u2026[redacted]" in text and "lookup" not in text  # the extra pattern too


def test_large_groups_list_twenty_and_count_the_rest():
    alerts = [finding(f"f{i}") for i in range(45)]
    body = slack_message(alerts, LINKS, [])["blocks"][0]["text"]["text"]
    assert body.count("*CRITICAL*") == 20 and "… and 25 more" in body
    assert len(slack_message(alerts, LINKS, [])["finding_ids"]) == 45


def test_a_long_group_keeps_its_count_of_the_rest_and_its_links():
    """A day's 30 tool_match warnings with their 100-character messages: the body was cut at 2,900 characters in the
    middle of the 12th line, so the message lost "… and N more" and both links."""
    message = "tool_match 0.00 vs limit 0.50: tools [search_faq, escalate_to_human] vs baseline [lookup_order, send_email]"
    alerts = [
        finding(f"f{i}", episode_id=f"4f1c2a9e-0b7d-4c3e-9a51-{i:012d}", dimension="tool_match", severity="warning",
                value=0.0, threshold=0.5, baseline_value=1.0, message=message)
        for i in range(30)
    ]  # fmt: skip
    body = slack_message(alerts, LINKS, [])["blocks"][0]["text"]["text"]
    listed = body.count("*WARNING*")
    assert len(body) <= 3000 and 0 < listed < 20 and f"… and {30 - listed} more in the day's report" in body
    assert body.endswith("|Open the day's episodes in the viewer> · <http://ui.example:3000/runs/run-1|Open the run in Dagster>")
    failure = slack_message([run_failure_alert("run-9", "evaluate_partition", "2026-11-02", "boom " * 2000)], LINKS, [])
    failed = failure["blocks"][0]["text"]["text"]
    assert len(failed) <= 3000 and failed.endswith("<http://ui.example:3000/runs/run-9|Open the run>")


def test_a_source_health_alert_links_the_whole_day():
    """A `(source)` finding (a day of no episodes, a quarantine spike) linked the day's episodes of agent "(source)",
    which no episode has: the viewer showed an empty day."""
    source = finding("src", agent="(source)", episode_id=None, dimension="source_health", message="0 episodes")
    body = slack_message([source], LINKS, [])["blocks"][0]["text"]["text"]
    assert "<http://viewer.example:8765/days/2026-11-02|Open the day's episodes in the viewer>" in body


def test_a_days_findings_of_many_agents_are_one_message_that_says_what_is_new_and_escapes_agent_ids():
    """A re-run of a fleet's day found one more regression per agent: the digest counts the new ones and the day's."""
    agents = ["<!channel>", *(f"bot-{n:02d}" for n in range(DIGEST_AGENTS))]
    new = [finding(f"f-{agent}", agent=agent, day_critical=2, day_warning=1) for agent in agents]
    other_day = finding("f-other", agent="bot-00", day="2026-11-03")
    failure = run_failure_alert("run-9", "evaluate_partition", "2026-11-02", "boom")
    assert message_groups([*new, failure, other_day]) == [new, [failure], [other_day]]
    assert message_groups(new[:DIGEST_AGENTS]) == [[alert] for alert in new[:DIGEST_AGENTS]]  # a few agents: one each
    message = slack_message(new, LINKS, [])
    assert message["text"] == (
        "eval_pipeline: 11 agents on 2026-11-02: 11 new critical, 0 new warning regression(s); 22 critical, 11 warning in all"
    )
    body = message["blocks"][0]["text"]["text"]
    assert ":red_circle: *&lt;!channel&gt;*: 1 critical, 0 warning (cost_delta)" in body and "<!channel>" not in body
    assert "<http://viewer.example:8765/days/2026-11-02|Open the day's episodes in the viewer>" in body


def test_a_digest_carries_about_digest_findings_and_each_agents_findings_in_one_message(monkeypatch):
    """A million-episode day of 20 agents had 40,000 findings: one digest would carry 40,000 ids (about 1 MB)."""
    monkeypatch.setattr(messages, "DIGEST_FINDINGS", 4)
    agents = [f"bot-{n:02d}" for n in range(DIGEST_AGENTS + 1)]
    alerts = [finding(f"f-{agent}-{n}", agent=agent) for agent in agents for n in range(4 if agent == "bot-01" else 1)]
    groups = message_groups(alerts)
    assert [len(group) for group in groups] == [1, 4, 4, 4, 1]  # bot-01's four go together, after bot-00's one
    assert [a["alert_id"] for group in groups for a in group] == [a["alert_id"] for a in alerts]


def test_run_failures_travel_alone():
    failure = run_failure_alert("run-9", "evaluate_partition", "2026-11-02", "episode store unreachable")
    assert message_groups([failure, failure | {"alert_id": "run-failed:run-8", "run_id": "run-8"}]) == [
        [failure],
        [failure | {"alert_id": "run-failed:run-8", "run_id": "run-8"}],
    ]
    assert "run failed" in slack_message([failure], LINKS, [])["text"]


def test_webhook_delivery_retries_then_keeps_alerts_for_later(outbox_of, webhook):
    outbox = outbox_of()
    outbox.enqueue([finding("f1")], "day", [])
    webhook.fail_next = 5  # more than one delivery's attempts
    report = deliver_pending(outbox, webhook.url, LINKS, [], FAST)
    assert report.delivered == 0 and report.pending == 1 and "HTTP 500" in report.errors[0]
    assert webhook.attempts == 2
    webhook.fail_next = 0
    assert deliver_pending(outbox, webhook.url, LINKS, [], FAST).delivered == 1
    assert webhook.finding_ids == ["f1"]


def test_a_webhook_that_refuses_is_named_by_its_host_only(tmp_path, webhook, caplog):
    """A 4xx answer raises an error quoting the full URL, and Slack's URLs carry their token."""
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue([finding("f1")], "day", [])
    token = "T0AAAAAAA/B0BBBBBBB/" + "Xq7Wd9Lk2Mn4Pb6Vc8Zr1Ty3"
    webhook.fail_status, webhook.fail_next = 404, 5
    with caplog.at_level("DEBUG"):
        report = deliver_pending(outbox, f"{webhook.url}/services/{token}", LINKS, [], FAST)
    assert report.errors == ["alert webhook POST to 127.0.0.1 answered HTTP 404"]
    assert "Xq7Wd9Lk2Mn4" not in caplog.text and report.pending == 1


def test_without_a_webhook_alerts_go_to_a_file_and_the_log(tmp_path, caplog):
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue([finding("f1")], "day", [])
    with caplog.at_level("INFO"):
        assert deliver_pending(outbox, None, LINKS, []).delivered == 1
    assert "support-bot on 2026-11-02" in (tmp_path / "alerts.jsonl").read_text()
    assert "no EVAL_ALERT_WEBHOOK_URL" in caplog.text


def test_two_deliverers_never_send_the_same_alert(outbox_of):
    """The sensor and a CLI run deliver one at a time (a lock, or a lake's lease): the second finds nothing left."""
    outbox_of().enqueue([finding("f1"), finding("f2", agent="billing-bot")], "day", [])
    sent: list[str] = []

    def slow_send(alerts):
        time.sleep(0.2)
        sent.extend(a["alert_id"] for a in alerts)

    threads = [threading.Thread(target=outbox_of().deliver, args=(slow_send, message_groups)) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert sorted(sent) == ["f1", "f2"]


def test_two_runs_of_one_day_enqueueing_at_once_lose_neither_agents_alerts(tmp_path, monkeypatch):
    """CI started `run --agent alpha` and `run --agent beta` of one night together. Each puts its agent's findings in
    the day's batch by reading the batch, leaving out its agent's older alerts and writing the rest with its new ones:
    alpha read, beta read and wrote, then alpha wrote, and beta's new finding was gone, never delivered. A batch is
    read and written by one run at a time."""
    AlertOutbox(tmp_path).enqueue([finding("a-old", agent="alpha"), finding("b-old", agent="beta")], "day", [])
    alpha_has_read, go_on = threading.Event(), threading.Event()
    write = outbox_module.replace_whole

    def alpha_pauses_before_writing(path, text):
        if threading.current_thread().name == "alpha":
            alpha_has_read.set()
            go_on.wait(5)
        write(path, text)

    monkeypatch.setattr(outbox_module, "replace_whole", alpha_pauses_before_writing)

    def run(agent: str) -> threading.Thread:
        batch = [finding(f"{agent[0]}-new", agent=agent)]
        thread = threading.Thread(name=agent, target=AlertOutbox(tmp_path).enqueue, args=(batch, "day", [], agent))
        thread.start()
        return thread

    alpha = run("alpha")
    assert alpha_has_read.wait(5)
    beta = run("beta")
    beta.join(0.5)  # done by now if nothing holds it back
    go_on.set()
    alpha.join(5)
    beta.join(5)
    assert sorted(alert["alert_id"] for alert in AlertOutbox(tmp_path).pending()) == ["a-new", "b-new"]


def test_alerts_enqueued_while_a_delivery_drops_its_delivered_batches_stay_pending(tmp_path, monkeypatch):
    """The sensor delivered the day's one finding, and as it dropped the batch it had all delivered (read it, found
    every id in the ledger, deleted it), a rerun of the day wrote the batch anew with a second finding: the delete
    took that one with it. A delivery drops a batch only as no run writes it."""
    AlertOutbox(tmp_path).enqueue([finding("f1")], "day", [])
    rerun_started, batches_read = threading.Event(), []
    rerun = threading.Thread(target=AlertOutbox(tmp_path).enqueue, args=([finding("f1"), finding("f2")], "day", []))

    class RerunAfterTheBatchIsRead:
        dumps = staticmethod(json.dumps)

        @staticmethod
        def loads(text: str):
            value = json.loads(text)
            if threading.current_thread().name == "sensor" and isinstance(value, list):
                batches_read.append(value)
            if len(batches_read) == 2 and not rerun_started.is_set():  # read to deliver it, then to drop it
                rerun_started.set()
                rerun.start()
                rerun.join(0.5)  # done by now if nothing holds it back
            return value

    monkeypatch.setattr(outbox_module, "json", RerunAfterTheBatchIsRead)
    sensor = threading.Thread(name="sensor", target=AlertOutbox(tmp_path).deliver, args=(lambda alerts: None, message_groups))
    sensor.start()
    sensor.join(5)
    rerun.join(5)
    monkeypatch.undo()
    assert rerun_started.is_set()
    assert [alert["alert_id"] for alert in AlertOutbox(tmp_path).pending()] == ["f2"]
