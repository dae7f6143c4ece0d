"""The checks agent-eval's issue detector users rely on, on hand-written episodes read as the pipeline reads them.

Each episode goes through the warehouse (ingest, dry replay, `check_inputs`) and the online path (`Episode`),
so the tools available and the agent of each step are read the way a night's run reads them.
"""

import json
from datetime import date

import pandas as pd
import pytest

from eval_pipeline.config import ChecksConfig
from eval_pipeline.episodes.model import Episode
from eval_pipeline.episodes.records import RawRecord
from eval_pipeline.rewards.online import _candidate
from eval_pipeline.scoring.assessments import Assessment, assess, reading
from eval_pipeline.warehouse.assertions import check_inputs
from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline.warehouse.ingest import load_episodes
from eval_pipeline.warehouse.replays import write_dry_replays

DAY = date(2026, 11, 5)
ANSWER = "Oslo is at 4 °C with light rain this afternoon and Bergen at 6 °C: a rain jacket for Oslo, layers for both."
UNGROUNDED = "Expect light rain in Oslo this afternoon and a drier day in Bergen: pack a rain jacket and warm layers."
WEATHER_TOOLS = [{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}]


def llm(agent: str, output: str, **metadata) -> dict:
    return {"step_type": "llm_call", "output_summary": output, "metadata": {"agent": agent, **metadata}}


def weather(agent: str, city: str, result: str, error: str | None = None) -> list[dict]:
    """A call of get_weather and its result."""
    call = {"step_type": "tool_call", "tool_name": "get_weather", "input_summary": json.dumps({"city": city})}
    answer = {"step_type": "tool_result", "tool_name": "get_weather", "output_summary": result, "error": error}
    return [{**call, "metadata": {"agent": agent}}, {**answer, "metadata": {"agent": agent}}]


def episode(episode_id: str, steps: list[dict], answer: str = ANSWER, **metadata) -> dict:
    return {
        "episode_id": episode_id,
        "agent_id": "weather-team",
        "status": "success",
        "started_at": f"{DAY}T10:00:00Z",
        "steps": [{"step_index": index, **step} for index, step in enumerate(steps)],
        "metadata": {"task_id": episode_id, "final_output": answer, **metadata},
    }


# Two agents that share the work, with tools on offer (to the first LLM call) and used, and data in every result.
CLEAN = episode(
    "clean",
    [
        llm("planner", "call get_weather", tools=WEATHER_TOOLS),
        *weather("planner", "Oslo", '{"city": "Oslo", "temp_c": 4, "rain": true}'),
        llm("writer", "Oslo done; Bergen next."),
        llm("planner", "call get_weather"),
        *weather("planner", "Bergen", '{"city": "Bergen", "temp_c": 6}'),
        llm("writer", ANSWER),
    ],
)


def evaluated(tmp_path, episodes: list[dict]) -> Warehouse:
    """A warehouse holding `episodes` as the night's run leaves them for the checks: ingested and dry-replayed."""
    tmp_path.mkdir(exist_ok=True)
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    records = [RawRecord("test.jsonl", f"test.jsonl:{n}", json.dumps(e), DAY) for n, e in enumerate(episodes, 1)]
    load_episodes(warehouse, DAY, lambda: records)
    write_dry_replays(warehouse, DAY)
    return warehouse


def issues(tmp_path, *episodes: dict, config: ChecksConfig | None = None) -> dict[str, list[tuple[str, str, str]]]:
    """(check, severity, detail) of each episode's issues, read from the warehouse as the `assertions` step reads
    them; the same episodes scored on the online path (canonical `Episode`s) must find the same."""
    warehouse = evaluated(tmp_path, list(episodes))
    config = config or ChecksConfig()
    found: dict[str, list[tuple[str, str, str]]] = {e["episode_id"]: [] for e in episodes}
    screen = reading({}, config)
    screened = assess(check_inputs(warehouse, DAY, read=screen), {}, config, screen=screen).issues
    # the step reads only the episodes (and steps) their summaries point the checks to, and gives the answers alone to
    # the checks of the answer: it finds what reading all does
    every_column = list(screened.columns)
    assert screened.sort_values(every_column, ignore_index=True).equals(
        assess(check_inputs(warehouse, DAY), {}, config).issues.sort_values(every_column, ignore_index=True)
    )
    for row in screened.to_dict("records"):
        found[row["episode_id"]].append((row["check"], row["severity"], row["detail"]))
    online = [_candidate(n, Episode.model_validate(e)) for n, e in enumerate(episodes)]
    online_found = {str(n): [] for n in range(len(episodes))}
    for row in assess(online, {}, config).issues.to_dict("records"):
        online_found[row["episode_id"]].append((row["check"], row["severity"], row["detail"]))
    assert sorted(online_found.values()) == sorted(found.values())
    return found


