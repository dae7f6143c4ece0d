"""People's labels (the `labels` table): written one at a time from the viewer's review queues, read by the queues,
the daily report's agreement figures and `reward-bench`.

A label write takes the warehouse lock for one short transaction. While a nightly run holds the warehouse, it
retries with a growing pause, and after `LABEL_RETRY_DELAYS` it raises `WarehouseBusy`, so the caller can hand the
label back to the reviewer instead of dropping it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Literal

import duckdb
import pandas as pd

from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, WarehouseBusy, frame_of
from eval_pipeline.warehouse.rows import one_row

LabelVerdict = Literal["pass", "fail"]
LOCK_WAIT_SECONDS = 0.25  # one attempt's wait for the warehouse lock
LABEL_RETRY_DELAYS = (0.05, 0.1, 0.2, 0.4, 0.8, 1.6)  # pauses between attempts: about 5 s in all before "busy"


class UnknownEpisode(LookupError):
    """The label names an episode the day does not hold."""


@dataclass(frozen=True)
class Label:
    """One reviewer's verdict on one episode of one day, recorded in one queue (its agent is the episode's)."""

    reviewer: str
    queue: str
    episode_id: str
    day: date
    verdict: LabelVerdict
    score: int | None  # 1..5
    note: str | None


def record_label(warehouse: Warehouse, label: Label, on_retry: Callable[[float], None] = lambda _: None) -> None:
    """Write `label`, replacing the same reviewer's earlier label of the episode in the same queue; `on_retry` hears
    each pause. `WarehouseBusy` when every attempt found the warehouse held; `UnknownEpisode` (nothing written) when
    the day has no such episode."""
    key = {"reviewer": label.reviewer, "queue": label.queue, "episode": label.episode_id, "day": label.day}
    for delay in (*LABEL_RETRY_DELAYS, None):
        try:
            with warehouse.waiting_at_most(LOCK_WAIT_SECONDS).transaction() as con:
                con.execute(
                    "DELETE FROM labels WHERE reviewer = $reviewer AND queue = $queue AND episode_id = $episode "
                    "AND partition_date = $day",
                    key,
                )
                written = one_row(
                    con,
                    "INSERT INTO labels (reviewer, labelled_at, queue, episode_id, partition_date, agent_id, verdict, score, "
                    "note) SELECT $reviewer, now(), $queue, episode_id, partition_date, agent_id, $verdict, $score, $note "
                    "FROM episodes WHERE partition_date = $day AND episode_id = $episode LIMIT 1",
                    {**key, "verdict": label.verdict, "score": label.score, "note": label.note},
                )[0]
                if not written:
                    raise UnknownEpisode(f"no episode {label.episode_id!r} on {label.day}")
            return
        except (WarehouseBusy, duckdb.IOException) as exc:
            if delay is None:
                raise WarehouseBusy(f"warehouse busy: {warehouse.shown} stayed held; the label was not recorded") from exc
            on_retry(delay)
            time.sleep(delay)


def day_labels(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None = None) -> pd.DataFrame:
    """The day's `labels` rows (of `agent_id` alone, when given), oldest first."""
    return frame_of(
        con.execute(
            f"SELECT * FROM labels WHERE {DAY_OF_AGENT} ORDER BY labelled_at",
            {"day": day, "agent": agent_id},
        )
    )


@dataclass(frozen=True)
class DayVerdicts:
    """What the review queues draw from: the ids each queue picks from and the passed episodes by position, never a
    row of every episode (the day's verdicts read whole took a server to 340 MB, from 193, on a day of 200,000)."""

    failed: list[str]  # the failed episodes' ids, sorted
    failed_cases: list[str]  # the ids of the episodes whose case failed, sorted
    passed: int  # how many episodes passed
    passed_at: Callable[[Sequence[int]], list[str]]  # the ids at these positions of the passed ones sorted by id
    judged: pd.DataFrame  # each judged episode's mean normalized verdict, as a `judgements` row (`episode_id, status,
    # normalized`) that `judge_verdicts` reads, with the episode's own verdicts (`passed, case_passed`)


_IDS = "SELECT episode_id FROM current_scores WHERE partition_date = $day AND {verdict} ORDER BY episode_id"
_PASSED_AT = """
SELECT episode_id FROM (
    SELECT episode_id, row_number() OVER (ORDER BY episode_id) - 1 AS position
    FROM current_scores WHERE partition_date = $day AND passed
) WHERE list_contains($positions, position) ORDER BY episode_id
"""
_JUDGED = """
SELECT j.episode_id, 'judged' AS status, j.normalized, s.passed, s.case_passed
FROM (SELECT episode_id, avg(normalized) AS normalized FROM judgements
      WHERE partition_date = $day AND status = 'judged' GROUP BY episode_id) j
LEFT JOIN current_scores s ON s.partition_date = $day AND s.episode_id = j.episode_id
ORDER BY j.episode_id
"""


def review_pool(con: duckdb.DuckDBPyConnection, day: date) -> DayVerdicts:
    """The day's verdicts the review queues draw from, on `con` (`passed_at` asks it again)."""
    params = {"day": day}

    def ids(verdict: str) -> list[str]:
        return [row[0] for row in con.execute(_IDS.format(verdict=verdict), params).fetchall()]

    def passed_at(positions: Sequence[int]) -> list[str]:
        return [row[0] for row in con.execute(_PASSED_AT, {**params, "positions": list(positions)}).fetchall()]

    passed = one_row(con, "SELECT count(*) FROM current_scores WHERE partition_date = $day AND passed", params)[0]
    judged = frame_of(con.execute(_JUDGED, params))
    return DayVerdicts(ids("passed = false"), ids("case_passed = false"), int(passed), passed_at, judged)


def _labelled(labels: pd.DataFrame) -> list[str]:
    """The ids of the episodes `labels` (`labels` rows) holds a verdict on."""
    return labels["episode_id"].tolist() if len(labels) else []


def labelled_scores(con: duckdb.DuckDBPyConnection, day: date, labels: pd.DataFrame) -> pd.DataFrame:
    """`episode_id, passed` of the day's current episodes `labels` holds a verdict on: what their agreement reads."""
    params = {"day": day, "labelled": _labelled(labels)}
    return frame_of(
        con.execute(
            "SELECT episode_id, passed FROM current_scores WHERE partition_date = $day AND list_contains($labelled, episode_id)",
            params,
        )
    )


def labelled_judgements(con: duckdb.DuckDBPyConnection, day: date, agent_id: str | None, labels: pd.DataFrame) -> pd.DataFrame:
    """The day's `judgements` rows (of `agent_id` alone, when given) of the episodes `labels` holds a verdict on: what
    the labels' agreement with the judge reads."""
    params = {"day": day, "agent": agent_id, "labelled": _labelled(labels)}
    return frame_of(
        con.execute(f"SELECT * FROM judgements WHERE {DAY_OF_AGENT} AND list_contains($labelled, episode_id)", params)
    )


def label_truth(warehouse: Warehouse, first: date, last: date) -> dict[str, float]:
    """Per episode labelled in `first`..`last`, the share of its reviewers who passed it (each one's latest label)."""
    frame = warehouse.read_frame(
        """
        SELECT episode_id, avg((verdict = 'pass')::INTEGER) AS truth
        FROM (SELECT episode_id, arg_max(verdict, labelled_at) AS verdict FROM labels
              WHERE partition_date BETWEEN $first AND $last GROUP BY reviewer, partition_date, episode_id)
        GROUP BY episode_id
        """,
        {"first": first, "last": last},
    )
    return {str(row.episode_id): float(row.truth) for row in frame.itertuples(index=False)}
