"""Each asset writes exactly the tables it declares, so the lineage in the UI is what happens.

A user read `regression_findings -> findings` in the UI while that step also rewrote `scores.passed`,
and `assertions`, `judgements` and `pass_at_k` each wrote two tables under one asset key.
"""

import dagster as dg
import pytest

from eval_pipeline.defs.resources import JudgeResource
from eval_pipeline.episodes.samples import SAMPLE_DAYS, write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, local_resources, table_metadata

pytestmark = pytest.mark.slow

TABLE_OF_ASSET = {"regression_findings": "findings", "eval_report": "reports"}  # DESIGN: named apart on purpose
CACHES = {"judgements": {"llm_cache"}}  # the judge's cache of answers, not a partition of an asset


def table_of(key: dg.AssetKey) -> str:
    return TABLE_OF_ASSET.get(key.to_user_string(), key.to_user_string())


def fingerprints(root) -> dict[str, tuple[int, int]]:
    """Row count and a hash of every row, per table."""
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        tables = [name for (name,) in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main'").fetchall()]
        return {name: con.execute(f"SELECT count(*), coalesce(sum(hash(t)), 0) FROM {name} t").fetchone() for name in tables}


STEPS = ("capture", "episodes", "baselines", "replays", "judgements", "assertions", "scores", "regression_findings",
         "rewards", "pass_at_k", "eval_report")  # fmt: skip  # in dependency order


def day_rows(root, table: str, day: str) -> int:
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(f"SELECT count(*) FROM {table} WHERE partition_date = ?", [day]).fetchone()[0]


def test_each_step_changes_only_the_tables_it_declares_and_counts_each_ones_rows(tmp_path, fake_openai):
    write_samples(tmp_path / "episodes")
    judge = JudgeResource(base_url=fake_openai.base_url, api_key="sk-test", model="judge-1")
    resources, instance = local_resources(tmp_path, judge=judge), dg.DagsterInstance.ephemeral()
    first, second = (day.isoformat() for day in SAMPLE_DAYS[:2])
    assert dg.materialize(GRAPH, partition_key=first, resources=resources, instance=instance).success
    assert {step.node_def.name for step in GRAPH} == set(STEPS)

    for name in STEPS:
        [step] = [step for step in GRAPH if step.node_def.name == name]
        declared = {table_of(key) for key in step.keys} - {"capture"}  # capture writes files, not tables
        before = fingerprints(tmp_path)
        result = dg.materialize(GRAPH, selection=list(step.keys), partition_key=second, resources=resources, instance=instance)
        assert result.success, name
        after = fingerprints(tmp_path)
        changed = {table for table in after if after[table] != before.get(table)}
        assert changed - CACHES.get(name, set()) <= declared, name
        assert {table for table in declared if day_rows(tmp_path, table, second)} <= changed, name
        for key in step.keys:
            if table_of(key) in declared:
                assert table_metadata(result, key.to_user_string())["dagster/row_count"].value == day_rows(
                    tmp_path, table_of(key), second
                ), key
