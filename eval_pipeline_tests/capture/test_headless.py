"""plaited's headless adapter schemas, read unchanged, driving real processes on PATH."""

import json
import os
import stat
import sys
from datetime import date
from pathlib import Path

import pytest

from eval_pipeline.capture.cases import CaseSpec
from eval_pipeline.capture.command import CommandAgent, episode_of, run_all
from eval_pipeline.capture.headless import (
    HeadlessAgent,
    HeadlessSchema,
    SchemaError,
    Update,
    command_line,
    json_path,
    load_schema,
    read_turn,
    updates_of,
)
from eval_pipeline.episodes.model import Episode

SCHEMAS = Path(__file__).with_name("schemas")  # verbatim copies of ../shared/samples/plaited/*.json
DAY = date(2026, 11, 5)


@pytest.fixture
def agents_on_path(tmp_path, monkeypatch) -> Path:
    """`claude` and `gemini` executables on PATH, played by headless_agent.py."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = Path(__file__).with_name("headless_agent.py")
    for name in ("claude", "gemini"):
        wrapper = bin_dir / name
        wrapper.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" {name} "$@"\n')
        wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return bin_dir


def test_json_paths_as_plaited_reads_them():
    event = {"type": "assistant", "message": {"content": [{"type": "text", "text": "hi"}, {"type": "tool_use"}]}}
    assert json_path(event, "$.type") == "assistant"
    assert json_path(event, "$.message.content[0].text") == "hi"
    assert json_path(event, "$.message.content[5].text") is None
    assert json_path(event, "$.message.content[*]") == event["message"]["content"]
    assert json_path(event, "$.missing.deeper") is None
    assert json_path(event, "'pending'") == "pending"
    assert json_path(event, "type") is None  # not a path


def test_a_wildcard_match_emits_one_update_per_matching_item():
    wildcard = {"match": {"path": "$.message.content[*]", "value": "text"}, "emitAs": "message", "extract": {"content": "$.text"}}
    claude = json.loads((SCHEMAS / "claude-headless.json").read_text())
    schema = HeadlessSchema.model_validate({**claude, "outputEvents": [wildcard]})
    event = {"message": {"content": [{"type": "text", "text": "a"}, {"type": "tool_use"}, {"type": "text", "text": "b"}]}}
    assert [u.content for u in updates_of(event, schema)] == ["a", "b"]
    assert updates_of({"message": {"content": [{"type": "tool_use"}]}}, schema) == []


def test_passthrough_output_and_a_stdin_prompt_with_a_cwd_flag(tmp_path):
    schema = HeadlessSchema.model_validate({
        "version": 1, "name": "native", "command": ["agent"], "sessionMode": "iterative", "cwdFlag": "--cwd",
        "prompt": {"stdin": True}, "output": {"flag": "", "value": ""}, "outputMode": "passthrough",
        "passthroughTypeMap": {"typeField": "kind", "typeValues": {"say": "message", "think": "thought"}},
        "result": {"matchPath": "$.kind", "matchValue": "done", "contentPath": "$.text"},
    })  # fmt: skip
    assert command_line(schema, "hi", tmp_path, None, auto_approve=True) == (["agent", "--cwd", str(tmp_path)], "hi")
    assert updates_of({"kind": "say", "content": "hello"}, schema) == [Update("message", "hello")]
    assert updates_of({"kind": "tool_call", "title": "grep", "status": "completed"}, schema) == [
        Update("tool_call", None, "grep", "completed")
    ]  # a native type passes through as it is
    assert updates_of({"kind": "noise"}, schema) == []
    turn = read_turn('{"kind": "think", "content": "hm"}\nnot json\n{"kind": "done", "text": "bye"}\n', schema)
    assert (turn.answer, [u.type for u in turn.updates]) == ("bye", ["thought"])


def test_an_invalid_schema_is_refused_with_its_path(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"version": 2, "name": "x"}))
    with pytest.raises(SchemaError, match=r"broken\.json"):
        load_schema(path)


def test_claude_schema_resumes_its_session_across_turns_and_auto_approves_only_when_asked(tmp_path, agents_on_path):
    schema = load_schema(SCHEMAS / "claude-headless.json")
    case = CaseSpec(id="order", input=["Where is my order A-1?", "What did I ask first?"], metadata={"category": "orders"})
    [run] = run_all(HeadlessAgent(schema, timeout_seconds=20), [case], trials=1, root=tmp_path / "plain")
    first, second = (json.loads((run.workdir / f"argv-{n}.json").read_text()) for n in range(2))
    assert first == ["--output-format", "stream-json", "-p", "Where is my order A-1?"]  # no autoApprove flags
    assert second == ["--output-format", "stream-json", "--resume", "sess-22", "-p", "What did I ask first?"]

    episode = episode_of(run, "claude-code", DAY)
    Episode.model_validate(episode)
    assert episode["status"] == "success"
    assert episode["metadata"]["final_output"] == "You first asked: Where is my order A-1?"
    assert [(s["step_type"], s.get("tool_name")) for s in episode["steps"]] == [
        ("llm_call", None), ("tool_call", "lookup_order"), ("tool_result", "lookup_order"), ("llm_call", None),
    ]  # fmt: skip
    assert episode["steps"][0]["input_summary"] == "Where is my order A-1?"
    assert episode["steps"][3]["input_summary"] == "What did I ask first?"
    assert (run.workdir.parent / "trial-0.events.jsonl").read_text().count('"type": "result"') == 2  # raw stream kept

    [approved] = run_all(HeadlessAgent(schema, auto_approve=True, timeout_seconds=20), [case], trials=1, root=tmp_path / "yes")
    flags = json.loads((approved.workdir / "argv-0.json").read_text())
    assert flags[2:4] == ["--dangerously-skip-permissions", "--verbose"]


def test_gemini_schema_replays_the_conversation_into_each_new_process(tmp_path, agents_on_path):
    schema = load_schema(SCHEMAS / "gemini-headless.json")
    case = CaseSpec(id="chat", input=["hi", "and again"])
    [run] = run_all(HeadlessAgent(schema, timeout_seconds=20), [case], trials=1, root=tmp_path)
    second = json.loads((run.workdir / "argv-1.json").read_text())
    assert second[:2] == ["--output-format", "stream-json"] and "--sandbox" not in second
    assert second[-1] == "User: hi\nAssistant: last line: hi\n\nUser: and again"
    episode = episode_of(run, "gemini", DAY)
    assert episode["metadata"]["final_output"] == "last line: User: and again"
    assert [s["output_summary"] for s in episode["steps"]] == ["I see 1 turn(s).", "I see 2 turn(s)."]


def test_a_hanging_headless_agent_is_killed_at_the_case_timeout_and_its_earlier_turns_kept(tmp_path, agents_on_path):
    schema = load_schema(SCHEMAS / "claude-headless.json")
    case = CaseSpec(id="h", input=["Where is my order A-1?", "please hang"], timeout=3000)
    [run] = run_all(HeadlessAgent(schema, timeout_seconds=20), [case], 1, tmp_path)
    episode = episode_of(run, "claude-code", DAY)
    Episode.model_validate(episode)
    assert run.exit_code is None and episode["status"] == "timeout"
    assert [s["step_type"] for s in episode["steps"]] == ["llm_call", "tool_call", "tool_result", "error"]
    assert "timeout" in episode["steps"][-1]["error"] and "final_output" not in episode["metadata"]


def test_a_missing_agent_binary_is_a_recorded_failure(tmp_path):
    agent = CommandAgent(("/nonexistent/agent-binary",), timeout_seconds=5)
    [run] = run_all(agent, [CaseSpec(id="x", input="hi")], trials=1, root=tmp_path)
    episode = episode_of(run, "ghost", DAY)
    assert episode["status"] == "failure" and "could not start '/nonexistent/agent-binary'" in episode["steps"][-1]["error"]


def test_a_command_agent_runs_a_multi_turn_case_as_one_session(tmp_path):
    agent = CommandAgent((sys.executable, str(Path(__file__).with_name("agent.py"))), timeout_seconds=20)
    [run] = run_all(agent, [CaseSpec(id="two", input=["hello", "once more"])], trials=1, root=tmp_path)
    assert run.prompts == ("hello", "User: hello\nAssistant: echo: hello\n\nUser: once more")
    episode = episode_of(run, "echo-agent", DAY)
    assert [s["step_index"] for s in episode["steps"]] == [0, 1]
    assert episode["metadata"]["final_output"] == "echo: User: hello\nAssistant: echo: hello\n\nUser: once more"


def test_run_with_a_headless_agent_grades_trials_validates_references_and_samples_failures(
    project_env, agents_on_path, monkeypatch, capsys
):
    from eval_pipeline.cli import main

    tmp_path = project_env
    (tmp_path / "claude-headless.json").write_text((SCHEMAS / "claude-headless.json").read_text())  # used unchanged
    cases = [
        {"id": "order", "input": ["Where is my order A-1?", "What did I ask first?"], "hint": "order",
         "reference": "You asked about order A-1", "metadata": {"category": "orders"}},
        {"id": "greeting", "input": "hello", "hint": "shipped", "reference": "hi there", "metadata": {"category": "smalltalk"}},
        {"id": "refund", "input": "refund my order", "hint": "refund", "reference": "refund issued",
         "metadata": {"category": "orders", "negative": True}},
    ]  # fmt: skip
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    (tmp_path / "grade.py").write_text(Path(__file__).with_name("grader.py").read_text())  # relative to the config
    grader = ", ".join(json.dumps(part) for part in (sys.executable, "grade.py"))
    (tmp_path / "eval.toml").write_text(
        f'[capture]\ncase_set = "cases.jsonl"\nagent_id = "claude-code"\nschema = "claude-headless.json"\n'
        f"trials = 2\ntimeout_seconds = 20\ngrader = [{grader}]\n"
    )
    monkeypatch.setenv("EVAL_CONFIG", str(tmp_path / "eval.toml"))
    (tmp_path / "episodes").mkdir()

    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    sql = (
        "SELECT s.task_id, e.trial, a.passed, a.detail, e.tools FROM assertions a JOIN scores s USING (episode_id) "
        "JOIN episodes e USING (episode_id) WHERE a.assertion = 'grader' ORDER BY 1, 2"
    )
    assert main(["query", sql, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["task_id"], r["passed"]) for r in rows] == [
        ("greeting", False), ("greeting", False), ("order", True), ("order", True), ("refund", False), ("refund", False),
    ]  # fmt: skip
    assert rows[0]["detail"] == "grader error: the reference does not pass its own grader: looked for 'shipped' in cwd True"
    assert rows[2]["tools"] == ["lookup_order"] and rows[4]["tools"] == ["lookup_order"]

    calibration = (tmp_path / "reports" / "calibration-2026-11-05.md").read_text()
    assert calibration.count("- [ ] the grader was right") == 4  # the 4 failed trials, all sampled (10 per day)
    assert "4 of 4 failed trials" in calibration and "refund my order" in calibration
    report = (tmp_path / "reports" / "eval-report-2026-11-05.md").read_text()
    assert "## Case Set Balance" in report and "| orders | 2 | 67% |" in report
    assert "3 cases; 2 positive, 1 negative" in report and "Grader calibration: 4 of 4 failed trials" in report

    assert main(["validate-refs"]) == 1  # the greeting's reference fails its own grader
    out = capsys.readouterr().out
    assert "greeting" in out and "2 of 3 references pass their grader; 0 cases have none." in out


@pytest.mark.parametrize(
    ("agent", "tool", "prompt", "called_with"),
    [
        ("command", "write_file", "write a note", 'write_file called with {"path": "notes.txt"}'),  # agent.py writes it
        ("headless", "lookup_order", "Where is order A-1?", "lookup_order called with null"),  # the schema takes no input
    ],
)
def test_a_grader_written_for_plaiteds_trajectory_passes_and_fails_the_right_trials(
    tmp_path, agents_on_path, agent, tool, prompt, called_with
):
    from eval_pipeline.capture.command import captured_episodes

    runner = (
        CommandAgent((sys.executable, str(Path(__file__).with_name("agent.py"))))
        if agent == "command"
        else HeadlessAgent(load_schema(SCHEMAS / "claude-headless.json"))
    )
    grader = (sys.executable, str(Path(__file__).with_name("plaited_grader.py")), tool)
    runs = run_all(runner, [CaseSpec(id="calls", input=prompt), CaseSpec(id="idle", input="hello")], 2, tmp_path / "runs")
    episodes = list(captured_episodes(runs, "agent", DAY, grader, 30))
    verdicts = {(e["metadata"]["task_id"], e["metadata"]["trial"]): e["metadata"]["grader"] for e in episodes}
    assert {key: verdict["pass"] for key, verdict in verdicts.items()} == {
        ("calls", 0): True, ("calls", 1): True, ("idle", 0): False, ("idle", 1): False,
    }  # fmt: skip
    assert verdicts[("calls", 0)]["reasoning"] == called_with and verdicts[("idle", 1)]["reasoning"] == f"{tool} never called"
