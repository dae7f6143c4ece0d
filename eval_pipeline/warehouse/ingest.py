"""Load one day of raw records: validate and canonicalize them in bulk, quarantine the rest.

Raw text goes into a staging table in Arrow batches; DuckDB's JSON functions then parse,
validate and derive the canonical columns of each batch at once, applying the rules of
`episodes/model.py` (final output, tool sequence, task identity). Each rejected record keeps
its locator and a reason. Episodes, steps and quarantine of the day are replaced in one
transaction, batch by batch: a day costs a few batches of memory (the one parsed, and those
not yet written: `WRITE_ROWS`), each bounded in bytes too (`BATCH_BYTES`, `WRITE_BYTES`: records
of long tool outputs), plus a small index of the episodes kept (id, source, locator), whatever
its size. A record whose id comes again later is superseded by the later one, in the same batch
or not.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Iterable, Iterator
from dataclasses import dataclass
from datetime import date
from itertools import groupby, islice
from typing import cast

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eval_pipeline.episodes.model import DERIVED_TASK_PREFIX, EpisodeStatus, StepType
from eval_pipeline.episodes.records import (
    EARLIEST_DAY,
    ISO_TIMESTAMP,
    RawRecord,
    RawRecords,
    RecordLines,
    latest_day,
    unpaired_surrogate,
)
from eval_pipeline.read_ahead import pipelined, read_ahead
from eval_pipeline.warehouse.connection import DAY_OF_AGENT, Warehouse, clear_partition, of_agent, second_cursor
from eval_pipeline.warehouse.rows import one_row

# Records parsed and written at a time: what a day's ingest holds in memory. Loading the benchmark's 1,000,000 records
# took 26.1-27.6 s in batches of 20,000 and 31.6-33.2 s in batches of 10,000 (planning and binding a batch's parse
# takes some 30 ms whatever its size, and each batch joins the index of the episodes kept); with DuckDB held to 1 GiB
# as in a run, 26.5 s at a peak RSS of 1,524 MiB, 32.6 s at 1,399 MiB, and 30.7 s at 1,735 MiB in batches of 30,000.
# (Before a file's lines were staged as Arrow blocks, Python staging them held the GIL: 10,000 did best then, 72 s
# against 73 s in batches of 20,000.)
BATCH_ROWS = 20_000
# Episodes written at a time, with their steps, from the batches parsed: DuckDB appends rows to a table faster in a few
# large inserts than in many small ones (loading 1,000,000 episodes in batches of 10,000: 44.0 and 40.7 s against 47.4
# and 44.8 s in inserts of one batch; in batches of 20,000: 26.1-27.6 s, 26.8 s in inserts of one batch, 28.0 s in
# inserts of 80,000), at the memory of the parsed batches held (about 40 MiB each).
WRITE_ROWS = 40_000
CHUNK_ROWS = 1_024  # rows per Arrow chunk: lets DuckDB parse one batch on every core
# Fewer records a batch, and episodes pending, when they are long (tool results of whole pages): counted in rows alone,
# a day of 100,000 episodes with two tool results of 10 KB each peaked at 3,844 MiB in ingest (batches of 430 MB of
# text). The benchmark's records (2.5 KB) make batches of some 50 MB, and pending episodes some 80 MB, within both.
BATCH_BYTES = 64 << 20  # of raw text
WRITE_BYTES = 128 << 20  # of parsed episodes and steps, as Arrow holds them

# The staging columns but `seq`, which numbers the records in the order they came when they are staged.
_UNNUMBERED = pa.schema(
    [
        ("source", pa.string()),
        ("locator", pa.string()),
        ("raw", pa.string()),
        ("fallback_day", pa.date32()),
        ("rejected", pa.string()),
        ("source_records", pa.int32()),
        ("given", pa.string()),  # the source's own text where an adapter made `raw` of it: what quarantine keeps
    ]
)

# One typed parse per record. json_transform is lenient (a value of the wrong type becomes NULL, or is read as the
# type: "5" as 5), so a NULL is told apart from an absent field only for the rare records that have one, and the
# numbers' and texts' own JSON types are read too (`_GIVEN_AS_JSON`, as `given`), for the records that may have a
# mistyped one (`_MAY_BE_MISTYPED`).
_STEP_FIELDS = {
    "step_index": "BIGINT", "step_type": "VARCHAR", "tool_name": "VARCHAR", "model": "VARCHAR",
    "provider": "VARCHAR", "input_summary": "VARCHAR", "output_summary": "VARCHAR", "tokens": "BIGINT",
    "cost_usd": "DOUBLE", "duration_ms": "DOUBLE", "timestamp": "VARCHAR", "error": "VARCHAR", "metadata": "JSON",
}  # fmt: skip
# Counts and amounts: a value of the wrong type, negative or not finite is rejected, never coerced.
_COUNT = "an integer"
_NUMBERS = {"total_tokens": _COUNT, "total_cost_usd": "a number", "total_duration_ms": "a number"}
_STEP_NUMBERS = {"step_index": _COUNT, "tokens": _COUNT, "cost_usd": "a number", "duration_ms": "a number"}
_COUNTS = [name for name, kind in {**_NUMBERS, **_STEP_NUMBERS}.items() if kind == _COUNT]
_EPISODE_FIELDS = {
    "episode_id": "VARCHAR",
    "agent_id": "VARCHAR",
    "status": "VARCHAR",
    "started_at": "VARCHAR",
    "ended_at": "VARCHAR",
    "total_tokens": "BIGINT",
    "total_cost_usd": "DOUBLE",
    "total_duration_ms": "DOUBLE",
    "steps": [_STEP_FIELDS],
    "metadata": "JSON",
}
_EPISODE_SCHEMA = json.dumps(_EPISODE_FIELDS)
# Text fields: a value of another type is rejected too (the typed parse reads 7 as '7', ["a"] as '["a"]').
_TEXTS = [name for name, kind in _EPISODE_FIELDS.items() if kind == "VARCHAR"]
_STEP_TEXTS = [name for name, kind in _STEP_FIELDS.items() if kind == "VARCHAR"]
# The numeric and text fields again as JSON, whose types tell a number from text or a boolean (which the typed parse
# reads as one: "5" as 5, true as 1), a fraction from a count (1.5 read as a count is 2), and text from anything else.
_GIVEN_AS_JSON = json.dumps(
    {**dict.fromkeys([*_NUMBERS, *_TEXTS], "JSON"), "steps": [dict.fromkeys([*_STEP_NUMBERS, *_STEP_TEXTS], "JSON")]}
)
# Which records' numbers and texts are read again as JSON: a number field whose value does not open as a number does
# (text, a boolean, null, an object, a list), a text field whose value does not open as text or null, a count with a
# fraction or an exponent, a typed number that is NULL (absent, or beyond BIGINT), and any record with a `\u` escape (a
# key may be spelled with one). The others' numbers are numbers and their texts text as given, and their second parse
# is skipped (100,000 episodes: the parse 1.23 s against 1.43 s, same rows).


def _any_step(conditions: Iterable[str]) -> str:
    """Whether a step of the record meets any of `conditions` (on `s`, at position `i`), in one pass over its steps."""
    return f"coalesce(list_bool_or(list_transform(e.steps, lambda s, i: {' OR '.join(f'({c})' for c in conditions)})), false)"


_NOT_OPENING_AS_A_NUMBER = f'"({"|".join(_NUMBERS | _STEP_NUMBERS)})"\\s*:\\s*[^-0-9\\s]'
_NOT_OPENING_AS_TEXT = f'"({"|".join(dict.fromkeys([*_TEXTS, *_STEP_TEXTS]))})"\\s*:\\s*[^"n\\s]'
_COUNT_WITH_A_FRACTION = f'"({"|".join(_COUNTS)})"\\s*:\\s*-?[0-9]+[.eE]'
_MAY_BE_MISTYPED = (
    f"regexp_matches(raw, '{_NOT_OPENING_AS_A_NUMBER}|{_NOT_OPENING_AS_TEXT}|{_COUNT_WITH_A_FRACTION}') OR "
    "contains(raw, '\\u') OR "
    + " OR ".join([*(f"e.{name} IS NULL" for name in _NUMBERS), _any_step(f"s.{name} IS NULL" for name in _STEP_NUMBERS)])
)
_STATUSES = ", ".join(f"'{s.value}'" for s in EpisodeStatus)
_STEP_TYPES = ", ".join(f"'{s.value}'" for s in StepType)
_STEP_TYPE_NAMES = ", ".join(s.value for s in StepType)
# A step's problems are conditions on it (`s`) and its position (`i`, from 1), asked of each step by `_first_step`.
_BAD_STEP = f"s.step_index IS NULL OR s.step_index < 0 OR s.step_type IS NULL OR s.step_type NOT IN ({_STEP_TYPES})"


def _timestamp(text: str) -> str:
    """The one timestamp parser (the file index applies the same pattern): NULL for anything but ISO 8601."""
    return f"CASE WHEN regexp_full_match({text}, '{ISO_TIMESTAMP}') THEN TRY_CAST({text} AS TIMESTAMPTZ) END"


_BAD_STEP_TIME = "s.timestamp IS NOT NULL AND step_times[i] IS NULL"  # step_times: see `_PARSE`


def _out_of_range(value: str) -> str:
    return f"({value} < 0 OR NOT isfinite({value}::DOUBLE))"


def _opens_with(given: str, openings: str, among: bool = True) -> str:
    """`given` (a field's JSON, from `_GIVEN_AS_JSON`) opens with one of the characters `openings` (with none of them,
    when not `among`), which tells its JSON type; false where the record's fields were not read again."""
    listed = ", ".join("'" + opening + "'" for opening in openings)
    return f"coalesce(left({given}::VARCHAR, 1) {'' if among else 'NOT '}IN ({listed}), false)"


