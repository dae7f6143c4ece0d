"""`eval-pipeline reward` and `reward-bench` end to end, on a real warehouse the pipeline scored."""

import json

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.warehouse import rewards
from eval_pipeline_tests.episodes.test_transcripts import transcript
from eval_pipeline_tests.rewards.test_benchmark import pairs_by_definition

pytestmark = pytest.mark.slow

LEAKED = "ep-2026-11-02-support-bot-refund-request-t0"  # the sample day with injected regressions leaks a key here


def query(sql: str, capsys) -> list[dict]:
    capsys.readouterr()
    assert main(["query", sql, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_reward_writes_every_configured_reward_of_the_days_scored_episodes(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    snapshot = "SELECT * EXCLUDE (computed_at) FROM rewards ORDER BY episode_id, reward_name"
    nightly = query(snapshot, capsys)  # the `rewards` asset computed them with the day's scores
    assert len(nightly) == 384
    assert main(["reward", "--start", "2026-11-01", "--end", "2026-11-02"]) == 0
    out = capsys.readouterr().out
    assert "rewards written (384 rows" in out and "safe_overall" in out

    counts = query(
        "SELECT reward_name, count(*) AS n, min(value) AS low, max(value) AS high FROM rewards GROUP BY 1 ORDER BY 1", capsys
    )
    assert [(c["reward_name"], c["n"]) for c in counts] == [
        ("dimensions", 96),
        ("issues", 96),
        ("overall", 96),
        ("safe_overall", 96),
    ]
    assert all(0 <= c["low"] <= c["high"] <= 1 for c in counts)

    # the deduction, recomputed from the issues table
    off = query(
        """SELECT count(*) AS n FROM rewards r LEFT JOIN (
               SELECT episode_id, sum(CASE severity WHEN 'critical' THEN 0.25 WHEN 'error' THEN 0.10 WHEN 'warning' THEN 0.05
                                      ELSE 0 END) AS penalty FROM issues GROUP BY 1) i USING (episode_id)
           WHERE reward_name = 'issues' AND abs(value - greatest(0, 1 - coalesce(penalty, 0))) > 1e-9""",
        capsys,
    )
    assert off == [{"n": 0}]
    # the weighted reward, recomputed from the scores: the five dimensions' units, equally weighted, over those present
    # (day 1 has no baselines yet: safety alone)
    # (DuckDB's greatest() skips NULLs: `+ delta * 0` keeps a missing delta missing)
    off = query(
        """WITH u AS (
               SELECT episode_id, [correctness, 1 - least(1, greatest(0, cost_delta_pct) / 100) + cost_delta_pct * 0, tool_match,
                                   1 - least(1, greatest(0, latency_delta_pct) / 100) + latency_delta_pct * 0, safety] AS units
               FROM scores)
           SELECT count(*) AS n FROM rewards JOIN u USING (episode_id)
           WHERE reward_name = 'dimensions' AND abs(value - list_avg(units)) > 1e-9""",
        capsys,
    )
    assert off == [{"n": 0}]

    leaked = query(f"SELECT value, breakdown FROM rewards WHERE episode_id = '{LEAKED}' AND reward_name = 'safe_overall'", capsys)
    assert leaked[0]["value"] == 0.0 and "leaked a secret" in json.loads(leaked[0]["breakdown"])["reasons"]

    before = query(snapshot, capsys)
    assert before == nightly  # the command recomputes exactly what the nightly run wrote
    assert main(["reward", "--date", "2026-11-02", "--name", "issues"]) == 0  # replaces only that reward's rows of that day
    assert query(snapshot, capsys) == before
    assert main(["reward", "--date", "2026-11-02"]) == 0
    assert query(snapshot, capsys) == before
    assert {row["config_version"] for row in before} == {
        query("SELECT DISTINCT config_version FROM scores", capsys)[0]["config_version"]
    }

    labels = project_env / "labels.jsonl"
    passed = query("SELECT episode_id, passed FROM scores WHERE passed IS NOT NULL", capsys)
    labels.write_text("".join(json.dumps({"episode_id": r["episode_id"], "label": r["passed"]}) + "\n" for r in passed))
    assert (
        main(["reward-bench", "--start", "2026-11-01", "--end", "2026-11-02", "--labels", str(labels), "--format", "json"]) == 0
    )
    bench = json.loads(capsys.readouterr().out)
    assert bench["sources"]["label"] == len(passed) and bench["episodes"] == len(passed)
    overall = {row["reward"]: row for row in bench["rows"] if row["category"] == "all"}
    assert list(overall) == ["dimensions", "issues", "overall", "safe_overall"]
    assert all(row["n"] == len(passed) for row in overall.values())
    assert overall["safe_overall"]["pairwise_accuracy"] > 0.9  # passing runs rank above failing ones
    assert {row["category"] for row in bench["rows"]} > {"all", "refunds"}
    assert main(["reward-bench", "--date", "2026-11-02", "--labels", str(labels)]) == 0
    assert "reward benchmark" in capsys.readouterr().out


def test_reward_bench_reads_the_days_a_part_at_a_time_to_the_same_figures(project_env, capsys, monkeypatch):
    # a reviewers' share per run: a continuous ground truth, a level per run
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    scored = query("SELECT episode_id FROM scores ORDER BY episode_id", capsys)
    shares = {row["episode_id"]: (n * 37 % 101) / 100 for n, row in enumerate(scored)}
    labels = project_env / "labels.jsonl"
    labels.write_text("".join(json.dumps({"episode_id": e, "label": share}) + "\n" for e, share in shares.items()))
    bench = ["reward-bench", "--start", "2026-11-01", "--end", "2026-11-02", "--labels", str(labels), "--format", "json"]
    assert main(bench) == 0
    whole = capsys.readouterr().out
    monkeypatch.setattr(rewards, "REWARD_PART_EPISODES", 7)  # 14 parts of the two days, read 3 episodes at a time
    monkeypatch.setattr(rewards, "REWARD_BATCH_ROWS", 3)
    assert main(bench) == 0
    assert capsys.readouterr().out == whole  # separability's resamples too: they draw by position

    figures = {(row["reward"], row["category"]): row for row in json.loads(whole)["rows"]}
    nightly = query("SELECT episode_id, value FROM rewards WHERE reward_name = 'overall' ORDER BY episode_id", capsys)
    values = [row["value"] for row in nightly]
    concordant, _, reward_ties, truth_ties, pairs = pairs_by_definition(values, [shares[r["episode_id"]] for r in nightly])
    overall = figures[("overall", "all")]
    assert overall["n"] == len(shares) == len(nightly)
    assert overall["pairwise_accuracy"] == pytest.approx((concordant + 0.5 * reward_ties) / (pairs - truth_ties))


def test_reward_bench_falls_back_to_metadata_reward(project_env, capsys):
    rewards = {1: [1.0, 1.0, 0.0], 2: [1.0, 0.0, 0.0]}  # task -> its trials' tau-bench rewards
    records = [transcript(task, trial, reward) for task, values in rewards.items() for trial, reward in enumerate(values)]
    (project_env / "episodes").mkdir()
    (project_env / "episodes" / "airline.json").write_text(json.dumps(records))
    assert main(["run", "--date", "2026-11-05", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["reward-bench", "--date", "2026-11-05", "--k", "1", "--format", "json"]) == 0
    bench = json.loads(capsys.readouterr().out)
    assert bench["sources"] == {"label": 0, "case": 0, "metadata.reward": 6, "none": 0}
    row = next(r for r in bench["rows"] if r["reward"] == "issues" and r["category"] == "all")
    assert row["n"] == 6 and row["best_of_k"] == pytest.approx(0.5) and row["best_of_k_normalized"] is None  # K = 1
    assert row["pairwise_accuracy"] == 0.5  # identical runs, identical rewards: every pair a tie


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["reward", "--date", "2026-11-02"], "no warehouse"),
        (["reward-bench", "--date", "2026-11-02", "--k", "0"], "--k must be at least 1"),
    ],
)
def test_reward_usage_errors_exit_2_with_one_line(project_env, capsys, argv, says):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1


def test_reward_names_and_ground_truth_are_checked(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01", "--fail-on", "never"]) == 0
    capsys.readouterr()
    assert main(["reward", "--date", "2026-11-01", "--name", "vibes"]) == 2
    assert "no reward 'vibes'" in capsys.readouterr().err
    assert main(["reward", "--date", "2026-10-30"]) == 2
    assert "no scored episodes" in capsys.readouterr().err
    assert main(["reward-bench", "--date", "2026-11-01"]) == 2  # the samples carry no labels, cases or rewards
    assert "has a ground truth" in capsys.readouterr().err
