"""A fleet's bad night, as `eval-pipeline run` announces it (a real webhook receiver on 127.0.0.1) and the Dagster UI
shows it (the day's real materialization of `eval_report`).

A platform team runs 2,000 agents; a model update raised the cost of 534 of them one night. Their Slack channel got
534 messages, one per agent, which Slack's incoming webhooks take at about one a second; and each night's report
summary in the Dagster UI (which the instance keeps for good) was 600 KB of Markdown, every table whole, written
twice (the materialization and its log line). Now a day's findings of more than DIGEST_AGENTS agents travel as one
message naming the worst agents, fewer still one per agent, and the summary shows each table's first SUMMARY_ROWS
rows, the agents with the most alerts first; the report files keep every row. The HTML report's trend charts drew
a line and a legend per agent (3 MB of the 5 MB page, unreadable): they now draw the CHARTED_AGENTS with the most
alerts.
"""

import json
import re
from datetime import date, timedelta

import dagster as dg

from eval_pipeline.alerts.messages import DIGEST_AGENTS
from eval_pipeline.cli import main
from eval_pipeline.reports.daily import SUMMARY_ROWS
from eval_pipeline.reports.html import CHARTED_AGENTS
from eval_pipeline_tests.fake_store import make_episode

FIRST = date(2026, 11, 1)
AGENTS = [f"fleet-{n:03d}" for n in range(DIGEST_AGENTS * 3)]
SLOWER = AGENTS[-3:]  # on the fleet's night these are slower too: two critical findings each, the others one


def write_nights(directory, costlier: dict[date, list[str]]) -> None:
    """Each agent runs one task once a night; on the nights of `costlier`, those agents' runs cost three times as much
    (and SLOWER's take three times as long)."""
    directory.mkdir(exist_ok=True)
    for offset in range(3):
        day = FIRST + timedelta(days=offset)
        lines = []
        for n, agent in enumerate(AGENTS):
            episode = make_episode(f"{day}-{agent}", f"{day}T01:{n % 60:02d}:00Z", agent_id=agent, metadata={"task_id": "t"})
            if agent in costlier.get(day, []):
                slower = 3 if agent in SLOWER else 1
                for step in episode["steps"]:
                    step["cost_usd"], step["duration_ms"] = step["cost_usd"] * 3, step["duration_ms"] * slower
                episode["total_cost_usd"], episode["total_duration_ms"] = (
                    episode["total_cost_usd"] * 3,
                    episode["total_duration_ms"] * slower,
                )
            lines.append(json.dumps(episode))
        (directory / f"{day}.jsonl").write_text("\n".join(lines) + "\n")


def findings(day: date, capsys) -> list[dict]:
    capsys.readouterr()
    sql = f"SELECT finding_id, agent_id, severity FROM findings WHERE partition_date = '{day}' AND severity <> 'info'"
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def ui_summary(root, day: date) -> str:
    """The report summary the Dagster UI shows on `eval_report`'s materialization of `day`."""
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey("eval_report"), asset_partitions=[day.isoformat()])
        (record,) = instance.fetch_materializations(filter_, limit=1).records
    return record.asset_materialization.metadata["summary"].value


def agent_rows(markdown: str) -> list[str]:
    return [line.split("|")[1].strip() for line in markdown.splitlines() if line.startswith("| fleet-")]


def test_a_night_that_regressed_a_fleet_is_one_message_and_a_bounded_summary_and_a_few_agents_are_one_message_each(
    project_env, monkeypatch, webhook, capsys
):
    second, third = FIRST + timedelta(days=1), FIRST + timedelta(days=2)
    write_nights(project_env / "episodes", {second: AGENTS, third: AGENTS[:2]})
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    assert main(["run", "--start", str(FIRST), "--end", str(third), "--fail-on", "never"]) == 0
    out = capsys.readouterr().out

    fleet, few = findings(second, capsys), findings(third, capsys)
    assert {f["agent_id"] for f in fleet} == set(AGENTS) and {f["agent_id"] for f in few} == set(AGENTS[:2])
    assert f"alerts: {len(fleet) + len(few)} delivered to the webhook" in out  # every finding, each once
    assert len(webhook.messages) == 3  # the fleet's night, then the two agents of the next
    digest, *per_agent = webhook.messages
    assert sorted(digest["finding_ids"]) == sorted(f["finding_id"] for f in fleet)
    critical = sum(f["severity"] == "critical" for f in fleet)
    assert digest["text"] == (
        f"eval_pipeline: {len(AGENTS)} agents on {second}: {critical} critical, {len(fleet) - critical} warning regression(s)"
    )
    body = digest["blocks"][0]["text"]["text"]
    listed = [line.split("*")[1] for line in body.splitlines() if line.startswith(":red_circle: *fleet-")]
    assert listed == SLOWER + AGENTS[:17]  # the worst first, then by name
    assert f"… and {len(AGENTS) - 20} more agents in the day's report" in body and len(body) <= 3000
    assert f"<http://127.0.0.1:8765/days/{second}|Open the day's episodes in the viewer> · <http://127.0.0.1:3000/runs/" in body
    assert sorted(m["text"].split(" on ")[0] for m in per_agent) == [f"eval_pipeline: {agent}" for agent in AGENTS[:2]]
    assert sorted(i for m in per_agent for i in m["finding_ids"]) == sorted(f["finding_id"] for f in few)

    summary = ui_summary(project_env, second)
    assert agent_rows(summary) == SLOWER + AGENTS[: SUMMARY_ROWS - len(SLOWER)]
    assert f"… and {len(AGENTS) - SUMMARY_ROWS} more agents in the report." in summary
    assert "## Regression Alerts" in summary and "## Episode Scores" not in summary
    report = (project_env / "reports" / f"eval-report-{second}.md").read_text()
    assert sorted(agent_rows(report.split("## Agents")[1].split("##")[0])) == AGENTS  # the report keeps every agent
    page = (project_env / "reports" / f"eval-report-{second}.html").read_text()
    charted = re.findall(r'class="legend">(fleet-\d+)<', page)  # each of the four trend charts' legend
    assert charted == 4 * sorted(SLOWER + AGENTS[: CHARTED_AGENTS - len(SLOWER)])
    assert f"{CHARTED_AGENTS} of {len(AGENTS)} agents drawn: those with the most alerts today." in page
    trend = json.loads((project_env / "reports" / f"eval-report-{second}.json").read_text())["trend"]
    assert sorted(trend["agents"]) == AGENTS  # every agent's series, for whoever draws more
    few_summary, few_report = ui_summary(project_env, third), (project_env / "reports" / f"eval-report-{third}.md").read_text()
    assert agent_rows(few_summary)[:2] == AGENTS[:2] and len(agent_rows(few_summary)) == SUMMARY_ROWS
    regressions, resolved = few_report.split("## Regression Alerts")[1].split("Resolved since yesterday:")
    assert few_summary.split("## Regression Alerts")[1].startswith(regressions)  # fewer rows than the cap: whole
    recovered = resolved.count("\n- ")  # the fleet's night resolved, but for the two agents still costlier
    assert recovered > SUMMARY_ROWS and f"… and {recovered - SUMMARY_ROWS} more resolved in the report." in few_summary
