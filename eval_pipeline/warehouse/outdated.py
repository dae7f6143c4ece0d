"""Days whose results rest on what earlier days held when they ran: an earlier day that gained a run late or ran again
(or a missed night evaluated after the next), a pin or promotion that reaches back. Their scores, findings and reports
stay as they were until they run again; only saying so keeps that from passing as current."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from eval_pipeline.warehouse.baselines import PRECEDENCE, itself
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.rows import Rows

# What scores keep of the baseline they were compared with (`baseline_<column>`), beside its id.
_COMPARED = ("episode_id", "status", "total_cost_usd", "total_duration_ms", "tools", "step_count", "error_steps")

# Per day, the episodes scored against another baseline than the one the same lookup as scoring's picks now.
_OTHER_BASELINES = f"""
WITH scored AS (
    SELECT * FROM scores WHERE mode IS DISTINCT FROM 'live' AND partition_date >= $first AND partition_date > $after
), current AS (
    SELECT c.partition_date, c.episode_id, {", ".join(f"b.{column} AS baseline_{column}" for column in _COMPARED)}
    FROM scored c
    JOIN baselines b ON b.agent_id = c.agent_id AND b.task_id = c.task_id
        AND b.valid_from <= c.partition_date AND NOT {itself("c.episode_id", "c.partition_date")}
    QUALIFY row_number() OVER (PARTITION BY c.partition_date, c.episode_id ORDER BY {PRECEDENCE}) = 1
)
SELECT c.partition_date, count(*) AS episodes
FROM scored c LEFT JOIN current n USING (partition_date, episode_id)
WHERE ({", ".join(f"c.baseline_{column}" for column in _COMPARED)})
    IS DISTINCT FROM ({", ".join(f"n.baseline_{column}" for column in _COMPARED)})
GROUP BY ALL
"""

# Per day, the findings whose `since` does not continue the day before's findings as they are now (`with_lifecycle`:
# a finding continues one of the same agent, task and dimension the day before), and those that carried such a
# finding's `since` on (the same key and `since`, later): each of them counts from a day that no longer says so.
_OTHER_SINCE = """
WITH keyed AS (
    SELECT *, coalesce(task_id, '') AS task_key FROM findings WHERE since IS NOT NULL AND partition_date >= $first - 1
), before AS (
    SELECT partition_date + 1 AS partition_date, agent_id, task_key, dimension, min(since) AS since
    FROM keyed GROUP BY ALL
), broken AS (
    SELECT f.partition_date, f.agent_id, f.task_key, f.dimension, f.since
    FROM keyed f LEFT JOIN before b USING (partition_date, agent_id, task_key, dimension)
    WHERE f.partition_date >= $first AND f.since IS DISTINCT FROM coalesce(b.since, f.partition_date)
)
SELECT f.partition_date, count(*) AS findings
FROM keyed f
WHERE f.partition_date >= $first AND partition_date > $after AND EXISTS (
    SELECT 1 FROM broken w
    WHERE (w.agent_id, w.task_key, w.dimension, w.since) = (f.agent_id, f.task_key, f.dimension, f.since)
        AND w.partition_date <= f.partition_date
)
GROUP BY ALL
"""


# The first day something changed under after it was evaluated (its report written): an earlier day evaluated later,
# or a baseline valid on it established later (a rerun's, a pin's, a promotion's). Days before it rest on what was
# there when they ran, so only it and the days after are compared row by row; a night run in order has none, and this
# reads only `reports` and two columns of `baselines`, where comparing every day's scores took 0.1 s per 100,000.
_FIRST_CHANGED_UNDER = """
WITH evaluated AS (
    SELECT partition_date, max(created_at) AS evaluated_at FROM reports GROUP BY ALL
), established AS (
    SELECT valid_from, max(established_at) AS established_at FROM baselines GROUP BY ALL
)
SELECT min(d.partition_date) FROM evaluated d
WHERE EXISTS (SELECT 1 FROM evaluated e WHERE e.partition_date < d.partition_date AND e.evaluated_at > d.evaluated_at)
    OR EXISTS (SELECT 1 FROM established b WHERE b.valid_from <= d.partition_date AND b.established_at > d.evaluated_at)
