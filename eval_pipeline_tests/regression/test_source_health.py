from datetime import date, timedelta

import pandas as pd
import pytest

from eval_pipeline.config import EvalConfig
from eval_pipeline.regression.findings import partition_findings
from eval_pipeline.regression.source_health import SOURCE_AGENT, source_health_finding
from eval_pipeline.scoring.assessments import ISSUE_COLUMNS
from eval_pipeline.scoring.episodes import score_record_columns

DAY = date(2026, 11, 8)
CONFIG = EvalConfig()


def counts(today: tuple[int, int], before: tuple[int, int] = (100, 2), days_before: int = 7) -> pd.DataFrame:
    rows = [(DAY - timedelta(days=n), *before) for n in range(days_before, 0, -1)] + [(DAY, *today)]
    return pd.DataFrame(rows, columns=["partition_date", "episodes", "quarantined"])


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


def test_source_findings_join_the_days_findings_under_the_source():
    empty_scores = pd.DataFrame(columns=[*score_record_columns(), "config_version"])
    found = partition_findings(empty_scores, empty_scores, counts((0, 0)), DAY, CONFIG, pd.DataFrame(columns=ISSUE_COLUMNS))
    assert found[["agent_id", "dimension", "severity"]].values.tolist() == [[SOURCE_AGENT, "source_health", "critical"]]
    assert found["finding_id"].notna().all() and found["config_version"].eq(CONFIG.version).all()
