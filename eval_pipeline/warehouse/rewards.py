"""What rewards read (scored episodes with their issues, and ground truth for benchmarks) and write."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from datetime import date

import duckdb
import pandas as pd
import pyarrow as pa

from eval_pipeline.read_ahead import pipelined
from eval_pipeline.warehouse.connection import Warehouse, clear_partition, insert_rows, second_cursor
from eval_pipeline.warehouse.replays import candidate_parts, replay_failed, sort_into_parts
from eval_pipeline.warehouse.rows import one_row


def _rewarded(scores: str = "") -> str:
    """The `scores` rows (`scores`: their alias, if any) of the days $first..$last that get rewards: those of a candidate
    run, every one but a live replay the gateway failed."""
    at = f"{scores}." if scores else ""
    return f"{at}partition_date BETWEEN $first AND $last AND NOT {replay_failed(scores)}"


# What rewards are computed from (`{columns}` of `s`), and what a benchmark groups and grades them by.
_SCORED_TO_BENCHMARK = f"""
SELECT s.partition_date, s.task_id, {{columns}}, e.category, e.model,
       TRY_CAST(e.metadata ->> '$.reward' AS DOUBLE) AS metadata_reward
FROM scores s JOIN episodes e USING (episode_id, partition_date)
WHERE {_rewarded("s")}
"""

# The days' issues are sorted into parts as they are and counted a part at a time (`_REWARD_INPUTS`): an ordered list
# aggregate over whole days cannot spill, so their size would set its memory.
_ISSUES = """SELECT partition_date, episode_id, severity, "check" FROM issues WHERE partition_date BETWEEN $first AND $last"""

# What rewards are computed from, with nothing a benchmark groups or grades them by (the episodes' columns): the
# rewards step reads a day this way, half the time of the whole rows (100,000 episodes: 0.47 s against 1.19 s).
_SCORED_FOR_REWARDS = f"SELECT partition_date, {{columns}} FROM scores WHERE {_rewarded()}"

_REWARD_INPUTS = """
SELECT s.* EXCLUDE (part),
       coalesce(i.critical_issues, 0) AS critical_issues, coalesce(i.error_issues, 0) AS error_issues,
       coalesce(i.warning_issues, 0) AS warning_issues, coalesce(i.critical_checks, []) AS critical_checks
