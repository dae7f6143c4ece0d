"""The rubric judge against a real OpenAI-compatible server on 127.0.0.1."""

import json

import pandas as pd
import pytest

from eval_pipeline.cli import main
from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import RELEVANCE, TONE, judge_partition
from eval_pipeline.llm.support_bot import judge_examples
from eval_pipeline_tests.fake_openai import deterministic_score

SECRET_KEY = "sk-test-" + "k3y" * 10
EXAMPLES = [
    {
        "id": "t1",
        "ticket": "My refund for order A-1 never arrived.",
        "response": "I re-issued your refund of $20; it lands in 3 days.",
    },
    {"id": "t2", "ticket": "How do I reset my password?", "response": "Use 'Forgot password' on the login page."},
    {"id": "", "ticket": "No id here", "response": "Still answered."},
    {"id": "t4", "ticket": "Where is my parcel?", "response": "   "},
    {"id": "t2", "ticket": "Duplicate id", "response": "Again."},
    "not an object",
]


def gateway(server, **options) -> Gateway:
    return Gateway(base_url=server.base_url, api_key=SECRET_KEY, model="judge-1", max_retries=3, **options)


@pytest.fixture
def examples_file(tmp_path):
    path = tmp_path / "examples.json"
    path.write_text(json.dumps(EXAMPLES))
    return path


def test_both_rubrics_for_every_usable_example_and_reasons_for_the_rest(fake_openai, examples_file):
    outcome = judge_examples(gateway(fake_openai), examples_file)
    assert [r["id"] for r in outcome.results] == ["t1", "t2"]
    first = outcome.results[0]
    assert first["relevance"]["score"] == deterministic_score(EXAMPLES[0]["response"])
    assert first["tone"]["reasoning"].startswith("deterministic")
    assert outcome.skipped == [
        {"index": 2, "reason": "missing or empty: id"},
        {"index": 3, "reason": "missing or empty: response"},
        {"index": 4, "reason": "duplicate id t2"},
        {"index": 5, "reason": "not an object"},
    ]
    assert len(fake_openai.requests) == 4  # one call per rubric per example
    schema = fake_openai.requests[0]["body"]["response_format"]
    assert schema["type"] == "json_schema" and schema["json_schema"]["schema"]["required"] == ["score", "reasoning"]


def test_rate_limits_and_server_errors_are_retried(fake_openai, examples_file):
    fake_openai.fail_next = [(429, "0"), (500, None), (503, "0")]
    judge = gateway(fake_openai)
    outcome = judge_examples(judge, examples_file)
    assert all(r["relevance"]["score"] and r["tone"]["score"] for r in outcome.results)
    assert len(fake_openai.requests) == 4 + 3 and judge.usage.failures == [] and outcome.judge_failed == 0


def test_invalid_json_is_asked_again_once_then_recorded(fake_openai, examples_file):
    fake_openai.invalid_json_next = 1
    judge = gateway(fake_openai, concurrency=1)
    outcome = judge_examples(judge, examples_file)
    assert judge.usage.reasks == 1 and judge.usage.failures == []
    assert all(r["relevance"]["score"] for r in outcome.results)

    fake_openai.invalid_json_next = 100  # the re-asks are prose too: recorded failures, not a crash
    judge = gateway(fake_openai)
    outcome = judge_examples(judge, examples_file)
    assert (judge.usage.calls, judge.usage.reasks, len(judge.usage.failures)) == (8, 4, 4)
    assert outcome.results == []  # never a null score: an example the judge failed on is skipped, saying why
    assert outcome.judge_failed == 2
    invalid = "invalid JSON from judge-1 twice: Expecting value: line 1 column 1 (char 0)"
    assert outcome.skipped[0] == {"index": 0, "id": "t1", "reason": f"relevance: {invalid}; tone: {invalid}"}
    assert SECRET_KEY not in repr(judge)


def test_servers_without_json_schema_get_json_mode(fake_openai, examples_file):
    fake_openai.reject_json_schema = True
    outcome = judge_examples(gateway(fake_openai), examples_file)
    assert all(r["tone"]["score"] for r in outcome.results)
    assert {r["body"]["response_format"]["type"] for r in fake_openai.requests} == {"json_schema", "json_object"}