def _mistyped(given: str) -> str:
    """A number's `given` JSON is text, a boolean, an object or a list."""
    return _opens_with(given, '"tf{[')


def _not_text(given: str) -> str:
    """A text field's `given` JSON is a number, a boolean, an object or a list: neither text nor null."""
    return _opens_with(given, '"n', among=False)


def _given(given: str) -> str:
    """The record gave a value, null aside (asked where the typed parse has none: one beyond BIGINT)."""
    return f"coalesce({given}::VARCHAR, 'null') <> 'null'"


# Whether any number of the record came as something else: one pass over its steps, so that the reasons below look
# for which only in the records that have one.
_ANY_MISTYPED = " OR ".join(
    [
        f"coalesce(list_bool_or(list_transform(given.steps, lambda n: "
        f"{' OR '.join(_mistyped(f'n.{name}') for name in _STEP_NUMBERS)})), false)",
        *(_mistyped(f"given.{name}") for name in _NUMBERS),
    ]
)


def _not_a_number(given: str, typed: str) -> str:
    """`given` came as something else than a number (the typed parse read it as NULL, or coerced it: "5" as 5), or as
    one the typed parse could not hold (beyond BIGINT); which field is asked only of records with a mistyped one."""
    return f"CASE WHEN {typed} IS NULL THEN {_given(given)} WHEN mistyped THEN {_mistyped(given)} ELSE false END"


def _fraction(given: str, typed: str) -> str:
    """A count given as a number with a fraction: the typed parse rounded it."""
    return f"TRY_CAST({given} AS DOUBLE) <> {typed}"


def _bad_step_number(name: str) -> str:
    """A step whose `name` is no number, a fraction for a count, negative or not finite."""
    given, typed = f"given.steps[i].{name}", f"s.{name}"
    fraction = f" OR {_fraction(given, typed)}" if _STEP_NUMBERS[name] == _COUNT else ""
    return f"{_not_a_number(given, typed)} OR coalesce({_out_of_range(typed)}{fraction}, false)"


