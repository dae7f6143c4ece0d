"""What the day's report reads, and the `reports` row it leaves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import pandas as pd

from eval_pipeline import jsonout
from eval_pipeline.reports.document import Report, ReportData
from eval_pipeline.warehouse.connection import Warehouse, replace_partition
from eval_pipeline.warehouse.labels import day_labels
from eval_pipeline.warehouse.rows import one_row


def report_inputs(warehouse: Warehouse, day: date, trend_days: int, agent_id: str | None = None) -> ReportData:
    """Everything the day's report shows, only `agent_id`'s when given (a run narrowed to one agent reports that agent
    alone, whoever else shares the warehouse); `agent_daily` over the `trend_days` partitions ending on `day`."""
    mine = "($agent IS NULL OR agent_id = $agent)"
    with warehouse.connect(read_only=True) as con:
        params = {"day": day, "agent": agent_id}
        scores = con.execute(
            "SELECT s.*, e.category, r.final_output, o.origin AS baseline_origin "
            "FROM current_scores s JOIN episodes e USING (episode_id, partition_date) "
            "LEFT JOIN replays r USING (episode_id, partition_date) "
            "LEFT JOIN (SELECT agent_id, task_id, episode_id, arg_max(origin, established_at) AS origin FROM baselines "
            "GROUP BY ALL) o ON o.episode_id = s.baseline_episode_id AND o.agent_id = s.agent_id AND o.task_id = s.task_id "
            "WHERE s.partition_date = $day AND ($agent IS NULL OR s.agent_id = $agent)",
            params,
        ).df()
        trend = con.execute(
            f"SELECT * FROM agent_daily WHERE partition_date BETWEEN $first AND $day AND {mine} ORDER BY ALL",
            {**params, "first": day - timedelta(days=trend_days - 1)},
        ).df()
        previous = con.execute("SELECT summary FROM reports WHERE partition_date = $day - 1", {"day": day}).fetchone()
        previous_summary = json.loads(previous[0]) if previous and previous[0] else None
        if previous_summary is not None and previous_summary.get("agent_id") != agent_id:
            previous_summary = None  # a day reported for other agents is no yardstick
        findings = con.execute(f"SELECT * FROM findings WHERE partition_date = $day AND {mine}", params).df()
        previous_findings = con.execute(f"SELECT * FROM findings WHERE partition_date = $day - 1 AND {mine}", params).df()
        superseded = f"SELECT episode_id FROM scores WHERE partition_date = $day AND superseded AND {mine}"
        statuses = con.execute(
            f"SELECT status, count(*) FROM episodes WHERE partition_date = $day AND {mine} "
            f"AND episode_id NOT IN ({superseded}) GROUP BY ALL",
            params,
        ).fetchall()
        superseded_count = one_row(con, f"SELECT count(*) FROM ({superseded})", params)[0]
        quarantined = one_row(con, f"SELECT count(*) FROM quarantine WHERE partition_date = $day AND {mine}", params)[0]
        live, reused = one_row(
            con,
            f"SELECT count(*), count(*) FILTER (WHERE cached) FROM replays WHERE partition_date = $day AND mode = 'live' "
            f"AND {mine}",
            params,
        )
        judgements = con.execute(f"SELECT * FROM judgements WHERE partition_date = $day AND {mine}", params).df()
        issues = con.execute(
            f'SELECT episode_id, "check", severity, detail FROM issues WHERE partition_date = $day AND {mine}', params
        ).df()
        pairwise = con.execute(f"SELECT * FROM pairwise_judgements WHERE partition_date = $day AND {mine}", params).df()
        pass_at_k = con.execute(f"SELECT * FROM pass_at_k WHERE partition_date = $day AND {mine}", params).df()
        task_trials = con.execute(f"SELECT * FROM task_trials WHERE partition_date = $day AND {mine}", params).df()
        failed_trials = con.execute(_FAILED_TRIALS, params).df()
        labels = day_labels(con, day)
    return ReportData(
        day=day,
        scores=scores,
        findings=findings,
        previous_findings=previous_findings,
        status_counts=dict(statuses),
        superseded=int(superseded_count),
        quarantined=int(quarantined),
        judgements=judgements,
        issues=issues,
        pairwise=pairwise,
        pass_at_k=pass_at_k,
        task_trials=task_trials,
        failed_trials=failed_trials,
        trend=trend,
        previous_summary=previous_summary,
        live_replays=int(live),
        reused_replays=int(reused),
        agent_id=agent_id,
        labels=labels,
    )


# Trials that failed their case, with what a person needs to check the grader's call.
_FAILED_TRIALS = """
SELECT s.episode_id, s.agent_id, s.task_id, e.trial, e.metadata->>'hint' AS hint,
       (SELECT st.input FROM episode_steps st
         WHERE st.episode_id = s.episode_id AND st.partition_date = s.partition_date AND st.step_type = 'llm_call'
         ORDER BY st.step_index LIMIT 1) AS input,
       coalesce(r.final_output, e.final_output) AS output,
       (SELECT string_agg(a.assertion || ': ' || coalesce(a.detail, 'failed'), '; ' ORDER BY a.assertion)
          FROM assertions a
         WHERE a.episode_id = s.episode_id AND a.partition_date = s.partition_date AND NOT a.passed) AS reasoning
  FROM current_scores s JOIN episodes e USING (episode_id, partition_date)
  LEFT JOIN replays r USING (episode_id, partition_date)
 WHERE s.partition_date = $day AND s.case_passed = false AND ($agent IS NULL OR s.agent_id = $agent)
 ORDER BY s.episode_id
