"""A day's findings and the pass verdicts they decide, written together."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, replace_partition


def write_findings(warehouse: Warehouse, day: date, findings: pd.DataFrame, verdicts: pd.DataFrame, agent_id: str | None) -> int:
    """Replace the day's findings and set `scores.passed` from `verdicts` (episode_id, passed), in one transaction."""
    with warehouse.transaction() as con:
        written = replace_partition(con, "findings", day, findings, agent_id)
        con.register("_verdicts", verdicts.astype({"passed": "boolean"}))
        con.execute(
            "UPDATE scores SET passed = v.passed FROM _verdicts v "
            "WHERE scores.partition_date = ? AND scores.episode_id = v.episode_id",
            [day],
        )
        con.unregister("_verdicts")
        return written
