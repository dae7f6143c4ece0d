"""What the day's report reads, and the `reports` row it leaves."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import date, timedelta

import duckdb
import numpy as np
import pandas as pd

from eval_pipeline.episodes.model import DERIVED_TASK_PREFIX
from eval_pipeline.llm.judge import JUDGE_TALLY_COLUMNS, JudgeTally, judge_tally
from eval_pipeline.reports.document import (
    UNTASKED_NAMED,
    WORST_EPISODES,
    DayScores,
    ReportData,
    baseline_measures,
    reported_means,
)
from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, frame_of, frames_of, of_agent
from eval_pipeline.warehouse.labels import day_labels, labelled_judgements
from eval_pipeline.warehouse.replays import replay_failed
from eval_pipeline.warehouse.rows import one_row


def report_inputs(warehouse: Warehouse, day: date, trend_days: int, agent_id: str | None = None) -> ReportData:
    """Everything the day's report shows, of every agent whichever a run evaluated last (`run --agent` replaces one
    agent's rows: the day is still the whole day), or of `agent_id` alone (what `run --agent --output` evaluated);
    `agent_daily` over the `trend_days` partitions ending on `day`."""
    with warehouse.connect(read_only=True) as con:
        params: dict[str, object] = {"day": day, "agent": agent_id}
        labels = day_labels(con, day, agent_id)
        findings = frame_of(con.execute(f"SELECT * FROM findings WHERE {DAY_OF_AGENT}", params))
        found = findings["episode_id"].dropna().unique().tolist()
        scores = day_scores(con, f"({_DAY_SCORES})", f"({_DAY_ISSUES})", params, found, labels["episode_id"].tolist())
        trend = frame_of(
            con.execute(
                f"SELECT * FROM agent_daily WHERE partition_date BETWEEN $first AND $day AND {of_agent()} ORDER BY ALL",
                {**params, "first": day - timedelta(days=trend_days - 1)},
            )
        )
        previous = con.execute("SELECT summary FROM reports WHERE partition_date = $day - 1", {"day": day}).fetchone()
        previous_summary = json.loads(previous[0]) if previous and previous[0] and agent_id is None else None
        if previous_summary is not None and previous_summary.get("agent_id") is not None:
            previous_summary = None  # one agent's, as `run --agent` once wrote them: no yardstick
        previous_findings = frame_of(
            con.execute(f"SELECT * FROM findings WHERE partition_date = $day - 1 AND {of_agent()}", params)
        )
        superseded = f"SELECT episode_id FROM scores WHERE {DAY_OF_AGENT} AND superseded"
        statuses = con.execute(
            f"SELECT status, count(*) FROM episodes WHERE {DAY_OF_AGENT} AND episode_id NOT IN ({superseded}) GROUP BY ALL",
            params,
        ).fetchall()
        superseded_count = one_row(con, f"SELECT count(*) FROM ({superseded})", params)[0]
        quarantined = one_row(con, f"SELECT count(*) FROM quarantine WHERE {DAY_OF_AGENT}", params)[0]
        live, reused, failed_replays = one_row(
            con,
            f"SELECT count(*), count(*) FILTER (WHERE cached), count(*) FILTER (WHERE {replay_failed()}) FROM replays "
            f"WHERE {DAY_OF_AGENT} AND mode = 'live'",
            params,
        )
        judge = _judge_tally(con, params)
        judged_labelled = labelled_judgements(con, day, agent_id, labels)
        pass_at_k = frame_of(con.execute(f"SELECT * FROM pass_at_k WHERE {DAY_OF_AGENT}", params))
        task_trials = frame_of(con.execute(f"SELECT * FROM task_trials WHERE {DAY_OF_AGENT}", params))
        failed_trials = frame_of(con.execute(_FAILED_TRIALS, params))
        read_in_part = con.execute(
            f"SELECT agent_id, model, episode_limit FROM partial_days WHERE {DAY_OF_AGENT} ORDER BY ALL", params
        ).fetchall()
    return ReportData(
        day=day,
        scores=scores,
        findings=findings,
        previous_findings=previous_findings,
        status_counts=dict(statuses),
        superseded=int(superseded_count),
        quarantined=int(quarantined),
        judge=judge,
        labelled_judgements=judged_labelled,
        pass_at_k=pass_at_k,
        task_trials=task_trials,
        failed_trials=failed_trials,
        trend=trend,
        previous_summary=previous_summary,
        live_replays=int(live),
        reused_replays=int(reused),
        failed_replays=int(failed_replays),
        read_in_part=[(agent, model, limit) for agent, model, limit in read_in_part],
        labels=labels,
        agent_id=agent_id,
    )


JUDGEMENT_BATCH_ROWS = 50_000  # the day's judge verdicts counted at a time


def _judge_tally(con: duckdb.DuckDBPyConnection, params: dict[str, object]) -> JudgeTally:
    """The day's judge verdicts and pairwise comparisons counted a batch at a time: read whole, those of a day of
    200,000 episodes took the report's read from 377 to 618 MB."""
    tally = JudgeTally()
    for table, side in (("judgements", "rubrics"), ("pairwise_judgements", "pairwise")):
        columns = JUDGE_TALLY_COLUMNS[side]
        sql = f"SELECT {', '.join(columns)} FROM {table} WHERE {DAY_OF_AGENT}"
        for batch in frames_of(con, sql, params, JUDGEMENT_BATCH_ROWS):
            tally += judge_tally(**{side: batch})
    return tally


