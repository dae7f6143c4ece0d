"""What the episode viewer (`eval-pipeline serve`) reads: one read-only connection per page, never held between pages.

A nightly run writes in short transactions under the warehouse lock; the viewer waits for it briefly and
otherwise says "busy" (`WarehouseBusy`), so a page never blocks a run and a run never crashes the viewer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any, Literal

import duckdb
import pandas as pd

from eval_pipeline.errors import InfrastructureError
from eval_pipeline.warehouse.baselines import itself
from eval_pipeline.warehouse.connection import Warehouse, WarehouseBusy, frame_of, of_agent
from eval_pipeline.warehouse.rows import one_row

BUSY_WAIT_SECONDS = 2.0  # how long a page waits for a writer before answering "busy"

Verdict = Literal["passed", "failed", "none"]


class NoWarehouse(InfrastructureError):
    """There is no warehouse file yet: nothing has run."""


def existing(warehouse: Warehouse) -> Warehouse:
    """`warehouse`, or `NoWarehouse` when nothing has run yet."""
    if not warehouse.exists():
        raise NoWarehouse(f"no warehouse at {warehouse.shown} yet: run `eval-pipeline demo` or `eval-pipeline run` first")
    return warehouse


@contextmanager
def read_only(warehouse: Warehouse) -> Iterator[duckdb.DuckDBPyConnection]:
    """A read-only connection for one page; `WarehouseBusy` when a writer holds the file past `BUSY_WAIT_SECONDS`,
    whether it took our lock (a run) or not (a `duckdb` shell writing to it)."""
    opened = False
    try:
        with existing(warehouse).waiting_at_most(BUSY_WAIT_SECONDS).connect(read_only=True) as con:
            opened = True
            yield con
    except duckdb.IOException as exc:
        if opened:
            raise
        raise WarehouseBusy(f"warehouse busy: another process is writing to {warehouse.shown}") from exc


@dataclass(frozen=True)
class Filters:
    """The selection a day page shows; None: any. `dimension` and `severity` select episodes with such a finding."""

    agent: str | None = None
    dimension: str | None = None
    severity: str | None = None
    category: str | None = None
    verdict: Verdict | None = None

    def params(self) -> dict[str, Any]:
        return {
            "agent": self.agent,
            "dimension": self.dimension,
            "severity": self.severity,
            "category": self.category,
            "verdict": self.verdict,
        }


# Days a page of the viewer's home page lists, the latest first, and agents of a day it lists (the first by name; the day's
# page lists them all): every day since the first, each of every agent, counted from every score kept, made a year of a
# fleet of 200 agents one page of 60 MB, built in 14.4 s by a server then holding 513 MB.
DAYS_PER_PAGE = 30
AGENTS_PER_DAY = 50

_SCORED_DAYS = "SELECT DISTINCT partition_date FROM current_scores ORDER BY partition_date DESC"

# Per day and agent of the days from $first to $last: episodes, verdicts and findings per severity, and how many agents
# the day has; the first AGENTS_PER_DAY agents of each day.
_OVERVIEW = f"""
SELECT s.partition_date, s.agent_id, count(*) AS episodes, count(*) FILTER (s.passed) AS passed,
       count(*) FILTER (NOT s.passed) AS failed, count(*) FILTER (s.passed IS NULL) AS without_verdict,
       coalesce(any_value(f.critical), 0) AS critical, coalesce(any_value(f.warning), 0) AS warning,
       count(*) OVER (PARTITION BY s.partition_date) AS agents_that_day
FROM current_scores s
LEFT JOIN (SELECT partition_date, agent_id, count(*) FILTER (severity = 'critical') AS critical,
                  count(*) FILTER (severity = 'warning') AS warning
           FROM findings WHERE partition_date BETWEEN $first AND $last GROUP BY ALL) f USING (partition_date, agent_id)
