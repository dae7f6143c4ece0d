"""The judge inside the graph: verdicts per episode and rubric, cached so a re-run makes no call."""

import json
import tempfile
from collections import Counter
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import dagster as dg
import pandas as pd
import pytest

from eval_pipeline.defs.pipeline import assets
from eval_pipeline.defs.resources import JudgeResource
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.regression.agreement import judge_verdicts
from eval_pipeline.warehouse import judge as warehouse_judge
from eval_pipeline.warehouse import reports as warehouse_reports
from eval_pipeline.warehouse.connection import Warehouse, frame_of
from eval_pipeline.warehouse.labels import review_pool
from eval_pipeline_tests.defs.graph import GRAPH, local_resources, table_metadata

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
    assert dg.materialize(GRAPH, partition_key="2026-11-01", resources=resources, instance=instance).success  # baselines
    [(cached_before,)] = rows(tmp_path, "SELECT count(*) FROM llm_cache")
    fake_openai.requests.clear()
    first = dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    metadata = table_metadata(first, "judgements")
    assert rows(
        tmp_path,
        "SELECT rubric, count(*), min(score) >= 1, max(score) <= 5 FROM judgements "
        "WHERE partition_date = '2026-11-02' GROUP BY ALL ORDER BY 1",
    ) == [
        ("relevance", 48, True, True),
        ("tone", 48, True, True),
    ]
    # every distinct question is asked once (trials that answered alike share a call) and cached
    [(cached_after,)] = rows(tmp_path, "SELECT count(*) FROM llm_cache")
    assert metadata["judged"].value == 96
    assert metadata["llm_calls"].value == len(fake_openai.requests) == cached_after - cached_before
    # one pairwise row per episode (each has a baseline from day 1): compared in both orders, or the same answer: a tie
    pairwise = dict(
        rows(
            tmp_path,
            "SELECT coalesce(preferred, status), count(*) FROM pairwise_judgements "
            "WHERE partition_date = '2026-11-02' GROUP BY ALL",
        )
    )
    assert sum(pairwise.values()) == 48 and pairwise["tie"] > 0 and pairwise["candidate"] + pairwise["baseline"] > 0
    [(asked_in_both_orders,)] = rows(
        tmp_path, "SELECT bool_and(prompt_tokens = 200) FROM pairwise_judgements WHERE preferred IN ('candidate', 'baseline')"
    )
    assert asked_in_both_orders

    calls, spent = len(fake_openai.requests), metadata["tokens"].value
    second = dg.materialize(GRAPH, partition_key="2026-11-02", resources=resources, instance=instance)
    metadata = table_metadata(second, "judgements")
    assert len(fake_openai.requests) == calls and metadata["llm_calls"].value == 0
    assert metadata["tokens"].value == 0 and metadata["tokens_saved_by_cache"].value >= spent > 0
    assert rows(tmp_path, "SELECT count(*), bool_and(cached) FROM judgements WHERE partition_date = '2026-11-02'") == [(96, True)]

    report = (tmp_path / "reports" / "eval-report-2026-11-02.md").read_text()
    assert "## LLM Judge" in report and "| relevance | 48 |" in report
    assert (
        "Judge calls used 0 tokens (unpriced); the cache saved" in report and "Pairwise against the baseline's answer" in report
    )
    stored = "".join(
        str(r)
        for table in ("judgements", "pairwise_judgements", "llm_cache", "reports")
        for r in rows(tmp_path, f"SELECT * FROM {table}")
    )
    logs = "".join(str(entry) for entry in instance.all_logs(first.run_id) + instance.all_logs(second.run_id))
    assert SECRET_KEY not in stored + report + logs + (tmp_path / "reports" / "eval-report-2026-11-02.json").read_text()


def test_judge_verdicts_enter_the_weighted_score_only_when_weighted(tmp_path, fake_openai):
    write_samples(tmp_path / "episodes")
    (tmp_path / "eval.toml").write_text("[weights]\njudge = 1.0\n\n[judge]\npairwise = false\n")
    judge = JudgeResource(base_url=fake_openai.base_url, api_key=SECRET_KEY, model="judge-1")
    resources = local_resources(tmp_path, judge=judge, config=tmp_path / "eval.toml")
    instance = dg.DagsterInstance.ephemeral()
    for day in ("2026-11-01", "2026-11-02"):
        assert dg.materialize(GRAPH, partition_key=day, resources=resources, instance=instance).success
    assert rows(tmp_path, "SELECT count(*) FROM pairwise_judgements") == [(0,)]
    [(judged, differs)] = rows(
        tmp_path,
        """
        SELECT count(s.judge_score), bool_or(abs(s.weighted_score - u.unweighted) > 1e-9)
        FROM scores s JOIN (
            -- the same score without the judge: the five dimensions with their default weights
            SELECT episode_id, (0.4 * correctness + 0.2 * (1 - greatest(cost_delta_pct, 0) / 100)
                + 0.2 * tool_match + 0.1 * (1 - greatest(latency_delta_pct, 0) / 100) + 0.1 * safety) AS unweighted
            FROM scores WHERE cost_delta_pct <= 100 AND latency_delta_pct <= 100
        ) u USING (episode_id)
        WHERE s.judge_score IS NOT NULL
        """,
    )
    assert judged > 0 and differs
    [(matches,)] = rows(
        tmp_path,
        "SELECT bool_and(abs(s.judge_score - j.mean) < 1e-9) FROM scores s JOIN "
        "(SELECT episode_id, avg(normalized) AS mean FROM judgements GROUP BY ALL) j USING (episode_id)",
    )
    assert matches


