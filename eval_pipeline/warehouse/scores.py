"""The scoring frame: each candidate of a day beside the baseline it is compared with, read in parts, and the scores
written for them."""

from __future__ import annotations

from collections.abc import Callable, Generator
from datetime import date

import duckdb
import pandas as pd

from eval_pipeline.read_ahead import pipelined
from eval_pipeline.warehouse.assertions import issues_in_part, sort_issues_into_parts
from eval_pipeline.warehouse.baselines import PRECEDENCE, SNAPSHOT, itself
from eval_pipeline.warehouse.connection import Warehouse, clear_partition, frame_of, insert_rows, of_agent, second_cursor
from eval_pipeline.warehouse.replays import candidate_parts, sort_into_parts

_SCORE_CANDIDATES = f"""
-- ->> is parenthesized wherever it meets another operator: DuckDB 1.5 parses it looser than =, <>, AND, IS
WITH latest_runs AS (  -- each case-set agent's latest capture run of the day; its earlier ones are superseded
    SELECT agent_id, arg_max(metadata ->> '$.capture_run', coalesce(metadata ->> '$.captured_at', '')) AS capture_run
    FROM episodes WHERE partition_date = $day AND (metadata ->> '$.capture_run') IS NOT NULL GROUP BY agent_id
)
SELECT r.*, e.task_id, TRY_CAST(e.metadata ->> '$.reward' AS DOUBLE) AS recorded_reward,
       coalesce((e.metadata ->> '$.capture_run') <> l.capture_run, false) AS superseded
FROM replays r JOIN episodes e USING (episode_id, partition_date)
LEFT JOIN latest_runs l ON l.agent_id = e.agent_id
WHERE r.partition_date = $day AND r.status <> 'running' AND {of_agent("r.agent_id")}
"""

# A live replay is compared with its own recording: only those episodes' snapshots are read (a dry day has none)
_SCORESNAPSHOTS = f"""
SELECT episode_id, {SNAPSHOT} FROM episodes
WHERE partition_date = $day AND episode_id IN (SELECT episode_id FROM replays WHERE partition_date = $day AND mode = 'live')
"""

_SCORE_JUDGEMENTS = """
SELECT episode_id, avg(normalized) AS judge_score FROM judgements
WHERE partition_date = $day AND status = 'judged' GROUP BY episode_id
"""

# A case's assertions are sorted into parts as they are and summed up a part at a time (`_SCORING_INPUT`): an ordered
# string_agg over the whole day cannot spill, so the day's size would set its memory.
_SCORE_ASSERTIONS = "SELECT episode_id, score, passed, assertion, detail FROM assertions WHERE partition_date = $day"


def _sort_scoring_inputs(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, parts: int) -> None:
    """What `_SCORING_INPUT` reads of the day, each sorted into its `parts` (`sort_into_parts`)."""
    day_only: dict[str, object] = {"day": day}
    sort_into_parts(con, "score_candidates", _SCORE_CANDIDATES, {**day_only, "agent": agent_id}, parts)
    sort_into_parts(con, "score_snapshots", _SCORESNAPSHOTS, day_only, parts)
    sort_into_parts(con, "score_judgements", _SCORE_JUDGEMENTS, day_only, parts)
    sort_into_parts(con, "score_assertions", _SCORE_ASSERTIONS, day_only, parts)
    sort_issues_into_parts(con, day, agent_id, parts)