def _first_step(condition: str) -> str:
    """The position of the first step meeting `condition`, for the reason; NULL when none does."""
    return f"nullif(list_position(list_transform(e.steps, lambda s, i: {condition}), true), 0) - 1"


def _step_reason(condition: str, says: str) -> str:
    """The reason naming the first step meeting `condition`."""
    first = _first_step(condition)
    return f"WHEN {first} IS NOT NULL THEN 'step ' || {first} || ': {says}'"


_INDICES = "list_transform(e.steps, lambda s: s.step_index)"
_REPEATED_INDEX = f"len(list_distinct({_INDICES})) < len(e.steps)"
_STEP_TEXT_CONDITIONS = {name: _not_text(f"given.steps[i].{name}") for name in _STEP_TEXTS}
_STEP_CONDITIONS = (
    _BAD_STEP,
    *_STEP_TEXT_CONDITIONS.values(),
    *(_bad_step_number(name) for name in _STEP_NUMBERS),
    _BAD_STEP_TIME,
)
# What is wrong with a record's steps, the first problem in this order; `_STEP_TROUBLE` says whether any is, in one pass
# over the steps, so that only the records with one look for which (in 10,000 valid records: 31 ms against 77 ms).
_STEP_REASONS = "\n                ".join(
    [
        _step_reason(_BAD_STEP, f"step_index must be an integer, not negative, and step_type one of {_STEP_TYPE_NAMES}"),
        f"WHEN {_REPEATED_INDEX} THEN 'step_index repeats: each step needs its own'",
        *(_step_reason(condition, f"{name} is not text") for name, condition in _STEP_TEXT_CONDITIONS.items()),
        *(
            _step_reason(_bad_step_number(name), f"{name} must be {kind}, finite and not negative")
            for name, kind in _STEP_NUMBERS.items()
        ),
        _step_reason(_BAD_STEP_TIME, "timestamp is not an ISO 8601 timestamp"),
    ]
)

# A record whose numbers were not read again (`_MAY_BE_MISTYPED`) has each as a number as given, a count whole: only a
# number out of range is wrong with it (100,000 episodes: the parse 1.15 s against 1.23 s asking every step the whole question).
_NUMBERS_AS_GIVEN_STEP_CONDITIONS = (_BAD_STEP, *(_out_of_range(f"s.{name}") for name in _STEP_NUMBERS), _BAD_STEP_TIME)
_STEP_TROUBLE = (
    f"CASE WHEN given IS NULL THEN {_any_step(_NUMBERS_AS_GIVEN_STEP_CONDITIONS)} ELSE {_any_step(_STEP_CONDITIONS)} END"
    f" OR coalesce({_REPEATED_INDEX}, false)"
)


def _present(field: str) -> str:
    """The raw record has `field` with a non-null value (asked only where the typed value is NULL)."""
    return f"coalesce(json_type(raw, '$.{field}'), 'NULL') <> 'NULL'"


# Numbers that are no numbers, negative, not finite, or a fraction for a count: the first such field names the reason.
_NUMBER_REASONS = "\n        ".join(
    [
        *(f"WHEN {_not_a_number(f'given.{name}', f'e.{name}')} THEN '{name} is not {kind}'" for name, kind in _NUMBERS.items()),
        *(
            f"WHEN {_out_of_range(f'e.{name}')} THEN '{name} must be finite and not negative, not ' || e.{name}"
            for name in _NUMBERS
        ),
        *(
            f"WHEN {_fraction(f'given.{name}', f'e.{name}')} THEN '{name} is not {kind}: ' || given.{name}"
            for name, kind in _NUMBERS.items()
            if kind == _COUNT
        ),
    ]
)

_TEXT_REASONS = "\n        ".join(f"WHEN {_not_text(f'given.{name}')} THEN '{name} is not text'" for name in _TEXTS)

# Each step with its timestamp parsed, sorted by step_index only when the record's are out of order (sorting the steps
# of 10,000 records took 35 ms, finding that they need none 16 ms). Records whose indices repeat are rejected.
_TYPED_STEPS = f"""list_transform(e.steps, lambda s, i: {{
        {", ".join(f"'{name}': s.{name}" for name in _STEP_FIELDS if name != "timestamp")},
        'timestamp': step_times[i]
    }})"""
_INDICES_IN_ORDER = f"list_sort({_INDICES}) = {_INDICES}"

# The metadata tags the pipeline reads, each of one JSON type as the model's `Tags` (`episodes/model.py`): what is given
# otherwise is rejected, not read as something else ("2" or 1.5 as trial 2, "yes" or 1 as a pin, "abc" as no trial).
# A trial is a whole number, not negative, an INTEGER; a reward a finite number. Each record's tags are typed in one
# parse of its metadata (`tag_types`), and only a trial or reward given as a float is read again.
_TAGS = ("trial", "baseline", "reward")
_TAG_PATHS = "[" + ", ".join(f"'$.{name}'" for name in _TAGS) + "]"


def _tag(name: str) -> str:
    return f"tag_types[{_TAGS.index(name) + 1}]"


def _given_tag(name: str) -> str:
    return f"(e.metadata -> '$.{name}')"


