"""A fleet's night of regressions as one alert, through `eval-pipeline run` and a real webhook receiver on 127.0.0.1.

A platform team runs 2,000 agents; a model update raised the cost of 541 of them one night, and their Slack channel got
541 messages, one per agent, sent about one a second by Slack's incoming webhooks. A day's findings of more than
DIGEST_AGENTS agents now travel as one message that names the worst agents; fewer still travel per agent.
"""

import json
from datetime import date, timedelta

from eval_pipeline.alerts.messages import DIGEST_AGENTS
from eval_pipeline.cli import main
from eval_pipeline_tests.fake_store import make_episode

FIRST = date(2026, 11, 1)
AGENTS = [f"fleet-{n:03d}" for n in range(DIGEST_AGENTS * 3)]


def write_nights(directory, costlier: dict[date, list[str]]) -> None:
    """Each agent runs one task once a night; on the nights of `costlier`, those agents' runs cost three times as much."""
    directory.mkdir(exist_ok=True)
    for offset in range(3):
        day = FIRST + timedelta(days=offset)
        lines = []
        for n, agent in enumerate(AGENTS):
            episode = make_episode(f"{day}-{agent}", f"{day}T01:{n % 60:02d}:00Z", agent_id=agent, metadata={"task_id": "t"})
            if agent in costlier.get(day, []):
                for step in episode["steps"]:
                    step["cost_usd"] *= 3
                episode["total_cost_usd"] *= 3
            lines.append(json.dumps(episode))
        (directory / f"{day}.jsonl").write_text("\n".join(lines) + "\n")


def findings(day: date, capsys) -> list[dict]:
    capsys.readouterr()
    sql = f"SELECT finding_id, agent_id, severity FROM findings WHERE partition_date = '{day}' AND severity <> 'info'"
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_night_that_regressed_most_of_a_fleet_is_one_message_and_a_few_agents_are_one_each(
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
    listed = [line for line in body.splitlines() if line.startswith(":red_circle: *fleet-")]
    assert listed[0].startswith(":red_circle: *fleet-000*: ") and "cost_delta" in listed[0]  # the worst first, then by name
    assert len(listed) == 20 and f"… and {len(AGENTS) - 20} more agents in the day's report" in body and len(body) <= 3000
    assert f"<http://127.0.0.1:8765/days/{second}|Open the day's episodes in the viewer> · <http://127.0.0.1:3000/runs/" in body

    assert sorted(m["text"].split(" on ")[0] for m in per_agent) == [f"eval_pipeline: {agent}" for agent in AGENTS[:2]]
    assert sorted(i for m in per_agent for i in m["finding_ids"]) == sorted(f["finding_id"] for f in few)
