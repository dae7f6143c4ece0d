"""Repeated trials: pass@k, pass^k and flakiness per agent and task.

Episodes of one task within a partition are its trials. With n trials of which c pass,
pass@k = 1 − C(n−c, k)/C(n, k) (the unbiased chance that at least one of k trials passes) and
pass^k = C(c, k)/C(n, k) (that all k pass). Per agent and k they are averaged over the tasks with
n ≥ k. A task is flaky when some trials pass and others fail: its flakiness is the mean over k of
pass@k − pass^k (0 for a task that always or never passes).
"""

from __future__ import annotations

from math import comb

import numpy as np
import pandas as pd

PASS_AT_K_COLUMNS = ["agent_id", "k", "pass_at_k", "pass_hat_k", "n_tasks"]
TASK_TRIAL_COLUMNS = ["agent_id", "task_id", "trials", "passes", "flakiness"]


def pass_at_k(n: int, c: int, k: int) -> float:
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    return comb(c, k) / comb(n, k)


def task_trials(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (agent, task): trials with a verdict, passes and flakiness (frame: agent_id, task_id, passed: the
    episode verdict, None where it has none)."""
    judged = frame[frame["passed"].notna()]
    if judged.empty:
        return pd.DataFrame(columns=TASK_TRIAL_COLUMNS)
    counts = (
        judged.assign(passed=judged["passed"].astype(bool))
        .groupby(["agent_id", "task_id"], sort=True)["passed"]
        .agg(trials="size", passes="sum")
        .reset_index()
    )
    counts["flakiness"] = [
        float(np.mean([pass_at_k(n, c, k) - pass_hat_k(n, c, k) for k in range(1, n + 1)]))
        for n, c in zip(counts["trials"], counts["passes"], strict=True)
    ]
    return counts[TASK_TRIAL_COLUMNS]


def agent_pass_at_k(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per agent and k = 1..max trials: pass@k and pass^k averaged over its tasks with n ≥ k."""
    rows = []
    for agent_id, group in tasks.groupby("agent_id", sort=True):
        pairs = list(zip(group["trials"], group["passes"], strict=True))
        for k in range(1, max(n for n, _ in pairs) + 1):
            eligible = [(n, c) for n, c in pairs if n >= k]
            rows.append(
                {
                    "agent_id": agent_id,
                    "k": k,
                    "pass_at_k": float(np.mean([pass_at_k(n, c, k) for n, c in eligible])),
                    "pass_hat_k": float(np.mean([pass_hat_k(n, c, k) for n, c in eligible])),
                    "n_tasks": len(eligible),
                }
            )
    return pd.DataFrame(rows, columns=PASS_AT_K_COLUMNS)
