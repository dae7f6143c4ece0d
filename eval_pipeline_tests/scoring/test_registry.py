"""A dimension is one declaration: register one, and it is scored, weighed, judged, reported and rewarded."""

import json

import pandas as pd
import pytest

from eval_pipeline.cli import main
from eval_pipeline.config import EvalConfig, reward_dimensions, threshold_directions
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.scoring import dimensions as registry
from eval_pipeline.scoring.dimensions import Dimension, Direction
from eval_pipeline.warehouse.connection import Warehouse

BREVITY_CHARS = 60


def brevity(frame: pd.DataFrame) -> pd.Series:
    """1.0 for an answer of at most 60 characters, 60 / length beyond."""
    length = frame["final_output"].fillna("").str.len().clip(lower=1)
    return (BREVITY_CHARS / length).clip(upper=1.0).where(frame["final_output"].notna())


BREVITY = Dimension(
    "brevity", "brevity", "brevity", brevity, weight=0.1, warning=0.5, paired=False,
    explain=lambda row: f"an answer of {BREVITY_CHARS / row.brevity:.0f} characters",
)  # fmt: skip


@pytest.fixture
def with_brevity(monkeypatch):
    monkeypatch.setattr(registry, "DIMENSIONS", (*registry.DIMENSIONS, BREVITY))


def test_the_registry_derives_weights_thresholds_and_reward_dimensions(with_brevity):
    config = EvalConfig()
    assert config.weights["brevity"] == 0.1 and config.thresholds["brevity"].warning == 0.5
    assert threshold_directions()["brevity"] is Direction.BELOW and "brevity" in reward_dimensions()
    assert "brevity" in config.rewards.define["dimensions"].dimensions  # the default weighted reward weighs it


@pytest.mark.slow
def test_a_registered_dimension_flows_into_scores_findings_report_and_rewards(project_env, with_brevity, monkeypatch, capsys):
    (project_env / "eval.toml").write_text("")  # the built-in defaults: the declared weights, thresholds and rewards
    monkeypatch.setenv("EVAL_CONFIG", str(project_env / "eval.toml"))
    write_samples(project_env / "episodes")
    assert main(["run", "--start", "2026-11-01", "--end", "2026-11-02", "--fail-on", "never"]) == 0
    capsys.readouterr()
    with Warehouse(project_env / "eval.duckdb").connect(read_only=True) as con:
        scores = con.execute("SELECT * FROM scores WHERE partition_date = '2026-11-02' ORDER BY episode_id").df()
        findings = con.execute("SELECT * FROM findings WHERE dimension = 'brevity'").df()
        breakdowns = con.execute("SELECT breakdown FROM rewards WHERE reward_name = 'dimensions'").fetchall()
    assert scores["brevity"].notna().all() and scores["brevity"].between(0, 1).all()
    # the weighted score weighs it: Σ w·u / Σ w over the six weighed dimensions, recomputed from the row
    row = scores[scores["baseline_episode_id"].notna() & scores["status"].eq("success")].iloc[0]
    config = EvalConfig()
    unit = {d.name: d.unit(pd.Series([row[d.column]])).iloc[0] for d in registry.dimensions()}
    present = {name: value for name, value in unit.items() if pd.notna(value) and config.weights[name]}
    expected = sum(config.weights[name] * value for name, value in present.items()) / sum(config.weights[n] for n in present)
    assert row["weighted_score"] == pytest.approx(expected) and "brevity" in present

    long_answers = scores[scores["brevity"] < 0.5]
    assert len(long_answers) and set(findings["severity"]) == {"warning"}
    assert set(findings[findings["partition_date"] == pd.Timestamp("2026-11-02")]["episode_id"]) == set(
        long_answers["episode_id"]
    )
    assert findings["message"].str.match(r"brevity 0\.\d\d vs limit 0\.50: an answer of \d+ characters").all()

    report = json.loads((project_env / "reports" / "eval-report-2026-11-02.json").read_text())
    assert all("brevity" in episode for episode in report["episodes"])
    assert "| Brevity |" in (project_env / "reports" / "eval-report-2026-11-02.md").read_text()
    assert breakdowns and all("brevity" in json.loads(breakdown)["dimensions"] for (breakdown,) in breakdowns)
