"""plaited agent-eval-harness results (CaptureResult, TrialResult) read as episodes, through the real file source."""

import json
from datetime import date

from eval_pipeline.episodes.adapters import plaited
from eval_pipeline.episodes.files import FileSource
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.export import export_inputs
from eval_pipeline.warehouse.ingest import load_episodes

DAY = date(2026, 11, 5)
START = 1_793_874_000_000  # 2026-11-05T10:20:00Z in epoch milliseconds


def step(kind, at, **fields):
    return {"type": kind, "timestamp": START + at, **fields}


CAPTURE = {
    "id": "fix-typo", "input": ["Fix the typo in README.md", "Now commit it"], "output": "Fixed and committed.",
    "hint": "README says 'teh'", "metadata": {"category": "edit", "agent": "claude-headless"},
    "trajectory": [
        step("thought", 10, content="Find the typo first."),
        step("tool_call", 20, name="Read", status="completed", input={"file_path": "README.md"}, output="teh quick fox",
             duration=35),
        step("tool_call", 60, name="Edit", status="failed", input={"old": "teh", "new": "the"}, output="permission denied"),
        step("message", 90, content="I fixed it."),
        step("message", 120, content="Fixed and committed."),
    ],
    "timing": {"start": START, "end": START + 4000, "total": 4000, "sessionCreation": 300, "inputTokens": 900,
               "outputTokens": 80},
    "toolErrors": True, "score": {"pass": True, "score": 0.8, "reasoning": "typo gone"},
}  # fmt: skip
TRIALS = {
    "id": "add-test", "input": "Add a unit test", "k": 2,
    "trials": [
        {"trialNum": 1, "output": "Added.", "duration": 1200, "pass": True, "score": 1.0,
         "trajectory": [step("tool_call", 5, name="Write", status="completed", input={"path": "t.py"}),
                        step("message", 50, content="Added.")]},
        {"trialNum": 2, "output": "Gave up.", "duration": 900, "pass": False, "score": 0.0,
         "trajectory": [step("message", 7, content="Gave up.")]},
    ],
}  # fmt: skip


def test_captures_and_trials_become_episodes_judged_by_their_grader(tmp_path):
    broken = {"id": "x", "input": "y", "trajectory": [{"type": "dance", "timestamp": START}]}
    path = tmp_path / "src" / "claude-headless.jsonl"
    path.parent.mkdir()
    path.write_text("\n".join(json.dumps(r) for r in (CAPTURE, TRIALS, broken)) + "\n")
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    source = FileSource(path.parent, tmp_path / "index.json")
    counts = load_episodes(warehouse, DAY, lambda: source.records_for(DAY, undated_day=DAY))
    assert (counts.episodes, counts.quarantined) == (3, 1)
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute(
            "SELECT episode_id, task_id, trial, status, category, tools, final_output, total_duration_ms, total_tokens, "
            "error_steps, metadata ->> '$.reward' FROM episodes ORDER BY 1"
        ).fetchall()
        steps = con.execute(
            "SELECT step_type, tool_name, input, output, error FROM episode_steps WHERE episode_id = 'claude-headless:fix-typo' "
            "ORDER BY step_index"
        ).fetchall()
        reason = con.execute("SELECT reason FROM quarantine").fetchone()[0]
    assert episodes == [
        ("claude-headless:add-test:1", "add-test", 1, "success", None, ["Write"], "Added.", 1200.0, 0, 0, "1.0"),
        ("claude-headless:add-test:2", "add-test", 2, "failure", None, [], "Gave up.", 900.0, 0, 0, "0.0"),
        (
            "claude-headless:fix-typo",
            "fix-typo",
            None,
            "success",
            "edit",
            ["Read", "Edit"],
            "Fixed and committed.",
            4000.0,
            980,
            1,
            "1.0",
        ),
    ]
    assert steps == [
        ("decision", None, None, "Find the typo first.", None),
        ("tool_call", "Read", '{"file_path": "README.md"}', None, None),
        ("tool_result", "Read", None, "teh quick fox", None),
        ("tool_call", "Edit", '{"old": "teh", "new": "the"}', None, None),
        ("tool_result", "Edit", None, "permission denied", "Edit failed"),
        ("llm_call", None, "Fix the typo in README.md", "I fixed it.", None),  # each turn of the input meets a message
        ("llm_call", None, "Now commit it", "Fixed and committed.", None),
    ]
    assert reason == "plaited: output: Field required"  # the first thing wrong with it, on one line