# The day's current scores with the episode's category, its replayed answer and
# where its baseline came from; the report reads the columns it counts of it once (`day_scores`).
_DAY_SCORES = f"""
SELECT s.*, e.category, r.final_output, o.origin AS baseline_origin
FROM current_scores s JOIN episodes e USING (episode_id, partition_date)
LEFT JOIN replays r USING (episode_id, partition_date)
LEFT JOIN (
    SELECT agent_id, task_id, episode_id, recorded_on, arg_max(origin, established_at) AS origin FROM baselines
    WHERE valid_from <= $day GROUP BY ALL
) o
    ON o.episode_id = s.baseline_episode_id AND o.agent_id = s.agent_id AND o.task_id = s.task_id
        AND o.recorded_on IS NOT DISTINCT FROM s.baseline_partition_date
WHERE s.partition_date = $day AND {of_agent("s.agent_id")}
"""
_DAY_ISSUES = f"""
SELECT episode_id, "check", severity, detail FROM issues WHERE {DAY_OF_AGENT}
"""
_VERDICT_COUNTS = """count(*) AS episodes, count(*) FILTER (passed) AS passed, count(*) FILTER (NOT passed) AS failed,
    count(*) FILTER (passed IS NULL) AS without_verdict, count(*) FILTER (baseline_episode_id IS NULL) AS without_baseline"""
# A failed episode counts under each of its critical findings, else under its verdict's reason without its figures
_FAILED_ON = """
SELECT category, name, count(*) AS failed FROM (
    SELECT coalesce(category, '(none)') AS category, unnest(
        CASE WHEN len(coalesce(critical_findings, [])) > 0 THEN critical_findings
             ELSE [coalesce(nullif(regexp_replace(coalesce(verdict_reason, 'None'), $figures, ''), ''), 'verdict')] END
    ) AS name
    FROM {scores} WHERE passed = false
) GROUP BY ALL ORDER BY failed DESC, name, category
"""
# Failed first, then without a verdict (no baseline yet: the grade still speaks), then passed; lowest scores first
_WORST_FIRST = """CASE WHEN NOT passed THEN 0 WHEN passed THEN 2 ELSE 1 END, weighted_score NULLS FIRST,
    issue_score NULLS FIRST, episode_id"""
_COUNTED = "report_scores"  # the temp table of what the report counts of the day's scores


def _counted_columns() -> list[str]:
    """The columns of `_DAY_SCORES` rows the report counts, averages or ranks the day's episodes by."""
    ranked = ["episode_id", "agent_id", "task_id", "category", "passed", "baseline_episode_id", "baseline_origin",
              "weighted_score", "issue_score", "critical_findings", "verdict_reason"]  # fmt: skip
    return list(dict.fromkeys([*ranked, *reported_means(), *baseline_measures()]))


