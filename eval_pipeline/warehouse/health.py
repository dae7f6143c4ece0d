"""What source health is judged on: episodes, records read and rejected records per day."""

from __future__ import annotations

from datetime import date, timedelta

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse


def source_counts(warehouse: Warehouse, day: date, trailing_days: int) -> pd.DataFrame:
    """`partition_date, episodes, records_read, quarantined` for `day` and the `trailing_days` before it.

    Records read are the source records the episodes were made from (an AutoGen run is many log lines)
    plus those quarantined, so a few bad lines among many weigh as little as they are."""
    return warehouse.read_frame(
        """
        WITH days AS (SELECT CAST(unnest(range($first, $day + 1, INTERVAL 1 DAY)) AS DATE) AS partition_date),
        e AS (SELECT partition_date, count(*) AS n, sum(coalesce(source_records, 1)) AS records FROM episodes
              WHERE partition_date BETWEEN $first AND $day GROUP BY ALL),
        q AS (SELECT partition_date, count(*) AS n FROM quarantine WHERE partition_date BETWEEN $first AND $day GROUP BY ALL)
        SELECT d.partition_date, coalesce(e.n, 0) AS episodes, coalesce(e.records, 0) + coalesce(q.n, 0) AS records_read,
               coalesce(q.n, 0) AS quarantined
        FROM days d LEFT JOIN e USING (partition_date) LEFT JOIN q USING (partition_date)
        ORDER BY d.partition_date
        """,
        {"day": day, "first": day - timedelta(days=trailing_days)},
    )
