"""Settings are read once, checked before anything runs, and never written back into the environment."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_pipeline.cli import main
from eval_pipeline.settings import Settings, SettingsError


def no_run_started(root: Path) -> bool:
    """Nothing of a run: no run history in DAGSTER_HOME and no run-failure alert in the outbox."""
    runs = root / "dagster_home" / "history" / "runs"
    alerts = root / "alerts"
    return not (runs.exists() and any(runs.iterdir())) and not (alerts.exists() and any(alerts.rglob("run-failed-*")))


@pytest.mark.parametrize(
    ("variable", "value", "says"),
    [
        ("EVAL_REPLAY_MODE", "drry", "EVAL_REPLAY_MODE must be one of dry, live, not 'drry'"),
        ("EVAL_HISTORY_START", "2026-13-01", "EVAL_HISTORY_START must be a date as YYYY-MM-DD, not '2026-13-01'"),
        ("EVAL_UI_BASE_URL", "127.0.0.1:3000", "EVAL_UI_BASE_URL must be an http:// or https:// URL"),
        ("EVAL_DUCKDB_MEMORY_LIMIT", "lots", "EVAL_DUCKDB_MEMORY_LIMIT must be an amount of memory such as 512MB"),
        ("EVAL_BACKFILL_DAYS_PER_RUN", "0", "EVAL_BACKFILL_DAYS_PER_RUN must be a whole number of days, at least 1, not '0'"),
    ],
)
def test_a_bad_variable_exits_2_naming_it_before_any_run(project_env, monkeypatch, capsys, variable, value, says):
    (project_env / "episodes").mkdir()
    monkeypatch.setenv(variable, value)
    assert main(["run", "--date", "2026-11-01"]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert no_run_started(project_env)


@pytest.mark.parametrize("cron", ["0 2 * *", "not a cron", "61 2 * * *"])
def test_a_bad_nightly_cron_is_a_config_error_for_every_command(project_env, monkeypatch, capsys, cron):
    (project_env / "eval.toml").write_text(f'[automation]\nnightly_cron = "{cron}"\n')
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    for argv in (["run", "--date", "2026-11-01"], ["status"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "automation.nightly_cron" in err and "is not a cron schedule" in err, argv
    assert no_run_started(project_env)


def test_settings_resolve_relative_paths_and_write_nothing(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    environ = {"EVAL_DUCKDB_PATH": "wh/eval.duckdb", "EVAL_EPISODE_SOURCE": "https://store.example/api"}
    settings = Settings.from_environment(environ, tmp_path)
    assert settings.duckdb_path == tmp_path / "wh" / "eval.duckdb" and settings.source_is_store
    assert settings.reports_dir == tmp_path / "data" / "reports" and settings.replay_mode == "dry"
    assert environ == {"EVAL_DUCKDB_PATH": "wh/eval.duckdb", "EVAL_EPISODE_SOURCE": "https://store.example/api"}
    elsewhere = Settings.from_environment(settings.as_environment(), Path("/"))  # a child in another directory
    assert elsewhere == settings
    with pytest.raises(SettingsError):
        Settings.from_environment({"EVAL_REPLAY_MODE": "LIVE"}, tmp_path)


def test_commands_and_the_trainer_bridges_leave_the_environment_as_they_found_it(project_env):
    (project_env / "episodes").mkdir()
    before = dict(os.environ)
    assert main(["status"]) == 0
    assert dict(os.environ) == before
    code = (
        "import json, os, sys; before = dict(os.environ)\n"
        "from eval_pipeline.rewards.bridges import grpo_reward, dspy_metric\n"
        "grpo_reward(prompts=['2+2?'], completions=['4'])\n"
        "print(json.dumps(dict(os.environ) == before))"
    )
    clean = {key: value for key, value in os.environ.items() if not key.startswith(("EVAL_", "DAGSTER_"))}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=clean, check=True, cwd=project_env)
    assert json.loads(result.stdout.strip().splitlines()[-1]) is True


def test_the_duckdb_memory_limit_reaches_every_warehouse_connection(tmp_path):
    from eval_pipeline.defs.resources import resources_for

    settings = Settings.from_environment({"EVAL_DUCKDB_MEMORY_LIMIT": "300MB"}, cwd=tmp_path)
    pipeline_warehouse = resources_for(settings)["warehouse"].get()  # type: ignore[attr-defined]
    for warehouse in (settings.warehouse(), pipeline_warehouse):
        with warehouse.connect() as con:
            assert con.execute("SELECT current_setting('memory_limit')").fetchall() == [("286.1 MiB",)]
    with Settings.from_environment({}, cwd=tmp_path).warehouse().connect() as con:  # unset: DuckDB's own
        assert con.execute("SELECT current_setting('memory_limit')").fetchall() != [("286.1 MiB",)]


@pytest.mark.parametrize(
    ("given", "missing"),
    [({}, "OPENAI_BASE_URL and EVAL_CANDIDATE_MODEL"), ({"EVAL_CANDIDATE_MODEL": "m"}, "OPENAI_BASE_URL")],
)
def test_live_replay_without_its_endpoint_or_model_exits_2_before_any_run(project_env, monkeypatch, capsys, given, missing):
    """It started the run, failed its replays step, announced a failed run and exited 3, as if the gateway were down."""
    (project_env / "episodes").mkdir()
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "EVAL_CANDIDATE_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("EVAL_REPLAY_MODE", "live")
    for name, value in given.items():
        monkeypatch.setenv(name, value)
    assert main(["run", "--date", "2026-11-01"]) == 2
    err = capsys.readouterr().err
    assert f"EVAL_REPLAY_MODE=live needs {missing} set" in err and err.count("\n") == 1
    assert no_run_started(project_env)


@pytest.mark.parametrize(
    ("cases_file", "says"),
    [(None, "cases file {path}: [Errno 2] No such file or directory"), ('{"task_id": "t1", "expected_tools": "x"}', "task t1:")],
)
def test_a_cases_file_missing_or_invalid_exits_2_before_any_run(project_env, monkeypatch, capsys, cases_file, says):
    """`[cases] path` is the user's, as the case set is: it started the run, failed it, alerted and exited 3."""
    (project_env / "episodes").mkdir()
    path = project_env / "cases.jsonl"
    if cases_file is not None:
        path.write_text(cases_file + "\n")
    (project_env / "eval.toml").write_text('[cases]\npath = "cases.jsonl"\n')
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    assert main(["run", "--date", "2026-11-01"]) == 2
    assert says.format(path=path) in capsys.readouterr().err
    assert no_run_started(project_env)


@pytest.mark.parametrize(
    ("toml", "says"),
    [
        ('[sources]\nformats = { "*.jsonl" = "nonsense" }\n', "[sources] formats names unknown format(s) ['nonsense']; known: "),
        ('[capture]\ncase_set = "c.jsonl"\nschema = "missing.json"\n', "adapter schema {root}/missing.json: [Errno 2]"),
    ],
)
def test_an_unknown_format_or_a_missing_schema_exits_2_before_any_run(project_env, monkeypatch, capsys, toml, says):
    """Both are the user's to fix, as a bad case set is; each started the run, failed it, alerted and exited 3."""
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "e.jsonl").write_text("")
    (project_env / "c.jsonl").write_text('{"id": "a", "input": "hi"}\n')
    (project_env / "eval.toml").write_text(toml)
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    assert main(["run", "--date", "2026-11-01"]) == 2
    assert says.format(root=project_env) in capsys.readouterr().err
    assert no_run_started(project_env)