_TRIAL = "TRY_CAST(e.metadata ->> '$.trial' AS DOUBLE)"
_TAG_REASONS = "\n        ".join(
    [
        f"""WHEN {_tag("trial")} NOT IN ('UBIGINT', 'DOUBLE', 'NULL') OR ({_tag("trial")} IN ('UBIGINT', 'DOUBLE')
                AND NOT coalesce({_TRIAL} = floor({_TRIAL}) AND {_TRIAL} BETWEEN 0 AND {2**31 - 1}, false))
            THEN 'metadata.trial must be a whole number, not negative: ' || {_given_tag("trial")}""",
        f"""WHEN {_tag("baseline")} NOT IN ('BOOLEAN', 'NULL')
            THEN 'metadata.baseline must be true or false, not ' || {_given_tag("baseline")}""",
        f"""WHEN {_tag("reward")} NOT IN ('UBIGINT', 'BIGINT', 'DOUBLE', 'NULL')
                OR ({_tag("reward")} = 'DOUBLE' AND NOT isfinite(TRY_CAST(e.metadata ->> '$.reward' AS DOUBLE)))
            THEN 'metadata.reward must be a finite number, not ' || {_given_tag("reward")}""",
    ]
)

_INVALID_JSON = "invalid JSON"  # said more exactly where it can be (`_named_unpaired`)

# Parses one staged batch; only the day's records are kept, of every agent even when a load is scoped to one: a later
# record of another agent with the same id supersedes the agent's as it does in a load of the whole day.
_PARSE = f"""
WITH read AS (
    SELECT seq, source, locator, raw, fallback_day, rejected, source_records,
           TRY(json_transform(raw, '{_EPISODE_SCHEMA}')) AS e
    FROM _batch
), typed AS (
    SELECT *, CASE WHEN {_MAY_BE_MISTYPED} THEN TRY(json_transform(raw, '{_GIVEN_AS_JSON}')) END AS given FROM read
), stamped AS (  -- each timestamp parsed once: the checks below and the columns read these
    SELECT *, {_timestamp("e.started_at")} AS started, {_timestamp("e.ended_at")} AS ended,
           list_transform(e.steps, lambda s: {_timestamp("s.timestamp")}) AS step_times, {_ANY_MISTYPED} AS mistyped,
           json_type(e.metadata, {_TAG_PATHS}) AS tag_types
    FROM typed
), parsed AS (
SELECT
    seq, source, locator, fallback_day, source_records,  -- the raw text is read from the batch where kept
    e.episode_id, e.agent_id, e.status,
    started AS started_at,
    ended AS ended_at,
    e.total_tokens, e.total_cost_usd, e.total_duration_ms,
    CASE WHEN {_INDICES_IN_ORDER} THEN {_TYPED_STEPS} ELSE list_sort({_TYPED_STEPS}) END AS steps,
    e.metadata,
    CASE
        WHEN rejected IS NOT NULL THEN rejected
        WHEN e IS NULL THEN '{_INVALID_JSON}'
        {_TEXT_REASONS}
        WHEN coalesce(e.episode_id, '') = '' THEN  -- what is no object has no episode_id: one more parse, for these only
            CASE WHEN json_type(raw) <> 'OBJECT' THEN 'not a JSON object' ELSE 'missing episode_id' END
        WHEN coalesce(e.agent_id, '') = '' THEN 'missing agent_id'
        WHEN e.status IS NULL THEN 'missing status'
        WHEN e.status NOT IN ({_STATUSES})
            THEN 'status ''' || e.status || ''' is not one of {_STATUSES.replace("'", "")}'
        WHEN e.started_at IS NULL THEN 'missing started_at'
        WHEN started IS NULL
            THEN 'started_at ''' || e.started_at || ''' is not an ISO 8601 timestamp'
        WHEN NOT CAST(timezone('UTC', started) AS DATE) BETWEEN $earliest AND $latest
            THEN 'started_at ''' || e.started_at || ''' is not between ' || $earliest || ' and ' || $latest
                 || ' (tomorrow): a broken clock'
        WHEN e.ended_at IS NOT NULL AND ended IS NULL
            THEN 'ended_at ''' || e.ended_at || ''' is not an ISO 8601 timestamp'
        WHEN e.steps IS NULL AND {_present("steps")} THEN 'steps is not a list'
        WHEN {_STEP_TROUBLE} THEN CASE
                {_STEP_REASONS}
            END
        {_NUMBER_REASONS}
        WHEN e.metadata IS NOT NULL AND json_type(e.metadata) NOT IN ('OBJECT', 'NULL') THEN 'metadata is not an object'
        {_TAG_REASONS}
    END AS reason,
    coalesce(
        list_filter([CAST(timezone('UTC', started) AS DATE)], lambda d: d BETWEEN $earliest AND $latest)[1],
        fallback_day
    ) AS day  -- a record without a plausible day of its own is quarantined on its file's day
FROM stamped
)
SELECT * FROM parsed WHERE day = $day
"""

# The newest valid record of each id in `_parsed`: the episodes of a batch.
_NEWEST = """CREATE OR REPLACE TEMP TABLE _newest AS
SELECT seq FROM _parsed WHERE reason IS NULL QUALIFY row_number() OVER (PARTITION BY episode_id ORDER BY seq DESC) = 1"""