_SCORING_INPUT = f"""
WITH candidates AS (
    SELECT * EXCLUDE (part) FROM score_candidates WHERE part = $part
), ranked AS (
    SELECT c.episode_id AS candidate_id, b.*, row_number() OVER (
        PARTITION BY c.episode_id
        ORDER BY {PRECEDENCE}
    ) AS rank
    FROM candidates c
    JOIN baselines b ON b.agent_id = c.agent_id AND b.task_id = c.task_id
        AND b.valid_from <= $day AND NOT {itself("c.episode_id")}
)
SELECT c.*,
       CASE WHEN c.mode = 'live' THEN c.episode_id ELSE b.episode_id END AS baseline_episode_id,
       CASE WHEN c.mode = 'live' THEN $day ELSE b.recorded_on END AS baseline_partition_date,
       {
    ", ".join(
        f"CASE WHEN c.mode = 'live' THEN e.{column} ELSE b.{column} END AS baseline_{column}" for column in SNAPSHOT.split(", ")
    )
}
       , j.judge_score, a.case_score, a.case_passed, a.failed_assertions,
       coalesce(i.critical_issues, 0) AS critical_issues, coalesce(i.error_issues, 0) AS error_issues,
       coalesce(i.warning_issues, 0) AS warning_issues
FROM candidates c
LEFT JOIN ranked b ON b.candidate_id = c.episode_id AND b.rank = 1
LEFT JOIN (SELECT * FROM score_snapshots WHERE part = $part) e ON e.episode_id = c.episode_id
LEFT JOIN (SELECT * FROM score_judgements WHERE part = $part) j ON j.episode_id = c.episode_id
LEFT JOIN (
    SELECT episode_id, avg(score) AS case_score, bool_and(passed) AS case_passed,
           string_agg(assertion || coalesce(': ' || nullif(detail, ''), ''), '; ' ORDER BY assertion) FILTER (NOT passed)
               AS failed_assertions
    FROM score_assertions WHERE part = $part GROUP BY episode_id
) a ON a.episode_id = c.episode_id
LEFT JOIN (
    SELECT episode_id, count(*) FILTER (severity = 'critical') AS critical_issues,
           count(*) FILTER (severity = 'error') AS error_issues, count(*) FILTER (severity = 'warning') AS warning_issues
    FROM part_issues WHERE part = $part GROUP BY episode_id
) i ON i.episode_id = c.episode_id
ORDER BY c.episode_id
"""


def day_scoring_input(con: duckdb.DuckDBPyConnection, day: date, policy: str, agent_id: str | None) -> tuple[str, dict]:
    """The query of each finished candidate of `day` beside its baseline's snapshot (NULLs where none), with the mean
    of its normalized judge verdicts (`judge_score`, NULL when it was not judged), its case's mean assertion score,
    verdict and failed expectations (NULL without a case), the reward its own grader recorded (`metadata.reward`) and
    its checks' issues per severity, and its parameters: what `write_scores` reads a part at a time, as one part on
    `con` (for a query over it; its rows are not read into memory here)."""
    _sort_scoring_inputs(con, day, agent_id, 1)
    return _SCORING_INPUT, {"day": day, "policy": policy, "part": 0}


SCORE_PART_EPISODES = 50_000  # candidates scored at a time: the step's memory is set by this, not by the day's size


def write_scores(
    warehouse: Warehouse,
    day: date,
    policy: str,
    agent_id: str | None,
    score: Callable[[pd.DataFrame, pd.DataFrame], pd.DataFrame],
) -> int:
    """Replace `day`'s `scores` rows (one agent's, when scoped) with `score(inputs, issues)` of each part of about
    SCORE_PART_EPISODES candidates (by a hash of their ids), in one transaction; return the rows written.

    `inputs`: the part's `day_scoring_input` rows; `issues`: the `issues` rows of the same episodes. A score depends on
    its own episode only, so the parts give the rows the whole day would. They are read on a second connection
    while the first writes: the next part read and the last one written while Python scores this one (`pipelined`)."""
    with warehouse.transaction() as con, second_cursor(con) as reader:
        clear_partition(con, "scores", day, agent_id)
        parts = candidate_parts(reader, day, agent_id, SCORE_PART_EPISODES)
        _sort_scoring_inputs(reader, day, agent_id, parts)

        def read() -> Generator[tuple[pd.DataFrame, pd.DataFrame]]:
            for part in range(parts):
                inputs = frame_of(reader.execute(_SCORING_INPUT, {"day": day, "policy": policy, "part": part}))
                yield inputs, issues_in_part(reader, part)

        return pipelined(read(), lambda part: score(*part), lambda rows: insert_rows(con, "scores", rows))
