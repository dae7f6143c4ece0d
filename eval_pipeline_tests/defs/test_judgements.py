"""The judge inside the graph: verdicts per episode and rubric, cached so a re-run makes no call."""

import dagster as dg
import pytest

from eval_pipeline.defs.resources import JudgeResource
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, local_resources

pytestmark = pytest.mark.slow
SECRET_KEY = "sk-judge-" + "s3cr3t" * 5


def rows(root, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_every_episode_judged_on_both_rubrics_and_a_rerun_costs_nothing(tmp_path, fake_openai):
    write_samples(tmp_path / "episodes")
    judge = JudgeResource(base_url=fake_openai.base_url, api_key=SECRET_KEY, model="judge-1")
    resources = local_resources(tmp_path, judge=judge)
    instance = dg.DagsterInstance.ephemeral()
    first = dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    metadata = first.asset_materializations_for_node("judgements")[0].metadata
    assert metadata["judged"].value == 96 and metadata["llm_calls"].value == 96 and metadata["cache_hits"].value == 0
    assert rows(
        tmp_path, "SELECT rubric, count(*), min(score) >= 1, max(score) <= 5 FROM judgements GROUP BY ALL ORDER BY 1"
    ) == [
        ("relevance", 48, True, True),
        ("tone", 48, True, True),
    ]

    calls = len(fake_openai.requests)
    second = dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    metadata = second.asset_materializations_for_node("judgements")[0].metadata
    assert len(fake_openai.requests) == calls and metadata["llm_calls"].value == 0 and metadata["cache_hits"].value == 96
    assert rows(tmp_path, "SELECT count(*), bool_and(cached) FROM judgements") == [(96, True)]

    report = (tmp_path / "reports" / "eval-report-2026-11-02.md").read_text()
    assert "## LLM Judge" in report and "| relevance | 48 |" in report
    stored = "".join(str(r) for table in ("judgements", "llm_cache", "reports") for r in rows(tmp_path, f"SELECT * FROM {table}"))
    assert SECRET_KEY not in stored + report + (tmp_path / "reports" / "eval-report-2026-11-02.json").read_text()


def test_offline_the_judge_is_skipped_and_the_report_says_so(tmp_path):
    write_samples(tmp_path / "episodes")
    result = dg.materialize(
        GRAPH, partition_key="2026-11-01", resources=local_resources(tmp_path), instance=dg.DagsterInstance.ephemeral()
    )
    assert result.success
    assert (
        "LLM judge off: OPENAI_BASE_URL and EVAL_JUDGE_MODEL not set"
        in result.asset_materializations_for_node("judgements")[0].metadata["judge"].value
    )
    assert "LLM judge off" in (tmp_path / "reports" / "eval-report-2026-11-01.md").read_text()
