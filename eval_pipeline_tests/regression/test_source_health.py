from datetime import date, timedelta

import pandas as pd
import pytest

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.aggregates import summary_columns
from eval_pipeline.regression.findings import partition_findings
from eval_pipeline.regression.source_health import SOURCE_AGENT, source_health_finding
from eval_pipeline.scoring.assessments import ISSUE_COLUMNS
from eval_pipeline.scoring.episodes import score_record_columns

DAY = date(2026, 11, 8)
CONFIG = EvalConfig()


def counts(
    today: tuple[int, int], before: tuple[int, int] = (100, 2), days_before: int = 7, records_per_episode: int = 1
) -> pd.DataFrame:
    """(episodes, quarantined) per day; each episode made from `records_per_episode` records of the source."""
    days = [(DAY - timedelta(days=n), *before) for n in range(days_before, 0, -1)] + [(DAY, *today)]
    rows = [(day, episodes, episodes * records_per_episode + bad, bad) for day, episodes, bad in days]
    return pd.DataFrame(rows, columns=["partition_date", "episodes", "records_read", "quarantined"])


def test_a_day_without_episodes_is_critical():
    finding = source_health_finding(DAY, counts((0, 3)), CONFIG)
    assert finding["severity"] == "critical" and finding["value"] == 0 and "0 episodes" in finding["message"]


@pytest.mark.parametrize(
    ("today", "expected"),
    [
        ((100, 2), None),  # as usual (about 2 %)
        ((100, 5), None),  # 4.8 %: more, but not three times the trailing 2 %
        ((100, 8), "warning"),  # 7.4 % > 3 x 2 %
        ((100, 40), "critical"),  # 28.6 % > 25 %
    ],
)
def test_quarantine_spikes_against_the_trailing_week(today, expected):
    finding = source_health_finding(DAY, counts(today), CONFIG)
    assert (finding or {}).get("severity") == expected


def test_without_history_only_the_critical_rate_counts():
    assert source_health_finding(DAY, counts((100, 10), days_before=0), CONFIG) is None
    assert source_health_finding(DAY, counts((10, 10), days_before=0), CONFIG)["severity"] == "critical"


def test_a_few_bad_lines_among_a_small_days_log_lines_are_weighed_against_the_lines_read():
    """Two AutoGen runs of 75 log lines each and 3 broken lines: 3 of 153 read (2 %), not 3 of 5 (60 %)."""
    assert source_health_finding(DAY, counts((2, 3), days_before=0, records_per_episode=75), CONFIG) is None
    after_a_clean_week = source_health_finding(DAY, counts((2, 3), before=(2, 0), records_per_episode=75), CONFIG)
    assert after_a_clean_week["severity"] == "warning" and after_a_clean_week["message"].startswith("3 of 153 records read")
    spike = source_health_finding(DAY, counts((2, 3), before=(2, 1), days_before=0, records_per_episode=2), CONFIG)
    assert spike["severity"] == "critical" and spike["message"].startswith("3 of 7 records read quarantined (42.9%")


def test_source_findings_join_the_days_findings_under_the_source():
    empty_scores = pd.DataFrame(columns=[*score_record_columns(), "config_version"])
    no_tasks = pd.DataFrame(columns=["agent_id", "task_id", "partition_date", *summary_columns(), "graded", "passes"])
    scored_parts = [(empty_scores, pd.DataFrame(columns=ISSUE_COLUMNS))]
    found = partition_findings(scored_parts, no_tasks, no_tasks, counts((0, 0)), DAY, CONFIG)
    assert found[["agent_id", "dimension", "severity"]].values.tolist() == [[SOURCE_AGENT, "source_health", "critical"]]
    assert found["finding_id"].notna().all() and found["config_version"].eq(CONFIG.version).all()
