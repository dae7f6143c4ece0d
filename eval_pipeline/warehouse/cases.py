"""What a case set's runs came to: each case's verdict over its trials, and each category's, per run of an agent."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, frame_of

# One row per day, agent, capture run and case: the case passed when every trial did, failed when one did not,
# else has no verdict; what failed is its first failed trial's failed assertions, else that trial's verdict reason.
# A capture kept before runs had ids is one run without an id, labelled by its agent.
_PER_CASE = """
WITH trials AS (
    SELECT s.partition_date, s.agent_id, coalesce(e.metadata ->> '$.capture_run', '') AS capture_run,
           coalesce(e.metadata ->> '$.label', s.agent_id) AS label, s.task_id, e.category, e.trial, e.started_at,
           s.passed, s.verdict_reason,
           (SELECT string_agg(a.assertion || ': ' || coalesce(a.detail, 'failed'), '; ' ORDER BY a.assertion)
              FROM assertions a
             WHERE a.episode_id = s.episode_id AND a.partition_date = s.partition_date AND NOT a.passed) AS failed_assertions
      FROM scores s JOIN episodes e USING (episode_id, partition_date)
     WHERE list_contains($days, s.partition_date) AND list_contains($agents, s.agent_id) AND list_contains($cases, s.task_id)
)
SELECT partition_date, agent_id, capture_run, any_value(label) AS label, task_id AS case_id, any_value(category) AS category,
       CASE WHEN bool_or(NOT passed) THEN false WHEN count(passed) = count(*) THEN true END AS passed,
       count(*) FILTER (WHERE passed) AS trials_passed, count(*) AS trials,
       arg_min(coalesce(failed_assertions, verdict_reason), trial) FILTER (WHERE NOT passed) AS failed,
       min(min(started_at)) OVER (PARTITION BY partition_date, agent_id, capture_run) AS run_started,
       list_position($cases, task_id) AS position
  FROM trials
 GROUP BY partition_date, agent_id, capture_run, task_id
"""


@dataclass(frozen=True)
class CaseResults:
    """Rows keyed by partition_date, agent_id, capture_run ('' for a capture kept without one) and label, by day,
    agent and run (oldest first). `cases`: case_id, category, passed (None: no verdict), trials_passed, trials,
    failed (what failed), in the case set's order; `categories`: category, cases, passed, failed, pass_rate (of
    the cases with a verdict), in the order of their first case."""

    cases: pd.DataFrame
    categories: pd.DataFrame


def case_results(warehouse: Warehouse, days: list[date], agent_ids: list[str], case_ids: list[str]) -> CaseResults:
    """The verdicts of the agents' runs of the cases `case_ids` (a case set, in its order) on `days`."""
    params = {"days": days, "agents": agent_ids, "cases": case_ids}
    order = "partition_date, agent_id, run_started, capture_run"
    with warehouse.connect(read_only=True) as con:
        cases = frame_of(
            con.execute(
                f"""
                SELECT partition_date, agent_id, capture_run, label, case_id, category, passed, trials_passed, trials, failed
                  FROM ({_PER_CASE}) ORDER BY {order}, position
                """,
                params,
            )
        )
        categories = frame_of(
            con.execute(
                f"""
                SELECT partition_date, agent_id, capture_run, label, coalesce(category, '(uncategorized)') AS category,
                       count(*) AS cases, count(*) FILTER (WHERE passed) AS passed, count(*) FILTER (WHERE NOT passed) AS failed,
                       count(*) FILTER (WHERE passed) / nullif(count(passed), 0) AS pass_rate
                  FROM ({_PER_CASE})
                 GROUP BY partition_date, agent_id, capture_run, label, run_started, category
                 ORDER BY {order}, min(position)
                """,
                params,
            )
        )
    return CaseResults(cases, categories)
