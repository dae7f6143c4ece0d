"""The review queues: which of a day's episodes a person is asked to label, one declaration per kind in `QUEUES`.

Each kind is a filter over the day's verdicts; random ones are seeded by the day, so every reviewer and every
reload sees the same queue. The calibration queue is the daily report's calibration sample, drawn the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import date

import pandas as pd

from eval_pipeline.regression.agreement import judge_verdicts
from eval_pipeline.reports.calibration import seeded_draw


@dataclass(frozen=True)
class ReviewPool:
    """A day's verdicts, as the queues filter them."""

    day: date
    scores: pd.DataFrame  # `episode_id, agent_id, passed, case_passed`, by episode id
    judgements: pd.DataFrame  # each judged episode's mean normalized verdict (`warehouse.labels.review_pool`)
    calibration_size: int  # [cases] calibration_sample
    passes_size: int  # [review] passes_sample


@dataclass(frozen=True)
class QueueKind:
    name: str  # in the queue's address and the `labels.queue` column
    title: str
    description: str
    episodes: Callable[[ReviewPool], list[str]]  # the episode ids to review, in order


def _ids(frame: pd.DataFrame) -> list[str]:
    """The episode ids, sorted: a seeded draw from them is then the same whatever order the rows came in."""
    return sorted(str(episode) for episode in frame["episode_id"])


def _failed(pool: ReviewPool) -> list[str]:
    return _ids(pool.scores[pool.scores["passed"].astype("boolean").eq(False).fillna(False)])


def _calibration(pool: ReviewPool) -> list[str]:
    failed_cases = _ids(pool.scores[pool.scores["case_passed"].astype("boolean").eq(False).fillna(False)])
    return sorted(seeded_draw("calibration", pool.day, failed_cases, pool.calibration_size))


def _disagreements(pool: ReviewPool) -> list[str]:
    """Episodes whose judge verdict differs from their case verdict (the checks' verdict without a case)."""
    judge = judge_verdicts(pool.judgements)
    own = pool.scores.set_index("episode_id")
    verdict = own["case_passed"].astype("boolean").fillna(own["passed"].astype("boolean"))
    both = pd.DataFrame({"judge": judge, "verdict": verdict}).dropna()
    return sorted(str(episode) for episode in both.index[both["judge"].astype(bool) != both["verdict"].astype(bool)])


def _passes(pool: ReviewPool) -> list[str]:
    passed = _ids(pool.scores[pool.scores["passed"].astype("boolean").eq(True).fillna(False)])
    return sorted(seeded_draw("passes", pool.day, passed, pool.passes_size))


QUEUES: tuple[QueueKind, ...] = (
    QueueKind("failed", "Failed trials", "every episode of the day that failed", _failed),
    QueueKind("calibration", "Calibration sample", "the failed cases the daily report samples to check the grader", _calibration),
    QueueKind("disagreements", "Judge disagrees", "episodes where the LLM judge and the case or checks disagree", _disagreements),
    QueueKind("passes", "Sample of passes", "passed episodes drawn at random (seeded by the day)", _passes),
)
QUEUE_BY_NAME = {queue.name: queue for queue in QUEUES}
