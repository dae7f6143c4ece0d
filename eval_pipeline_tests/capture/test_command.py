"""A real command agent run on a case set: trials, concurrency, timeouts, crashes, isolation, no shell."""

import json
import sys
import time
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from eval_pipeline.capture.cases import CaseSetError, CaseSpec, load_case_set, save_case
from eval_pipeline.capture.command import CommandAgent, episode_of, run_all
from eval_pipeline.episodes.model import Episode

AGENT = (sys.executable, str(Path(__file__).with_name("agent.py")))
DAY = date(2026, 11, 5)
HOSTILE = '"; rm -rf ~; $(reboot) `touch pwned` && echo $HOME'


def cases(*specs) -> list[CaseSpec]:
    return [CaseSpec.model_validate(spec) for spec in specs]


def test_trials_timeouts_crashes_and_isolation(tmp_path):
    agent = CommandAgent(AGENT, prompt_via="stdin", timeout_seconds=20, concurrency=2)
    specs = cases(
        {"id": "greet", "input": "hello", "metadata": {"category": "smalltalk"}, "expected_output_contains": ["hello"]},
        {"id": "stuck", "input": "please hang", "timeout": 1500},
        {"id": "broken", "input": "crash now"},
        {"id": "files", "input": "write a note"},
    )
    started = time.perf_counter()
    runs = run_all(agent, specs, trials=3, root=tmp_path / "runs")
    elapsed = time.perf_counter() - started
    assert len(runs) == 12 and elapsed < 45  # the hanging trials (60 s) were killed at their 1500 ms timeout
    episodes = [episode_of(run, "echo-agent", DAY, now=datetime(2026, 11, 22, 9, 30, tzinfo=UTC)) for run in runs]
    for episode in episodes:
        Episode.model_validate(episode)  # every run is a valid canonical episode
    by_case = {}
    for episode in episodes:
        by_case.setdefault(episode["metadata"]["task_id"], []).append(episode)
    assert {e["status"] for e in by_case["greet"]} == {"success"}
    assert by_case["greet"][0]["metadata"]["final_output"] == "echo: hello"
    assert by_case["greet"][0]["metadata"]["expected"] == {"expected_output_contains": ["hello"]}
    assert by_case["greet"][0]["started_at"] == "2026-11-05T09:30:00Z"  # the partition's day, whatever the clock says
    assert [e["status"] for e in by_case["stuck"]] == ["timeout"] * 3
    assert all("timeout" in e["steps"][0]["error"] for e in by_case["stuck"])
    crashed = by_case["broken"][0]
    assert crashed["status"] == "failure" and "exit code 3: Traceback" in crashed["steps"][-1]["error"]
    assert Path(crashed["metadata"]["stderr_path"]).read_text().startswith("Traceback")  # kept for debugging
    written = by_case["files"]
    assert all(e["metadata"]["final_output"] == "wrote notes.txt; found []" for e in written)  # each trial's own directory
    assert len({e["metadata"]["workdir"] for e in written}) == 3


def test_a_case_timeout_is_in_milliseconds_as_plaited_writes_it(tmp_path):
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text(json.dumps({"id": "stuck", "input": "please hang", "timeout": 5000}) + "\n")  # five seconds
    agent = CommandAgent(AGENT, timeout_seconds=300, concurrency=1)
    started = time.perf_counter()
    [run] = run_all(agent, load_case_set(prompts), trials=1, root=tmp_path / "runs")
    elapsed = time.perf_counter() - started
    print(f"the hanging agent was killed after {elapsed:.2f} s")
    assert run.exit_code is None and 4.5 <= elapsed < 30  # the agent would sleep 60 s; loose bounds, a shared machine


@pytest.mark.parametrize("via", ["stdin", "env", "argv"])
def test_a_prompt_with_shell_metacharacters_arrives_verbatim_and_runs_nothing(tmp_path, via):
    agent = CommandAgent(AGENT, prompt_via=via, timeout_seconds=20, concurrency=1)
    [run] = run_all(agent, cases({"id": "hostile", "input": HOSTILE}), trials=1, root=tmp_path / via)
    assert run.stdout.strip() == f"echo: {HOSTILE}"
    assert not (run.workdir / "pwned").exists() and not (tmp_path / "pwned").exists()


def test_a_case_set_names_its_bad_lines(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"id": "a", "input": "x"}) + "\n" + json.dumps({"id": "a", "input": "y"}) + "\n")
    with pytest.raises(CaseSetError, match=r"cases.jsonl:2: duplicate id 'a'"):
        load_case_set(path)
    path.write_text(json.dumps({"input": "x"}) + "\n")
    with pytest.raises(CaseSetError, match=r"cases.jsonl:1: "):
        load_case_set(path)


