"""Checks and adapters from the user's own package: listed in eval.toml or declared as entry points, run by name."""

import json
import sys
import textwrap
from datetime import date

import pytest

from eval_pipeline import plugins
from eval_pipeline.cli import main
from eval_pipeline.config import EvalConfig
from eval_pipeline.episodes.adapters import ADAPTERS

pytestmark = pytest.mark.slow

# A plug-in check, as a user writes it in their own package: a `Check`, like the built-in ones.
POLITENESS = '''
import numpy

from eval_pipeline.scoring.checks import Check, answer_check


def too_polite(trajectory, config):
    """More than one "thank" in the answer: the agent fawns."""
    thanks = (trajectory.final_output or "").lower().count("thank")
    return [("warning", f"thanked the user {thanks} times")] if thanks > 1 else []


TOO_POLITE = Check("too_polite", too_polite)


# The same rule declared as a check of the answer alone: a night applies it to answers, not to episodes.
ASKED = []  # the answers the rule was asked about


def thanks_in(answer, config):
    ASKED.append(answer)
    thanks = (answer or "").lower().count("thank")
    return [("warning", f"thanked the user {thanks} times")] if thanks > 1 else []


def may_thank(summaries, config):
    return numpy.array(["thank" in (answer or "").lower() for answer in summaries.final_outputs], dtype=bool)


POLITE_ANSWER = answer_check("polite_answer", thanks_in, may_thank)
'''

# A plug-in adapter for a made-up format ("minilog": one run a line, the tools it used inline).
MINILOG = """
import json
from datetime import date, datetime

from eval_pipeline.episodes.adapters.base import one_by_one

NAME = "minilog"


def detect(record):
    return isinstance(record, dict) and record.get("minilog") == 1


def days(raw):
    return {datetime.fromisoformat(json.loads(raw)["when"]).date()}


def to_episode(record, agent_id, day):
    steps = [{"step_type": "llm_call", "input_summary": record["asked"], "output_summary": "looking it up"}]
    for use in record["used"]:
        steps.append({"step_type": "tool_call", "tool_name": use["tool"], "input_summary": json.dumps(use["args"])})
        steps.append({"step_type": "tool_result", "tool_name": use["tool"], "output_summary": use["got"]})
    steps.append({"step_type": "llm_call", "output_summary": record["said"]})
    return {
        "episode_id": f"minilog-{record['run']}",
        "agent_id": record.get("bot", agent_id),
        "status": "success",
        "started_at": record["when"],
        "steps": [{"step_index": index, **step} for index, step in enumerate(steps)],
        "metadata": {"task_id": record["asked"], "available_tools": record["tools"]},
    }


convert = one_by_one(NAME, to_episode)
"""

RUNS = [
    {"minilog": 1, "run": "polite", "bot": "weather-bot", "when": "2026-11-05T09:00:00+00:00", "tools": ["get_weather"],
     "asked": "Weather in Oslo?", "used": [{"tool": "get_weather", "args": {"city": "Oslo"}, "got": "No data returned"}],
     "said": "Thank you so much for asking, and thank you for waiting! Oslo looks mild today."},
    {"minilog": 1, "run": "guess", "bot": "weather-bot", "when": "2026-11-05T10:00:00+00:00", "tools": ["get_weather"],
     "asked": "Weather in Bergen?", "used": [], "said": "Probably rain in Bergen, as usual on the west coast."},
]  # fmt: skip


@pytest.fixture
def user_package(project_env, monkeypatch):
    """The user's plug-ins beside eval.toml (no install, no PYTHONPATH), and a minilog file in the source."""
    (project_env / "my_checks").mkdir()
    (project_env / "my_checks" / "__init__.py").write_text(POLITENESS)
    (project_env / "my_formats.py").write_text(MINILOG)
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "weather.log.jsonl").write_text("".join(json.dumps(run) + "\n" for run in RUNS))
    config = project_env / "eval.toml"
    config.write_text('[checks]\nplugins = ["my_checks:TOO_POLITE"]\n\n[sources]\nplugins = ["my_formats"]\n')
    monkeypatch.setenv("EVAL_CONFIG", str(config))
    for module in ("my_checks", "my_formats"):
        monkeypatch.delitem(sys.modules, module, raising=False)  # imported anew, and forgotten after
    return project_env


