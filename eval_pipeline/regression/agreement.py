"""How far people's labels agree with the machine's verdicts: the episode verdict (the grader) and each judge rubric.

Cohen's kappa over pass/fail pairs, with the 2×2 counts behind it, so a reader sees whether a low kappa is
disagreement or too few labels. A person's latest label of an episode counts once, whichever queue it came from.
"""

from __future__ import annotations

from typing import TypedDict

import pandas as pd

JUDGE_PASS = 0.5  # a rubric's normalized verdict at or above this is a pass


class Agreement(TypedDict):
    """Pairs of (machine, person) verdicts: the counts of each combination, the observed share and Cohen's kappa
    (None where undefined: no pairs, or both sides always gave one and the same verdict)."""

    pairs: int
    both_pass: int
    both_fail: int
    only_machine_pass: int  # the machine passed it, the person failed it
    only_human_pass: int
    observed: float | None
    kappa: float | None


class RubricAgreement(Agreement):
    rubric: str


class LabelSummary(TypedDict):
    labels: int  # one per reviewer and episode
    reviewers: int
    passed: int
    failed: int
    grader: Agreement  # the episode verdict (`scores.passed`) against the labels
    judge: list[RubricAgreement]  # each judged rubric against the labels, by rubric


def cohens_kappa(machine: list[bool], human: list[bool]) -> Agreement:
    """κ = (pₒ − pₑ) / (1 − pₑ): observed agreement beyond what the two sides' pass rates give by chance."""
    pairs = list(zip(machine, human, strict=True))
    n = len(pairs)
    both_pass = sum(m and h for m, h in pairs)
    both_fail = sum(not m and not h for m, h in pairs)
    only_machine = sum(m and not h for m, h in pairs)
    only_human = n - both_pass - both_fail - only_machine
    observed = (both_pass + both_fail) / n if n else None
    chance = (
        ((both_pass + only_machine) * (both_pass + only_human) + (both_fail + only_human) * (both_fail + only_machine)) / (n * n)
        if n
        else None
    )
    kappa = None if observed is None or chance is None or chance >= 1 else (observed - chance) / (1 - chance)
    return {
        "pairs": n,
        "both_pass": both_pass,
        "both_fail": both_fail,
        "only_machine_pass": only_machine,
        "only_human_pass": only_human,
        "observed": observed,
        "kappa": kappa,
    }


def latest_labels(labels: pd.DataFrame) -> pd.DataFrame:
    """Each reviewer's latest label of each episode of a day (`labels` rows)."""
    if labels.empty:
        return labels
    ordered = labels.sort_values("labelled_at", kind="stable")
    return ordered.drop_duplicates(["reviewer", "partition_date", "episode_id"], keep="last")


def judge_verdicts(judgements: pd.DataFrame) -> pd.Series:
    """Per episode, whether its judged rubrics' mean normalized verdict passes (episodes not judged left out)."""
    judged = judgements[judgements["status"] == "judged"] if len(judgements) else judgements
    if judged.empty:
        return pd.Series(dtype=bool)
    return judged.groupby("episode_id")["normalized"].mean() >= JUDGE_PASS


def label_summary(labels: pd.DataFrame, scores: pd.DataFrame, judgements: pd.DataFrame) -> LabelSummary | None:
    """A day's labels against its episode verdicts (`scores` rows) and judge rubrics (`judgements` rows); None
    without labels."""
    latest = latest_labels(labels)
    if latest.empty:
        return None
    human = latest[["episode_id", "verdict"]].assign(human=latest["verdict"] == "pass")
    graded = human.merge(scores[["episode_id", "passed"]].dropna(subset=["passed"]), on="episode_id")
    rubrics: list[RubricAgreement] = []
    if len(judgements):
        judged = judgements[judgements["status"] == "judged"].dropna(subset=["normalized"])
        for rubric, group in judged.groupby("rubric", sort=True):
            paired = human.merge(group[["episode_id", "normalized"]], on="episode_id")
            machine = [bool(value >= JUDGE_PASS) for value in paired["normalized"]]
            rubrics.append({"rubric": str(rubric), **cohens_kappa(machine, paired["human"].tolist())})
    return {
        "labels": len(latest),
        "reviewers": int(latest["reviewer"].nunique()),
        "passed": int(human["human"].sum()),
        "failed": int((~human["human"]).sum()),
        "grader": cohens_kappa([bool(p) for p in graded["passed"]], graded["human"].tolist()),
        "judge": rubrics,
    }
