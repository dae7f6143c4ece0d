"""A webhook that rate-limits us (Slack answers HTTP 429 with Retry-After) is asked again only once its wait is over,
and, when the wait is longer than the delivery may take, not at all in this delivery: asking sooner is only refused
again, and Slack asks senders to wait its Retry-After out.

Before: Retry-After was capped at our 5 s and its HTTP-date form ignored, so each message was posted three times
into a 429 and a limited delivery went on posting every message until its deadline.
"""

import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

from eval_pipeline.alerts.delivery import Deadlines, deliver_pending
from eval_pipeline.alerts.outbox import AlertOutbox
from eval_pipeline.warehouse.alerts import WarehouseOutbox, open_outbox
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.alerts.test_outbox_and_messages import LINKS, finding
from eval_pipeline_tests.postgres import lake_on

THREE_AGENTS = [finding("f1"), finding("f2", agent="billing-bot"), finding("f3", agent="research-agent")]


def test_a_429_is_asked_again_after_its_retry_after_given_as_an_http_date(tmp_path, webhook):
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue(THREE_AGENTS, "day", [])
    webhook.fail_next, webhook.fail_status = 1, 429
    webhook.retry_after = lambda: format_datetime(datetime.now(UTC) + timedelta(seconds=3), usegmt=True)

    report = deliver_pending(outbox, webhook.url, LINKS, [])

    assert (report.delivered, report.pending, report.errors) == (3, 0, [])
    assert sorted(webhook.finding_ids) == ["f1", "f2", "f3"] and webhook.attempts == 4
    assert webhook.arrivals[1] - webhook.arrivals[0] >= 2.0  # the date is to the second: 2-3 s after the 429


def test_a_retry_after_longer_than_the_delivery_may_wait_stops_it_after_one_post_and_keeps_every_alert(tmp_path, webhook):
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue(THREE_AGENTS, "day", [])
    webhook.fail_next, webhook.fail_status, webhook.retry_after = 99, 429, lambda: "120"

    limited = deliver_pending(outbox, webhook.url, LINKS, [], deadlines=Deadlines(per_post_seconds=10, per_delivery_seconds=15))

    assert webhook.attempts == 1  # not the other two messages, not a second try of the first
    assert (limited.delivered, limited.pending) == (0, 3) and len(outbox.pending()) == 3
    (error,) = limited.errors
    assert error.startswith(
        "alert webhook POST to 127.0.0.1 answered HTTP 429 with Retry-After 120 s, past what we may wait; "
        "what is pending waits for the next delivery after 20"
    )


def test_no_delivery_posts_again_until_the_webhooks_retry_after_has_passed(tmp_path, webhook):
    """The alert sensor ticks every 30 s: with a Retry-After of 120 s, each tick would post once more into the limit.
    The wait the webhook asked for holds every delivery on the host (the sensor's, a run's) until it has passed."""
    outbox = AlertOutbox(tmp_path)
    outbox.enqueue(THREE_AGENTS, "day", [])
    webhook.fail_next, webhook.fail_status, webhook.retry_after = 1, 429, lambda: "2"
    short = Deadlines(per_post_seconds=1, per_delivery_seconds=5)  # 2 s is past what a POST may wait here

    limited = deliver_pending(outbox, webhook.url, LINKS, [], deadlines=short)
    at_once = deliver_pending(AlertOutbox(tmp_path), webhook.url, LINKS, [], deadlines=short)  # the next tick, as a process

    assert webhook.attempts == 1 and (limited.delivered, at_once.delivered, at_once.pending) == (0, 0, 3)
    (held,) = at_once.errors
    assert held.startswith("alert webhook asked us to hold off until 20") and "what is pending waits until then" in held
    time.sleep(2.1)
    later = deliver_pending(AlertOutbox(tmp_path), webhook.url, LINKS, [], deadlines=short)
    assert (later.delivered, later.pending, later.errors) == (3, 0, []) and webhook.attempts == 4
    assert sorted(webhook.finding_ids) == ["f1", "f2", "f3"]


def test_on_a_lake_the_webhooks_retry_after_holds_the_deliverers_of_every_host(tmp_path, webhook, postgres_server, postgres_db):
    """A lake's deliverers take turns by its lease, on any host: a hold recorded on the host the webhook answered would
    let the next host post into the limit."""
    lake = lake_on(postgres_server, postgres_db, tmp_path)

    def on_host(name: str) -> WarehouseOutbox:  # each host has its own directory; the lake's tables are shared
        outbox = open_outbox(Warehouse(tmp_path / "eval.duckdb", lake=lake), tmp_path / name)
        assert isinstance(outbox, WarehouseOutbox)
        return outbox

    on_host("host-a").enqueue(THREE_AGENTS, "day", [])
    webhook.fail_next, webhook.fail_status, webhook.retry_after = 1, 429, lambda: "3"
    short = Deadlines(per_post_seconds=1, per_delivery_seconds=5)

    limited = deliver_pending(on_host("host-a"), webhook.url, LINKS, [], deadlines=short)
    elsewhere = deliver_pending(on_host("host-b"), webhook.url, LINKS, [], deadlines=short)

    assert webhook.attempts == 1 and (limited.delivered, elsewhere.delivered, elsewhere.pending) == (0, 0, 3)
    (held,) = elsewhere.errors
    assert held.startswith("alert webhook asked us to hold off until 20") and held.count(" UTC ") == 1
    time.sleep(3.1)
    later = deliver_pending(on_host("host-b"), webhook.url, LINKS, [], deadlines=short)
    assert (later.delivered, later.pending, later.errors) == (3, 0, []) and webhook.attempts == 4
    assert sorted(webhook.finding_ids) == ["f1", "f2", "f3"]
    assert not list(tmp_path.glob("*/webhook-hold.json"))  # the lake's hold is in its tables, not on a host