def query(sql: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_plug_in_check_and_adapter_run_by_name_end_to_end(user_package, capsys):
    assert main(["run", "--date", "2026-11-05", "--checks", "too_polite,no_data,tools_not_called", "--fail-on", "never"]) == 0
    # the adapter read the made-up format: both runs are episodes, with their tool calls and the tools they had
    episodes = query("SELECT episode_id, agent_id, tools, final_output FROM episodes ORDER BY episode_id", capsys)
    assert [(e["episode_id"], e["agent_id"], e["tools"]) for e in episodes] == [
        ("minilog-guess", "weather-bot", []),
        ("minilog-polite", "weather-bot", ["get_weather"]),
    ]
    assert query("SELECT count(*) AS n FROM quarantine", capsys) == [{"n": 0}]
    # only the checks asked for ran, the plug-in among them; their issues are the day's
    issues = query('SELECT episode_id, "check", severity, detail FROM issues ORDER BY ALL', capsys)
    assert [(i["episode_id"], i["check"], i["severity"]) for i in issues] == [
        ("minilog-guess", "tools_not_called", "error"),
        ("minilog-polite", "no_data", "warning"),
        ("minilog-polite", "too_polite", "warning"),
    ]
    assert issues[2]["detail"] == "thanked the user 2 times"
    # issues cost reward: neither run is a clean 1.0 any more
    rewards = query("SELECT episode_id, value FROM rewards WHERE reward_name = 'issues' ORDER BY episode_id", capsys)
    assert [(r["episode_id"], round(r["value"], 2)) for r in rewards] == [("minilog-guess", 0.9), ("minilog-polite", 0.9)]

    # every check without --checks: the built-in ones flag the short answers too
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    every = query('SELECT episode_id, "check" FROM issues ORDER BY ALL', capsys)
    assert ("minilog-guess", "short_answer") in {(i["episode_id"], i["check"]) for i in every}
    assert "too_polite" in {i["check"] for i in every}


def test_a_plug_in_check_of_the_answer_alone_asks_each_distinct_answer_once_and_finds_what_a_check_of_each_run_does(
    user_package, capsys
):
    polite = "Thank you so much for asking, and thank you for waiting! Oslo looks mild today."
    runs = [{**RUNS[0], "run": f"polite-{n}", "when": f"2026-11-05T0{n}:00:00+00:00", "said": polite} for n in range(3)]
    runs += [{**RUNS[0], "run": "thankful", "said": "Thank you! It is 4 C in Oslo, thanks again for your patience."}, RUNS[1]]
    (user_package / "episodes" / "weather.log.jsonl").write_text("".join(json.dumps(run) + "\n" for run in runs))
    (user_package / "eval.toml").write_text(
        '[checks]\nplugins = ["my_checks:TOO_POLITE", "my_checks:POLITE_ANSWER"]\n\n[sources]\nplugins = ["my_formats"]\n'
    )
    by_answer = 'SELECT episode_id, severity, detail FROM issues WHERE "check" = $check ORDER BY ALL'

    assert main(["run", "--date", "2026-11-05", "--checks", "polite_answer,short_answer", "--fail-on", "never"]) == 0
    # three runs gave one answer: the rule read it once, and the answer without a "thank" not at all
    assert sorted(sys.modules["my_checks"].ASKED) == sorted([polite, runs[3]["said"]])
    found = query(by_answer.replace("$check", "'polite_answer'"), capsys)
    assert [(i["episode_id"], i["detail"]) for i in found] == [
        *((f"minilog-polite-{n}", "thanked the user 2 times") for n in range(3)),
        ("minilog-thankful", "thanked the user 2 times"),
    ]
    # a check that cannot say which runs it could fault (too_polite) makes the night run every check on every run:
    # the answer check, run on each, finds the same, and the same as the check of each run that states the same rule
    sys.modules["my_checks"].ASKED.clear()
    assert main(["run", "--date", "2026-11-05", "--checks", "polite_answer,too_polite", "--fail-on", "never"]) == 0
    assert len(sys.modules["my_checks"].ASKED) == len(runs)
    assert query(by_answer.replace("$check", "'polite_answer'"), capsys) == found
    assert query(by_answer.replace("$check", "'too_polite'"), capsys) == found


@pytest.mark.parametrize(
    ("config", "argv", "says"),
    [
        ("", ["--checks", "short_answer,vibes"], "unknown check(s) ['vibes']; known: agent_imbalance, empty_answer"),
        ('[checks]\nplugins = ["not_installed:CHECK"]\n', [], "cannot import 'not_installed:CHECK': ModuleNotFoundError"),
        ('[checks]\nplugins = ["my_formats:to_episode"]\n', [], "is a function, not a Check"),
        ('[checks]\nplugins = ["my_checks:TOO_POLITE", "my_checks:TOO_POLITE"]\n', [], "two checks are named 'too_polite'"),
        ('[sources]\nplugins = ["my_checks"]\n', [], "'my_checks' in [sources] plugins is not an adapter"),
        ('[sources]\nplugins = ["my_formats:NAME"]\n', [], "is not an adapter"),
    ],
)
def test_a_plug_in_that_does_not_load_or_an_unknown_check_is_a_usage_error_before_any_run(
    user_package, config, argv, says, capsys
):
    (user_package / "eval.toml").write_text(config)
    assert main(["run", "--date", "2026-11-05", *argv]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1
    assert not (user_package / "dagster_home").exists()


def test_entry_points_of_an_installed_package_register_checks_and_adapters(tmp_path, monkeypatch):
    """A package installed with `[project.entry-points."eval_pipeline.checks"]`: found without any config."""
    site = tmp_path / "site"
    (site / "polite_pkg").mkdir(parents=True)
    (site / "polite_pkg" / "__init__.py").write_text(POLITENESS)
    (site / "polite_pkg" / "minilog.py").write_text(MINILOG)
    (site / "polite_pkg-1.0.dist-info").mkdir()
    (site / "polite_pkg-1.0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: polite-pkg\nVersion: 1.0\n")
    (site / "polite_pkg-1.0.dist-info" / "entry_points.txt").write_text(
        textwrap.dedent("""
        [eval_pipeline.checks]
        too_polite = polite_pkg:TOO_POLITE

        [eval_pipeline.adapters]
        minilog = polite_pkg.minilog
        """)
    )
    monkeypatch.syspath_prepend(str(site))
    for module in ("polite_pkg", "polite_pkg.minilog"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    chosen = plugins.checks(EvalConfig(), None, ["too_polite", "short_answer"])
    assert [check.name for check in chosen] == ["too_polite", "short_answer"]
    assert len(plugins.checks(EvalConfig(), None)) == 12  # the 11 built-in ones and the plug-in
    readers = plugins.adapters(EvalConfig(), None)
    assert [reader.NAME for reader in readers] == ["minilog", *(adapter.NAME for adapter in ADAPTERS)]
    assert readers[0].days(json.dumps(RUNS[0])) == {date(2026, 11, 5)}