# A view, so that each read of a batch derives only the columns it asks for: with the episodes and their steps copied
# into a table, and the steps into another, deriving and reading 100,000 episodes took 2.5-2.8 s, through it 1.6 s.
_CANONICAL = f"""
CREATE OR REPLACE TEMP VIEW _canonical AS
WITH kept AS (
    SELECT *, coalesce(steps, []) AS ordered,
           list_filter(coalesce(steps, []), lambda s: s.step_type = 'llm_call') AS llm_calls
    FROM _parsed
    WHERE seq IN (SELECT seq FROM _newest)
)
SELECT
    seq, episode_id, day AS partition_date, agent_id,
    coalesce(metadata ->> '$.task_id', '{DERIVED_TASK_PREFIX}' || md5(coalesce(llm_calls[1].input_summary, ''))[:16]) AS task_id,
    TRY_CAST(metadata ->> '$.trial' AS INTEGER) AS trial,
    status,
    coalesce(llm_calls[1].model, metadata ->> '$.model') AS model,
    started_at, ended_at,
    coalesce(total_tokens, list_sum(list_transform(ordered, lambda s: coalesce(s.tokens, 0))), 0) AS total_tokens,
    coalesce(total_cost_usd, list_sum(list_transform(ordered, lambda s: coalesce(s.cost_usd, 0))), 0) AS total_cost_usd,
    coalesce(total_duration_ms, list_sum(list_transform(ordered, lambda s: coalesce(s.duration_ms, 0))), 0) AS total_duration_ms,
    list_transform(list_filter(ordered, lambda s: s.step_type = 'tool_call'), lambda s: coalesce(s.tool_name, '')) AS tools,
    coalesce(metadata ->> '$.final_output', llm_calls[-1].output_summary) AS final_output,
    source, locator, source_records,
    metadata ->> '$.category' AS category,
    coalesce(TRY_CAST(metadata ->> '$.baseline' AS BOOLEAN), false) AS pinned_baseline,
    len(ordered) AS step_count,
    len(list_filter(ordered, lambda s: s.step_type = 'error' OR coalesce(s.error, '') <> '')) AS error_steps,
    metadata -> '$.expected' AS expected,
    metadata,
    ordered
FROM kept
"""


def tool_names_sql(json_list: str) -> str:
    """The tool names of a JSON list of names or tool definitions, as `episodes.model.tool_names` reads them."""
    name = (
        "CASE json_type(t) WHEN 'VARCHAR' THEN t ->> '$' WHEN 'OBJECT' THEN coalesce(t ->> '$.function.name', t ->> '$.name') END"
    )
    return (
        f"coalesce(list_filter(list_transform(json_extract({json_list}, '$[*]'), lambda t: {name}), lambda n: n IS NOT NULL), [])"
    )


# The agent a load is scoped to (NULL: every agent), as the scratch connection's queries read it: a variable, since
# with the agent a parameter, DuckDB materialized each batch's result before handing it over as Arrow (the million's
# ingest peaked at 2,116 MiB against 1,624), and as a relation's parameter ran it again (78 s against 27 s). A NULL
# variable is folded away when the query is planned.
_SCOPED_AGENT = "getvariable('scoped_agent')"


def _of_the_scoped_agent(agent_id: str = "agent_id") -> str:
    """`of_agent` on the scratch connection."""
    return of_agent(agent_id, _SCOPED_AGENT)


_STEPS = f"""
SELECT episode_id, partition_date, agent_id, s.step_index, s.step_type, s.tool_name, s.model, s.provider,
       s.input_summary AS input, s.output_summary AS output, s.tokens, s.cost_usd, s.duration_ms, s.timestamp, s.error,
       -- the full context of an LLM call, where the source recorded it (live replay re-sends it)
       CASE WHEN json_type(s.metadata, '$.messages') = 'ARRAY' THEN s.metadata -> '$.messages' END AS messages,
       s.metadata ->> '$.agent' AS agent,  -- which agent of a multi-agent run acted
       {tool_names_sql("s.metadata -> '$.tools'")} AS offered_tools  -- the tools an LLM call was offered
FROM (SELECT episode_id, partition_date, agent_id, unnest(ordered) AS s FROM _canonical WHERE {_of_the_scoped_agent()})
"""

# What one parsed batch hands to the day's transaction, read on the scratch connection (see `load_episodes`): the
# agent's rows, when scoped.
_GIVEN_RAW = "coalesce(b.given, b.raw) AS raw"  # of a staged record `b`: what quarantine keeps of it, the source's own text
_BATCH_ROWS = {  # keyed by the parameters of `_write_batch`
    "batch_rejected": f"SELECT p.source, p.locator, p.reason, {_GIVEN_RAW}, p.agent_id FROM _parsed p JOIN _batch b USING (seq) "
    f"WHERE p.reason IS NOT NULL AND {_of_the_scoped_agent('p.agent_id')}",
    # valid records that lost to a later record of the batch
    # (found first, then their raw text: joined the other way round, every valid record's text was read, 29 ms a batch
    # of 10,000 against 17)
    "batch_losers": f"""SELECT l.episode_id, l.seq, l.source, l.locator, {_GIVEN_RAW}, l.agent_id
                 FROM (SELECT p.episode_id, p.seq, p.source, p.locator, p.agent_id
                       FROM _parsed p JOIN _canonical c USING (episode_id)
                       WHERE p.reason IS NULL AND p.locator <> c.locator AND {_of_the_scoped_agent("p.agent_id")}) l
                 JOIN _batch b USING (seq)""",
    # the episodes of earlier batches that the batch supersedes (their raw text is fetched at the end: `_fill_superseded`)
    # (of every agent: each is forgotten from the index of those kept; only the agent's are written)
    "batch_superseded": """SELECT k.episode_id, k.seq, k.source, k.locator, k.agent_id, c.locator AS superseded_by
                 FROM _kept k JOIN _canonical c USING (episode_id)""",
    "batch_episodes": f"SELECT * EXCLUDE (ordered) FROM _canonical WHERE {_of_the_scoped_agent()}",
    "batch_steps": _STEPS,
}
# Whether a batch has rejected records, valid ones that lost to a later one, and episodes superseding one that an earlier
# batch kept: most have none of them, and their queries (a join with the batch's raw text, or the kept index's every
# column) are then asked for no rows (100,000 episodes: 0.05 s against 0.18 s for the first two; for the third, a million
# episodes' batches spent 0.6 s asking the index's ids and reading no rows, against 0.97 s reading its every column).
_WHAT_THE_BATCH_HAS = """SELECT count(*) FILTER (reason IS NOT NULL) > 0,
       count(*) FILTER (reason IS NULL) > (SELECT count(*) FROM _newest),
       EXISTS (SELECT 1 FROM _kept WHERE episode_id IN (SELECT episode_id FROM _canonical))
FROM _parsed"""
# The index of the episodes kept by earlier batches, on the scratch connection: there each statement commits, and
# DuckDB scans a committed table several times faster than rows still pending in a transaction (at 1,000,000
# episodes, finding a batch's ids among those kept cost 13.8 s in the day's transaction against 2.8 s outside it).
_KEPT = "CREATE OR REPLACE TEMP TABLE _kept (episode_id VARCHAR, seq BIGINT, source VARCHAR, locator VARCHAR, agent_id VARCHAR)"
_FORGET_SUPERSEDED = "DELETE FROM _kept WHERE episode_id IN (SELECT episode_id FROM _canonical)"
_KEEP = "INSERT INTO _kept SELECT episode_id, seq, source, locator, agent_id FROM _canonical"
_AGENTS_KEPT = "SELECT DISTINCT agent_id FROM _kept WHERE agent_id IS NOT NULL ORDER BY 1"

