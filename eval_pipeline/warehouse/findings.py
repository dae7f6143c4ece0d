"""A day's findings."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition


def write_findings(warehouse: Warehouse, day: date, findings: pd.DataFrame, agent_id: str | None) -> int:
    """Replace the day's findings (one agent's, when scoped) in one transaction."""
    with warehouse.transaction() as con:
        return replace_partition(con, "findings", day, findings, agent_id)
