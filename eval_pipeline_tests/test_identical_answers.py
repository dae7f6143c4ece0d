"""Every result a run writes, held to the answers the pipeline gave before it was made faster or leaner.

The three demo days and two generated days (20 % of their episodes regressed in cost, latency, tool sequence or
outcome) are run into one warehouse; every table's rows, without the columns that say when a row was written and with
the project's path replaced, must equal the stored answers in `answers.json.gz`: text and counts exactly, numbers to
1e-9. After a change that means to alter the answers, `UPDATE_ANSWERS=1` rewrites the file; say why in the commit.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from datetime import date
from pathlib import Path

import duckdb
import pytest

from benchmarks.run_throughput import Shape, write_days
from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import SAMPLE_DAYS

pytestmark = pytest.mark.slow

ANSWERS = Path(__file__).with_name("answers.json.gz")
GENERATED_DAYS = [date(2026, 11, 2), date(2026, 11, 3)]
GENERATED_SHAPE = Shape.parse("3x10x4")  # 120 episodes a day, 30 tasks
CLOCKS = {"established_at", "created_at", "scored_at", "loaded_at", "quarantined_at", "computed_at", "judged_at",
          "applied_at", "labelled_at", "finding_id", "run_id"}  # fmt: skip  # when or by which run a row was written
TOLERANCE = 1e-9

Row = list[object]


def answers(root: Path) -> dict[str, list[Row]]:
    """Every table's rows in a stable order: clock columns left out, `root` replaced, values as JSON has them."""
    with duckdb.connect(str(root / "eval.duckdb"), read_only=True) as con:
        names = [row[0] for row in con.execute("SELECT table_name FROM information_schema.tables ORDER BY 1").fetchall()]
        tables = {}
        for name in names:
            query = "SELECT column_name FROM information_schema.columns WHERE table_name = ? ORDER BY ordinal_position"
            columns = [row[0] for row in con.execute(query, [name]).fetchall() if row[0] not in CLOCKS]
            quoted = ", ".join(f'"{column}"' for column in columns)
            rows = con.execute(f"SELECT {quoted} FROM {name}").fetchall()
            tables[name] = sorted(json.loads(json.dumps(rows, default=str).replace(str(root), "ROOT")), key=_order)
    return tables


def _order(row: Row) -> str:
    """Sort key: the row with numbers rounded, so values that differ below the tolerance sort alike."""
    return json.dumps([round(value, 6) if isinstance(value, float) else value for value in row], sort_keys=True)


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
    return expected == actual


def test_every_table_holds_the_answers_of_before(sample_root):
    write_days(sample_root / "generated", GENERATED_DAYS, GENERATED_SHAPE, seed=7, regression_rate=0.2)
    for day_file in (sample_root / "generated").iterdir():  # beside the sample files of the same days
        day_file.rename(sample_root / "episodes" / f"generated-{day_file.name}")
    first, last = SAMPLE_DAYS[0].isoformat(), SAMPLE_DAYS[-1].isoformat()
    assert main(["run", "--start", first, "--end", last, "--fail-on", "never"]) == 0
    actual = answers(sample_root)
    assert {"scores", "findings", "rewards", "pass_at_k", "quarantine", "issues"} <= {
        name for name, rows in actual.items() if rows
    }
    if os.environ.get("UPDATE_ANSWERS"):
        ANSWERS.write_bytes(gzip.compress(json.dumps(actual, sort_keys=True).encode(), mtime=0))
    expected = json.loads(gzip.decompress(ANSWERS.read_bytes()))
    assert differences(expected, actual) == []
