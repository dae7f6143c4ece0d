"""The Dagster pools the pipeline's steps claim a slot in, across all runs of an instance.

Dagster creates a pool's limit on the first claim of a step in it. On Postgres, two runs claiming
a new pool at the same moment make one of them fail (dagster 1.13: the losing INSERT's
IntegrityError aborts the transaction its fallback UPDATE then runs in). So every process that
starts runs creates the pools first (`create_pools`), where losing that race is harmless.
"""

from __future__ import annotations

import dagster as dg
from sqlalchemy.exc import DBAPIError

LLM_POOL = "llm"  # steps that call a model (live `replays`, `judgements`): `dagster instance concurrency set llm N`
WAREHOUSE_POOL = "warehouse"  # the other steps that write the warehouse: one at a time on a file, a few on a lake
POOLS = (LLM_POOL, WAREHOUSE_POOL)


def create_pools(instance: dg.DagsterInstance) -> None:
    """Give each pool the instance's default limit unless it has its own, as Dagster's first claim would."""
    storage, default = instance.event_log_storage, instance.global_op_concurrency_default_limit
    if default is None:
        return

    def settled(pool: str) -> bool:
        limit = next((limit for limit in storage.get_pool_limits() if limit.name == pool), None)
        return limit is not None and (not limit.from_default or limit.limit == default)

    for pool in POOLS:
        if settled(pool):
            continue
        try:
            storage.initialize_concurrency_limit_to_default(pool)
        except DBAPIError:
            if not settled(pool):  # another process did not create it meanwhile: a real fault
                raise