FROM reward_scored s
LEFT JOIN (
    SELECT partition_date, episode_id, count(*) FILTER (severity = 'critical') AS critical_issues,
           count(*) FILTER (severity = 'error') AS error_issues, count(*) FILTER (severity = 'warning') AS warning_issues,
           list(DISTINCT "check" ORDER BY "check") FILTER (severity = 'critical') AS critical_checks
    FROM reward_issues WHERE part = $part GROUP BY ALL
) i USING (partition_date, episode_id)
WHERE s.part = $part
ORDER BY s.partition_date, s.episode_id
"""


def _sort_reward_inputs(con: duckdb.DuckDBPyConnection, scored: str, first: date, last: date, parts: int) -> None:
    """What `_REWARD_INPUTS` reads of the days (the scored episodes as the SELECT `scored` has them), sorted into
    `parts` (`sort_into_parts`)."""
    days: dict[str, object] = {"first": first, "last": last}
    sort_into_parts(con, "reward_scored", scored, days, parts)
    sort_into_parts(con, "reward_issues", _ISSUES, days, parts)


REWARD_BATCH_ROWS = 50_000  # scored episodes whose rewards are computed and written at a time
REWARD_PART_EPISODES = 50_000  # scored episodes DuckDB joins and orders at a time

_SCORED_COUNT = f"SELECT count(*) FROM scores WHERE {_rewarded()}"


def scored_count(warehouse: Warehouse, first: date, last: date) -> int:
    """How many scored episodes `first`..`last` (inclusive) hold, as `reward_inputs_in_parts` reads them."""
    with warehouse.connect(read_only=warehouse.exists()) as con:
        return one_row(con, _SCORED_COUNT, {"first": first, "last": last})[0]


def reward_inputs_in_parts(warehouse: Warehouse, first: date, last: date, columns: list[str]) -> Iterator[pd.DataFrame]:
    """The scored episodes of `first`..`last` (inclusive), REWARD_BATCH_ROWS at a time: their `scores` `columns`, their
    issues per severity, the checks that raised a critical one, and what a benchmark groups and grades them by (day,
    task, category, model, `metadata.reward`). DuckDB gathers parts of about REWARD_PART_EPISODES (by episode hash),
    each in `partition_date, episode_id` order."""
    parts = max(1, -(-scored_count(warehouse, first, last) // REWARD_PART_EPISODES))
    with warehouse.connect(read_only=warehouse.exists()) as con:
        scored = _SCORED_TO_BENCHMARK.format(columns=", ".join(f's."{column}"' for column in columns))
        _sort_reward_inputs(con, scored, first, last, parts)
        yield from _read_in_parts(con, parts)


def _read_in_parts(con: duckdb.DuckDBPyConnection, parts: int) -> Generator[pd.DataFrame]:
    """What `_sort_reward_inputs` sorted on `con`, a batch of REWARD_BATCH_ROWS at a time."""
    for part in range(parts):
        for batch in con.execute(_REWARD_INPUTS, {"part": part}).to_arrow_reader(REWARD_BATCH_ROWS):
            yield batch.to_pandas()


def write_rewards(
    warehouse: Warehouse,
    day: date,
    config_version: str,
    rewards_of: Callable[[pd.DataFrame], list[pa.Table]],
    columns: list[str],
    names: list[str] | None = None,
) -> tuple[int, int]:
    """Replace `day`'s rows of the rewards `names` (all of the day's rows when None) with `rewards_of` each batch of
    REWARD_BATCH_ROWS of the day's scored episodes (their `scores` `columns` and their issues), computed under
    `config_version`, in one transaction; return how many episodes and rows. DuckDB gathers parts of about
    REWARD_PART_EPISODES (by episode hash) at a time; the batches are read on a second connection while the first
    writes, the next batch read and the last one written while Python computes this one's rewards (`pipelined`)."""
    episodes = 0

    def compute(scored: pd.DataFrame) -> list[pa.Table]:
        nonlocal episodes
        episodes += len(scored)
        return rewards_of(scored)

    with warehouse.transaction() as con, second_cursor(con) as reader:
        clear_partition(con, "rewards", day, within=("reward_name", names) if names is not None else None)
        parts = candidate_parts(reader, day, None, REWARD_PART_EPISODES)
        scored_columns = ", ".join(f'"{column}"' for column in columns)
        _sort_reward_inputs(reader, _SCORED_FOR_REWARDS.format(columns=scored_columns), day, day, parts)

        def write(tables: list[pa.Table]) -> int:  # its breakdowns' structs are cast to the column's JSON
            constants = {"partition_date": day, "config_version": config_version}
            return sum(insert_rows(con, "rewards", one_reward, constants) for one_reward in tables)

        written = pipelined(_read_in_parts(reader, parts), compute, write)
    return episodes, written


def reward_summary(warehouse: Warehouse, first: date, last: date, names: list[str]) -> pd.DataFrame:
    """Per day and reward: episodes, how many have a value, and mean/min/max of the values (rounded to 3 places)."""
    return warehouse.read_frame(
        """
        SELECT strftime(partition_date, '%Y-%m-%d') AS partition_date, reward_name, count(*) AS episodes,
               count(value) AS with_value, round(avg(value), 3) AS mean, round(min(value), 3) AS min,
               round(max(value), 3) AS max
        FROM rewards WHERE partition_date BETWEEN $first AND $last AND list_contains($names, reward_name)
        GROUP BY partition_date, reward_name ORDER BY partition_date, list_position($names, reward_name)
        """,
        {"first": first, "last": last, "names": names},
    )
