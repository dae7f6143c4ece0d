"""Baselines from the source's days before the warehouse's first: a task first seen on an evaluated day is compared
with its earliest (or latest) successful run of those days, which are read, never written or scored."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date

from eval_pipeline.episodes.records import RawRecords
from eval_pipeline.warehouse.baselines import SNAPSHOT, UNCOVERED
from eval_pipeline.warehouse.connection import Warehouse, of_agent
from eval_pipeline.warehouse.ingest import canonical_episodes, drop_canonical
from eval_pipeline.warehouse.rows import one_row


def write_history_baselines(
    warehouse: Warehouse,
    day: date,
    history: Iterable[tuple[date, Iterable[RawRecords]]],
    policy: str,
    agent_id: str | None = None,
) -> int:
    """Baselines (`origin = 'history'`, valid from `day`) for `day`'s tasks that have none, from the source's
    earlier days: the earliest successful run of each in `history` (`rolling`: the latest). Those days are
    read, never written or scored. Replaces what `day` established this way before; returns how many."""
    with warehouse.transaction() as con:
        con.execute(
            f"DELETE FROM baselines WHERE partition_date = $day AND origin = 'history' AND {of_agent()}",
            {"day": day, "agent": agent_id},
        )
        con.execute(f"CREATE OR REPLACE TEMP TABLE _uncovered AS {UNCOVERED}", {"day": day, "agent": agent_id})
        con.execute(f"CREATE OR REPLACE TEMP TABLE _history AS SELECT agent_id, task_id, episode_id, started_at, "
                    f"partition_date AS recorded_on, {SNAPSHOT} FROM episodes LIMIT 0")  # fmt: skip
        for earlier, records in history:
            if not canonical_episodes(con, earlier, records):
                continue  # the source has no record of that day
            con.execute(
                f"INSERT INTO _history SELECT agent_id, task_id, episode_id, started_at, partition_date, {SNAPSHOT} "
                "FROM _canonical WHERE status = 'success' AND (agent_id, task_id) IN (SELECT (agent_id, task_id) FROM _uncovered)"
            )
        added = one_row(
            con,
            f"""INSERT INTO baselines BY NAME
            SELECT agent_id, task_id, episode_id, false AS pinned, $day AS valid_from, $day AS partition_date,
                   recorded_on, $policy AS policy, 'history' AS origin, {SNAPSHOT}
            FROM _history
            QUALIFY row_number() OVER (
                PARTITION BY agent_id, task_id
                ORDER BY CASE WHEN $policy = 'rolling' THEN epoch(started_at) ELSE -epoch(started_at) END DESC, episode_id
            ) = 1""",
            {"day": day, "policy": policy},
        )[0]
        con.execute("DROP TABLE _history; DROP TABLE _uncovered")
        drop_canonical(con)
    return int(added)