def day_scores(
    con: duckdb.DuckDBPyConnection,
    scores: str,
    issues: str,
    params: dict[str, object],
    found: list[str],
    labeled: list[str],
) -> DayScores:
    """What the report reads of the day's scores (`scores`: a relation of `_DAY_SCORES` rows, `issues`: of
    `_DAY_ISSUES` rows, each a table name or a parenthesized query over `params`): figures and the few episodes it
    shows, never every episode (see `DayScores`). `found`: the episodes the day's findings name; `labeled`: those
    people labeled.

    The columns it counts are read once into the temp table `_COUNTED`, which each figure reads (each query over
    `_DAY_SCORES` joins cost as much as the read itself, ten times over at a million episodes); the shown episodes
    are read whole, answers included, by id."""
    counted = ", ".join(f'"{column}"' for column in _counted_columns())
    con.execute(f"CREATE OR REPLACE TEMP TABLE {_COUNTED} AS SELECT {counted} FROM {scores}", params)
    means = ", ".join(f'avg("{column}")::DOUBLE AS "{column}"' for column in reported_means())
    figures = frame_of(
        con.execute(
            f"""
            SELECT CASE WHEN grouping(agent_id) = 0 THEN 'agent' WHEN grouping(category) = 0 THEN 'category' ELSE 'day' END
                       AS level, agent_id, category, {_VERDICT_COUNTS}, {means}
            FROM (SELECT * REPLACE (coalesce(category, '(none)') AS category) FROM {_COUNTED})
            GROUP BY GROUPING SETS ((agent_id), (category), ())
            ORDER BY level, agent_id, category
            """
        )
    )
    failed_on = frame_of(con.execute(_FAILED_ON.format(scores=_COUNTED), {"figures": r"\s*[\d.].*$"}))
    origins = con.execute(
        f"SELECT baseline_origin, count(*) FROM {_COUNTED} WHERE baseline_origin IS NOT NULL GROUP BY ALL ORDER BY 1"
    ).fetchall()
    untasked = f"SELECT episode_id FROM {_COUNTED} WHERE starts_with(task_id, $prefix)"
    without_task_id = one_row(con, f"SELECT count(*) FROM ({untasked})", {"prefix": DERIVED_TASK_PREFIX})[0]
    named = con.execute(
        f"{untasked} ORDER BY episode_id LIMIT $named", {"prefix": DERIVED_TASK_PREFIX, "named": UNTASKED_NAMED}
    ).fetchall()
    weighted = frame_of(con.execute(f"SELECT weighted_score::DOUBLE AS w FROM {_COUNTED}"))["w"]
    worst = [row[0] for row in con.execute(f"SELECT episode_id FROM {_COUNTED} ORDER BY {_WORST_FIRST} LIMIT $shown",
                                           {"shown": WORST_EPISODES}).fetchall()]  # fmt: skip
    shown_of = {**params, "shown": worst}
    shown = frame_of(
        con.execute(f"SELECT * FROM {scores} WHERE list_contains($shown, episode_id) ORDER BY {_WORST_FIRST}", shown_of)
    )
    shown_issues = frame_of(con.execute(f"SELECT * FROM {issues} WHERE list_contains($shown, episode_id)", shown_of))
    measures = ", ".join(f's."{column}"' for column in baseline_measures())
    return DayScores(
        figures=figures,
        failed_on=failed_on,
        baselines_from={str(origin): int(n) for origin, n in origins},
        without_task_id=int(without_task_id),
        untasked_named=[row[0] for row in named],
        weighted_scores=weighted.to_numpy(dtype=float, na_value=np.nan),
        shown=shown,
        shown_issues=shown_issues,
        finding_episodes=_of_episodes(
            con,
            f"""
            SELECT s.episode_id, s.task_id, coalesce(t.trials, 0) AS trials, {measures}
            FROM {_COUNTED} s SEMI JOIN episode_ids USING (episode_id)
            LEFT JOIN (SELECT agent_id, task_id, count(*) AS trials FROM {_COUNTED} GROUP BY ALL) t USING (agent_id, task_id)
            """,
            found,
        ).set_index("episode_id"),
        labeled=_of_episodes(con, f"SELECT episode_id, passed FROM {_COUNTED} SEMI JOIN episode_ids USING (episode_id)", labeled),
    )


def _of_episodes(con: duckdb.DuckDBPyConnection, sql: str, ids: list[str]) -> pd.DataFrame:
    """`sql` over the table `episode_ids` (one column, episode_id) holding `ids`: DuckDB reads this frame by its name."""
    episode_ids = pd.DataFrame({"episode_id": pd.Series(ids, dtype=object)})  # noqa: F841
    return frame_of(con.execute(sql))


# Trials that failed their case, with what a person needs to check the grader's call.
_FAILED_TRIALS = f"""
SELECT s.episode_id, s.agent_id, s.task_id, e.trial, e.metadata->>'hint' AS hint,
       (SELECT st.input FROM episode_steps st
         WHERE st.episode_id = s.episode_id AND st.partition_date = s.partition_date AND st.step_type = 'llm_call'
         ORDER BY st.step_index LIMIT 1) AS input,
       coalesce(r.final_output, e.final_output) AS output,
       (SELECT string_agg(a.assertion || ': ' || coalesce(a.detail, 'failed'), '; ' ORDER BY a.assertion)
          FROM assertions a
         WHERE a.episode_id = s.episode_id AND a.partition_date = s.partition_date AND NOT a.passed) AS reasoning
  FROM current_scores s JOIN episodes e USING (episode_id, partition_date)
  LEFT JOIN replays r USING (episode_id, partition_date)
 WHERE s.partition_date = $day AND {of_agent("s.agent_id")} AND s.case_passed = false
 ORDER BY s.episode_id
"""