def test_relative_timestamps_are_offsets_and_a_record_without_an_absolute_time_takes_the_runs_day(tmp_path):
    """As plaited writes them: a step's `timestamp` is milliseconds since `timing.start`; a TrialResult has no timing."""
    capture = {
        "id": "ceo", "input": "Find the CEO of Anthropic", "output": "Dario Amodei.", "hint": "Dario",
        "trajectory": [{"type": "thought", "content": "I'll search", "timestamp": 100},
                       {"type": "tool_call", "name": "WebSearch", "status": "completed", "input": {"q": "CEO"},
                        "output": {"hits": 3}, "duration": 500},
                       {"type": "message", "content": "Dario Amodei.", "timestamp": 700}],
        "metadata": {"category": "search"},
        "timing": {"start": START, "end": START + 1234, "total": 1234, "sessionCreation": 234},
        "toolErrors": False,
    }  # fmt: skip
    trials = {
        "id": "search-001", "input": "Find the CEO", "k": 2,
        "trials": [{"trialNum": n, "output": "Dario", "duration": 800, "pass": n == 1, "score": float(n == 1),
                    "trajectory": [{"type": "tool_call", "name": "WebSearch", "status": "completed", "timestamp": 100},
                                   {"type": "message", "content": "Dario", "timestamp": 700}]} for n in (1, 2)],
    }  # fmt: skip
    assert plaited.days(json.dumps(capture)) == {DAY} and plaited.days(json.dumps(trials)) == set()
    source_dir = tmp_path / "src"
    source_dir.mkdir()
    (source_dir / "captures.jsonl").write_text(json.dumps(capture) + "\n")
    (source_dir / "trials.jsonl").write_text(json.dumps(trials) + "\n")
    source = FileSource(source_dir, tmp_path / "index.json")
    run_day = date(2026, 11, 9)  # `eval-pipeline run --date 2026-11-09`: where the undated trials go
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    assert load_episodes(warehouse, DAY, lambda: source.records_for(DAY, undated_day=run_day)).episodes == 1
    assert load_episodes(warehouse, run_day, lambda: source.records_for(run_day, undated_day=run_day)).episodes == 2
    with warehouse.connect(read_only=True) as con:
        episodes = con.execute(
            "SELECT episode_id, partition_date::VARCHAR, strftime(started_at, '%Y-%m-%dT%H:%M:%S.%g') FROM episodes ORDER BY 1"
        ).fetchall()
        steps = con.execute(
            "SELECT episode_id, step_type, strftime(timestamp, '%Y-%m-%dT%H:%M:%S.%g') FROM episode_steps "
            "WHERE timestamp IS NOT NULL ORDER BY 1, step_index"
        ).fetchall()
    assert episodes == [
        ("captures:ceo", "2026-11-05", "2026-11-05T10:20:00.000"),
        ("trials:search-001:1", "2026-11-09", "2026-11-09T00:00:00.000"),
        ("trials:search-001:2", "2026-11-09", "2026-11-09T00:00:00.000"),
    ]
    assert steps == [
        ("captures:ceo", "decision", "2026-11-05T10:20:00.100"),  # timing.start + 100 ms
        ("captures:ceo", "llm_call", "2026-11-05T10:20:00.700"),
        *[(f"trials:search-001:{n}", kind, f"2026-11-09T00:00:00.{at}") for n in (1, 2)
          for kind, at in (("tool_call", "100"), ("tool_result", "100"), ("llm_call", "700"))],
    ]  # fmt: skip


def test_an_index_from_before_relative_timestamps_reads_its_files_days_again_and_keeps_when_they_were_first_seen(tmp_path):
    trial = {"trialNum": 1, "output": "hello", "duration": 5, "trajectory": [{"type": "message", "timestamp": 100}]}
    trials = {"id": "t", "input": "hi", "k": 1, "trials": [trial]}
    path = tmp_path / "src" / "trials.jsonl"
    path.parent.mkdir()
    path.write_text(json.dumps(trials) + "\n")
    stat = path.stat()
    old = {"source": str(path.parent), "files": {str(path): {"mtime_ns": stat.st_mtime_ns, "size": stat.st_size,
                                                             "days": {"1970-01-01": 1}, "first_seen": "2026-11-01"}}}  # fmt: skip
    (tmp_path / "index.json").write_text(json.dumps(old))
    entry = FileSource(path.parent, tmp_path / "index.json").refresh_index().files[str(path)]
    assert (entry.days, entry.first_seen) == ({}, date(2026, 11, 1))


