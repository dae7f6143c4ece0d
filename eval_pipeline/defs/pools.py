"""The Dagster pools the pipeline's steps claim a slot in, across all runs of an instance.

Dagster creates a pool's limit on the first claim of a step in it. On Postgres, two runs claiming
a new pool at the same moment make one of them fail (dagster 1.13: the losing INSERT's
IntegrityError aborts the transaction its fallback UPDATE then runs in). So every process that
starts runs creates the pools first (`create_pools`), where losing that race is harmless.

A run that ended can leave a slot taken (a step claimed it as Ctrl-C canceled the run), and every later
step of that pool, in any run, would wait for ever; the daemon frees such slots, and without one
`release_slots_of_ended_runs` does, before each run.
"""

from __future__ import annotations

import dagster as dg
from dagster._core.storage.event_log.base import PoolLimit
from sqlalchemy.exc import DBAPIError

LLM_POOL = "llm"  # steps that call a model (live `replays`, `judgements`): `dagster instance concurrency set llm N`
WAREHOUSE_POOL = "warehouse"  # the other steps that write the warehouse: one at a time on a file, a few on a lake
POOLS = (LLM_POOL, WAREHOUSE_POOL)


def create_pools(instance: dg.DagsterInstance) -> None:
    """Give each pool the instance's default limit unless it has its own, as Dagster's first claim would, and as many
    slots as its limit.

    A pool can have its limit without its slots: Dagster's `wipe` of a SQLite instance (`dagster run wipe`) deletes
    the slots and keeps the limits, and every step of the pool would then wait for ever for a slot.
    """
    storage, default = instance.event_log_storage, instance.global_op_concurrency_default_limit
    if default is None:
        return

    def limit_of(pool: str) -> PoolLimit | None:
        return next((limit for limit in storage.get_pool_limits() if limit.name == pool), None)

    def settled(pool: str, limit: PoolLimit | None) -> bool:
        return (
            limit is not None
            and (not limit.from_default or limit.limit == default)
            and storage.get_concurrency_info(pool).slot_count == limit.limit
        )

    for pool in POOLS:
        limit = limit_of(pool)
        if settled(pool, limit):
            continue
        try:
            if limit is not None and not limit.from_default:
                storage.set_concurrency_slots(pool, limit.limit)
            else:
                storage.initialize_concurrency_limit_to_default(pool)
        except DBAPIError:
            if not settled(pool, limit_of(pool)):  # another process did not create it meanwhile: a real fault
                raise


def release_slots_of_ended_runs(instance: dg.DagsterInstance) -> list[str]:
    """Free the pool slots and queued claims of runs that ended (or are gone); the ids of those runs."""
    storage = instance.event_log_storage
    holders: set[str] = set()
    for info in storage.get_concurrency_infos(list(POOLS)).values():
        holders |= info.active_run_ids | {step.run_id for step in info.pending_steps}
    ended = []
    for run_id in sorted(holders):
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            ended.append(run_id)
    return ended
