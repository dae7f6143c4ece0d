"""Alerts as Slack-compatible webhook messages: one per agent and day (one per day for a fleet), or one per failed run."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

import pandas as pd

from eval_pipeline.alerts.outbox import Alert
from eval_pipeline.redaction import redact
from eval_pipeline.regression.findings import FINDING_COLUMNS, alert_order
from eval_pipeline.regression.source_health import SOURCE_AGENT
from eval_pipeline.viewer.links import day_url
from eval_pipeline.warehouse.viewer import Filters

FINDING_FIELDS = [column for column in FINDING_COLUMNS if column != "config_version"]
LISTED_PER_MESSAGE = 20  # beyond these (or what fits), a message counts the rest
# A day's findings of more agents than these travel as one message: a fleet of 2,000 agents had 541 messages a night,
# and Slack's incoming webhooks take about one a second
DIGEST_AGENTS = 10
# Findings a digest carries at most (their ids ride along: about 50 KB): a day of more goes out in as many digests, each
# agent's findings in one
DIGEST_FINDINGS = 2_000
SECTION_CHARACTERS = 2900  # of a message's body: Slack refuses a section over 3,000
MESSAGE_CHARACTERS = 300  # of a finding's message, in its line
SEVERITY_ICON = {"critical": ":red_circle:", "warning": ":large_yellow_circle:"}


@dataclass(frozen=True)
class MessageLinks:
    """Where a message's links lead: Dagster's webserver for a run, the episode viewer for a day's findings."""

    ui_base_url: str  # EVAL_UI_BASE_URL
    viewer_base_url: str  # EVAL_VIEWER_BASE_URL


def finding_alerts(findings: pd.DataFrame, run_id: str) -> list[Alert]:
    """Each finding (already WARNING or CRITICAL) as an alert named by its stable finding id, with its agent's counts
    of the day (`day_critical`, `day_warning`): a message of only the new ones says the day's too."""
    records = findings[FINDING_FIELDS].astype(object).where(findings[FINDING_FIELDS].notna(), None).to_dict("records")
    counts = findings.groupby(["agent_id", "severity"]).size().to_dict()
    return [
        {"alert_id": r["finding_id"], "kind": "finding", "run_id": run_id, **r,
         "day_critical": int(counts.get((r["agent_id"], "critical"), 0)),
         "day_warning": int(counts.get((r["agent_id"], "warning"), 0))}
        for r in records
    ]  # fmt: skip


def run_failure_alert(run_id: str, job_name: str, partitions: str, error: str) -> Alert:
    return {"alert_id": f"run-failed:{run_id}", "kind": "run_failure", "run_id": run_id, "job_name": job_name,
            "partitions": partitions, "message": error}  # fmt: skip


def _per_agent(alert: Alert) -> tuple:
    if alert["kind"] == "finding":
        return ("finding", str(alert["partition_date"]), alert["agent_id"])
    return ("run", alert["run_id"])


def message_groups(alerts: list[Alert]) -> list[list[Alert]]:
    """What travels as one message, in the order the alerts came: a day's findings per agent, or, when they are of
    more than DIGEST_AGENTS agents, all of that day's in one digest (in several of about DIGEST_FINDINGS findings,
    when they are more); each failed run alone."""
    groups: dict[tuple, list[Alert]] = {}
    for alert in alerts:
        groups.setdefault(_per_agent(alert), []).append(alert)
    agents_of_day = Counter(key[1] for key in groups if key[0] == "finding")
    messages: dict[tuple, list[Alert]] = {}
    digests: Counter[str] = Counter()  # per day, the digest being filled
    for key, group in groups.items():
        if key[0] != "finding" or agents_of_day[key[1]] <= DIGEST_AGENTS:
            messages[key] = group
            continue
        digest = ("digest", key[1], digests[key[1]])
        if digest in messages and len(messages[digest]) + len(group) > DIGEST_FINDINGS:
            digests[key[1]] += 1
            digest = ("digest", key[1], digests[key[1]])
        messages.setdefault(digest, []).extend(group)
    return list(messages.values())


def _number(value: Any, dimension: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1f}%" if dimension.endswith("_delta") else f"{value:.2f}"


def _clipped(text: str, characters: int) -> str:
    return text if len(text) <= characters else text[: characters - 1] + "…"


def _rest(count: int, of: str = "") -> str:
    return f"… and {count} more{of} in the day's report"


def _fitted(header: str, entries: Iterator[str], count: int, rest: Callable[[int], str], link: str) -> list[str]:
    """`header`, as many of the `count` `entries` as fit the section (LISTED_PER_MESSAGE at most), then how many are
    left out and `link`: those two always fit."""
    lines = [header]
    room = SECTION_CHARACTERS - len(header) - len(link) - len(rest(count)) - 3
    for entry in islice(entries, LISTED_PER_MESSAGE):
        room -= len(entry) + 1
        if room < 0:
            break
        lines.append(entry)
    if len(lines) - 1 < count:
        lines.append(rest(count - (len(lines) - 1)))
    return [*lines, link]