def test_the_cli_writes_results_and_never_shows_the_key(fake_openai, examples_file, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    monkeypatch.chdir(tmp_path)
    output = tmp_path / "results.json"
    assert main(["judge", str(examples_file), "--output", str(output)]) == 0
    written = json.loads(output.read_text())
    assert [r["id"] for r in written["results"]] == ["t1", "t2"] and len(written["skipped"]) == 4
    assert fake_openai.requests[0]["authorization"] == f"Bearer {SECRET_KEY}"  # sent to the server, and only there

    fake_openai.fail_next = [(500, None)] * 100  # every call fails: one clear line, exit 3, no key anywhere
    assert main(["judge", str(examples_file), "--output", str(output)]) == 3
    printed = capsys.readouterr()
    assert SECRET_KEY not in printed.out + printed.err + output.read_text()
    assert "every judge call failed" in printed.err


def test_the_cli_says_what_it_needs(monkeypatch, tmp_path, examples_file, capsys):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.chdir(tmp_path)
    assert main(["judge", str(examples_file), "--output", str(tmp_path / "out.json")]) == 2
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    assert main(["judge", str(examples_file), "--output", str(tmp_path / "out.json")]) == 2
    assert "judge needs EVAL_JUDGE_MODEL, and OPENAI_BASE_URL (any OpenAI-compatible server) or OPENAI_API_KEY" in (
        capsys.readouterr().err
    )


def test_with_only_openai_api_key_the_judge_uses_openais_own_endpoint(fake_openai, examples_file, tmp_path, monkeypatch):
    """A support team on OpenAI sets its key and a model, nothing else; the fake stands in for api.openai.com."""
    monkeypatch.setattr("eval_pipeline.llm.gateway.OPENAI_BASE_URL", fake_openai.base_url)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    monkeypatch.setenv("EVAL_JUDGE_MODEL", "judge-1")
    monkeypatch.chdir(tmp_path)
    assert main(["judge", str(examples_file), "--output", str(tmp_path / "out.json")]) == 0
    assert [r["id"] for r in json.loads((tmp_path / "out.json").read_text())["results"]] == ["t1", "t2"]
    assert fake_openai.requests[0]["authorization"] == f"Bearer {SECRET_KEY}"


def test_unusable_examples_and_failed_judgements_are_skipped_with_reasons_shown(fake_openai, tmp_path, monkeypatch, capsys):
    examples = [
        {"id": 7, "ticket": "Integer id", "response": "An answer."},
        {"id": "obj", "ticket": {"subject": "An object ticket"}, "response": "An answer."},
        {"id": "ok", "ticket": "Where is my parcel?", "response": "It ships tomorrow."},
        {"id": "flaky", "ticket": "Cancel my plan", "response": "Done, cancelled."},
    ]
    path = tmp_path / "examples.json"
    path.write_text(json.dumps(examples))
    (tmp_path / "eval.toml").write_text(
        '[judge.custom.tone]\nquestion = "Is the reply warm and in our house style (first names, no jargon)?"\n'
        'levels = { 1 = "cold", 2 = "curt", 3 = "neutral", 4 = "friendly", 5 = "warm and on style" }\n'
    )
    for name, value in (("OPENAI_BASE_URL", fake_openai.base_url), ("EVAL_JUDGE_MODEL", "judge-1"),
                        ("EVAL_CONFIG", str(tmp_path / "eval.toml"))):  # fmt: skip
        monkeypatch.setenv(name, value)
    fake_openai.fail_when = lambda body: "Cancel my plan" in json.dumps(body)  # this example's calls always fail
    # as `run` exits 3 on judge verdicts the gateway failed after its retries, once they are written; unusable
    # examples are bad input, listed, and decide nothing
    assert main(["judge", str(path), "--output", str(tmp_path / "out.json")]) == 3
    written = json.loads((tmp_path / "out.json").read_text())
    assert [r["id"] for r in written["results"]] == ["ok"]
    assert [(s["index"], s["reason"].split(":")[0]) for s in written["skipped"]] == [
        (0, "id must be a string, not int"),
        (1, "ticket must be a string, not dict"),
        (3, "relevance"),
    ]
    printed = capsys.readouterr()
    assert "skipped #0: id must be a string, not int" in printed.out and "skipped #3 flaky: relevance:" in printed.out
    assert printed.err.strip().splitlines()[-1] == (
        "eval-pipeline: error: the judge failed on 1 of 2 examples after its retries (skipped above, not judged)"
    )
    prompts = [m["content"] for r in fake_openai.requests for m in r["body"]["messages"]]
    assert any("house style" in prompt for prompt in prompts)  # the reworded rubric is what the judge was asked


def test_a_budget_stops_cleanly_and_records_what_was_left_undone(fake_openai):
    candidates = pd.DataFrame(
        [(f"ep-{i}", "a", f"question {i}", f"answer {i}") for i in range(5)],
        columns=["episode_id", "agent_id", "user_input", "final_output"],
    )
    judge = gateway(fake_openai, max_calls=3)
    outcome = judge_partition(judge, candidates, [RELEVANCE, TONE], lambda keys: {})
    assert len(fake_openai.requests) == 3 and outcome.calls == 3
    assert outcome.rubrics["status"].value_counts().to_dict() == {"skipped": 7, "judged": 3}
    assert set(outcome.rubrics.loc[outcome.rubrics["status"] == "skipped", "reasoning"]) == {"skipped: budget of 3 calls used up"}
    assert judge.usage.failures == []


@pytest.fixture
def judge_env(fake_openai, tmp_path, monkeypatch):
    for name, value in (("OPENAI_BASE_URL", fake_openai.base_url), ("OPENAI_API_KEY", SECRET_KEY),
                        ("EVAL_JUDGE_MODEL", "judge-1")):  # fmt: skip
        monkeypatch.setenv(name, value)
    monkeypatch.chdir(tmp_path)
    return fake_openai


def test_the_output_goes_where_asked_though_its_folder_is_not_there_yet(judge_env, examples_file, tmp_path, capsys):
    """`--output results/output.json` of the team's design, in a fresh clone (git keeps no empty results/): the judge
    was called and paid for every example, then 'No such file or directory', exit 3, and the verdicts were lost."""
    assert main(["judge", str(examples_file), "--output", "results/output.json"]) == 0
    written = json.loads((tmp_path / "results" / "output.json").read_text())
    assert [r["id"] for r in written["results"]] == ["t1", "t2"] and len(judge_env.requests) == 4
    capsys.readouterr()
    assert main(["judge", str(examples_file), "--output", "results"]) == 2  # a folder: said before any call
    assert "--output results is a directory" in capsys.readouterr().err and len(judge_env.requests) == 4


@pytest.mark.parametrize("concurrency", ["0", "-2"])
def test_a_concurrency_below_one_is_a_usage_error_before_any_call(judge_env, examples_file, capsys, concurrency):
    """0 waited forever for a free slot (nothing printed, nothing written); -2 was an internal error, exit 3."""
    assert main(["judge", str(examples_file), "--output", "out.json", "--concurrency", concurrency]) == 2
    assert capsys.readouterr().err == f"eval-pipeline: error: --concurrency must be at least 1, not {concurrency}\n"
    assert judge_env.requests == []
