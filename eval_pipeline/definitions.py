"""Dagster entry point: everything under defs/, run in process.

The graph is a chain, so a multiprocess executor would only add process start-up to every step.
"""

from pathlib import Path

import dagster as dg

from eval_pipeline.collector import collect_less_often


@dg.definitions
def defs() -> dg.Definitions:
    collect_less_often()  # in every process that loads the code location: the run worker of a scheduled night, too
    return dg.Definitions.merge(
        dg.load_from_defs_folder(path_within_project=Path(__file__).parent),
        dg.Definitions(executor=dg.in_process_executor),
    )