"""


# The day before's figures a report's headline compares with (`reports.html._cards`), as a struct of them
_HEADLINE_FIGURES = {"total_episodes": "BIGINT", "passed": "BIGINT", "pass_rate": "DOUBLE", "avg_weighted_score": "DOUBLE",
                     "critical_alerts": "BIGINT", "warning_alerts": "BIGINT"}  # fmt: skip
_HEADLINE = f"STRUCT({', '.join(f'{name} {kind}' for name, kind in _HEADLINE_FIGURES.items())})"
_HEADLINE_JSON = json.dumps(_HEADLINE_FIGURES)

# Days whose report was written before the day before was evaluated again, with their report's JSON file: what the
# report lists as resolved (the day before's findings gone that day) rests on the day before as it was then.
_REPORTED_BEFORE_THE_DAY_BEFORE = """
WITH evaluated AS (
    SELECT partition_date, max(created_at) AS evaluated_at, arg_max(json_path, created_at) AS json_path FROM reports
    GROUP BY ALL
)
SELECT d.partition_date, d.json_path FROM evaluated d
JOIN evaluated b ON b.partition_date = d.partition_date - 1 AND b.evaluated_at > d.evaluated_at
WHERE d.partition_date >= $first AND d.partition_date > $after
"""

# Per day of those, from its report file: `resolved`, how many of the findings resolved since the day before
# (`lifecycle.resolved`: its findings whose agent, task and dimension the day has none of) its report does not list,
# or lists that are no longer resolved; `headline`, 1 when the day before's figures its headline compares with
# (`previous_summary`) are no longer the day before's. A report that lists no resolved findings at all (written before
# reports did) is not told by them.
_AS_REPORTED = f"""
WITH reported AS (
    SELECT partition_date, resolved, previous_summary FROM read_json(
        $paths, format = 'auto', columns = {{
            'partition_date': 'DATE', 'resolved': 'STRUCT(agent_id VARCHAR, task_id VARCHAR, dimension VARCHAR)[]',
            'previous_summary': '{_HEADLINE}'
        }}
    )
), listed AS (
    SELECT partition_date, r.agent_id, coalesce(r.task_id, '') AS task_key, r.dimension
    FROM (SELECT partition_date, unnest(resolved) AS r FROM reported)
), now AS (
    SELECT DISTINCT y.partition_date + 1 AS partition_date, y.agent_id, coalesce(y.task_id, '') AS task_key, y.dimension
    FROM findings y WHERE y.partition_date + 1 IN (SELECT partition_date FROM reported WHERE resolved IS NOT NULL)
    AND NOT EXISTS (
        SELECT 1 FROM findings t WHERE t.partition_date = y.partition_date + 1 AND t.agent_id = y.agent_id
            AND coalesce(t.task_id, '') = coalesce(y.task_id, '') AND t.dimension = y.dimension
    )
), other_resolved AS (
    SELECT partition_date, count(*) AS resolved
    FROM ((SELECT * FROM now EXCEPT SELECT * FROM listed) UNION ALL (SELECT * FROM listed EXCEPT SELECT * FROM now))
    WHERE partition_date IN (SELECT partition_date FROM reported WHERE resolved IS NOT NULL)
    GROUP BY ALL
), before AS (
    SELECT partition_date + 1 AS partition_date, arg_max(summary, created_at) AS summary FROM reports GROUP BY ALL
), other_headline AS (
    SELECT r.partition_date, 1 AS headline FROM reported r LEFT JOIN before b USING (partition_date)
    WHERE r.previous_summary IS DISTINCT FROM json_transform(b.summary, '{_HEADLINE_JSON}')
)
SELECT partition_date, coalesce(o.resolved, 0) AS resolved, coalesce(h.headline, 0) AS headline
FROM other_resolved o FULL JOIN other_headline h USING (partition_date)
"""
_NOTHING_REPORTED = "SELECT NULL::DATE AS partition_date, 0 AS resolved, 0 AS headline WHERE false"


def first_changed_day(warehouse: Warehouse) -> date | None:
    """The first day something changed under after it was evaluated (`_FIRST_CHANGED_UNDER`); None: no such day."""
    first: date | None = warehouse.read_rows(_FIRST_CHANGED_UNDER).values[0][0]
    return first


def outdated_days(warehouse: Warehouse, policy: str, after: date | None = None) -> Rows:
    """Evaluated days (after `after`) with episodes scored against another baseline than the one they have now,
    findings whose `since` no longer follows the day before, or a report that lists other findings of the day before
    as resolved than it has now (`resolved`), or compares with other figures of it (`headline`, 1): partition_date,
    episodes, findings, resolved, headline (0 where none)."""
    params: dict[str, object] = {"after": after or date.min, "first": first_changed_day(warehouse) or date.max}
    reported = warehouse.read_rows(_REPORTED_BEFORE_THE_DAY_BEFORE, params) if params["first"] != date.max else None
    paths = [path for _, path in (reported.values if reported else []) if path and Path(path).is_file()]
    as_reported = _AS_REPORTED if paths else _NOTHING_REPORTED
    return warehouse.read_rows(
        f"""SELECT partition_date, coalesce(e.episodes, 0) AS episodes, coalesce(f.findings, 0) AS findings,
            coalesce(r.resolved, 0) AS resolved, coalesce(r.headline, 0) AS headline
        FROM ({_OTHER_BASELINES}) e FULL JOIN ({_OTHER_SINCE}) f USING (partition_date)
        FULL JOIN ({as_reported}) r USING (partition_date) ORDER BY partition_date""",
        {**params, "policy": policy, **({"paths": paths} if paths else {})},
    )


def other_policy_days(warehouse: Warehouse, policy: str) -> Rows:
    """The first day whose baselines were made under another `[baseline] policy` than `policy`, and the last evaluated
    day (NULLs where none): under `first` a day adds no baseline for a task an earlier day has one for, so after a
    switch to `rolling` the latest earlier run is not there to be found until those days run again."""
    return warehouse.read_rows(
        """SELECT min(partition_date) AS first, (SELECT max(partition_date) FROM scores) AS latest
        FROM baselines WHERE origin IN ('run', 'history') AND policy <> $policy""",
        {"policy": policy},
    )
