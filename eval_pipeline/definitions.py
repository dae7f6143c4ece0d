"""Dagster entry point: the defs/ folder, resources from the environment, an in-process executor.

The graph is a chain, so a multiprocess executor would only add process start-up to every step.
"""

import dagster as dg

import eval_pipeline.defs
from eval_pipeline.defs.resources import resources_from_environment
from eval_pipeline.settings import resolve_environment


@dg.definitions
def defs() -> dg.Definitions:
    resolve_environment()
    return dg.Definitions.merge(
        dg.load_defs(defs_root=eval_pipeline.defs),
        dg.Definitions(resources=resources_from_environment(), executor=dg.in_process_executor),
    )
