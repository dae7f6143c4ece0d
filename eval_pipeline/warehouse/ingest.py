"""Load one day of raw records: validate and canonicalize them in bulk, quarantine the rest.

Raw text goes into a staging table in Arrow batches; DuckDB's JSON functions then parse,
validate and derive the canonical columns for the whole partition at once, applying the
rules of `episodes/model.py` (final output, tool sequence, task identity). Each rejected
record keeps its locator and a reason. Episodes, steps and quarantine of the day are
replaced in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from itertools import islice

import pyarrow as pa

from eval_pipeline.episodes.model import EpisodeStatus, StepType
from eval_pipeline.episodes.records import RawRecord
from eval_pipeline.warehouse.connection import Warehouse, replace_partition

BATCH_ROWS = 20_000

_STAGING_SCHEMA = pa.schema(
    [("seq", pa.int64()), ("source", pa.string()), ("locator", pa.string()), ("raw", pa.string()), ("fallback_day", pa.date32())]
)

_TOP_LEVEL_FIELDS = "episode_id agent_id status steps total_tokens total_cost_usd total_duration_ms started_at ended_at metadata"
_TOP_LEVEL = "{" + ",".join(f'"{name}":"JSON"' for name in _TOP_LEVEL_FIELDS.split()) + "}"
_STEP = (
    '[{"step_index":"JSON","step_type":"VARCHAR","tool_name":"VARCHAR","model":"VARCHAR","provider":"VARCHAR",'
    '"input_summary":"VARCHAR","output_summary":"VARCHAR","tokens":"JSON","cost_usd":"JSON","duration_ms":"JSON",'
    '"timestamp":"VARCHAR","error":"VARCHAR"}]'
)
_STATUSES = ", ".join(f"'{s.value}'" for s in EpisodeStatus)
_STEP_TYPES = ", ".join(f"'{s.value}'" for s in StepType)


def _as_number(field: str, sql_type: str) -> str:
    return f"TRY_CAST(f.{field} ->> '$' AS {sql_type})"


_PARSE = f"""
CREATE OR REPLACE TEMP TABLE _parsed AS
WITH decoded AS (
    SELECT seq, source, locator, raw, fallback_day, json_valid(raw) AS is_json
    FROM _raw
), fields AS (
    SELECT *, CASE WHEN is_json AND json_type(raw) = 'OBJECT' THEN json_transform(raw, '{_TOP_LEVEL}') END AS f
    FROM decoded
), typed AS (
    SELECT
        seq, source, locator, raw, fallback_day, is_json, f,
        f.episode_id ->> '$' AS episode_id,
        f.agent_id ->> '$' AS agent_id,
        f.status ->> '$' AS status,
        TRY_CAST(f.started_at ->> '$' AS TIMESTAMPTZ) AS started_at,
        TRY_CAST(f.ended_at ->> '$' AS TIMESTAMPTZ) AS ended_at,
        {_as_number("total_tokens", "BIGINT")} AS total_tokens,
        {_as_number("total_cost_usd", "DOUBLE")} AS total_cost_usd,
        {_as_number("total_duration_ms", "DOUBLE")} AS total_duration_ms,
        CASE WHEN json_type(f.steps) = 'ARRAY' THEN list_sort(list_transform(
            json_transform(f.steps, '{_STEP}'),
            lambda s: {{'step_index': TRY_CAST(s.step_index ->> '$' AS INTEGER), 'step_type': s.step_type,
                  'tool_name': s.tool_name, 'model': s.model, 'provider': s.provider,
                  'input_summary': s.input_summary, 'output_summary': s.output_summary,
                  'tokens': TRY_CAST(s.tokens ->> '$' AS BIGINT), 'cost_usd': TRY_CAST(s.cost_usd ->> '$' AS DOUBLE),
                  'duration_ms': TRY_CAST(s.duration_ms ->> '$' AS DOUBLE),
                  'timestamp': TRY_CAST(s.timestamp AS TIMESTAMPTZ), 'error': s.error,
                  'bad': s.step_index IS NULL OR TRY_CAST(s.step_index ->> '$' AS INTEGER) IS NULL
                         OR s.step_type IS NULL OR s.step_type NOT IN ({_STEP_TYPES})}}
        )) END AS steps,
        CASE WHEN json_type(f.metadata) = 'OBJECT' THEN f.metadata END AS metadata
    FROM fields
)
SELECT *,
    CASE
        WHEN NOT is_json THEN 'invalid JSON'
        WHEN f IS NULL THEN 'not a JSON object'
        WHEN coalesce(episode_id, '') = '' THEN 'missing episode_id'
        WHEN coalesce(agent_id, '') = '' THEN 'missing agent_id'
        WHEN status IS NULL THEN 'missing status'
        WHEN status NOT IN ({_STATUSES}) THEN 'status ''' || status || ''' is not one of {_STATUSES.replace("'", "")}'
        WHEN f.started_at IS NULL THEN 'missing started_at'
        WHEN started_at IS NULL THEN 'started_at ''' || (f.started_at ->> '$') || ''' is not an ISO 8601 timestamp'
        WHEN f.ended_at IS NOT NULL AND json_type(f.ended_at) <> 'NULL' AND ended_at IS NULL
            THEN 'ended_at ''' || (f.ended_at ->> '$') || ''' is not an ISO 8601 timestamp'
        WHEN f.steps IS NOT NULL AND steps IS NULL THEN 'steps is not a list'
        WHEN list_bool_or(list_transform(steps, lambda s: s.bad))
            THEN 'step ' || list_position(list_transform(steps, lambda s: s.bad), true) - 1
                 || ': step_index must be an integer and step_type one of {_STEP_TYPES.replace("'", "")}'
        WHEN f.total_tokens IS NOT NULL AND total_tokens IS NULL THEN 'total_tokens is not an integer'
        WHEN f.total_cost_usd IS NOT NULL AND total_cost_usd IS NULL THEN 'total_cost_usd is not a number'
        WHEN f.total_duration_ms IS NOT NULL AND total_duration_ms IS NULL THEN 'total_duration_ms is not a number'
        WHEN f.metadata IS NOT NULL AND json_type(f.metadata) <> 'NULL' AND metadata IS NULL THEN 'metadata is not an object'
    END AS reason,
    coalesce(CAST(timezone('UTC', started_at) AS DATE), fallback_day) AS day
FROM typed
"""

_CANONICAL = """
CREATE OR REPLACE TEMP TABLE _canonical AS
WITH kept AS (
    SELECT *, coalesce(steps, []) AS ordered,
           list_filter(coalesce(steps, []), lambda s: s.step_type = 'llm_call') AS llm_calls,
           row_number() OVER (PARTITION BY episode_id ORDER BY seq DESC) AS newest
    FROM _parsed
    WHERE reason IS NULL AND day = $day AND ($agent IS NULL OR agent_id = $agent)
)
SELECT
    episode_id, $day AS partition_date, agent_id,
    coalesce(metadata ->> '$.task_id',
             'auto-' || md5(agent_id || chr(10) || coalesce(llm_calls[1].input_summary, ''))[:16]) AS task_id,
    TRY_CAST(metadata ->> '$.trial' AS INTEGER) AS trial,
    status,
    coalesce(llm_calls[1].model, metadata ->> '$.model') AS model,
    started_at, ended_at,
    coalesce(total_tokens, list_sum(list_transform(ordered, lambda s: coalesce(s.tokens, 0))), 0) AS total_tokens,
    coalesce(total_cost_usd, list_sum(list_transform(ordered, lambda s: coalesce(s.cost_usd, 0))), 0) AS total_cost_usd,
    coalesce(total_duration_ms, list_sum(list_transform(ordered, lambda s: coalesce(s.duration_ms, 0))), 0) AS total_duration_ms,
    list_transform(list_filter(ordered, lambda s: s.step_type = 'tool_call'), lambda s: coalesce(s.tool_name, '')) AS tools,
    coalesce(metadata ->> '$.final_output', llm_calls[-1].output_summary) AS final_output,
    source, locator,
    metadata ->> '$.category' AS category,
    coalesce(TRY_CAST(metadata ->> '$.baseline' AS BOOLEAN), false) AS pinned_baseline,
    len(ordered) AS step_count,
    len(list_filter(ordered, lambda s: s.step_type = 'error' OR coalesce(s.error, '') <> '')) AS error_steps,
    metadata -> '$.expected' AS expected,
    metadata,
    now() AS loaded_at,
    ordered
FROM kept WHERE newest = 1
"""

_QUARANTINE = """
SELECT $day AS partition_date, source, locator, reason, raw, agent_id, now() AS quarantined_at FROM (
    SELECT source, locator, reason, raw, agent_id FROM _parsed
    WHERE reason IS NOT NULL AND day = $day AND ($agent IS NULL OR agent_id = $agent)
    UNION ALL
    SELECT p.source, p.locator, 'duplicate episode_id ' || p.episode_id || ', superseded by ' || c.locator, p.raw, p.agent_id
    FROM _parsed p JOIN _canonical c USING (episode_id)
    WHERE p.reason IS NULL AND p.day = $day AND p.locator <> c.locator AND ($agent IS NULL OR p.agent_id = $agent)
)
"""

_STEPS = """
SELECT episode_id, partition_date, agent_id, s.step_index, s.step_type, s.tool_name, s.model, s.provider,
       s.input_summary AS input, s.output_summary AS output, s.tokens, s.cost_usd, s.duration_ms, s.timestamp, s.error
FROM (SELECT episode_id, partition_date, agent_id, unnest(ordered) AS s FROM _canonical)
"""


@dataclass(frozen=True)
class IngestCounts:
    episodes: int
    steps: int
    quarantined: int
    records_read: int


def _batches(records: Iterable[RawRecord]) -> Iterable[pa.RecordBatch]:
    iterator = iter(records)
    seq = 0
    while chunk := list(islice(iterator, BATCH_ROWS)):
        yield pa.RecordBatch.from_arrays(
            [
                pa.array(range(seq, seq + len(chunk)), pa.int64()),
                pa.array([r.source for r in chunk], pa.string()),
                pa.array([r.locator for r in chunk], pa.string()),
                pa.array([r.raw for r in chunk], pa.string()),
                pa.array([r.fallback_day for r in chunk], pa.date32()),
            ],
            schema=_STAGING_SCHEMA,
        )
        seq += len(chunk)


def load_episodes(warehouse: Warehouse, day: date, records: Iterable[RawRecord], agent_id: str | None = None) -> IngestCounts:
    """Replace `day`'s episodes, steps and quarantine (one agent's, when scoped) with `records`."""
    params = {"day": day, "agent": agent_id}
    with warehouse.transaction() as con:
        con.execute("CREATE OR REPLACE TEMP TABLE _raw (seq BIGINT, source VARCHAR, locator VARCHAR, raw VARCHAR, fallback_day DATE)")
        read = 0
        for batch in _batches(records):
            con.register("_batch", batch)
            con.execute("INSERT INTO _raw SELECT * FROM _batch")
            con.unregister("_batch")
            read += batch.num_rows
        con.execute(_PARSE)
        con.execute(_CANONICAL, params)
        episodes = replace_partition(con, "episodes", day, "SELECT * EXCLUDE (ordered) FROM _canonical", agent_id)
        steps = replace_partition(con, "episode_steps", day, _STEPS, agent_id)
        quarantined = replace_partition(con, "quarantine", day, _QUARANTINE, agent_id, params)
        con.execute("DROP TABLE _raw; DROP TABLE _parsed; DROP TABLE _canonical")
    return IngestCounts(episodes=episodes, steps=steps, quarantined=quarantined, records_read=read)
