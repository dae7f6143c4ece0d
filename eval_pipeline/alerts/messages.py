"""Alerts as Slack-compatible webhook messages: one per agent and day, or one per failed run."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from eval_pipeline.alerts.outbox import Alert
from eval_pipeline.redaction import redact
from eval_pipeline.regression.findings import FINDING_COLUMNS
from eval_pipeline.regression.source_health import SOURCE_AGENT
from eval_pipeline.viewer.links import day_url
from eval_pipeline.warehouse.viewer import Filters

FINDING_FIELDS = [column for column in FINDING_COLUMNS if column != "config_version"]
LISTED_PER_MESSAGE = 20  # beyond these (or what fits), a message counts the rest
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


def group_key(alert: Alert) -> tuple:
    """Findings travel per agent and day; each failed run alone."""
    if alert["kind"] == "finding":
        return ("finding", alert["agent_id"], str(alert["partition_date"]))
    return ("run", alert["run_id"])


def _number(value: Any, dimension: str) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1f}%" if dimension.endswith("_delta") else f"{value:.2f}"


def _clipped(text: str, characters: int) -> str:
    return text if len(text) <= characters else text[: characters - 1] + "…"


def _rest(count: int) -> str:
    return f"… and {count} more in the day's report"


def slack_message(alerts: list[Alert], links: MessageLinks, secret_patterns: Iterable[str]) -> dict[str, Any]:
    """A message Slack's incoming webhooks accept (`text` + `blocks`), plus the alert ids for deduplication.

    Every value from the data is redacted and escaped as Slack asks (`&`, `<`, `>`), so an id cannot
    `<!channel>`, mention a user or hide a link; only the message's own link is markup, and the section is verbatim,
    so a plain `@here` or URL in the data stays plain text."""
    patterns = tuple(secret_patterns)

    def shown(value: Any, characters: int | None = None) -> str:
        text = redact(str(value), patterns)  # then clipped: a secret cut in half is not recognized
        text = _clipped(text, characters) if characters else text
        return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

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
        critical = sum(a["severity"] == "critical" for a in alerts)
        counted = f"{critical} critical, {len(alerts) - critical} warning regression(s)"
        day = (first.get("day_critical"), first.get("day_warning"))  # None in alerts put in before they were counted
        if None not in day and day != (critical, len(alerts) - critical):  # the day's others went out before
            counted = (
                f"{critical} new critical, {len(alerts) - critical} new warning regression(s); "
                f"{day[0]} critical, {day[1]} warning in all"
            )
        text = f"eval_pipeline: {shown(first['agent_id'])} on {shown(first['partition_date'])}: {counted}"
        agent = None if first["agent_id"] == SOURCE_AGENT else first["agent_id"]  # the source's: no episode is its own
        viewer = day_url(links.viewer_base_url, pd.Timestamp(first["partition_date"]).date(), Filters(agent=agent))
        link = f"<{viewer}|Open the day's episodes in the viewer> · <{run_link}|Open the run in Dagster>"
        lines = [f"*{text}*"]
        # the count of the rest and the links always fit: the lines listed are what room is left
        room = SECTION_CHARACTERS - len(lines[0]) - len(link) - len(_rest(len(alerts))) - 3
        ordered = sorted(alerts, key=lambda a: (a["severity"] != "critical", a["dimension"], a["episode_id"] or ""))
        for a in ordered[:LISTED_PER_MESSAGE]:
            where = shown(a["episode_id"]) if a["episode_id"] else "all episodes"
            line = (
                f"{SEVERITY_ICON.get(a['severity'], '')} *{a['severity'].upper()}* {shown(a['dimension'])} on {where}: "
                f"value {_number(a['value'], a['dimension'])} vs threshold {_number(a['threshold'], a['dimension'])}, "
                f"baseline {_number(a['baseline_value'], a['dimension'])}. {shown(a['message'], MESSAGE_CHARACTERS)}"
            )
            room -= len(line) + 1
            if room < 0:
                break
            lines.append(line)
        if len(lines) - 1 < len(ordered):
            lines.append(_rest(len(ordered) - (len(lines) - 1)))
        lines.append(link)
    body = "\n".join(lines)
    return {
        "text": text,
        # verbatim: Slack leaves the data's plain text as it is (no mentions, channel names or URLs parsed in it)
        "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": body, "verbatim": True}}],
        "finding_ids": [a["alert_id"] for a in alerts],
    }
