"""How well a reward ranks runs of known quality: the metrics of Preference Proxy Evaluations (PPE,
arXiv:2410.14872), so a team checks its reward before it trains on it.

Ground truth is a number in [0, 1] per episode: a human label (a labels file of `{episode_id,
label}`, else the share of its reviewers who passed it in the viewer's queues), else the case
verdict (`scores.case_passed`), else `metadata.reward` (clipped to [0, 1]); episodes with none
are left out. Every metric is a pure function of arrays; a metric that the data cannot define
(one class only, no spread) is None, never a made-up number.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from math import comb, sqrt
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from eval_pipeline.config import RewardsConfig
from eval_pipeline.regression.stats import resampled
from eval_pipeline.rewards.functions import RewardBook
from eval_pipeline.rewards.inputs import reward_inputs
from eval_pipeline.scoring.cases import read_json_or_jsonl

GOOD = 0.5  # ground truth at or above this is a good run, for the Brier score


class BenchmarkError(ValueError):
    """The labels file cannot be read or holds an invalid label; the message says where."""


def _inversions(ranks: np.ndarray) -> int:
    """Pairs i < j with ranks[i] > ranks[j], over whole arrays: each such pair is counted once, at the highest bit
    where its ranks differ (the earlier has it set, the later not, the bits above alike), one stable sort per bit."""
    inversions = 0
    for bit in range(int(ranks.max()).bit_length() if len(ranks) else 0):
        above = ranks >> (bit + 1)
        order = np.argsort(above, kind="stable")  # each run of equal higher bits together, in position order
        above, ones = above[order], (ranks[order] >> bit) & 1
        ones_before = np.cumsum(ones) - ones
        starts = np.flatnonzero(np.r_[True, above[1:] != above[:-1]])
        run_start = np.repeat(starts, np.diff(np.r_[starts, len(above)]))
        inversions += int((ones_before - ones_before[run_start])[ones == 0].sum())
    return inversions


def _ordered_pairs(rewards: np.ndarray, truth: np.ndarray) -> tuple[int, int, int]:
    """Over pairs whose ground truth differs: (reward agrees with it, reward disagrees, reward tied).

    In O(n log² n) whatever the ground truth's levels (a continuous `metadata.reward` or label has one per run): ordered
    by ground truth, then reward, a pair disagrees exactly where the reward is out of order; the ties are counted.
    """
    reward_ranks = np.unique(rewards, return_inverse=True)[1].reshape(-1)
    truth_ranks = np.unique(truth, return_inverse=True)[1].reshape(-1)
    disagree = _inversions(reward_ranks[np.lexsort((reward_ranks, truth_ranks))])
    tied_in_both = _tied_pairs(truth_ranks * (int(reward_ranks.max(initial=0)) + 1) + reward_ranks)
    tied = _tied_pairs(reward_ranks) - tied_in_both
    pairs = len(rewards) * (len(rewards) - 1) // 2
    return pairs - _tied_pairs(truth_ranks) - disagree - tied, disagree, tied


def pairwise_accuracy(rewards, truth) -> float | None:
    """Share of pairs with different ground truth that the reward orders the same way; a reward tie counts 0.5."""
    rewards, truth = np.asarray(rewards, dtype=float), np.asarray(truth, dtype=float)
    agree, disagree, tied = _ordered_pairs(rewards, truth)
    pairs = agree + disagree + tied
    return (agree + 0.5 * tied) / pairs if pairs else None


def _tied_pairs(values: np.ndarray) -> int:
    _, counts = np.unique(values, return_counts=True)
    return int((counts * (counts - 1) // 2).sum())


def kendall_tau_b(rewards, truth) -> float | None:
    """(C − D) / √((n₀ − n₁)(n₀ − n₂)): ties in either ranking shrink the denominator (None when one side is constant)."""
    rewards, truth = np.asarray(rewards, dtype=float), np.asarray(truth, dtype=float)
    n0 = len(rewards) * (len(rewards) - 1) // 2
    denominator = (n0 - _tied_pairs(rewards)) * (n0 - _tied_pairs(truth))
    if denominator <= 0:
        return None
    concordant, discordant, _ = _ordered_pairs(rewards, truth)
    return (concordant - discordant) / sqrt(denominator)  # an exact integer past int64 from about 78,000 runs


def spearman(rewards, truth) -> float | None:
    """Pearson correlation of the average ranks (ties share their mean rank); None when either side is constant."""
    ranked_rewards = pd.Series(rewards, dtype=float).rank().to_numpy()
    ranked_truth = pd.Series(truth, dtype=float).rank().to_numpy()
    if len(ranked_rewards) < 2 or ranked_rewards.std() == 0 or ranked_truth.std() == 0:
        return None
    return float(np.corrcoef(ranked_rewards, ranked_truth)[0, 1])


def brier(rewards, truth) -> float | None:
    """Mean squared error of the reward read as the probability that the run is good (ground truth ≥ 0.5)."""
    rewards, truth = np.asarray(rewards, dtype=float), np.asarray(truth, dtype=float)
    return float(np.mean((rewards - (truth >= GOOD)) ** 2)) if len(rewards) else None


def _expected_picks(runs: pd.DataFrame, by: str, k: int | None) -> list[float]:
    """Per group of `runs` (`group`, `truth` and `by`), in the groups' order: the expected ground truth of the
    highest-`by` run among k drawn without replacement (None: all of the group's), ties broken at random; groups
    smaller than k are left out.

    The best drawn level is L with probability (C(|≤L|, k) − C(|<L|, k)) / C(n, k); given L, each of its runs is equally
    likely to be the pick. The levels of every group are found at once; their binomials, exact integers, are summed in
    Python (a group at a time in pandas, 20,000 tasks' groups took 5 s a reward)."""
    levels = runs.groupby(["group", by], sort=True)["truth"].agg(["size", "mean"])
    counts = levels.groupby(level="group", sort=False)["size"]
    levels = levels.assign(runs=counts.transform("sum"), below=counts.cumsum() - levels["size"])
    columns = (levels[column].tolist() for column in ("runs", "size", "below", "mean"))
    expected: dict[object, float] = {}
    for group, runs_in_group, count, below, mean in zip(levels.index.get_level_values("group"), *columns, strict=True):
        draws = runs_in_group if k is None else k
        if runs_in_group >= draws:
            chance = (comb(below + count, draws) - comb(below, draws)) / comb(runs_in_group, draws)
            expected[group] = expected.get(group, 0.0) + chance * mean
    return list(expected.values())


def best_of_k(rewards, truth, groups, k: int | None = None) -> dict[str, Any]:
    """Best-of-K within each group (a task's runs): the mean ground truth of the reward's pick among K runs,
    beside a random pick's and the oracle's (the ground truth's own pick). `normalized` places the reward
    between them: 0 random, 1 oracle, None when no group leaves room to choose (K = 1, or equal runs).
    `k` None: each group's own size. Groups smaller than K are left out."""
    runs = pd.DataFrame({"reward": rewards, "truth": truth, "group": groups})
    picked, oracle = _expected_picks(runs, "reward", k), _expected_picks(runs, "truth", k)
    if not picked:
        return {"k": k, "groups": 0, "picked": None, "random": None, "oracle": None, "normalized": None}
    sizes = runs.groupby("group", sort=True)["truth"].agg(["size", "mean"])
    random_pick = sizes.loc[sizes["size"] >= (k or 0), "mean"].tolist()
    room = sum(oracle) - sum(random_pick)
    return {
        "k": k,
        "groups": len(picked),
        "picked": float(np.mean(picked)),
        "random": float(np.mean(random_pick)),
        "oracle": float(np.mean(oracle)),
        "normalized": (sum(picked) - sum(random_pick)) / room if room > 1e-12 else None,
    }


def separability(rewards, systems, *, resamples: int = 1000, confidence: float = 0.95, seed: int = 0) -> float | None:
    """Share of pairs of systems (agent and model) whose bootstrap confidence intervals of mean reward do not
    overlap: can the reward tell the systems apart at all? None with fewer than two systems."""
    frame = pd.DataFrame({"reward": rewards, "system": systems})
    rng = np.random.default_rng(seed)
    tail = (1 - confidence) / 2
    intervals = []
    for _, group in frame.groupby("system", sort=True):
        values = group["reward"].to_numpy(float)
        means = np.concatenate([samples.mean(axis=1) for samples in resampled(values, resamples, rng)])
        intervals.append((float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))))
    pairs = [(a, b) for i, a in enumerate(intervals) for b in intervals[i + 1 :]]
    if not pairs:
        return None
    return sum(a[1] < b[0] or b[1] < a[0] for a, b in pairs) / len(pairs)


