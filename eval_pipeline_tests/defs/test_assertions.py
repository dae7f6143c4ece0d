"""Cases inside the graph: a cases file drives correctness, checks' issues reach scores and findings."""

import json

import dagster as dg
import pytest

from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.defs.graph import GRAPH, local_resources, table_metadata

pytestmark = pytest.mark.slow


def rows(root, sql: str):
    with Warehouse(root / "eval.duckdb").connect(read_only=True) as con:
        return con.execute(sql).fetchall()


def test_a_cases_file_decides_correctness_even_without_a_baseline(tmp_path):
    write_samples(tmp_path / "episodes")
    cases = [
        {"task_id": "support-bot/where-is-my-order", "expected_tools": ["lookup_order", "send_email"],
         "expected_output_contains": ["arrives Nov 4"], "expected_tool_output": {"lookup_order": {"carrier": "UPS"}}},
        {"task_id": "support-bot/change-shipping-address", "expected_output_regex": "ships? to .* Glasgow"},  # it says Leith
    ]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("\n".join(json.dumps(c) for c in cases))
    (tmp_path / "eval.toml").write_text('[cases]\npath = "cases.jsonl"\n')
    resources = local_resources(tmp_path, config=tmp_path / "eval.toml")
    result = dg.materialize(GRAPH, partition_key="2026-11-01", resources=resources, instance=dg.DagsterInstance.ephemeral())
    assert result.success
    metadata = table_metadata(result, "assertions")
    assert (metadata["episodes_with_case"].value, metadata["cases_passed"].value) == (6, 3)

    verdicts = rows(
        tmp_path,
        "SELECT task_id, bool_and(case_passed), min(correctness), max(correctness), count(weighted_score), "
        "count(baseline_episode_id) FROM scores WHERE case_passed IS NOT NULL GROUP BY ALL ORDER BY 1",
    )
    # day 1 has no baselines (but one): the case alone scores these episodes
    assert verdicts == [
        ("support-bot/change-shipping-address", False, 0.0, 0.0, 3, 0),
        ("support-bot/where-is-my-order", True, 1.0, 1.0, 3, 0),
    ]
    assert rows(tmp_path, "SELECT DISTINCT assertion, passed FROM assertions ORDER BY 1") == [
        ("expected_output_contains", True),
        ("expected_output_regex", False),
        ("expected_tool_output.lookup_order", True),
        ("expected_tools[strict]", True),
    ]
    # the failed case shows in findings as a critical case finding and a correctness breach
    assert rows(
        tmp_path,
        "SELECT DISTINCT task_id, dimension, severity FROM findings WHERE task_id = 'support-bot/change-shipping-address' "
        "ORDER BY ALL",
    ) == [
        ("support-bot/change-shipping-address", "case", "critical"),
        ("support-bot/change-shipping-address", "correctness", "critical"),
        ("support-bot/change-shipping-address", "weighted_score", "critical"),
    ]


def test_checks_grade_every_episode_and_fabricated_numbers_are_findings(tmp_path):
    write_samples(tmp_path / "episodes")
    resources = local_resources(tmp_path)
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2026-11-01", "2026-11-02"):
        assert dg.materialize(GRAPH, partition_key=day, resources=resources, instance=instance).success
    assert rows(tmp_path, "SELECT count(*) FROM scores WHERE issue_score IS NULL OR issue_grade IS NULL") == [(0,)]
    assert rows(tmp_path, "SELECT DISTINCT task_id, severity, message FROM findings WHERE dimension = 'numeric_fabrication'") == [
        (
            "support-bot/damaged-item",
            "critical",
            "numeric_fabrication: '$149.99' in the answer matches no number in the tool outputs or the user's input",
        )
    ]
    assert rows(
        tmp_path,
        "SELECT DISTINCT issue_score, issue_grade FROM scores "
        "WHERE task_id = 'support-bot/damaged-item' AND partition_date = '2026-11-02'",
    ) == [(85.0, "B")]  # an error (the number) and a warning (an answer under 100 characters): 15 points off
