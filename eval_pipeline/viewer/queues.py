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
from eval_pipeline.warehouse.labels import DayVerdicts


@dataclass(frozen=True)
class ReviewPool:
    """A day's verdicts, as the queues draw from them."""

    day: date
    verdicts: DayVerdicts
    calibration_size: int  # [cases] calibration_sample
    passes_size: int  # [review] passes_sample


@dataclass(frozen=True)
class QueueKind:
    name: str  # in the queue's address and the `labels.queue` column
    title: str
    description: str
    episodes: Callable[[ReviewPool], list[str]]  # the episode ids to review, in order


def _failed(pool: ReviewPool) -> list[str]:
    return pool.verdicts.failed


def _calibration(pool: ReviewPool) -> list[str]:
    return sorted(seeded_draw("calibration", pool.day, pool.verdicts.failed_cases, pool.calibration_size))


def _disagreements(pool: ReviewPool) -> list[str]:
    """Episodes whose judge verdict differs from their case verdict (the checks' verdict without a case)."""
    judged = pool.verdicts.judged
    judge = judge_verdicts(judged)
    own = judged.set_index("episode_id")
    verdict = own["case_passed"].astype("boolean").fillna(own["passed"].astype("boolean"))
    both = pd.DataFrame({"judge": judge, "verdict": verdict}).dropna()
    return sorted(str(episode) for episode in both.index[both["judge"].astype(bool) != both["verdict"].astype(bool)])


def _passes(pool: ReviewPool) -> list[str]:
    """Drawn by position among the passed ids in order: the ids `seeded_draw` would draw from all of them, read alone."""
    positions = seeded_draw("passes", pool.day, range(pool.verdicts.passed), pool.passes_size)
    return sorted(pool.verdicts.passed_at(positions))


QUEUES: tuple[QueueKind, ...] = (
    QueueKind("failed", "Failed trials", "every episode of the day that failed", _failed),
    QueueKind("calibration", "Calibration sample", "the failed cases the daily report samples to check the grader", _calibration),
    QueueKind("disagreements", "Judge disagrees", "episodes where the LLM judge and the case or checks disagree", _disagreements),
    QueueKind("passes", "Sample of passes", "passed episodes drawn at random (seeded by the day)", _passes),
)
QUEUE_BY_NAME = {queue.name: queue for queue in QUEUES}