def test_a_clean_multi_agent_run_raises_no_issue(tmp_path):
    assert issues(tmp_path, CLEAN) == {"clean": []}


def test_an_answer_under_100_characters_is_short(tmp_path):
    found = issues(tmp_path, episode("short", CLEAN["steps"], answer="It is 4 C in Oslo."), episode("empty", [], answer="ok"))
    assert found["short"] == [("short_answer", "warning", "short final answer (18 characters, under 100)")]
    assert [check for check, *_ in found["empty"]] == ["empty_answer"]  # near-empty is empty_answer's, flagged once
    off = ChecksConfig(short_answer_chars=0)
    assert issues(tmp_path / "off", episode("short", CLEAN["steps"], answer="It is 4 C in Oslo."), config=off) == {"short": []}


def test_no_tool_called_where_tools_were_available(tmp_path):
    talk = [llm("planner", "It is probably cold."), llm("writer", UNGROUNDED)]
    found = issues(
        tmp_path,
        episode("declared", talk, UNGROUNDED, available_tools=["get_weather", {"name": "get_forecast"}]),  # the episode's
        episode("offered", [llm("planner", "It is probably cold.", tools=WEATHER_TOOLS), talk[1]], UNGROUNDED),  # a call's
        episode("unknown", talk, UNGROUNDED),  # no tools recorded: nothing known, nothing flagged
    )
    assert found == {
        "declared": [("tools_not_called", "error", "no tool called, with 2 available: get_forecast, get_weather")],
        "offered": [("tools_not_called", "error", "no tool called, with 1 available: get_weather")],
        "unknown": [],
    }
    assert Episode.model_validate(episode("declared", talk, tools=["a", {"function": {"name": "b"}}, 3])).available_tools == [
        "a",
        "b",
    ]


def test_tool_outputs_that_returned_no_data(tmp_path):
    steps = [
        llm("planner", "call get_weather", tools=WEATHER_TOOLS),
        *weather("planner", "Atlantis", "No data returned for Atlantis"),
        *weather("planner", "Oslo", "[]"),
        *weather("planner", "Bergen", '{"city": "Bergen", "temp_c": 6}'),
        *weather("planner", "Mu", "no station", error="no station"),  # failed: tool_failures', not no data
        llm("writer", ANSWER),
    ]
    found = issues(tmp_path, episode("empty-results", steps))["empty-results"]
    assert ("no_data", "warning", "2 of 4 tool calls returned no data (get_weather: 'No data returned for Atlantis'; "
            "get_weather: '[]')") in found  # fmt: skip


def test_no_data_is_what_pythons_re_finds_though_re2_screens_the_outputs_first(tmp_path):
    """The outputs are screened by RE2 in the warehouse before Python's `re` reads them: what Python's `re` finds, and
    RE2's own `\\s`, `$` and case folding would not (a no-break space, a final newline, the Kelvin sign), is found."""
    outputs = {
        "nbsp": "\u00a0null",  # `\s` of Unicode
        "newline": "[]\n",  # `$` before a final newline
        "kelvin": "0 \u212aB records",  # not a match: `records` must follow
        "kelvin-match": "zero results for Ang\u212a",
        "long-s": "no re\u017fults",  # the long s is an `s` to Python's IGNORECASE
        "page": "the order shipped; no.data, 0-rows, réel " * 500,
    }
    days = [episode(name, [llm("planner", "call", tools=WEATHER_TOOLS), *weather("planner", "Oslo", text), llm("writer", ANSWER)])
            for name, text in outputs.items()]  # fmt: skip
    found = issues(tmp_path, *days)
    assert {name for name, issues_found in found.items() if any(check == "no_data" for check, _, _ in issues_found)} == {
        "nbsp", "newline", "kelvin-match", "long-s",
    }  # fmt: skip