def metrics(rewards, truth, groups, systems, k: int | None) -> dict[str, Any]:
    """Every PPE metric of one reward over one set of runs."""
    bok = best_of_k(rewards, truth, groups, k)
    return {
        "n": len(rewards),
        "pairwise_accuracy": pairwise_accuracy(rewards, truth),
        "best_of_k": bok["picked"],
        "best_of_k_normalized": bok["normalized"],
        "best_of_k_groups": bok["groups"],
        "spearman": spearman(rewards, truth),
        "kendall_tau_b": kendall_tau_b(rewards, truth),
        "separability": separability(rewards, systems),
        "brier": brier(rewards, truth),
    }


def load_labels(path: Path) -> dict[str, float]:
    """Human labels by episode id from JSONL or a JSON list of `{episode_id, label}`; a label is a
    number in [0, 1] or a boolean."""
    try:
        entries = read_json_or_jsonl(path)
    except (OSError, ValueError) as exc:
        raise BenchmarkError(f"labels file {path}: {exc}") from None
    labels = {}
    for number, entry in enumerate(entries if isinstance(entries, list) else [entries], start=1):
        label = entry.get("label") if isinstance(entry, dict) else None
        if not (
            isinstance(entry, dict) and entry.get("episode_id") and isinstance(label, bool | int | float) and 0 <= label <= 1
        ):
            raise BenchmarkError(f"labels file {path}: entry {number} needs an episode_id and a label in [0, 1] or true/false")
        labels[str(entry["episode_id"])] = float(label)
    return labels