def test_a_case_set_windows_python_wrote_in_cp1252_names_the_byte_and_is_never_rewritten(tmp_path):
    """`open("cases.jsonl", "w")` on Windows writes the ANSI code page: "é" is the byte 0xe9, which was read as U+FFFD
    (a case expecting "Résumé" that no answer could meet), and promoting an episode rewrote the file with it."""
    path = tmp_path / "cases.jsonl"
    with path.open("w", encoding="cp1252") as cases:
        cases.write(json.dumps({"id": "a", "input": "x"}) + "\n")
        cases.write(json.dumps({"id": "b", "input": "Résumé ?"}, ensure_ascii=False))
    written = path.read_bytes()
    at = written.split(b"\n")[1].index(b"\xe9")
    says = rf"cases.jsonl:2: not UTF-8: byte 0xe9 at byte {at} of the record \(text is read as UTF-8, or UTF-16"
    with pytest.raises(CaseSetError, match=says):
        load_case_set(path)
    with pytest.raises(CaseSetError, match=says):
        save_case(path, {"id": "c", "input": "z"})
    assert path.read_bytes() == written


def test_run_with_a_case_set_runs_the_agent_scores_every_trial_and_fills_pass_at_k(project_env, monkeypatch, capsys):
    from eval_pipeline.cli import main

    tmp_path = project_env
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "greet", "input": "hello there", "expected_output_contains": ["hello"]}) + "\n"
        + json.dumps({"id": "broken", "input": "crash now", "expected_output_contains": ["anything"]}) + "\n"
    )  # fmt: skip
    command = ", ".join(json.dumps(part) for part in AGENT)
    config = f'[capture]\ncase_set = "cases.jsonl"\nagent_id = "echo-agent"\ncommand = [{command}]\ntimeout_seconds = 20\n'
    (tmp_path / "eval.toml").write_text(config)  # the defaults, and the capture
    monkeypatch.setenv("EVAL_DUCKDB_PATH", str(tmp_path / "data" / "eval.duckdb"))
    monkeypatch.setenv("EVAL_CONFIG", str(tmp_path / "eval.toml"))
    (tmp_path / "episodes").mkdir()

    assert main(["run", "--date", "2026-11-05", "--trials", "3", "--fail-on", "never"]) == 0
    [stored] = (tmp_path / "data" / "captures" / "2026-11-05" / "echo-agent").glob("*.jsonl")  # one run of the agent
    first = stored.stat().st_mtime_ns
    capsys.readouterr()
    assert main(["query", "SELECT task_id, count(*) AS n, bool_and(case_passed) AS ok FROM scores GROUP BY ALL ORDER BY 1",
                 "--format", "json"]) == 0  # fmt: skip
    assert json.loads(capsys.readouterr().out) == [
        {"task_id": "broken", "n": 3, "ok": False},
        {"task_id": "greet", "n": 3, "ok": True},
    ]
    assert main(["query", "SELECT k, pass_at_k, pass_hat_k, n_tasks FROM pass_at_k ORDER BY k", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)[-1] == {"k": 3, "pass_at_k": 0.5, "pass_hat_k": 0.5, "n_tasks": 2}

    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0  # the stored capture is reused
    assert stored.stat().st_mtime_ns == first
    assert main(["run", "--date", "2026-11-05", "--recapture", "--trials", "1", "--fail-on", "never"]) == 0
    runs = sorted(stored.parent.glob("*.jsonl"), key=lambda path: path.stat().st_mtime_ns)
    assert runs[0] == stored and stored.stat().st_mtime_ns == first  # the earlier run is kept beside the new one
    assert [len(run.read_text().splitlines()) for run in runs] == [6, 2]


def answer_or_fail(case: dict) -> str | dict:
    """A Python-callable agent for the tests."""
    if "boom" in case["input"]:
        raise RuntimeError("the callable failed")
    if "slow" in case["input"]:
        time.sleep(3)  # past its 0.5 s timeout: abandoned, the run goes on
    return {"steps": [{"step_index": 0, "step_type": "llm_call", "input_summary": case["input"], "output_summary": "ok"}],
            "metadata": {"final_output": f"callable saw trial {case['trial']}"}}  # fmt: skip


def test_a_python_callable_agent(tmp_path):
    from eval_pipeline.capture.command import CallableAgent

    agent = CallableAgent(f"{__name__}:answer_or_fail", timeout_seconds=20, concurrency=2)
    specs = cases(
        {"id": "fine", "input": "hi"}, {"id": "fails", "input": "boom"}, {"id": "slow", "input": "slow", "timeout": 500}
    )
    started = time.perf_counter()
    runs = run_all(agent, specs, trials=2, root=tmp_path)
    assert time.perf_counter() - started < 2.5  # the slow calls were not waited for
    episodes = {e["metadata"]["task_id"] + str(e["metadata"]["trial"]): e for e in (episode_of(r, "fn", DAY) for r in runs)}
    assert episodes["fine1"]["status"] == "success" and episodes["fine1"]["metadata"]["final_output"] == "callable saw trial 1"
    assert (
        episodes["fails0"]["status"] == "failure"
        and "RuntimeError: the callable failed" in episodes["fails0"]["steps"][-1]["error"]
    )
    assert episodes["slow0"]["status"] == "timeout"


def test_a_callable_agent_beside_the_config_needs_no_pythonpath(project_env, monkeypatch, capsys):
    from eval_pipeline.cli import main

    project = project_env / "project"  # not the working directory: the module is found beside eval.toml
    project.mkdir()
    (project / "triage_tools.py").write_text("def route(text):\n    return 'billing' if 'invoice' in text else 'support'\n")
    (project / "triage_agent.py").write_text(
        "from triage_tools import route\n\n\ndef run(case):\n    return f\"routed to {route(case['input'])}\"\n"
    )  # it imports a module of its own, as agents do
    (project / "cases.jsonl").write_text(json.dumps({"id": "bill", "input": "invoice", "expected_output_contains": ["billing"]}))
    (project / "eval.toml").write_text('[capture]\ncase_set = "cases.jsonl"\ncallable = "triage_agent:run"\n')
    monkeypatch.setenv("EVAL_CONFIG", str(project / "eval.toml"))
    monkeypatch.delenv("PYTHONPATH", raising=False)
    path_before = list(sys.path)
    try:
        assert main(["run", "--date", "2026-11-05"]) == 0
    finally:  # imported into this process: no other test may find them
        for name in ("triage_agent", "triage_tools"):
            sys.modules.pop(name, None)
    assert sys.path == path_before  # the config's directory was on the path only for the import
    capsys.readouterr()
    sql = "SELECT s.task_id, e.final_output, s.passed FROM scores s JOIN episodes e USING (episode_id)"
    assert main(["query", sql, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == [{"task_id": "bill", "final_output": "routed to billing", "passed": True}]


def test_an_http_agent_on_loopback(tmp_path):
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from eval_pipeline.capture.command import HttpAgent

    seen = []

    class Agent(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            case = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append(case)
            status, body = (500, b"overloaded") if "busy" in case["input"] else (200, f"answer to {case['input']}".encode())
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Agent)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        agent = HttpAgent(f"http://127.0.0.1:{server.server_address[1]}/run", timeout_seconds=10, concurrency=2)
        runs = run_all(
            agent, cases({"id": "q", "input": "what is 2+2"}, {"id": "b", "input": "busy now"}), trials=1, root=tmp_path
        )
    finally:
        server.shutdown()
    ok, busy = (episode_of(run, "http-agent", DAY) for run in runs)
    assert ok["status"] == "success" and ok["metadata"]["final_output"] == "answer to what is 2+2"
    assert busy["status"] == "failure" and "HTTP 500: overloaded" in busy["steps"][-1]["error"]
    assert {c["id"] for c in seen} == {"q", "b"} and all(c["trial"] == 0 for c in seen)


@pytest.mark.parametrize("kind", ["python", "shell"])
def test_executable_graders_decide_the_trials(project_env, monkeypatch, capsys, kind):
    from eval_pipeline.cli import main

    tmp_path = project_env
    (tmp_path / "cases.jsonl").write_text(
        json.dumps({"id": "greet", "input": "hello there", "hint": "hello"}) + "\n"
        + json.dumps({"id": "miss", "input": "goodbye", "hint": "hello"}) + "\n"
        + json.dumps({"id": "bad-grader", "input": "hi", "hint": "explode"}) + "\n"
    )  # fmt: skip
    python_grader = [sys.executable, str(Path(__file__).with_name("grader.py"))]
    # a shell grader: reads the run, answers with the plaited protocol (no data reaches the shell's own text)
    shell_grader = ["sh", "-c", 'cat > /dev/null; echo \'{"pass": true, "score": 0.5, "reasoning": "from sh"}\'']
    grader = python_grader if kind == "python" else shell_grader
    command = ", ".join(json.dumps(part) for part in AGENT)
    (tmp_path / "eval.toml").write_text(
        f'[capture]\ncase_set = "cases.jsonl"\nagent_id = "graded"\ncommand = [{command}]\n'
        f"grader = [{', '.join(json.dumps(part) for part in grader)}]\n"
    )
    monkeypatch.setenv("EVAL_DUCKDB_PATH", str(tmp_path / "data" / "eval.duckdb"))
    monkeypatch.setenv("EVAL_CONFIG", str(tmp_path / "eval.toml"))
    (tmp_path / "episodes").mkdir()
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    sql = "SELECT s.task_id, a.passed, a.score, a.detail FROM assertions a JOIN scores s USING (episode_id) ORDER BY 1"
    assert main(["query", sql, "--format", "json"]) == 0
    rows = {row["task_id"]: row for row in json.loads(capsys.readouterr().out)}
    if kind == "python":
        assert (rows["greet"]["passed"], rows["miss"]["passed"]) == (True, False)
        assert rows["bad-grader"]["passed"] is False and rows["bad-grader"]["detail"].startswith("grader error: grader exited 1")
    else:
        assert {row["score"] for row in rows.values()} == {0.5} and all(row["detail"] == "from sh" for row in rows.values())


def test_a_worse_agent_on_the_same_case_set_raises_alerts(project_env, monkeypatch, capsys, webhook):
    from eval_pipeline.cli import main

    tmp_path = project_env
    cases = [{"id": f"greet-{n}", "input": f"hello {n}", "expected_output_contains": ["hello"]} for n in range(4)]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(case) + "\n" for case in cases))
    (tmp_path / "my_agent.py").write_text(Path(AGENT[1]).read_text())  # beside the config, named relative to it
    command = ", ".join(json.dumps(part) for part in (sys.executable, "my_agent.py"))
    (tmp_path / "eval.toml").write_text(f'[capture]\ncase_set = "cases.jsonl"\nagent_id = "echo-agent"\ncommand = [{command}]\n')
    monkeypatch.setenv("EVAL_CONFIG", str(tmp_path / "eval.toml"))
    monkeypatch.setenv("EVAL_ALERT_WEBHOOK_URL", webhook.url)
    (tmp_path / "episodes").mkdir()

    assert main(["run", "--date", "2026-11-04"]) == 0  # the first day's runs become the baselines
    assert webhook.messages == []
    monkeypatch.setenv("AGENT_DEGRADED", "1")
    assert main(["run", "--date", "2026-11-05"]) == 1  # critical findings: exit 1 for cron and CI
    capsys.readouterr()
    sql = "SELECT dimension, severity, count(*) AS n FROM findings WHERE partition_date = '2026-11-05' GROUP BY ALL ORDER BY 1"
    assert main(["query", sql, "--format", "json"]) == 0
    findings = {row["dimension"]: row for row in json.loads(capsys.readouterr().out)}
    assert findings["correctness"]["severity"] == "critical" and findings["correctness"]["n"] == 5  # 4 episodes + aggregate
    alerted = json.dumps(webhook.messages)
    assert webhook.messages and "echo-agent" in alerted and "correctness" in alerted


NAMED_AGENT = """
import pathlib, sys
name, log = sys.argv[1], pathlib.Path(sys.argv[2])
prompt = sys.stdin.read()
with log.open("a") as calls:
    calls.write(prompt + "\\n")
print(f"{name} says: I do not know" if name.startswith("sloppy") and "capital" in prompt else f"{name} says: {prompt}")
"""


def test_two_agents_on_one_case_set_both_run_every_run_is_kept_and_they_compare_head_to_head(project_env, monkeypatch, capsys):
    from eval_pipeline.cli import main

    root = project_env
    (root / "cases.jsonl").write_text(
        "".join(
            json.dumps({"id": case, "input": prompt, "expected_output_contains": [word]}) + "\n"
            for case, prompt, word in (
                ("greet", "hello there", "hello"),
                ("capital", "the capital is Paris", "Paris"),
                ("thanks", "thank you", "thank"),
            )
        )
    )
    (root / "agent.py").write_text(NAMED_AGENT)
    calls = {name: root / f"{name}.calls" for name in ("careful", "sloppy")}
    agents = "".join(
        f'[[capture.agents]]\nagent_id = "{name}"\ncommand = [{json.dumps(sys.executable)}, "agent.py", "{name}", '
        f"{json.dumps(str(log))}]\n"
        for name, log in calls.items()
    )
    (root / "eval.toml").write_text(f'[capture]\ncase_set = "cases.jsonl"\n{agents}')
    monkeypatch.setenv("EVAL_CONFIG", str(root / "eval.toml"))
    (root / "episodes").mkdir()

    def invoked(name: str) -> int:
        return len(calls[name].read_text().splitlines()) if calls[name].exists() else 0

    def rows(sql: str) -> list[dict]:
        capsys.readouterr()
        assert main(["query", sql, "--format", "json"]) == 0
        return json.loads(capsys.readouterr().out)

    assert main(["run", "--date", "2026-11-05"]) == 1  # sloppy fails the capital case
    assert (invoked("careful"), invoked("sloppy")) == (3, 3)  # both agents ran on the same day
    per_agent = "SELECT agent_id, count(*) AS n, count(*) FILTER (passed) AS passed FROM scores GROUP BY 1 ORDER BY 1"
    assert rows(per_agent) == [{"agent_id": "careful", "n": 3, "passed": 3}, {"agent_id": "sloppy", "n": 3, "passed": 2}]
    first = rows("SELECT * EXCLUDE (scored_at) FROM scores ORDER BY episode_id")

    assert main(["run", "--date", "2026-11-05"]) == 1  # the stored runs are evaluated again, nobody is re-run
    assert (invoked("careful"), invoked("sloppy")) == (3, 3)
    assert rows("SELECT * EXCLUDE (scored_at) FROM scores ORDER BY episode_id") == first

    # a re-run of one agent after a change is a run of its own, kept beside the first
    assert main(["run", "--date", "2026-11-05", "--agent", "sloppy", "--recapture", "--label", "sloppy-v2"]) == 1
    assert (invoked("careful"), invoked("sloppy")) == (3, 6)
    assert len(list((root / "captures" / "2026-11-05" / "sloppy").glob("*.jsonl"))) == 2
    labels = "SELECT agent_id, metadata ->> '$.label' AS label, count(*) AS n FROM episodes GROUP BY ALL ORDER BY ALL"
    assert rows(labels) == [
        {"agent_id": "careful", "label": "careful", "n": 3},
        {"agent_id": "sloppy", "label": "sloppy", "n": 3},
        {"agent_id": "sloppy", "label": "sloppy-v2", "n": 3},
    ]

    capsys.readouterr()
    assert main(["compare", "--a", "label=careful", "--b", "label=sloppy-v2", "--format", "json"]) == 0
    comparison = json.loads(capsys.readouterr().out)
    assert comparison["meta"]["comparable_tasks"] == 3
    assert comparison["quality"]["mcnemar"]["a_pass_b_fail"] == 1
    assert {task["task_id"]: task["winner"] for task in comparison["headToHead"]["tasks"]}["capital"] == "a"

    # the agent is fixed and run again: the day's verdict is its latest run's, in every output
    (root / "agent.py").write_text(NAMED_AGENT.replace('name.startswith("sloppy")', "False"))
    junit = root / "junit.xml"
    assert main(["run", "--date", "2026-11-05", "--agent", "sloppy", "--recapture", "--label", "sloppy-v3",
                 "--junit", str(junit)]) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert "2026-11-05      6 episodes      6 passed      0 failed" in out  # the day: careful's run and sloppy's latest
    sloppy = "agent sloppy (this run; its figures decide the exit code):     3 episodes      3 passed      0 failed"
    assert sloppy in out  # --agent sloppy: its latest run, as JUnit says
    assert 'tests="3" failures="0"' in junit.read_text()  # --agent sloppy: its latest run only
    assert rows("SELECT count(*) FILTER (NOT superseded) AS current, count(*) AS kept FROM scores") == [
        {"current": 6, "kept": 12}
    ]
    assert rows("SELECT count(*) AS n FROM findings WHERE severity = 'critical'") == [{"n": 0}]
    capsys.readouterr()
    assert main(["compare", "--a", "label=sloppy", "--b", "label=sloppy-v3", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["quality"]["mcnemar"]["a_fail_b_pass"] == 1  # the old run still compares


def test_a_capture_kept_the_earlier_way_is_still_evaluated(tmp_path):
    from eval_pipeline.capture.store import captured_records, stored_runs

    earlier = tmp_path / "2026-11-05.jsonl"
    earlier.write_text(json.dumps({"episode_id": "echo-agent:greet:0", "agent_id": "echo-agent"}) + "\n")
    assert [Path(r.source).name for r in captured_records(tmp_path, DAY)] == ["earlier.jsonl"]
    assert [path.parent.name for path in stored_runs(tmp_path, DAY, "echo-agent")] == ["echo-agent"]
    assert not earlier.exists()