_SUPERSEDED = (
    f"""INSERT INTO _superseded SELECT episode_id, seq, source, locator, NULL, agent_id
    FROM batch_superseded WHERE locator <> superseded_by AND {of_agent()}""",
    *(
        f"DELETE FROM {table} WHERE {DAY_OF_AGENT} AND episode_id IN (SELECT episode_id FROM batch_superseded)"
        for table in ("episodes", "episode_steps")
    ),
)
_BATCH_WRITES = (
    "INSERT INTO quarantine BY NAME SELECT $day AS partition_date, * FROM batch_rejected",
    "INSERT INTO _superseded SELECT * FROM batch_losers",
)
_EPISODE_WRITES = (
    "INSERT INTO episodes BY NAME SELECT * EXCLUDE (seq) FROM batch_episodes",
    "INSERT INTO episode_steps BY NAME SELECT * FROM batch_steps",
)

# The episodes this load keeps: the day's (of the agent, when scoped).
_LOADED = f"FROM episodes WHERE {DAY_OF_AGENT}"
# The records superseded, each with the locator of the record that won (`winners`, of any agent; read by its name: see
# `_write_batch`).
_DUPLICATES = """
INSERT INTO quarantine BY NAME
SELECT $day AS partition_date, s.source, s.locator,
       'duplicate episode_id ' || s.episode_id || ', superseded by ' || w.locator AS reason, s.raw, s.agent_id
FROM _superseded s JOIN winners w USING (episode_id)
WHERE s.locator <> w.locator
"""


_SUPERSEDED_TABLE = """CREATE OR REPLACE TEMP TABLE _superseded (
    episode_id VARCHAR, seq BIGINT, source VARCHAR, locator VARCHAR, raw VARCHAR, agent_id VARCHAR
)"""


@dataclass(frozen=True)
class IngestCounts:
    episodes: int
    steps: int
    quarantined: int
    records_read: int
    # a load scoped to one agent: every agent the day's records hold (`run --agent` names them when its agent has none)
    agents_read: tuple[str, ...] = ()


def _unnumbered(records: Iterable[RawRecords]) -> Iterator[pa.Table]:
    """Records as Arrow tables of the staging columns but `seq`: a file's lines as they came, single records in runs
    of at most BATCH_ROWS."""
    for many, run in groupby(records, key=lambda item: isinstance(item, RecordLines)):
        if many:
            for block in cast(Iterator[RecordLines], run):
                rows = len(block.lines)
                yield pa.table(
                    [
                        pa.repeat(pa.scalar(block.source), rows),
                        pc.binary_join_element_wise(f"{block.source}:", block.lines.cast(pa.string()), ""),
                        block.raws,
                        pa.repeat(pa.scalar(block.fallback_day, pa.date32()), rows),
                        pa.nulls(rows, pa.string()) if block.rejected is None else block.rejected,
                        pa.repeat(pa.scalar(1, pa.int32()), rows),
                        pa.nulls(rows, pa.string()),
                    ],
                    schema=_UNNUMBERED,
                )
            continue
        singles = cast(Iterator[RawRecord], run)
        while chunk := list(islice(singles, BATCH_ROWS)):
            columns = [
                pa.array([r.source for r in chunk], pa.string()),
                pa.array([r.locator for r in chunk], pa.string()),
                pa.array([r.raw for r in chunk], pa.string()),
                pa.array([r.fallback_day for r in chunk], pa.date32()),
                pa.array([r.rejected for r in chunk], pa.string()),
                pa.array([r.source_records for r in chunk], pa.int32()),
                pa.array([r.given for r in chunk], pa.string()),
            ]
            yield pa.table(columns, schema=_UNNUMBERED)


def _staged(records: Iterable[RawRecords]) -> Generator[pa.Table]:
    """Records as Arrow tables of BATCH_ROWS rows, or fewer of BATCH_BYTES of text, numbered in order (a later record
    of an id supersedes an earlier one), in chunks DuckDB can parse in parallel."""
    seq = 0
    held = _UNNUMBERED.empty_table()
    for piece in _unnumbered(records):
        held = pa.concat_tables([held, piece])
        while rows := _full_batch(held):
            yield _numbered(held.slice(0, rows), seq)
            held, seq = held.slice(rows), seq + rows
    if held.num_rows:
        yield _numbered(held, seq)


def _full_batch(held: pa.Table) -> int:
    """The rows of the first batch `held` fills: BATCH_ROWS, or the fewer (at least one) that reach BATCH_BYTES of text;
    0 while it fills none."""
    text_bytes = np.cumsum(pc.binary_length(held["raw"]).to_numpy())
    within = int(np.searchsorted(text_bytes, BATCH_BYTES, side="right"))  # the rows whose text fits BATCH_BYTES
    if within >= BATCH_ROWS:
        return BATCH_ROWS
    return max(within, 1) if within < held.num_rows else 0


def _numbered(table: pa.Table, seq: int) -> pa.Table:
    numbered = table.add_column(0, "seq", pa.array(range(seq, seq + table.num_rows), pa.int64()))
    return pa.Table.from_batches(numbered.to_batches(max_chunksize=CHUNK_ROWS))