@dataclass(frozen=True)
class RunOutcome:
    """What decides a run's exit code, within its selection: its failed episodes and its findings per severity, and
    what the gateway failed after its retries (live replays, judge verdicts), as no verdict is no pass."""

    failed_episodes: int
    findings: dict[str, int]
    failed_live_replays: int
    failed_judge_verdicts: int


# The failed judge verdicts of the days (rubric and pairwise alike), per day and agent
_FAILED_JUDGE_VERDICTS = """
SELECT partition_date, agent_id, count(*) AS failed FROM (
    SELECT partition_date, agent_id FROM judgements WHERE status = 'failed' AND {scope}
    UNION ALL SELECT partition_date, agent_id FROM pairwise_judgements WHERE status = 'failed' AND {scope}
) GROUP BY ALL ORDER BY ALL
"""
_SCOPE = f"list_contains($days, partition_date) AND {of_agent()}"


def run_outcome(warehouse: Warehouse, days: list[date], agent_id: str | None = None) -> RunOutcome:
    """The failed verdicts, findings, failed live replays and failed judge verdicts of `days`, only `agent_id`'s when
    given."""
    params = {"days": days, "agent": agent_id}
    with warehouse.session():
        failed = warehouse.read_frame(f"SELECT count(*) AS n FROM current_scores WHERE {_SCOPE} AND passed = false", params)
        rows = warehouse.read_frame(f"SELECT severity, count(*) AS n FROM findings WHERE {_SCOPE} GROUP BY ALL", params)
        replays = warehouse.read_frame(f"SELECT count(*) AS n FROM replays WHERE {_SCOPE} AND {replay_failed()}", params)
        judge = warehouse.read_frame(_FAILED_JUDGE_VERDICTS.format(scope=_SCOPE), params)
    return RunOutcome(
        int(failed["n"].iloc[0]),
        dict(zip(rows["severity"], rows["n"].astype(int), strict=False)),
        int(replays["n"].iloc[0]),
        int(judge["failed"].sum()),
    )


def findings_digest(warehouse: Warehouse, days: list[date]) -> pd.DataFrame:
    """Findings grouped by day, severity, agent, task and dimension, with one message each."""
    return warehouse.read_frame(
        """
        SELECT partition_date, severity, agent_id, coalesce(task_id, '(all episodes)') AS task_id, dimension,
               count(episode_id) AS episodes, min(message) AS message
        FROM findings WHERE list_contains($days, partition_date)
        GROUP BY partition_date, severity, agent_id, task_id, dimension
        ORDER BY partition_date, severity, agent_id, task_id, dimension
        """,
        {"days": days},
    )


def agents_seen(warehouse: Warehouse, days: list[date]) -> list[str]:
    frame = warehouse.read_frame(
        "SELECT DISTINCT agent_id FROM episodes WHERE list_contains($days, partition_date) ORDER BY 1", {"days": days}
    )
    return list(frame["agent_id"])


_FAILED_REPLAYS = f"SELECT episode_id, partition_date, error AS replay_error FROM replays WHERE {replay_failed()}"


def junit_inputs(
    warehouse: Warehouse, days: list[date], agent_id: str | None = None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The days' scored episodes, their findings and the failed judge verdicts per day and agent, as JUnit XML
    reports them."""
    params = {"days": days, "agent": agent_id}
    with warehouse.session():
        scores = warehouse.read_frame(
            "SELECT partition_date, agent_id, task_id, episode_id, passed, verdict_reason, replay_error "
            f"FROM current_scores LEFT JOIN ({_FAILED_REPLAYS}) USING (episode_id, partition_date) WHERE {_SCOPE}",
            params,
        )
        findings = warehouse.read_frame(
            f"SELECT partition_date, agent_id, episode_id, dimension, severity, message FROM findings WHERE {_SCOPE}", params
        )
        judge = warehouse.read_frame(_FAILED_JUDGE_VERDICTS.format(scope=_SCOPE), params)
    return scores, findings, judge
