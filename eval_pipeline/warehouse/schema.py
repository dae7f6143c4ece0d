"""The warehouse tables (a public contract, DESIGN §2) and their migrations.

Migrations only ever append: an upgrade adds tables or columns and never asks users to drop
their history. `schema_version` records what has been applied.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import duckdb

from eval_pipeline.scoring.dimensions import dimensions
from eval_pipeline.warehouse.rows import one_row
from eval_pipeline.warehouse.transactions import atomically

# What `agent_daily` shows per agent and day (migration 6 made the view; 10 counts the current runs only).
_AGENT_DAILY_COLUMNS = """s.partition_date, s.agent_id, count(*) AS episodes,
           avg(s.passed::INTEGER) AS pass_rate, avg(s.weighted_score) AS mean_weighted_score,
           avg(s.correctness) AS mean_correctness, avg(s.tool_match) AS mean_tool_match, avg(s.safety) AS mean_safety,
           avg(s.judge_score) AS mean_judge_score, avg(s.total_cost_usd) AS mean_cost_usd,
           avg(s.total_duration_ms) AS mean_latency_ms, avg(s.cost_delta_pct) AS mean_cost_delta_pct,
           avg(s.latency_delta_pct) AS mean_latency_delta_pct,
           (SELECT count(*) FROM findings f WHERE f.partition_date = s.partition_date AND f.agent_id = s.agent_id
                AND f.severity = 'critical') AS critical_findings,
           (SELECT count(*) FROM findings f WHERE f.partition_date = s.partition_date AND f.agent_id = s.agent_id
                AND f.severity = 'warning') AS warning_findings"""

MIGRATIONS: list[str] = [
    # 1: the foundation's tables
    """
    CREATE TABLE episodes (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        trial INTEGER,
        status VARCHAR NOT NULL,
        model VARCHAR,
        started_at TIMESTAMPTZ NOT NULL,
        ended_at TIMESTAMPTZ,
        total_tokens BIGINT,
        total_cost_usd DOUBLE,
        total_duration_ms DOUBLE,
        tools VARCHAR[],
        final_output VARCHAR,
        source VARCHAR,
        locator VARCHAR,
        category VARCHAR,
        pinned_baseline BOOLEAN,
        step_count INTEGER,
        error_steps INTEGER,
        expected JSON,
        metadata JSON,
        loaded_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    CREATE TABLE episode_steps (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        step_index INTEGER,
        step_type VARCHAR,
        tool_name VARCHAR,
        model VARCHAR,
        provider VARCHAR,
        input VARCHAR,
        output VARCHAR,
        tokens BIGINT,
        cost_usd DOUBLE,
        duration_ms DOUBLE,
        timestamp TIMESTAMPTZ,
        error VARCHAR
    );
    CREATE TABLE quarantine (
        partition_date DATE NOT NULL,
        source VARCHAR,
        locator VARCHAR,
        reason VARCHAR,
        raw VARCHAR,
        agent_id VARCHAR,
        quarantined_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    CREATE TABLE baselines (
        agent_id VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        episode_id VARCHAR NOT NULL,
        pinned BOOLEAN NOT NULL,
        established_at TIMESTAMPTZ DEFAULT current_timestamp,
        valid_from DATE NOT NULL,
        partition_date DATE NOT NULL,
        policy VARCHAR,
        status VARCHAR,
        final_output VARCHAR,
        tools VARCHAR[],
        total_cost_usd DOUBLE,
        total_duration_ms DOUBLE,
        total_tokens BIGINT,
        step_count INTEGER,
        error_steps INTEGER
    );
    CREATE TABLE replays (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        mode VARCHAR NOT NULL,
        model VARCHAR,
        status VARCHAR,
        final_output VARCHAR,
        tools VARCHAR[],
        total_cost_usd DOUBLE,
        total_duration_ms DOUBLE,
        total_tokens BIGINT,
        step_count INTEGER,
        error_steps INTEGER,
        error VARCHAR
    );
    CREATE TABLE scores (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        baseline_episode_id VARCHAR,
        mode VARCHAR,
        status VARCHAR,
        correctness DOUBLE,
        cost_delta_pct DOUBLE,
        latency_delta_pct DOUBLE,
        tool_match DOUBLE,
        safety DOUBLE,
        weighted_score DOUBLE,
        passed BOOLEAN,
        config_version VARCHAR NOT NULL,
        scored_at TIMESTAMPTZ DEFAULT current_timestamp,
        -- the evidence behind the dimensions, so a finding can be explained with SQL alone
        baseline_status VARCHAR,
        total_cost_usd DOUBLE,
        baseline_total_cost_usd DOUBLE,
        total_duration_ms DOUBLE,
        baseline_total_duration_ms DOUBLE,
        tools VARCHAR[],
        baseline_tools VARCHAR[],
        step_count INTEGER,
        error_steps INTEGER,
        baseline_step_count INTEGER,
        baseline_error_steps INTEGER,
        leaked_secret BOOLEAN,
        denied_tools_called VARCHAR,
        cost_zero_baseline BOOLEAN,
        latency_zero_baseline BOOLEAN
    );
    CREATE TABLE findings (
        finding_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        episode_id VARCHAR,
        task_id VARCHAR,
        dimension VARCHAR NOT NULL,
        severity VARCHAR NOT NULL,
        value DOUBLE,
        threshold DOUBLE,
        baseline_value DOUBLE,
        message VARCHAR,
        config_version VARCHAR NOT NULL,
        created_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    CREATE TABLE reports (
        partition_date DATE NOT NULL,
        json_path VARCHAR,
        markdown_path VARCHAR,
        html_path VARCHAR,
        summary JSON,
        config_version VARCHAR,
        created_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    """,
    # 2: baselines set by hand (`eval-pipeline baseline promote|pin`) survive re-runs of their day
    """
    ALTER TABLE baselines ADD COLUMN origin VARCHAR DEFAULT 'run';
    """,
    # 3: the LLM judge's verdicts, and its response cache (re-running a day costs no calls)
    """
    CREATE TABLE judgements (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        rubric VARCHAR NOT NULL,
        score INTEGER,
        normalized DOUBLE,
        reasoning VARCHAR,
        judge_model VARCHAR,
        cached BOOLEAN,
        status VARCHAR NOT NULL,
        config_version VARCHAR,
        judged_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    CREATE TABLE llm_cache (
        cache_key VARCHAR NOT NULL,  -- one row per key, kept so by MERGE: a lake has no unique keys
        model VARCHAR,
        answer JSON,
        prompt_tokens BIGINT,
        completion_tokens BIGINT,
        created_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    """,
    # 4: what each judge call cost, the pairwise judge, the judge's share of the weighted score,
    # and the full messages of an LLM call where the source recorded them (live replay re-sends them)
    """
    ALTER TABLE judgements ADD COLUMN prompt_tokens BIGINT;
    ALTER TABLE judgements ADD COLUMN completion_tokens BIGINT;
    ALTER TABLE judgements ADD COLUMN cost_usd DOUBLE;
    CREATE TABLE pairwise_judgements (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        baseline_episode_id VARCHAR,
        candidate_first VARCHAR,  -- the verdict with the candidate shown first: candidate, baseline or tie
        baseline_first VARCHAR,   -- the same with the positions swapped
        agree BOOLEAN,
        preferred VARCHAR,        -- the agreed verdict, or 'inconsistent' (position bias)
        reasoning VARCHAR,
        judge_model VARCHAR,
        cached BOOLEAN,
        status VARCHAR NOT NULL,
        prompt_tokens BIGINT,
        completion_tokens BIGINT,
        cost_usd DOUBLE,
        config_version VARCHAR,
        judged_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    ALTER TABLE scores ADD COLUMN judge_score DOUBLE;
    ALTER TABLE episode_steps ADD COLUMN messages JSON;
    """,
    # 5: cases and their assertions, deterministic checks' issues, repeated trials, and the
    # statistics behind aggregate findings
    """
    CREATE TABLE assertions (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        assertion VARCHAR NOT NULL,
        passed BOOLEAN NOT NULL,
        score DOUBLE,  -- 0..1: 1 or 0, or the F1 of a reference answer
        detail VARCHAR,
        config_version VARCHAR
    );
    CREATE TABLE issues (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        "check" VARCHAR NOT NULL,
        severity VARCHAR NOT NULL,  -- critical, error, warning or info
        detail VARCHAR,
        config_version VARCHAR
    );
    CREATE TABLE pass_at_k (
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        k INTEGER NOT NULL,
        pass_at_k DOUBLE,
        pass_hat_k DOUBLE,
        n_tasks INTEGER,
        config_version VARCHAR
    );
    CREATE TABLE task_trials (
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        task_id VARCHAR NOT NULL,
        trials INTEGER,
        passes INTEGER,
        flakiness DOUBLE,
        config_version VARCHAR
    );
    ALTER TABLE findings ADD COLUMN ci_low DOUBLE;
    ALTER TABLE findings ADD COLUMN ci_high DOUBLE;
    ALTER TABLE findings ADD COLUMN p_value DOUBLE;
    ALTER TABLE scores ADD COLUMN case_passed BOOLEAN;
    ALTER TABLE scores ADD COLUMN issue_score DOUBLE;
    ALTER TABLE scores ADD COLUMN issue_grade VARCHAR;
    """,
    # 6: since when a finding has lasted; views for the questions users ask
    f"""
    ALTER TABLE findings ADD COLUMN since DATE;
    ALTER TABLE findings ADD COLUMN lifecycle VARCHAR;  -- new or persisting
    CREATE VIEW agent_daily AS
    SELECT {_AGENT_DAILY_COLUMNS}
    FROM scores s GROUP BY s.partition_date, s.agent_id;
    CREATE VIEW latest_findings AS
    SELECT * FROM findings WHERE partition_date = (SELECT max(partition_date) FROM findings);
    CREATE VIEW flaky_tasks AS
    SELECT partition_date, agent_id, task_id, trials, passes, flakiness FROM task_trials WHERE flakiness > 0;
    """,
    # 7: scores as rewards (`eval-pipeline reward`): one row per episode and named reward
    """
    CREATE TABLE rewards (
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        reward_name VARCHAR NOT NULL,
        value DOUBLE,        -- 0..1; NULL when the episode has nothing the reward weighs
        breakdown JSON,      -- how the value came about: dimensions, issues, components or the gate's reasons
        config_version VARCHAR NOT NULL,
        computed_at TIMESTAMPTZ DEFAULT current_timestamp
    );
    """,
    # 8: the agent that acted in each step of a multi-agent run (AutoGen source, OTLP agent span, LangGraph node)
    """
    ALTER TABLE episode_steps ADD COLUMN agent VARCHAR;
    """,
    # 9: the episode verdict is decided with the scores, and says why it failed
    """
    ALTER TABLE scores ADD COLUMN verdict_reason VARCHAR;     -- why it failed; NULL when it passed or has no verdict
    ALTER TABLE scores ADD COLUMN critical_findings VARCHAR[]; -- the dimensions of its critical findings
    ALTER TABLE scores ADD COLUMN failed_assertions VARCHAR;  -- its case's failed expectations, with their details
    """,
    # 10: a case-set agent's earlier run of a day, superseded by its later one (`--recapture`): kept, compared by
    # its label, but no longer what the day's verdict, findings, trials and trend count
    f"""
    ALTER TABLE scores ADD COLUMN superseded BOOLEAN DEFAULT 'false';  -- a lake adds a column with a literal default only
    CREATE OR REPLACE VIEW agent_daily AS
    SELECT {_AGENT_DAILY_COLUMNS}
    FROM scores s WHERE NOT s.superseded GROUP BY s.partition_date, s.agent_id;
    """,
    # 11: how many source records each episode was made from (source health judges quarantine against records
    # read), and derived task ids hash the first user message alone, no longer the agent too, so two agents'
    # runs of one task compare: the old derived ids are rewritten wherever they are kept
    """
    ALTER TABLE episodes ADD COLUMN source_records INTEGER DEFAULT 1;
    CREATE TEMP TABLE _rederived AS
    WITH first_inputs AS (
        SELECT e.agent_id, e.task_id, coalesce(first(s.input ORDER BY s.step_index), '') AS opening
        FROM episodes e LEFT JOIN episode_steps s
            ON s.episode_id = e.episode_id AND s.partition_date = e.partition_date AND s.step_type = 'llm_call'
        WHERE e.task_id LIKE 'auto-%'
        GROUP BY e.episode_id, e.partition_date, e.agent_id, e.task_id
    )
    SELECT DISTINCT agent_id, task_id AS old_id, 'auto-' || md5(opening)[:16] AS new_id
    FROM first_inputs WHERE task_id = 'auto-' || md5(agent_id || chr(10) || opening)[:16];
    UPDATE episodes t SET task_id = r.new_id FROM _rederived r WHERE t.agent_id = r.agent_id AND t.task_id = r.old_id;
    UPDATE baselines t SET task_id = r.new_id FROM _rederived r WHERE t.agent_id = r.agent_id AND t.task_id = r.old_id;
    UPDATE scores t SET task_id = r.new_id FROM _rederived r WHERE t.agent_id = r.agent_id AND t.task_id = r.old_id;
    UPDATE findings t SET task_id = r.new_id FROM _rederived r WHERE t.agent_id = r.agent_id AND t.task_id = r.old_id;
    UPDATE task_trials t SET task_id = r.new_id FROM _rederived r WHERE t.agent_id = r.agent_id AND t.task_id = r.old_id;
    DROP TABLE _rederived;
    """,
    # 12: the tools each LLM call was offered (step `metadata.tools`), so a run that called none of them shows
    """
    ALTER TABLE episode_steps ADD COLUMN offered_tools VARCHAR[];
    """,
    # 13: the day's evaluation in one place: every scored episode but the runs a later run of their agent superseded
    """
    CREATE VIEW current_scores AS SELECT * FROM scores WHERE NOT superseded;
    """,
    # 14: a live replay reused from `llm_cache` (no model call) rather than called, so the report can say how many
    """
    ALTER TABLE replays ADD COLUMN cached BOOLEAN;
    """,
    # 15: people's verdicts on episodes, recorded in the viewer's review queues: one per reviewer, queue and episode
    """
    CREATE TABLE labels (
        reviewer VARCHAR NOT NULL,
        labelled_at TIMESTAMPTZ NOT NULL,
        queue VARCHAR NOT NULL,
        episode_id VARCHAR NOT NULL,
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        verdict VARCHAR NOT NULL,  -- pass or fail
        score INTEGER,             -- 1..5, when the reviewer gave one
        note VARCHAR
    );
    """,
    # 16: a lake's alert outbox, its delivered ledger and the deliverer's lease, which every host of the lake shares
    # (`warehouse/alerts.py`); a single-file warehouse keeps its outbox in files beside it, and these stay empty
    """
    CREATE TABLE alert_outbox (
        batch VARCHAR NOT NULL,       -- a day's findings or a failed run; enqueued again, it replaces its alerts
        position INTEGER NOT NULL,
        alert_id VARCHAR NOT NULL,
        alert JSON NOT NULL,          -- redacted as it was put in
        enqueued_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE alerts_delivered (
        alert_id VARCHAR NOT NULL,
        delivered_at TIMESTAMPTZ NOT NULL
    );
    CREATE TABLE alert_delivery_lease (  -- one row: who delivers until when (a lake lets one of two takers commit)
        holder VARCHAR,
        expires_at TIMESTAMPTZ NOT NULL
    );
    INSERT INTO alert_delivery_lease VALUES (NULL, TIMESTAMPTZ '1970-01-01 00:00:00+00');
    """,
    # 17: the day a baseline's episode was recorded: an id can come again on another day (a harness captures the case
    # `<agent>:<case id>` every night), so only on that day is a candidate of the same id the baseline itself. Every row
    # but one of the source's history (`origin = 'history'`, of an earlier day, unknown for the rows made before) was
    # made on its episode's day.
    """
    ALTER TABLE baselines ADD COLUMN recorded_on DATE;
    UPDATE baselines SET recorded_on = partition_date WHERE origin <> 'history';
    """,
    # 18: the day of the episode a score was compared with, so that `baseline_episode_id` joins to one episode when an
    # id comes again on other days. Rows scored before: a live replay's is its own day; a recording's, the day every
    # baseline row of that id its day could use names, unknown (NULL) when they differ or were made before migration 17.
    """
    ALTER TABLE scores ADD COLUMN baseline_partition_date DATE;
    UPDATE scores s SET baseline_partition_date = CASE WHEN s.mode = 'live' THEN s.partition_date ELSE (
        SELECT CASE WHEN count(DISTINCT b.recorded_on) = 1 AND count(b.recorded_on) = count(*) THEN min(b.recorded_on) END
        FROM baselines b
        WHERE b.agent_id = s.agent_id AND b.task_id = s.task_id AND b.episode_id = s.baseline_episode_id
            AND b.valid_from <= s.partition_date
    ) END
    WHERE s.baseline_episode_id IS NOT NULL;
    """,
    # 19: the agents a run read only part of a day of (`run --model`, `--limit` left some of their episodes out): that
    # day is not evaluated for the tasks it left out, so a later day's task without a baseline looks back at it in the
    # source, as at a day never run (`baselines.days_to_look_back`); the day's next load replaces its rows
    """
    CREATE TABLE partial_days (
        partition_date DATE NOT NULL,
        agent_id VARCHAR NOT NULL,
        model VARCHAR,         -- run --model
        episode_limit BIGINT   -- run --limit
    );
    """,
    # 20: until when the alert webhook asked every deliverer not to post (HTTP 429, Retry-After): each host of a lake
    # waits it out, not only the one that was answered
    "ALTER TABLE alert_delivery_lease ADD COLUMN webhook_held_until TIMESTAMPTZ;",
]


_VERSION = "SELECT coalesce(max(version), 0) FROM schema_version"


def migrate(con: duckdb.DuckDBPyConnection) -> int:
    """Apply pending migrations, each in a transaction with its version; return how many changes to the schema were
    made. One transaction for all failed: DuckDB 1.5.5 cannot commit one that updates a stored table and then alters it
    ("Attempting to modify table baselines but another transaction has altered this table": migrations 11 and 17).

    Each is applied only if still pending within its transaction: on a lake, another first writer may have applied
    it since the version was read (a commit during this one's transaction is a conflict, rerun by the caller)."""
    con.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at TIMESTAMPTZ NOT NULL)")
    current = applied = one_row(con, _VERSION)[0]
    for version in range(current + 1, len(MIGRATIONS) + 1):
        with atomically(con):
            if one_row(con, _VERSION)[0] >= version:
                continue
            con.execute(MIGRATIONS[version - 1])
            con.execute("INSERT INTO schema_version VALUES (?, now())", [version])
            applied += 1
    return applied - current + _dimension_columns(con)


def _dimension_columns(con: duckdb.DuckDBPyConnection) -> int:
    """A `scores` column for every registered dimension: the table follows the registry, so adding a
    dimension needs no migration of its own. Returns how many were added."""
    existing = {row[0] for row in con.execute("SELECT column_name FROM duckdb_columns() WHERE table_name = 'scores' "
                                              "AND database_name = current_database()").fetchall()}  # fmt: skip
    missing = [dimension.column for dimension in dimensions() if dimension.column not in existing]
    for column in missing:  # IF NOT EXISTS: on a lake, another first writer may add it meanwhile
        con.execute(f'ALTER TABLE scores ADD COLUMN IF NOT EXISTS "{column}" DOUBLE')
    return len(missing)


def schema_version(path: Path) -> int:
    """The version of the warehouse at `path`, read without writing to it (0 for one without the table)."""
    with closing(duckdb.connect(str(path), read_only=True)) as con:
        exists = one_row(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'schema_version'")[0]
        return one_row(con, "SELECT coalesce(max(version), 0) FROM schema_version")[0] if exists else 0
