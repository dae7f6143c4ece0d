"""Scoring frames for tests: one candidate row beside its baseline snapshot."""

import pandas as pd

BASE = {
    "episode_id": "ep-candidate",
    "partition_date": pd.Timestamp("2026-11-02").date(),
    "agent_id": "support-bot",
    "task_id": "support-bot/where-is-my-order",
    "mode": "dry",
    "model": "gpt-4o-mini",
    "status": "success",
    "final_output": "Your order ships Monday.",
    "tools": ["lookup_order", "send_email"],
    "total_cost_usd": 0.010,
    "total_duration_ms": 1000.0,
    "total_tokens": 500,
    "step_count": 6,
    "error_steps": 0,
    "error": None,
    "baseline_episode_id": "ep-baseline",
    "baseline_status": "success",
    "baseline_final_output": "Your order ships Monday.",
    "baseline_tools": ["lookup_order", "send_email"],
    "baseline_total_cost_usd": 0.010,
    "baseline_total_duration_ms": 1000.0,
    "baseline_total_tokens": 500,
    "baseline_step_count": 6,
    "baseline_error_steps": 0,
    "judge_score": None,
    "case_score": None,
    "case_passed": None,
    "failed_assertions": None,
    "recorded_reward": None,
    "critical_issues": 0,
    "error_issues": 0,
    "warning_issues": 0,
}
NO_BASELINE = {key: None for key in BASE if key.startswith("baseline_")}


def frame(*rows: dict) -> pd.DataFrame:
    """Rows are overrides of BASE; episode ids are made unique."""
    records = [{**BASE, "episode_id": f"ep-{i}", **row} for i, row in enumerate(rows)]
    return pd.DataFrame.from_records(records)