def test_model_calling_steps_share_the_llm_pool_and_the_other_writers_the_warehouse_pool():
    """The pools cap LLM work and warehouse writers across runs on a deployed instance (dagster.yaml sets their
    default limit); capturing runs agents and writes no table."""
    writers = ["episodes", "baselines", "assertions", "scores", "regression_findings", "rewards", "pass_at_k", "eval_report"]
    expected = {"capture": None, "replays": "llm", "judgements": "llm"} | dict.fromkeys(writers, "warehouse")
    assert {a.op.name: a.op.pool for a in GRAPH} == expected


def test_offline_the_judge_is_skipped_and_the_report_says_so(tmp_path):
    write_samples(tmp_path / "episodes")
    result = dg.materialize(
        GRAPH, partition_key="2026-11-01", resources=local_resources(tmp_path), instance=dg.DagsterInstance.ephemeral()
    )
    assert result.success
    assert "LLM judge off: OPENAI_BASE_URL and EVAL_JUDGE_MODEL not set" in table_metadata(result, "judgements")["judge"].value
    assert "LLM judge off" in (tmp_path / "reports" / "eval-report-2026-11-01.md").read_text()


def test_a_day_judged_a_part_at_a_time_has_the_verdicts_and_figures_of_the_day_judged_whole(tmp_path, fake_openai, monkeypatch):
    """The judge step read the day's candidates whole and built every prompt at once: a day of 200,000 episodes under a
    budget of 2,000 calls took it 25.5 s at a peak of 1,746 MiB, the run's highest. Judged a few at a time here, the
    day has the same verdicts, cached flags and figures, and a budget holds for the day, not for each part. The report
    counts the verdicts a few at a time to the same figures, and the review queues read a judge verdict per episode."""
    judged, spools = {}, []
    spool = Warehouse.spool

    def spooled(warehouse: Warehouse, prefix: str) -> tempfile.TemporaryDirectory[str]:
        made = spool(warehouse, prefix)
        spools.append(Path(made.name))
        return made

    monkeypatch.setattr(Warehouse, "spool", spooled)
    for name, part_episodes, budget in (("whole", 10_000, ""), ("parts", 5, ""), ("budget", 5, "max_calls_per_run = 7\n")):
        root = tmp_path / name
        write_samples(root / "episodes")
        (root / "eval.toml").write_text(f"[judge]\n{budget}")
        monkeypatch.setattr(warehouse_judge, "JUDGE_PART_EPISODES", part_episodes)
        monkeypatch.setattr(warehouse_reports, "JUDGEMENT_BATCH_ROWS", part_episodes)  # the report counts them so
        parts: list[int] = []

        def counted(*args, parts=parts) -> Iterator[pd.DataFrame]:
            for candidates in warehouse_judge.judge_inputs_in_parts(*args):
                parts.append(len(candidates))
                yield candidates

        monkeypatch.setattr(assets, "judge_inputs_in_parts", counted)
        judge = JudgeResource(base_url=fake_openai.base_url, api_key=SECRET_KEY, model="judge-1")
        resources = local_resources(root, judge=judge, config=root / "eval.toml")
        instance = dg.DagsterInstance.ephemeral()
        for day in ("2026-11-01", "2026-11-02"):
            parts.clear()  # the second day's
            result = dg.materialize(GRAPH, partition_key=day, resources=resources, instance=instance)
        metadata = {key: value.value for key, value in table_metadata(result, "judgements").items() if key != "dagster/row_count"}
        judged[name] = {
            "judgements": rows(root, "SELECT episode_id, rubric, score, reasoning, cached, status FROM judgements "
                                     "WHERE partition_date = '2026-11-02' ORDER BY ALL"),
            "pairwise": rows(root, "SELECT episode_id, preferred, agree, cached, status, prompt_tokens FROM pairwise_judgements "
                                   "WHERE partition_date = '2026-11-02' ORDER BY ALL"),
            "metadata": metadata,
            "report": json.loads((root / "reports" / "eval-report-2026-11-02.json").read_text())["judge"],
            "parts": parts,
        }  # fmt: skip
    whole, parts, budget = judged["whole"], judged["parts"], judged["budget"]
    # beside the warehouse, where DuckDB spills, not in the host's temporary directory (which may be memory); removed
    assert {path.parent.name for path in spools} == set(judged) and not any(path.exists() for path in spools)
    assert whole["parts"] == [48] and len(parts["parts"]) >= 5 and sum(parts["parts"]) == 48
    assert {key: parts[key] for key in ("judgements", "pairwise", "metadata", "report")} == {
        key: whole[key] for key in ("judgements", "pairwise", "metadata", "report")
    }
    assert [(r["rubric"], r["judged"]) for r in whole["report"]["rubrics"]] == [("relevance", 48), ("tone", 48)]
    with Warehouse(tmp_path / "whole" / "eval.duckdb").connect(read_only=True) as con:  # the review queues' judge
        judged = review_pool(con, date(2026, 11, 2)).judged
        every = frame_of(con.execute("SELECT * FROM judgements WHERE partition_date = '2026-11-02'"))
    assert len(judged) == 48 < len(every) and judge_verdicts(judged).equals(judge_verdicts(every))
    assert whole["metadata"]["llm_calls"] > 7 and budget["metadata"]["llm_calls"] == 7
    statuses = Counter(status for *_, status in budget["judgements"])
    assert statuses["judged"] > 0 and statuses["skipped"] > 0 and sum(statuses.values()) == 96