"""


def write_report_row(warehouse: Warehouse, day: date, paths: dict[str, Path], report: Report) -> None:
    row = pd.DataFrame(
        [
            {
                "partition_date": day,
                "json_path": str(paths["json"]),
                "markdown_path": str(paths["md"]),
                "html_path": str(paths["html"]),
                "summary": jsonout.dumps(report["summary"]),
                "config_version": report["config_version"],
            }
        ]
    )
    with warehouse.transaction() as con:
        replace_partition(con, "reports", day, row)


def report_rows(warehouse: Warehouse, days: list[date]) -> pd.DataFrame:
    return warehouse.read_frame(
        "SELECT * FROM reports WHERE list_contains($days, partition_date) ORDER BY partition_date", {"days": days}
    )


@dataclass(frozen=True)
class RunOutcome:
    """What decides a run's exit code: its failed episodes and its findings per severity, within its selection."""

    failed_episodes: int
    findings: dict[str, int]


def run_outcome(warehouse: Warehouse, days: list[date], agent_id: str | None = None) -> RunOutcome:
    """The failed verdicts and findings of `days`, only `agent_id`'s when given."""
    params = {"days": days, "agent": agent_id}
    scope = "list_contains($days, partition_date) AND ($agent IS NULL OR agent_id = $agent)"
    with warehouse.session():
        failed = warehouse.read_frame(f"SELECT count(*) AS n FROM current_scores WHERE {scope} AND passed = false", params)
        rows = warehouse.read_frame(f"SELECT severity, count(*) AS n FROM findings WHERE {scope} GROUP BY ALL", params)
    return RunOutcome(int(failed["n"].iloc[0]), dict(zip(rows["severity"], rows["n"].astype(int), strict=False)))


def findings_digest(warehouse: Warehouse, days: list[date]) -> pd.DataFrame:
    """Findings grouped by day, severity, agent, task and dimension, with one message each."""
    return warehouse.read_frame(
        """
        SELECT partition_date, severity, agent_id, coalesce(task_id, '(all episodes)') AS task_id, dimension,
               count(episode_id) AS episodes, min(message) AS message
        FROM findings WHERE list_contains($days, partition_date)
        GROUP BY partition_date, severity, agent_id, task_id, dimension
        ORDER BY partition_date, severity, agent_id, task_id, dimension
        """,
        {"days": days},
    )


def agents_seen(warehouse: Warehouse, days: list[date]) -> list[str]:
    frame = warehouse.read_frame(
        "SELECT DISTINCT agent_id FROM episodes WHERE list_contains($days, partition_date) ORDER BY 1", {"days": days}
    )
    return list(frame["agent_id"])


def junit_inputs(warehouse: Warehouse, days: list[date], agent_id: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The days' scored episodes and their findings, as JUnit XML reports them."""
    params = {"days": days, "agent": agent_id}
    scope = "list_contains($days, partition_date) AND ($agent IS NULL OR agent_id = $agent)"
    with warehouse.session():
        scores = warehouse.read_frame(
            f"SELECT partition_date, agent_id, task_id, episode_id, passed, verdict_reason FROM current_scores WHERE {scope}",
            params,
        )
        findings = warehouse.read_frame(
            f"SELECT partition_date, agent_id, episode_id, dimension, severity, message FROM findings WHERE {scope}", params
        )
    return scores, findings
