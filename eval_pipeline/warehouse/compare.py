"""The runs a head-to-head comparison reads: finished episodes matching a selector, with their scores."""

from __future__ import annotations

import pandas as pd

from eval_pipeline.regression.compare import Selector
from eval_pipeline.warehouse.connection import Warehouse

_RUNS = """
SELECT e.episode_id, e.partition_date, e.agent_id, e.task_id, coalesce(r.model, e.model) AS model,
       e.metadata ->> '$.label' AS label, coalesce(r.status, e.status) AS status,
       coalesce(r.total_cost_usd, e.total_cost_usd) AS total_cost_usd,
       coalesce(r.total_duration_ms, e.total_duration_ms) AS total_duration_ms,
       s.weighted_score, s.correctness, s.passed
FROM episodes e
LEFT JOIN replays r USING (episode_id, partition_date)
LEFT JOIN scores s USING (episode_id, partition_date)
WHERE e.status <> 'running'
  AND ($first IS NULL OR e.partition_date BETWEEN $first AND $last)
  AND ($agent IS NULL OR e.agent_id = $agent)
  AND ($model IS NULL OR coalesce(r.model, e.model) = $model)
  AND ($label IS NULL OR e.metadata ->> '$.label' = $label)
ORDER BY e.task_id, e.episode_id
"""


def selected_runs(warehouse: Warehouse, selector: Selector) -> pd.DataFrame:
    return warehouse.read_frame(_RUNS, selector.model_dump())
