"""Repeated trials: pass@k, pass^k and flakiness per agent and task.

Episodes of one task within a partition are its trials. With n trials of which c pass,
pass@k = 1 − C(n−c, k)/C(n, k) (the unbiased chance that at least one of k trials passes) and
pass^k = C(c, k)/C(n, k) (that all k pass). Per agent and k they are averaged over the tasks with
n ≥ k. A task is flaky when some trials pass and others fail: its flakiness is the mean over k of
pass@k − pass^k (0 for a task that always or never passes).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import pandas as pd

PASS_AT_K_COLUMNS = ["agent_id", "k", "pass_at_k", "pass_hat_k", "n_tasks"]
TASK_TRIAL_COLUMNS = ["agent_id", "task_id", "trials", "passes", "flakiness"]


@lru_cache(maxsize=4096)
def pass_curves(n: int, c: int) -> tuple[np.ndarray, np.ndarray]:
    """(pass@k, pass^k) for k = 1..n of a task with n trials and c passes.

    C(n−c, k)/C(n, k) = Π_{i<k} (n−c−i)/(n−i) and C(c, k)/C(n, k) = Π_{i<k} (c−i)/(n−i): running products of factors
    in [0, 1], stable at any n, where exact binomials grow to hundreds of digits at 1,000 trials. Tasks share few
    (n, c) pairs, hence the cache; the arrays are read only."""
    i = np.arange(n, dtype=float)
    at, hat = 1.0 - np.cumprod(np.clip(n - c - i, 0, None) / (n - i)), np.cumprod(np.clip(c - i, 0, None) / (n - i))
    at.flags.writeable = hat.flags.writeable = False
    return at, hat


def pass_at_k(n: int, c: int, k: int) -> float:
    return float(pass_curves(n, c)[0][k - 1])


def pass_hat_k(n: int, c: int, k: int) -> float:
    return float(pass_curves(n, c)[1][k - 1])


def with_flakiness(counts: pd.DataFrame) -> pd.DataFrame:
    """`counts` (agent_id, task_id, trials: those with a verdict, passes; `warehouse.trials.trial_counts`) with each
    task's flakiness."""
    curves = (pass_curves(int(n), int(c)) for n, c in zip(counts["trials"], counts["passes"], strict=True))
    return counts.assign(flakiness=[float(np.mean(at - hat)) for at, hat in curves])[TASK_TRIAL_COLUMNS]


def agent_pass_at_k(tasks: pd.DataFrame) -> pd.DataFrame:
    """Per agent and k = 1..max trials: pass@k and pass^k averaged over its tasks with n ≥ k."""
    rows = []
    all_trials, all_passes = tasks["trials"].to_numpy(dtype=int), tasks["passes"].to_numpy(dtype=int)
    groups = tasks.groupby("agent_id", sort=True).indices  # numpy slices per agent: a sub-frame each cost 0.15 ms
    for agent_id in sorted(groups):
        trials, passes = all_trials[groups[agent_id]], all_passes[groups[agent_id]]
        at_sum, hat_sum = np.zeros(trials.max()), np.zeros(trials.max())
        for n, c in zip(trials, passes, strict=True):
            at, hat = pass_curves(int(n), int(c))
            at_sum[:n] += at
            hat_sum[:n] += hat
        for k in range(1, trials.max() + 1):
            eligible = int((trials >= k).sum())
            rows.append(
                {
                    "agent_id": agent_id,
                    "k": k,
                    "pass_at_k": float(at_sum[k - 1] / eligible),
                    "pass_hat_k": float(hat_sum[k - 1] / eligible),
                    "n_tasks": eligible,
                }
            )
    return pd.DataFrame(rows, columns=PASS_AT_K_COLUMNS)