def ground_truth(scored: pd.DataFrame, labels: dict[str, float]) -> tuple[pd.Series, pd.Series]:
    """Each episode's ground truth (NaN without one) and where it came from: label, case or metadata.reward."""
    label = scored["episode_id"].map(labels).astype(float)
    case = scored["case_passed"].astype("boolean").astype(float)
    reward = scored["metadata_reward"].astype(float).clip(0.0, 1.0)
    truth = label.fillna(case).fillna(reward)
    source = pd.Series(
        np.select([label.notna(), case.notna(), reward.notna()], ["label", "case", "metadata.reward"], default="none"),
        index=scored.index,
    )
    return truth, source


def benchmark_rewards(
    scored_batches: Iterable[pd.DataFrame], config: RewardsConfig, labels: dict[str, float], k: int | None
) -> dict[str, Any]:
    """Every configured reward's metrics over the episodes with a ground truth, overall and per category.

    `scored_batches` as `warehouse.rewards.reward_inputs_in_parts` reads them: each batch's rewards are computed as it
    comes, and of its episodes with a ground truth only what the metrics read is kept (read whole, a day of 200,000
    took the process to 890 MB). Best-of-K groups are a task's runs of one day (its trials); separability's systems are
    agent and model.
    """
    book = RewardBook(config)
    sources: Counter[str] = Counter()
    rated = []
    for scored in scored_batches:
        truth, source = ground_truth(scored, labels)
        sources.update(source.tolist())
        with_truth = scored[truth.notna()]
        computed = book.evaluate_batch(book.names, reward_inputs(with_truth))
        rated.append(
            pd.DataFrame(
                {
                    "partition_date": with_truth["partition_date"],
                    "episode_id": with_truth["episode_id"],
                    "truth": truth[truth.notna()],
                    "group": with_truth["partition_date"].astype(str).str.cat(with_truth[["agent_id", "task_id"]], sep="/"),
                    "system": with_truth["agent_id"] + "/" + with_truth["model"].fillna(""),
                    "category": with_truth["category"].fillna("(none)"),
                    **{name: np.asarray(computed[name].values, dtype=float) for name in book.names},
                }
            )
        )
    # in the order of the days and ids whatever the batches': separability's resamples draw by position
    known = pd.concat(rated).sort_values(["partition_date", "episode_id"], ignore_index=True) if rated else None
    rows = [] if known is None else _metric_rows(known, book.names, k)
    counts = {name: sources[name] for name in ("label", "case", "metadata.reward", "none")}
    return {
        "ground_truth": f"{counts['label']} human labels, {counts['case']} case verdicts, "
        f"{counts['metadata.reward']} metadata.reward; {counts['none']} episodes without any left out",
        "sources": counts,
        "episodes": 0 if known is None else len(known),
        "k": k,
        "rows": rows,
    }


def _metric_rows(known: pd.DataFrame, names: list[str], k: int | None) -> list[dict[str, Any]]:
    """Each reward's metrics over the `known` runs (a column of values per reward), overall and per category."""
    rows = []
    for name in names:
        for category, subset in [("all", known), *sorted(known.groupby("category"), key=lambda item: item[0])]:
            rated = subset[subset[name].notna()]
            rewards = rated[name].to_numpy()
            rows.append(
                {"reward": name, "category": category, **metrics(rewards, rated["truth"], rated["group"], rated["system"], k)}
            )
    return rows


def benchmark_table(result: dict[str, Any]) -> pd.DataFrame:
    """The comparison as a table: one row per reward and category, figures rounded for reading."""
    columns = ["reward", "category", "n", "pairwise_accuracy", "best_of_k", "best_of_k_normalized", "spearman",
               "kendall_tau_b", "separability", "brier"]  # fmt: skip
    table = pd.DataFrame(result["rows"], columns=columns).rename(
        columns={"pairwise_accuracy": "pairwise_acc", "best_of_k_normalized": "bok_norm", "kendall_tau_b": "kendall_b"}
    )
    return table.astype({c: float for c in table.columns[3:]}).round(3)