def _parse(scratch: duckdb.DuckDBPyConnection, staged: pa.Table, params: dict) -> dict[str, pa.Table]:
    """One batch parsed on the scratch connection: its rejected records, the valid ones that lost to a later one of the
    batch, the episodes of earlier batches it supersedes, and its episodes (the newest record of each id) with their
    steps, as `_BATCH_ROWS` names them (the scoped agent's, `_SCOPED_AGENT`); its episodes, of every agent, join the
    index of those kept."""
    scratch.register("_batch", staged)
    scratch.execute(f"CREATE OR REPLACE TEMP TABLE _parsed AS {_PARSE}", params)
    scratch.execute(_NEWEST)
    scratch.execute(_CANONICAL)
    rejected, losers, superseding = one_row(scratch, _WHAT_THE_BATCH_HAS)
    none = {"batch_rejected": not rejected, "batch_losers": not losers, "batch_superseded": not superseding}
    parsed = {
        name: scratch.sql(f"{sql} LIMIT 0" if none.get(name) else sql).to_arrow_table() for name, sql in _BATCH_ROWS.items()
    }
    scratch.unregister("_batch")
    parsed["batch_rejected"] = _named_unpaired(parsed["batch_rejected"])
    if parsed["batch_superseded"].num_rows:
        scratch.execute(_FORGET_SUPERSEDED)
    scratch.execute(_KEEP)
    return parsed


def _named_unpaired(rejected: pa.Table) -> pa.Table:
    """`rejected`, each record called invalid JSON that is JSON with half of a surrogate pair alone saying so instead
    (`unpaired_surrogate`): DuckDB's parser refuses it without saying why. Only the few rejected records are read."""
    reasons = rejected["reason"].to_pylist()
    if _INVALID_JSON not in reasons:
        return rejected
    named = [
        (unpaired_surrogate(raw) or reason) if reason == _INVALID_JSON else reason
        for reason, raw in zip(reasons, rejected["raw"].to_pylist(), strict=True)
    ]
    return rejected.set_column(rejected.schema.get_field_index("reason"), "reason", pa.array(named, pa.string()))


@dataclass
class _PendingEpisodes:
    """Parsed episodes and their steps not written yet (`WRITE_ROWS`, `WRITE_BYTES`)."""

    episodes: list[pa.Table]
    steps: list[pa.Table]

    def full(self) -> bool:
        return (
            sum(table.num_rows for table in self.episodes) >= WRITE_ROWS
            or sum(table.nbytes for table in (*self.episodes, *self.steps)) >= WRITE_BYTES
        )

    def write(self, con: duckdb.DuckDBPyConnection) -> None:
        """Write them all, one insert per table."""
        if not self.episodes:
            return
        batch_episodes = pa.concat_tables(self.episodes)  # noqa: F841 (read by name: see `_write_batch`)
        batch_steps = pa.concat_tables(self.steps)  # noqa: F841
        self.episodes, self.steps = [], []
        for statement in _EPISODE_WRITES:
            con.execute(statement)


def _write_batch(
    con: duckdb.DuckDBPyConnection,
    day: date,
    agent_id: str | None,
    pending: _PendingEpisodes,
    batch_rejected: pa.Table,
    batch_losers: pa.Table,
    batch_superseded: pa.Table,
    batch_episodes: pa.Table,
    batch_steps: pa.Table,
) -> None:
    """Write one parsed batch in the day's transaction; its episodes and steps join those `pending`, written once
    `pending` is full. The SQL reads the Arrow tables by these parameters' names (DuckDB's replacement scans): a
    registered view would be a catalog entry the transaction keeps until COMMIT, and with it every batch's rows."""
    if batch_superseded.num_rows:
        pending.write(con)  # the episodes it supersedes are deleted: every earlier one must be in the table
    for statement in (*(_SUPERSEDED if batch_superseded.num_rows else ()), *_BATCH_WRITES):
        con.execute(statement, _named({"day": day, "agent": agent_id}, statement))
    pending.episodes.append(batch_episodes)
    pending.steps.append(batch_steps)
    if pending.full():
        pending.write(con)


def _parse_params(day: date) -> dict:
    """The parameters of `_PARSE`."""
    return {"day": day, "earliest": EARLIEST_DAY, "latest": latest_day()}


def _named(params: dict, statement: str) -> dict:
    """The parameters `statement` names (DuckDB refuses one it does not)."""
    return {name: value for name, value in params.items() if f"${name}" in statement}


def canonical_episodes(con: duckdb.DuckDBPyConnection, day: date, records: Iterable[RawRecords]) -> int:
    """The temp view `_canonical`: `day`'s valid episodes in `records`, one per id, all at once (the baseline
    lookback reads a few earlier days this way, without writing them); return how many records were read. Without
    any record, nothing is made: planning the parse alone takes 35-65 ms, and most days looked back have none."""
    params = _parse_params(day)
    read = 0
    for batch, staged in enumerate(read_ahead(_staged(records))):
        con.register("_batch", staged)
        con.execute(f"INSERT INTO _parsed {_PARSE}" if batch else f"CREATE OR REPLACE TEMP TABLE _parsed AS {_PARSE}", params)
        con.unregister("_batch")
        read += pc.sum(staged["source_records"]).as_py()  # lines, where an adapter made one episode of many
    if not read:
        return 0
    con.execute(_NEWEST)
    con.execute(_CANONICAL)
    return read


def drop_canonical(con: duckdb.DuckDBPyConnection) -> None:
    """Drop what `canonical_episodes` made on `con`."""
    con.execute("DROP VIEW IF EXISTS _canonical; DROP TABLE IF EXISTS _newest; DROP TABLE IF EXISTS _parsed")


