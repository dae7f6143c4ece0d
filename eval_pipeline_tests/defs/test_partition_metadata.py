"""In a ranged run (the demo, any backfill), each partition shows its own day in the Dagster UI.

A user opened partition 2026-11-01 of `eval_report` after the demo's 3-day run and saw the range's
totals (20 critical alerts, 148 episodes) and a link to the 2026-11-03 report.
"""

import dagster as dg
import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import SAMPLE_DAYS, write_samples
from eval_pipeline.warehouse.connection import Warehouse

pytestmark = pytest.mark.slow

ASSETS = (
    "episodes",
    "episode_steps",
    "quarantine",
    "baselines",
    "replays",
    "judgements",
    "pairwise_judgements",
    "assertions",
    "issues",
    "scores",
    "regression_findings",
    "rewards",
    "pass_at_k",
    "task_trials",
    "eval_report",
)


def partition_metadata(root, asset: str, day: str) -> dict[str, str]:
    """What the UI shows on `asset`'s latest materialization of `day`, with the project's directory as ROOT."""
    with dg.DagsterInstance.from_config(str(root / "dagster_home")) as instance:
        records = instance.fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[day]), limit=1
        ).records
    assert records, f"{asset} has no materialization of {day}"
    metadata = records[0].asset_materialization.metadata
    return {key: str(value.value).replace(str(root), "ROOT") for key, value in metadata.items()}


def use_project(root, monkeypatch):
    monkeypatch.chdir(root)
    for name, path in (("EVAL_EPISODE_SOURCE", "episodes"), ("EVAL_DUCKDB_PATH", "eval.duckdb"),
                       ("EVAL_REPORTS_DIR", "reports"), ("DAGSTER_HOME", "dagster_home")):  # fmt: skip
        monkeypatch.setenv(name, str(root / path))
    write_samples(root / "episodes")


def test_a_three_day_run_gives_each_partition_what_a_run_of_that_day_gives(project_env, monkeypatch, capsys, tmp_path_factory):
    ranged, daily = project_env, tmp_path_factory.mktemp("daily")
    days = [day.isoformat() for day in SAMPLE_DAYS]
    use_project(ranged, monkeypatch)
    assert main(["run", "--start", days[0], "--end", days[-1], "--fail-on", "never"]) == 0
    use_project(daily, monkeypatch)
    for day in days:
        assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    capsys.readouterr()

    for asset in ASSETS:
        for day in days:
            assert partition_metadata(ranged, asset, day) == partition_metadata(daily, asset, day), (asset, day)
    first = partition_metadata(ranged, "eval_report", days[0])
    assert (first["critical_alerts"], first["episodes"]) == ("0", "48")  # that day's, not the range's 20 and 148
    assert first["html_path"] == f"ROOT/reports/eval-report-{days[0]}.html"
    assert partition_metadata(ranged, "scores", days[1])["dagster/row_count"] == "48"
    assert partition_metadata(ranged, "regression_findings", days[0])["dagster/row_count"] == "0"


def test_a_day_of_many_findings_names_a_bounded_few_of_them_and_counts_all(sample_root, monkeypatch):
    """The instance keeps every run's metadata: a day of a million episodes had 38,016 findings, whose ids (4 MiB) were
    all written into it; the UI names the first few, and the row count and the warehouse say how many there are."""
    monkeypatch.setattr("eval_pipeline.defs.pipeline.assets.FINDINGS_SHOWN", 3)
    monkeypatch.setattr("eval_pipeline.defs.pipeline.assets.FINDINGS_NAMED", 5)
    day = SAMPLE_DAYS[1]
    assert main(["run", "--start", SAMPLE_DAYS[0].isoformat(), "--end", day.isoformat(), "--fail-on", "never"]) == 0
    with Warehouse(sample_root / "eval.duckdb").connect(read_only=True) as con:
        found = {row[0] for row in con.execute("SELECT finding_id FROM findings WHERE partition_date = ?", [day]).fetchall()}
    assert len(found) > 5
    with dg.DagsterInstance.from_config(str(sample_root / "dagster_home")) as instance:
        filter_ = dg.AssetRecordsFilter(asset_key=dg.AssetKey("regression_findings"), asset_partitions=[day.isoformat()])
        (record,) = instance.fetch_materializations(filter_, limit=1).records
    metadata = {key: value.value for key, value in record.asset_materialization.metadata.items()}
    assert metadata["dagster/row_count"] == len(found)
    named = [finding["finding_id"] for finding in metadata["finding_ids"]]
    assert len(named) == len(set(named)) == 5 and set(named) <= found
    assert metadata["findings"].count("\n") == 3 + 1  # a header, its rule and three findings


def test_a_run_narrowed_to_one_agent_says_so_on_each_partition_it_counts(sample_root, capsys):
    """After `run --agent billing-bot`, partition 2026-11-02 of regression_findings showed "critical 0, warning 0,
    dagster/row_count 0" and scores "dagster/row_count 12", as if the day of 48 episodes and 27 findings had 12 and
    none: they were billing-bot's alone, and nothing said so. The steps whose figures are the whole day's (scores,
    findings, the report, as the warehouse holds it after the run) count every agent; the others say whose rows they
    counted."""
    day = SAMPLE_DAYS[1].isoformat()
    assert main(["run", "--date", day, "--fail-on", "never"]) == 0
    assert "narrowed_to_agent" not in partition_metadata(sample_root, "replays", day)
    assert main(["run", "--date", day, "--agent", "billing-bot"]) == 0
    capsys.readouterr()
    findings, scores = (partition_metadata(sample_root, asset, day) for asset in ("regression_findings", "scores"))
    assert (findings["critical"], findings["dagster/row_count"], scores["dagster/row_count"]) == ("18", "27", "48")
    for whole_day in ("regression_findings", "scores", "eval_report", "rewards"):
        assert "narrowed_to_agent" not in partition_metadata(sample_root, whole_day, day)
    replays = partition_metadata(sample_root, "replays", day)
    assert (replays["dagster/row_count"], replays["narrowed_to_agent"]) == ("12", "billing-bot")