def _counted(alerts: list[Alert]) -> str:
    """How many regressions `alerts` are, and the day's of their agents when others of it went out before."""
    critical = sum(a["severity"] == "critical" for a in alerts)
    warning = len(alerts) - critical
    counted = f"{critical} critical, {warning} warning regression(s)"
    of_agents = {a["agent_id"]: (a.get("day_critical"), a.get("day_warning")) for a in alerts}
    if any(None in counts for counts in of_agents.values()):  # alerts put in before they were counted
        return counted
    day = tuple(sum(counts) for counts in zip(*of_agents.values(), strict=True))
    if day == (critical, warning):
        return counted
    return f"{critical} new critical, {warning} new warning regression(s); {day[0]} critical, {day[1]} warning in all"


def slack_message(alerts: list[Alert], links: MessageLinks, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """A message Slack's incoming webhooks accept (`text` + `blocks`), plus the alert ids for deduplication: a failed
    run, an agent's findings of a day, or a day's findings of many agents (`message_groups`), agent by agent.

    Every value from the data is redacted and escaped as Slack asks (`&`, `<`, `>`), so an id cannot
    `<!channel>`, mention a user or hide a link; only the message's own link is markup, and the section is verbatim,
    so a plain `@here` or URL in the data stays plain text."""
    patterns = tuple(secret_patterns)

    def shown(value: Any, characters: int | None = None) -> str:
        text = redact(str(value), patterns)  # then clipped: a secret cut in half is not recognized
        text = _clipped(text, characters) if characters else text
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

    def finding_line(a: Alert) -> str:
        where = shown(a["episode_id"]) if a["episode_id"] else "all episodes"
        return (
            f"{SEVERITY_ICON.get(a['severity'], '')} *{a['severity'].upper()}* {shown(a['dimension'])} on {where}: "
            f"value {_number(a['value'], a['dimension'])} vs threshold {_number(a['threshold'], a['dimension'])}, "
            f"baseline {_number(a['baseline_value'], a['dimension'])}. {shown(a['message'], MESSAGE_CHARACTERS)}"
        )

    def agent_line(agent: str, severities: Counter[str], dimensions: Counter[str]) -> str:
        icon = SEVERITY_ICON["critical" if severities["critical"] else "warning"]
        most = ", ".join(shown(dimension) for dimension, _ in dimensions.most_common(3))
        return f"{icon} *{shown(agent)}*: {severities['critical']} critical, {severities['warning']} warning ({most})"

    first = alerts[0]
    run_link = f"{links.ui_base_url.rstrip('/')}/runs/{first['run_id']}"
    if first["kind"] == "run_failure":
        text = (
            f":rotating_light: eval_pipeline run failed ({shown(first['job_name'])}, {shown(first['partitions'])}): "
            f"{shown(first['message'])}"
        )
        link = f"<{run_link}|Open the run>"
        lines = [_clipped(text, SECTION_CHARACTERS - len(link) - 1), link]  # the link survives a long error
    else:
        severities: dict[str, Counter[str]] = {}
        dimensions: dict[str, Counter[str]] = {}
        for a in alerts:
            severities.setdefault(a["agent_id"], Counter())[a["severity"]] += 1
            dimensions.setdefault(a["agent_id"], Counter())[a["dimension"]] += 1
        day = pd.Timestamp(first["partition_date"]).date()
        entries: Iterator[str]
        if len(severities) == 1:
            text = f"eval_pipeline: {shown(first['agent_id'])} on {shown(first['partition_date'])}: {_counted(alerts)}"
            agent = None if first["agent_id"] == SOURCE_AGENT else first["agent_id"]  # the source's: no episode is its own
            ordered = sorted(alerts, key=lambda a: (a["severity"] != "critical", a["dimension"], a["episode_id"] or ""))
            entries, count, rest = map(finding_line, ordered), len(ordered), _rest
        else:
            text = f"eval_pipeline: {len(severities)} agents on {shown(first['partition_date'])}: {_counted(alerts)}"
            agent = None
            worst = sorted(severities, key=lambda a: alert_order(a, severities[a]["critical"], severities[a]["warning"]))
            entries = (agent_line(a, severities[a], dimensions[a]) for a in worst)
            count, rest = len(worst), partial(_rest, of=" agents")
        viewer = day_url(links.viewer_base_url, day, Filters(agent=agent))
        link = f"<{viewer}|Open the day's episodes in the viewer> · <{run_link}|Open the run in Dagster>"
        lines = _fitted(f"*{text}*", entries, count, rest, link)
    body = "\n".join(lines)
    return {
        "text": text,
        # verbatim: Slack leaves the data's plain text as it is (no mentions, channel names or URLs parsed in it)
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": body, "verbatim": True}}],
        "finding_ids": [a["alert_id"] for a in alerts],
    }
