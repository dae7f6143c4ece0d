"""Every result a run writes, held to the answers the pipeline gave before it was made faster or leaner.

The three demo days and two generated days (20 % of their episodes regressed in cost, latency, tool sequence or
outcome) are run into one warehouse; every table's rows, without the columns that say when a row was written and with
the project's path replaced, must equal the stored answers in `answers.json.gz`: text and counts exactly, numbers to
1e-9 (numbers in JSON text too). After a change that means to alter the answers, `UPDATE_ANSWERS=1` rewrites the
file; say why in the commit.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from dataclasses import replace
from datetime import date
from pathlib import Path

import pytest

from benchmarks.run_throughput import Shape, write_days
from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline_tests.postgres import lake_on
from eval_pipeline_tests.snapshots import Row, warehouse_rows

pytestmark = pytest.mark.slow

ANSWERS = Path(__file__).with_name("answers.json.gz")
GENERATED_DAYS = [date(2026, 11, 2), date(2026, 11, 3)]
GENERATED_SHAPE = Shape.parse("3x10x4")  # 120 episodes a day, 30 tasks
TOLERANCE = 1e-9


def differences(expected: dict[str, list[Row]], actual: dict[str, list[Row]]) -> list[str]:
    """Where `actual` departs from `expected`: a table's row count, or its first row that differs."""
    found = []
    for name in sorted(expected.keys() | actual.keys()):
        want, got = expected.get(name, []), actual.get(name, [])
        if len(want) != len(got):
            found.append(f"{name}: {len(got)} rows, expected {len(want)}")
            continue
        for position, (a, b) in enumerate(zip(want, got, strict=True)):
            if not _same(a, b):
                found.append(f"{name} row {position}: {b}\n  expected {a}")
                break
    return found


def _same(expected: object, actual: object) -> bool:
    if isinstance(expected, float) and isinstance(actual, float | int):
        return math.isclose(expected, actual, rel_tol=TOLERANCE, abs_tol=TOLERANCE) or (
            math.isnan(expected) and math.isnan(actual)
        )
    if isinstance(expected, list) and isinstance(actual, list):
        return len(expected) == len(actual) and all(_same(a, b) for a, b in zip(expected, actual, strict=True))
    if isinstance(expected, dict) and isinstance(actual, dict):
        return expected.keys() == actual.keys() and all(_same(expected[k], actual[k]) for k in expected)
    if isinstance(expected, str) and isinstance(actual, str) and expected != actual and expected[:1] in "{[":
        try:  # a JSON breakdown: its numbers too are held to the tolerance (a sum over a batch may round differently)
            return _same(json.loads(expected), json.loads(actual))
        except json.JSONDecodeError:
            return False
    return expected == actual


# Every size by which a step takes a day a part or a batch at a time, and a size that splits the test's days many times
SMALL_PARTS = {
    "eval_pipeline.warehouse.ingest.BATCH_ROWS": 7,
    "eval_pipeline.warehouse.ingest.WRITE_ROWS": 15,
    "eval_pipeline.warehouse.assertions.CHECK_PART_EPISODES": 11,
    "eval_pipeline.warehouse.assertions.CHECK_BATCH_ROWS": 3,
    "eval_pipeline.warehouse.scores.SCORE_PART_EPISODES": 13,
    "eval_pipeline.warehouse.rewards.REWARD_BATCH_ROWS": 5,
    "eval_pipeline.warehouse.rewards.REWARD_PART_EPISODES": 17,
    "eval_pipeline.warehouse.findings.FINDING_PART_EPISODES": 19,
}


@pytest.mark.parametrize("parts", ["configured", "small", "lake", "lake_on_s3"])
def test_every_table_holds_the_answers_of_before(sample_root, parts, monkeypatch, request):
    """With the configured part sizes, with parts so small that every day is split many times, and in a DuckLake
    warehouse (its catalog on a real Postgres; its data in a directory, or in an S3-compatible store): the answers are
    the same, as memory bounded by design needs (no step may depend on seeing a whole day at once) and as either
    backend must."""
    if parts == "small":
        for name, size in SMALL_PARTS.items():
            monkeypatch.setattr(name, size)
    lake = None
    if parts.startswith("lake"):
        lake = lake_on(request.getfixturevalue("postgres_server"), request.getfixturevalue("postgres_db"), sample_root)
        if parts == "lake_on_s3":
            store = request.getfixturevalue("s3_store")
            lake = replace(lake, data_path=f"s3://{store.bucket}/lake/", s3=store.access)
            for name, value in store.environment.items():
                monkeypatch.setenv(name, value)
        monkeypatch.setenv("EVAL_WAREHOUSE", f"ducklake:{lake.catalog}")
        monkeypatch.setenv("EVAL_WAREHOUSE_DATA", lake.data_path)
    write_days(sample_root / "generated", GENERATED_DAYS, GENERATED_SHAPE, seed=7, regression_rate=0.2)
    for day_file in (sample_root / "generated").iterdir():  # beside the sample files of the same days
        day_file.rename(sample_root / "episodes" / f"generated-{day_file.name}")
    first, last = SAMPLE_DAYS[0].isoformat(), SAMPLE_DAYS[-1].isoformat()
    assert main(["run", "--start", first, "--end", last, "--fail-on", "never"]) == 0
    actual = warehouse_rows(sample_root, lake)
    assert not (sample_root / "eval.duckdb").exists() or lake is None
    # where alerts wait for delivery is the backend's own (files beside the single file, a lake's tables): each was
    # sent once, to the file that stands in for a webhook here
    sent = [
        i for line in (sample_root / "alerts" / "alerts.jsonl").read_text().splitlines() for i in json.loads(line)["finding_ids"]
    ]
    delivered = [row[0] for row in actual.pop("alerts_delivered")]
    assert len(sent) == len(set(sent)) > 0 and sorted(delivered) == (sorted(sent) if lake else [])
    assert actual.pop("alert_outbox") == [] and actual.pop("alert_delivery_lease") == [
        [None, "1970-01-01 00:00:00+00:00", None]
    ]  # free, and the webhook never asked to hold off
    assert {"scores", "findings", "rewards", "pass_at_k", "quarantine", "issues"} <= {
        name for name, rows in actual.items() if rows
    }
    if os.environ.get("UPDATE_ANSWERS") and parts == "configured":
        ANSWERS.write_bytes(gzip.compress(json.dumps(actual, sort_keys=True).encode(), mtime=0))
    expected = json.loads(gzip.decompress(ANSWERS.read_bytes()))
    assert differences(expected, actual) == []
    if parts == "lake_on_s3":  # the data went to the store, nothing to a local directory
        assert any(key.startswith("lake/main/scores/") for key in request.getfixturevalue("s3_store").object_keys())
        assert not (sample_root / "lake").exists()