def test_one_agent_doing_all_the_work(tmp_path):
    solo = [
        llm("planner", "call get_weather", tools=WEATHER_TOOLS),
        *weather("planner", "Oslo", '{"temp_c": 4}'),
        llm("planner", "call get_weather"),
        *weather("planner", "Bergen", '{"temp_c": 6}'),
        llm("planner", "Drafting."),
        llm("writer", ANSWER),
    ]
    found = issues(tmp_path, episode("solo", solo), episode("lone", solo[:-1]))
    assert found == {
        "solo": [("agent_imbalance", "warning", "planner took 7 of 8 steps (88%; writer 1)")],
        "lone": [],  # one agent alone is not a multi-agent run
    }
    assert issues(tmp_path / "lenient", episode("solo", solo), config=ChecksConfig(max_agent_share=0.9)) == {"solo": []}


def test_agents_talking_past_each_other(tmp_path):
    chatter = [llm("planner" if turn % 2 == 0 else "writer", f"Over to you ({turn}).") for turn in range(7)]
    failing = [chatter[0], *weather("planner", "Mu", "no station", error="no station"), *chatter[1:]]  # no progress
    progressing = [*chatter[:4], *weather("writer", "Oslo", '{"temp_c": 4}'), *chatter[4:]]
    relay = [llm(agent, "Passing it on.") for agent in ("triage", "planner", "researcher", "writer", "reviewer")]
    found = issues(
        tmp_path,
        *(episode(name, steps, UNGROUNDED, tools=WEATHER_TOOLS) for name, steps in
          (("chatter", chatter), ("failing", failing), ("progressing", progressing), ("relay", relay))),
    )  # fmt: skip
    loop = ("handoff_loops", "error", "5 hand-offs back and forth between planner, writer without a tool call that succeeded")
    assert found["chatter"] == [loop, ("tools_not_called", "error", "no tool called, with 1 available: get_weather")]
    assert loop in found["failing"]
    assert [check for check, *_ in found["progressing"]] == []  # a tool call that worked halfway: 2 and 2 back
    assert [check for check, *_ in found["relay"]] == ["tools_not_called"]  # A to B to C never goes back


def test_each_check_finds_what_it_found_reading_only_the_episodes_their_summaries_point_to(tmp_path):
    """Every check's trigger, read as the `assertions` step reads a day: an episode only by the checks whose summary
    says they could find something in it (`Check.may_find`), with its steps only where one of them reads steps."""
    call = {"step_type": "tool_call", "tool_name": "get_weather", "input_summary": '{"city": "Oslo"}'}
    result = {"step_type": "tool_result", "tool_name": "get_weather", "output_summary": '{"oslo_c": 4, "bergen_c": 6}'}
    stalled = [llm("planner", "call get_weather", tools=WEATHER_TOOLS), call, result, call, result, call, result]
    solo = [{**step, "metadata": {}} for step in CLEAN["steps"]]
    crashed = [*CLEAN["steps"][:3], {"step_type": "error", "error": "Traceback (most recent call last):\n  boom"}]
    found = issues(
        tmp_path,
        CLEAN,
        # one agent, no number stated, tools called and answered: nothing in it a check would read the steps for
        episode("plain", solo, UNGROUNDED),
        episode("stalled", stalled),
        episode("made-up", CLEAN["steps"], ANSWER.replace("4 °C", "14 °C")),
        episode("crashed", crashed),
        episode("traceback", CLEAN["steps"], f"Sorry. Traceback (most recent call last): {ANSWER}"),
        episode("chatty", CLEAN["steps"] + [llm("writer", f"Draft {n}.") for n in range(21)]),
        episode("padded", solo, "\u2003\u00a0ok\u3000\n"),  # an answer alone is judged without reading the episode
    )
    assert found["clean"] == found["plain"] == []
    assert "stalls" in [check for check, *_ in found["stalled"]]
    assert "numeric_fabrication" in [check for check, *_ in found["made-up"]]
    assert "errors" in [check for check, *_ in found["crashed"]]
    assert "errors" in [check for check, *_ in found["traceback"]]
    assert "overlong" in [check for check, *_ in found["chatty"]]
    assert "empty_answer" in [check for check, *_ in found["padded"]]
    warehouse = Warehouse(tmp_path / "eval.duckdb")
    read = {c["episode_id"]: c["steps"] is not None for c in check_inputs(warehouse, DAY, read=reading({}, ChecksConfig()))}
    assert "plain" not in read and "padded" not in read and read["clean"] is True and read["stalled"] is True