WHERE s.partition_date BETWEEN $first AND $last
GROUP BY s.partition_date, s.agent_id
QUALIFY row_number() OVER (PARTITION BY s.partition_date ORDER BY s.agent_id) <= {AGENTS_PER_DAY}
ORDER BY s.partition_date DESC, s.agent_id
"""


@dataclass(frozen=True)
class DaysPage:
    """A page of the evaluated days: `days` (the latest first), their figures per agent (`per_agent`, a row per day
    and agent, of each day's first AGENTS_PER_DAY agents, with how many agents it has), the day before the page's last
    (`before`, what its last day is compared with), and how many days there are in all."""

    days: list[date]
    per_agent: pd.DataFrame
    before: date | None
    total: int


def days_page(con: duckdb.DuckDBPyConnection, page: int) -> DaysPage:
    """Page `page` (from 1) of the evaluated days, DAYS_PER_PAGE a page: only its days' scores are counted."""
    scored = [row[0] for row in con.execute(_SCORED_DAYS).fetchall()]  # a date a day: 3,650 in ten years
    first = (page - 1) * DAYS_PER_PAGE
    days = scored[first : first + DAYS_PER_PAGE]
    before = scored[first + DAYS_PER_PAGE] if first + DAYS_PER_PAGE < len(scored) else None
    per_agent = frame_of(con.execute(_OVERVIEW, {"first": days[-1] if days else None, "last": days[0] if days else None}))
    return DaysPage(days, per_agent, before, len(scored))


def day_before(con: duckdb.DuckDBPyConnection, day: date) -> date | None:
    """The latest day before `day` with finished episodes (what the day is compared with), found without listing every
    day of the history, as the compare form's choices do."""
    finished_before = "SELECT max(partition_date) FROM episodes WHERE partition_date < $day AND status <> 'running'"
    return one_row(con, finished_before, {"day": day})[0]


# Rows of a day page's episode table: the whole selection as one page made a day of 200,000 episodes 72 MB of HTML,
# built in 13.5 s by a server then holding 532 MB; its figures count the whole selection (`_SELECTION_TOTALS`).
EPISODES_PER_PAGE = 500

# The episodes a day page's filters select.
_SELECTED = f"""
FROM current_scores s JOIN episodes e USING (episode_id, partition_date)
WHERE s.partition_date = $day
  AND {of_agent("s.agent_id")}
  AND ($category IS NULL OR e.category = $category)
  AND ($verdict IS NULL OR ($verdict = 'passed' AND s.passed) OR ($verdict = 'failed' AND NOT s.passed)
       OR ($verdict = 'none' AND s.passed IS NULL))
  AND (($dimension IS NULL AND $severity IS NULL) OR EXISTS (
        SELECT 1 FROM findings f
        WHERE f.partition_date = s.partition_date AND f.episode_id = s.episode_id
          AND ($dimension IS NULL OR f.dimension = $dimension) AND ($severity IS NULL OR f.severity = $severity)))
"""
# One page of them, the worst first.
_EPISODES = f"""
SELECT s.episode_id, s.agent_id, s.task_id, e.category, e.status, s.passed, s.weighted_score, s.verdict_reason,
       s.total_cost_usd, s.total_duration_ms, s.baseline_episode_id
{_SELECTED}
ORDER BY s.passed NULLS FIRST, s.weighted_score NULLS FIRST, s.episode_id
LIMIT $rows OFFSET $offset
"""
# What the page's figures count of all of them, per agent.
_SELECTION_TOTALS = f"""
SELECT s.agent_id, count(*) AS episodes, count(*) FILTER (s.passed) AS passed, count(*) FILTER (NOT s.passed) AS failed,
       count(*) FILTER (s.passed IS NULL) AS without_verdict, coalesce(sum(s.weighted_score), 0) AS score_sum,
       count(s.weighted_score) AS scored
{_SELECTED}
GROUP BY s.agent_id
ORDER BY s.agent_id
"""

_FINDINGS = f"""
SELECT f.*, e.category
FROM findings f LEFT JOIN episodes e USING (episode_id, partition_date)
WHERE f.partition_date = $day
  AND {of_agent("f.agent_id")}
  AND ($dimension IS NULL OR f.dimension = $dimension)
  AND ($severity IS NULL OR f.severity = $severity)
  AND ($category IS NULL OR e.category = $category)
ORDER BY f.lifecycle, f.severity, f.agent_id, f.dimension, f.episode_id NULLS FIRST
"""


@dataclass(frozen=True)
class EpisodeTotals:
    """What a selection of episodes counts: the figures of a day page, of the whole selection or of one agent's part."""

    episodes: int = 0
    passed: int = 0
    failed: int = 0
    without_verdict: int = 0
    score_sum: float = 0.0
    scored: int = 0  # episodes with a weighted score

    @property
    def mean_score(self) -> float | None:
        return self.score_sum / self.scored if self.scored else None

    def __add__(self, other: EpisodeTotals) -> EpisodeTotals:
        return EpisodeTotals(*(getattr(self, name) + getattr(other, name) for name in EpisodeTotals.__dataclass_fields__))


@dataclass(frozen=True)
class DayRecords:
    """A day as its page shows it, within its filters (frames are rows of the tables they name)."""

    totals: dict[str, EpisodeTotals]  # per agent with episodes in the selection, in order
    episodes: pd.DataFrame  # the page's `current_scores` rows with the episode's category and status, the worst first
    findings: pd.DataFrame  # `findings` with the episode's category
    previous_findings: pd.DataFrame  # the day before's, within the same filters: those gone today are resolved
    choices: dict[str, list[str]]  # the values each filter can take that day

    @property
    def total(self) -> EpisodeTotals:
        return sum(self.totals.values(), EpisodeTotals())


def day_records(con: duckdb.DuckDBPyConnection, day: date, filters: Filters, page: int = 1) -> DayRecords:
    """The day's page `page` (from 1) of the selection `filters` make, with what the whole selection counts."""
    params = {"day": day, **filters.params()}
    findings = {key: value for key, value in params.items() if key != "verdict"}  # a finding has no verdict
    totals = con.execute(_SELECTION_TOTALS, params).fetchall()
    return DayRecords(
        totals={agent: EpisodeTotals(*figures) for agent, *figures in totals},
        episodes=frame_of(
            con.execute(_EPISODES, {**params, "rows": EPISODES_PER_PAGE, "offset": (page - 1) * EPISODES_PER_PAGE})
        ),
        findings=frame_of(con.execute(_FINDINGS, findings)),
        previous_findings=frame_of(con.execute(_FINDINGS, {**findings, "day": day - timedelta(days=1)})),
        choices=_choices(con, day),
    )


def _choices(con: duckdb.DuckDBPyConnection, day: date) -> dict[str, list[str]]:
    rows = con.execute(
        """
        SELECT 'agent', agent_id FROM current_scores WHERE partition_date = $day
        UNION SELECT 'category', category FROM episodes WHERE partition_date = $day AND category IS NOT NULL
        UNION SELECT 'dimension', dimension FROM findings WHERE partition_date = $day
        UNION SELECT 'severity', severity FROM findings WHERE partition_date = $day
        ORDER BY ALL
        """,
        {"day": day},
    ).fetchall()
    choices: dict[str, list[str]] = {"agent": [], "category": [], "dimension": [], "severity": []}
    for name, value in rows:
        choices[name].append(value)
    return choices


@dataclass(frozen=True)
class EpisodeRecords:
    """One episode of one day with everything recorded about it and its baseline (None/empty where there is none)."""

    episode: dict[str, Any]  # its `episodes` row, with `answer`: the replayed final output, else the recorded one
    score: dict[str, Any] | None  # its `scores` row
    steps: pd.DataFrame  # `episode_steps`, in order
    baseline: dict[str, Any] | None  # the `baselines` row it was compared with
    baseline_steps: pd.DataFrame  # the baseline episode's steps, as recorded on its day (a live replay's: its own)
    findings: pd.DataFrame
    assertions: pd.DataFrame
    issues: pd.DataFrame
    judgements: pd.DataFrame
    pairwise: pd.DataFrame
    rewards: pd.DataFrame


_STEPS = """
SELECT * EXCLUDE (episode_id, partition_date, agent_id) FROM episode_steps
WHERE episode_id = $episode AND partition_date = $day ORDER BY step_index
"""


def episode_records(con: duckdb.DuckDBPyConnection, day: date, episode_id: str) -> EpisodeRecords | None:
    """The episode `episode_id` of `day`; None when that day has no such episode."""
    params = {"day": day, "episode": episode_id}
    episode = _first(
        frame_of(
            con.execute(
                "SELECT e.*, coalesce(r.final_output, e.final_output) AS answer FROM episodes e "
                "LEFT JOIN replays r USING (episode_id, partition_date) "
                "WHERE e.partition_date = $day AND e.episode_id = $episode",
                params,
            )
        )
    )
    if episode is None:
        return None
    score = _first(frame_of(con.execute("SELECT * FROM scores WHERE partition_date = $day AND episode_id = $episode", params)))
    baseline = None
    baseline_steps = pd.DataFrame()
    if score is not None and isinstance(baseline_id := score["baseline_episode_id"], str):
        recorded = score["baseline_partition_date"]  # NULL: scored before the day was kept, and not known since
        recorded = None if pd.isna(recorded) else pd.Timestamp(recorded).date()
        lookup = {**params, "agent": episode["agent_id"], "task": episode["task_id"], "baseline": baseline_id}
        lookup["recorded"] = recorded
        baseline = _first(
            frame_of(
                con.execute(
                    "SELECT * FROM baselines b WHERE agent_id = $agent AND task_id = $task AND episode_id = $baseline "
                    f"AND ($recorded IS NULL OR recorded_on = $recorded) AND valid_from <= $day AND NOT {itself('$episode')} "
                    "ORDER BY pinned DESC, valid_from DESC, established_at DESC LIMIT 1",
                    lookup,
                )
            )
        )
        if recorded is not None:
            baseline_steps = frame_of(con.execute(_STEPS, {"episode": baseline_id, "day": recorded}))
    of_episode = "WHERE partition_date = $day AND episode_id = $episode"
    return EpisodeRecords(
        episode=episode,
        score=score,
        steps=frame_of(con.execute(_STEPS, params)),
        baseline=baseline,
        baseline_steps=baseline_steps,
        findings=frame_of(con.execute(f"SELECT * FROM findings {of_episode} ORDER BY severity, dimension", params)),
        assertions=frame_of(con.execute(f"SELECT * FROM assertions {of_episode} ORDER BY passed, assertion", params)),
        issues=frame_of(con.execute(f'SELECT * FROM issues {of_episode} ORDER BY severity, "check"', params)),
        judgements=frame_of(con.execute(f"SELECT * FROM judgements {of_episode} ORDER BY rubric", params)),
        pairwise=frame_of(con.execute(f"SELECT * FROM pairwise_judgements {of_episode}", params)),
        rewards=frame_of(con.execute(f"SELECT * FROM rewards {of_episode} ORDER BY reward_name", params)),
    )


def _first(frame: pd.DataFrame) -> dict[str, Any] | None:
    return None if frame.empty else frame.iloc[0].to_dict()