def test_the_export_gives_back_the_users_capture_with_the_grader_verdict_where_it_was_and_ours_beside_it(tmp_path):
    warehouse, exported = Warehouse(tmp_path / "eval.duckdb"), tmp_path / "exported" / "results.jsonl"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "claude-headless.jsonl").write_text(json.dumps(CAPTURE) + "\n")
    load_episodes(warehouse, DAY, lambda: FileSource(tmp_path / "src", tmp_path / "index.json").records_for(DAY))
    [capture] = [plaited.to_capture(episode) for episode in export_inputs(warehouse, DAY)]
    assert {key: capture[key] for key in ("id", "input", "hint", "output", "score")} == {
        key: CAPTURE[key] for key in ("id", "input", "hint", "output", "score")
    }  # the multi-turn input list, the hint and the user's grader verdict, as they were
    assert capture["trajectory"] == [{**step, "timestamp": step["timestamp"] - START} for step in CAPTURE["trajectory"]]
    assert capture["metadata"]["eval_pipeline"] == {"passed": None, "verdict_reason": None, "weighted_score": None}
    assert capture["timing"]["start"] == START and capture["toolErrors"] is True

    exported.parent.mkdir()
    exported.write_text(json.dumps(capture) + "\n")
    again = Warehouse(tmp_path / "again.duckdb")
    load_episodes(again, DAY, lambda: FileSource(exported.parent, tmp_path / "index-again.json").records_for(DAY))
    columns = "episode_id, task_id, status, tools, final_output, total_duration_ms, total_tokens, metadata ->> '$.reward'"
    steps = "SELECT step_type, tool_name, input, output, error, timestamp FROM episode_steps ORDER BY step_index"
    with warehouse.connect(read_only=True) as first, again.connect(read_only=True) as second:
        assert (
            second.execute(f"SELECT {columns} FROM episodes").fetchall()
            == first.execute(f"SELECT {columns} FROM episodes").fetchall()
        )
        assert second.execute(steps).fetchall() == first.execute(steps).fetchall()
    [back] = [plaited.to_capture(episode) for episode in export_inputs(again, DAY)]
    assert {key: back[key] for key in ("input", "hint", "trajectory", "score")} == {
        key: capture[key] for key in ("input", "hint", "trajectory", "score")
    }


def test_parallel_tool_calls_keep_their_own_results_and_a_call_with_its_own_output_keeps_it():
    steps = [
        {"step_type": "tool_call", "tool_name": "search", "input_summary": '{"q": "a"}', "timestamp": "2026-11-05T10:20:00.010Z"},
        {"step_type": "tool_call", "tool_name": "fetch", "input_summary": '{"url": "u"}'},
        {"step_type": "tool_result", "tool_name": "search", "output_summary": "hits for a"},
        {"step_type": "tool_result", "tool_name": "fetch", "output_summary": "page", "error": "fetch failed"},
        {"step_type": "tool_call", "tool_name": "lookup", "input_summary": "A-1", "output_summary": '{"status": "shipped"}',
         "duration_ms": 35},
        {"step_type": "llm_call", "input_summary": "where is A-1?", "output_summary": "Shipped."},
    ]  # fmt: skip
    assert plaited.trajectory(steps, "2026-11-05T10:20:00Z") == [
        {"type": "tool_call", "name": "search", "status": "completed", "input": {"q": "a"}, "output": "hits for a",
         "timestamp": 10},
        {"type": "tool_call", "name": "fetch", "status": "failed", "input": {"url": "u"}, "output": "page", "timestamp": 0},
        {"type": "tool_call", "name": "lookup", "status": "completed", "input": "A-1", "output": {"status": "shipped"},
         "duration": 35, "timestamp": 0},
        {"type": "message", "content": "Shipped.", "timestamp": 0},
    ]  # fmt: skip