@pytest.mark.parametrize("bad", [{"no_data_patterns": ["(unclosed"]}, {"max_agent_share": 0}, {"plugins": "x:Y"}])
def test_limits_are_checked_when_the_config_is_read(bad):
    with pytest.raises(ValueError):
        ChecksConfig.model_validate(bad)


def test_a_day_read_in_parts_gives_every_candidate_once_with_its_steps(tmp_path, monkeypatch):
    """The checks read a large day in parts by episode (DuckDB gathers one part's steps at a time): the same candidates,
    each once, with the same trajectories as in one part."""
    warehouse = evaluated(tmp_path, [episode(f"ep-{n}", CLEAN["steps"][: 1 + n % len(CLEAN["steps"])]) for n in range(23)])
    whole = sorted(check_inputs(warehouse, DAY), key=lambda candidate: candidate["episode_id"])
    monkeypatch.setattr("eval_pipeline.warehouse.assertions.CHECK_PART_EPISODES", 5)
    in_parts = sorted(check_inputs(warehouse, DAY), key=lambda candidate: candidate["episode_id"])
    assert len(whole) == 23 and in_parts == whole


def test_a_day_whose_rows_fill_several_frames_gives_the_frames_gathered_at_once(tmp_path, monkeypatch):
    """`assess` turns its rows into a frame every FRAME_ROWS (a million-episode day's issues held as dicts took 0.35
    GiB): the day's assertions and issues are the same, row for row and type for type, as gathered in one frame."""
    verdicts = [{"pass": n % 3 > 0, "score": n % 3 / 2, "reasoning": f"trial {n}"} for n in range(23)]
    warehouse = evaluated(
        tmp_path,
        [episode(f"ep-{n}", CLEAN["steps"][: 1 + n % len(CLEAN["steps"])], grader=verdict) for n, verdict in enumerate(verdicts)],
    )
    config = ChecksConfig()

    def assessed() -> Assessment:
        screen = reading({}, config)
        return assess(check_inputs(warehouse, DAY, read=screen), {}, config, screen=screen)

    at_once = assessed()
    monkeypatch.setattr("eval_pipeline.scoring.assessments.FRAME_ROWS", 2)
    in_frames = assessed()
    assert len(at_once.assertions) == 23 and len(at_once.issues) > 4
    pd.testing.assert_frame_equal(in_frames.assertions, at_once.assertions)
    pd.testing.assert_frame_equal(in_frames.issues, at_once.issues)


def test_a_check_of_the_answer_gives_each_issue_of_an_answer_to_every_episode_that_gave_it_in_episode_order():
    """The screen asks a rule of the answer once per distinct answer; its rows are those of asking every episode."""
    import numpy as np

    from eval_pipeline.scoring.assessments import Screen
    from eval_pipeline.scoring.checks import answer_check
    from eval_pipeline.scoring.trajectory import Summaries

    def rule(answer, config):  # no issue, one, or two, by the answer
        return [("warning", f"{answer} {n}") for n in range(len(answer or "") % 3)]

    answers = ["aa", "b", None, "ccc", "aa", "dddd", "b", "aa", "ee"]
    zeros = np.zeros(len(answers))
    summaries = Summaries(
        [f"ep-{n}" for n in range(len(answers))], [f"agent-{n % 2}" for n in range(len(answers))],
        ["task"] * len(answers), answers, zeros.astype(bool), zeros.astype(bool), zeros, *[zeros.astype(int)] * 7,
        tool_outputs=lambda matching="": iter(()),
    )  # fmt: skip
    asked = np.array([True, True, True, False, True, True, True, True, False])  # what `may_find` names
    check = answer_check("answers", rule, lambda summaries, config: asked)
    screen = Screen({}, ChecksConfig(), [(check, check.may_find)])
    screen(summaries)
    expected = [
        {"episode_id": f"ep-{n}", "agent_id": f"agent-{n % 2}", "check": "answers", "severity": severity, "detail": detail}
        for n, answer in enumerate(answers)
        if asked[n]
        for severity, detail in rule(answer, None)
    ]
    assert screen.found.frame().to_dict("records") == expected
    assert len(expected) == 9
