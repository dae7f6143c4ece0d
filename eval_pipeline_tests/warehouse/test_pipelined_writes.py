"""A step that reads, works and writes a day in parts at once (`pipelined`) keeps the day as it was when any part fails:
in the work (Python) or in the write (DuckDB, on another thread), and leaves no thread of its behind."""

from __future__ import annotations

import threading
from datetime import date
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

from eval_pipeline.cli import main
from eval_pipeline.config import load_config
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.episodes.samples import SAMPLE_DAYS
from eval_pipeline.rewards.functions import RewardBook
from eval_pipeline.rewards.inputs import scores_read
from eval_pipeline.rewards.records import reward_records
from eval_pipeline.scoring.episodes import score_records
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline.warehouse import ingest
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.rewards import write_rewards
from eval_pipeline.warehouse.scores import write_scores

DAY = SAMPLE_DAYS[-1]


def _rows(warehouse: Warehouse, table: str, day: date) -> list[tuple]:
    with warehouse.connect(read_only=True) as con:
        return con.execute(f"SELECT * FROM {table} WHERE partition_date = ? ORDER BY ALL", [day]).fetchall()


def _second_call(work, spoil):
    """`work`, except that what its second call gives is passed through `spoil` (which may raise)."""
    calls = []

    def second(*args, **kwargs):
        calls.append(None)
        done = work(*args, **kwargs)
        return spoil(done) if len(calls) == 2 else done

    return second


def _raise(_) -> None:
    raise RuntimeError("part 2 could not be worked on")


def _threads_left() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(("read-ahead", "write-behind"))]


@pytest.fixture
def warehouse(sample_root: Path) -> Warehouse:
    assert main(["run", "--start", SAMPLE_DAYS[0].isoformat(), "--end", DAY.isoformat(), "--fail-on", "never"]) == 0
    return Warehouse(sample_root / "eval.duckdb")


@pytest.mark.parametrize("failing", ["work", "write"])
def test_a_failed_part_of_scores_or_rewards_leaves_the_day_as_it_was(warehouse, monkeypatch, failing):
    """The second part fails: in Python (`work`), or in DuckDB, which refuses to insert a column the table lacks, on the
    writing thread (`write`), after the first part was written in the same transaction."""
    monkeypatch.setattr("eval_pipeline.warehouse.scores.SCORE_PART_EPISODES", 2)
    monkeypatch.setattr("eval_pipeline.warehouse.rewards.REWARD_PART_EPISODES", 2)
    monkeypatch.setattr("eval_pipeline.warehouse.rewards.REWARD_BATCH_ROWS", 1)
    config = load_config(PROJECT_ROOT / "eval.toml")
    book = RewardBook(config.rewards)
    scores, rewards = _rows(warehouse, "scores", DAY), _rows(warehouse, "rewards", DAY)
    assert len(scores) > 4 and len(rewards) > 4
    if failing == "work":
        spoil_scores, spoil_rewards, error = _raise, _raise, "part 2 could not be worked on"
    else:
        error = "no_such_column"

        def spoil_scores(rows: pd.DataFrame) -> pd.DataFrame:
            return rows.assign(no_such_column=1)

        def spoil_rewards(tables: list[pa.Table]) -> list[pa.Table]:
            return [table.append_column("no_such_column", [[1] * table.num_rows]) for table in tables]

    score = _second_call(lambda inputs, issues: score_records(inputs, issues, config), spoil_scores)
    with pytest.raises(Exception, match=error):
        write_scores(warehouse, DAY, config.baseline.policy, None, score)
    rewards_of = _second_call(lambda scored: reward_records(scored, book, book.names), spoil_rewards)
    with pytest.raises(Exception, match=error):
        write_rewards(warehouse, DAY, config.version, rewards_of, scores_read())
    assert _rows(warehouse, "scores", DAY) == scores and _rows(warehouse, "rewards", DAY) == rewards
    assert not _threads_left()


def test_a_failed_batch_of_ingest_leaves_the_day_as_it_was(warehouse, sample_root, monkeypatch):
    monkeypatch.setattr(ingest, "BATCH_ROWS", 2)
    monkeypatch.setattr(ingest, "_write_batch", _second_call(ingest._write_batch, _raise))  # on the writing thread
    episodes, steps = _rows(warehouse, "episodes", DAY), _rows(warehouse, "episode_steps", DAY)
    assert len(episodes) > 4
    source = FileSource(sample_root / "episodes", sample_root / "index.json")
    with pytest.raises(RuntimeError, match="part 2 could not be worked on"):
        ingest.load_episodes(warehouse, DAY, lambda: source.records_for(DAY))
    assert _rows(warehouse, "episodes", DAY) == episodes and _rows(warehouse, "episode_steps", DAY) == steps
    assert not _threads_left()