# `run --model`, `--limit`: the loaded episodes narrowed, and what they superseded with them.
_NARROWED = (
    f"""DELETE {_LOADED} AND episode_id NOT IN (
        SELECT episode_id {_LOADED} AND ($model IS NULL OR model = $model)
        ORDER BY started_at NULLS LAST, episode_id LIMIT coalesce($limit, 9223372036854775807)
    )""",
    f"""DELETE FROM episode_steps WHERE {DAY_OF_AGENT}
        AND episode_id NOT IN (SELECT episode_id {_LOADED})""",
    # a record superseded by one of the agent's episodes that was narrowed away is no longer a duplicate of a kept one
    f"""DELETE FROM _superseded WHERE episode_id NOT IN (SELECT episode_id {_LOADED})
        AND episode_id IN (SELECT episode_id FROM winners WHERE {of_agent()})""",
)


# The agents `_NARROWED` left episodes of out (`_read`: each agent's episodes before): their day is read in part.
_PARTIAL = f"""
INSERT INTO partial_days BY NAME
SELECT $day AS partition_date, r.agent_id, $model AS model, $limit AS episode_limit
FROM _read r LEFT JOIN (SELECT agent_id, count(*) AS n {_LOADED} GROUP BY ALL) k USING (agent_id)
WHERE coalesce(k.n, 0) < r.n
"""


def _winners(con: duckdb.DuckDBPyConnection, scratch: duckdb.DuckDBPyConnection) -> pa.Table:
    """The episodes kept, of every agent, whose ids superseded a record: what `_DUPLICATES` names as the winners."""
    superseded = con.execute("SELECT DISTINCT episode_id FROM _superseded").to_arrow_table()  # noqa: F841 (read by name)
    return scratch.execute(
        "SELECT episode_id, locator, agent_id FROM _kept WHERE episode_id IN (SELECT episode_id FROM superseded)"
    ).to_arrow_table()


def _fill_superseded(con: duckdb.DuckDBPyConnection, records: Callable[[], Iterable[RawRecords]]) -> None:
    """The raw text of episodes superseded by a record of a later batch, read again from the source (rare: the same id
    twice in a day, far apart), so that their quarantine rows keep what was recorded. A record that is no longer where
    it was (a store that changed in between) keeps its locator and reason, without its text."""
    wanted = pa.array([row[0] for row in con.execute("SELECT seq FROM _superseded WHERE raw IS NULL").fetchall()], pa.int64())
    if not len(wanted):
        return
    for staged in _staged(records()):
        found = staged.filter(pc.is_in(staged["seq"], value_set=wanted))  # read by its name (see `_write_batch`)
        if found.num_rows:
            con.execute(
                f"UPDATE _superseded s SET raw = b.raw FROM (SELECT seq, locator, {_GIVEN_RAW} FROM found b) b "
                "WHERE s.seq = b.seq AND s.locator = b.locator"
            )


def load_episodes(
    warehouse: Warehouse,
    day: date,
    records: Callable[[], Iterable[RawRecords]],
    agent_id: str | None = None,
    model: str | None = None,
    limit: int | None = None,
) -> IngestCounts:
    """Replace `day`'s episodes, steps and quarantine (one agent's, when scoped) with `records()`; only `model`'s
    episodes and the first `limit` of them by start time, when given (`run --model`, `--limit`).

    Batches are parsed on a scratch connection in autocommit, so that what a batch leaves behind is freed at once:
    inside the day's transaction, every replaced temp table would be kept until COMMIT. The next batch is parsed while
    the last one is written (`pipelined`). `records` is called once, and once more only when an episode of one batch
    was superseded by a later batch."""
    params = _parse_params(day)
    day_records = records()  # a store answers (into its spool) before the warehouse is opened and locked
    with warehouse.transaction() as con, second_cursor(con) as scratch:
        for table in ("episodes", "episode_steps", "quarantine", "partial_days"):
            clear_partition(con, table, day, agent_id)
        con.execute(_SUPERSEDED_TABLE)
        scratch.execute(_KEPT)
        scratch.execute("SET VARIABLE scoped_agent = $agent", {"agent": agent_id})
        pending = _PendingEpisodes([], [])

        def parse(staged: pa.Table) -> tuple[int, dict[str, pa.Table]]:
            # the records read are lines, where an adapter made one episode of many
            return pc.sum(staged["source_records"]).as_py(), _parse(scratch, staged, params)

        def write(batch: tuple[int, dict[str, pa.Table]]) -> int:
            records_read, parsed = batch
            _write_batch(con, day, agent_id, pending, **parsed)
            return records_read

        read = pipelined(_staged(day_records), parse, write)  # a batch parsed while the last one is written
        agents_read = () if agent_id is None else tuple(row[0] for row in scratch.execute(_AGENTS_KEPT).fetchall())
        pending.write(con)
        winners = _winners(con, scratch)  # noqa: F841 (read by name: see `_write_batch`)
        if model is not None or limit is not None:
            narrowing = {"day": day, "agent": agent_id, "model": model, "limit": limit}
            read_before = f"CREATE OR REPLACE TEMP TABLE _read AS SELECT agent_id, count(*) AS n {_LOADED} GROUP BY ALL"
            for statement in (read_before, *_NARROWED, _PARTIAL, "DROP TABLE _read"):
                con.execute(statement, _named(narrowing, statement))
        _fill_superseded(con, records)
        con.execute(_DUPLICATES, {"day": day})
        counts = [
            one_row(con, f"SELECT count(*) FROM {table} WHERE {DAY_OF_AGENT}",
                    {"day": day, "agent": agent_id})[0]
            for table in ("episodes", "episode_steps", "quarantine")
        ]  # fmt: skip
        con.execute("DROP TABLE _superseded")
    return IngestCounts(episodes=counts[0], steps=counts[1], quarantined=counts[2], records_read=read, agents_read=agents_read)
