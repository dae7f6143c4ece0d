"""What a case set's runs came to: each case's verdict over its trials, and each category's."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse

# One row per day and case: it passed when every trial did, failed when one did not, else has no verdict;
# what failed is the first failed trial's failed assertions, or its verdict's reason when no assertion failed.
_PER_CASE = """
WITH trials AS (
    SELECT s.partition_date, s.task_id, e.category, e.trial, s.passed, s.verdict_reason,
           (SELECT string_agg(a.assertion || ': ' || coalesce(a.detail, 'failed'), '; ' ORDER BY a.assertion)
              FROM assertions a
             WHERE a.episode_id = s.episode_id AND a.partition_date = s.partition_date AND NOT a.passed) AS failed_assertions
      FROM scores s JOIN episodes e USING (episode_id, partition_date)
     WHERE list_contains($days, s.partition_date) AND s.agent_id = $agent AND list_contains($cases, s.task_id)
)
SELECT partition_date, task_id AS case_id, any_value(category) AS category,
       CASE WHEN bool_or(NOT passed) THEN false WHEN count(passed) = count(*) THEN true END AS passed,
       count(*) FILTER (WHERE passed) AS trials_passed, count(*) AS trials,
       arg_min(coalesce(failed_assertions, verdict_reason), trial) FILTER (WHERE NOT passed) AS failed
  FROM trials
 GROUP BY partition_date, task_id
"""


@dataclass(frozen=True)
class CaseResults:
    """`cases`: partition_date, case_id, category, passed (None: no verdict), trials_passed, trials, failed (what
    failed), in the case set's order; `categories`: partition_date, category, cases, passed, failed, pass_rate
    (of the cases with a verdict), in the order of their first case."""

    cases: pd.DataFrame
    categories: pd.DataFrame


def case_results(warehouse: Warehouse, days: list[date], agent_id: str, case_ids: list[str]) -> CaseResults:
    """The verdicts of `agent_id`'s runs of the cases `case_ids` (a case set, in its order) on `days`."""
    params = {"days": days, "agent": agent_id, "cases": case_ids}
    with warehouse.connect(read_only=True) as con:
        cases = con.execute(f"{_PER_CASE} ORDER BY partition_date, list_position($cases, case_id)", params).df()
        categories = con.execute(
            f"""
            SELECT partition_date, coalesce(category, '(uncategorized)') AS category, count(*) AS cases,
                   count(*) FILTER (WHERE passed) AS passed, count(*) FILTER (WHERE NOT passed) AS failed,
                   count(*) FILTER (WHERE passed) / nullif(count(passed), 0) AS pass_rate
              FROM ({_PER_CASE})
             GROUP BY partition_date, category
             ORDER BY partition_date, min(list_position($cases, case_id))
            """,
            params,
        ).df()
    return CaseResults(cases, categories)
