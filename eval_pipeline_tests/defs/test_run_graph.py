"""`eval-pipeline run` executes the graph the code location serves: the runner reads the modules under `defs/` itself
(without what Dagster's component tooling adds), so the job it runs must be the served one: the same assets, code
versions, checks and steps (its resources are the command's own)."""

import dagster as dg

from eval_pipeline.definitions import defs
from eval_pipeline.defs.pipeline.jobs import EVALUATE_JOB
from eval_pipeline.runner import _definitions_for
from eval_pipeline.settings import Settings


def _graph(definitions: dg.Definitions) -> dict[str, object]:
    job = definitions.resolve_job_def(EVALUATE_JOB)
    graph = definitions.resolve_asset_graph()
    return {
        "assets": {key: graph.get(key).code_version for key in graph.get_all_asset_keys()},
        "checks": set(graph.asset_check_keys),
        "steps": {name: sorted(map(str, node.definition.input_dict)) for name, node in job.graph.node_dict.items()},
        "partitions": job.partitions_def,
        "executor": job.executor_def.name,
    }


def test_the_runner_executes_the_code_locations_graph(project_env):
    served, run = _graph(defs()), _graph(_definitions_for(Settings.from_environment()))
    assert run == served
    assert len(served["assets"]) > 10 and served["checks"] and len(served["steps"]) > 10  # a real graph, not two empty ones
