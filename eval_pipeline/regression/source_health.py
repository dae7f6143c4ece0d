"""Source health: a day with no episodes, or a spike of rejected records among those read, is a finding too."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.config import EvalConfig

SOURCE_AGENT = "(source)"  # findings about the episode source as a whole, not one agent
TRAILING_DAYS = 7


def _rate(records_read: float, quarantined: float) -> float:
    return quarantined / records_read if records_read else 0.0


def source_health_finding(day: date, counts: pd.DataFrame, config: EvalConfig) -> dict | None:
    """The day's `source_health` breach at its highest severity, or None.

    `counts` holds `partition_date, episodes, records_read, quarantined` for `day` and the days before it;
    the quarantine rate is of records read (lines, not the episodes many lines make).
    """
    rules = config.source_health
    by_day = counts.set_index(pd.to_datetime(counts["partition_date"]).dt.date)
    episodes = int(by_day["episodes"].get(day, 0))
    records_read = int(by_day["records_read"].get(day, 0))
    quarantined = int(by_day["quarantined"].get(day, 0))
    before = by_day[by_day.index < day]
    trailing = [_rate(r, q) for r, q in zip(before["records_read"], before["quarantined"], strict=True) if r]
    baseline_rate = sum(trailing) / len(trailing) if trailing else None
    rate = _rate(records_read, quarantined)
    if episodes < rules.min_episodes:
        return {
            "severity": "critical",
            "value": float(episodes),
            "threshold": float(rules.min_episodes),
            "baseline_value": None,
            "message": f"{episodes} episodes for {day} (at least {rules.min_episodes} expected); {quarantined} records rejected",
        }
    if rate > rules.critical_quarantine_rate:
        severity, limit = "critical", rules.critical_quarantine_rate
    elif baseline_rate is not None and rate > max(rules.min_quarantine_rate, rules.spike_factor * baseline_rate):
        severity, limit = "warning", max(rules.min_quarantine_rate, rules.spike_factor * baseline_rate)
    else:
        return None
    trailing_text = "no history" if baseline_rate is None else f"trailing mean {baseline_rate:.1%}"
    return {
        "severity": severity,
        "value": rate,
        "threshold": limit,
        "baseline_value": baseline_rate,
        "message": f"{quarantined} of {records_read} records read quarantined ({rate:.1%}; {trailing_text})",
    }
