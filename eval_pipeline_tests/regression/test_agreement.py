"""Agreement between people's labels and the machine's verdicts, and the queues that ask for those labels."""

from datetime import date

import duckdb
import pandas as pd
import pytest

from eval_pipeline.capture.cases import key_phrases
from eval_pipeline.regression.agreement import cohens_kappa, label_summary
from eval_pipeline.reports.calibration import seeded_draw
from eval_pipeline.viewer.queues import QUEUE_BY_NAME, ReviewPool
from eval_pipeline.warehouse.labels import review_pool

P, F = True, False
DAY = date(2026, 11, 2)


def test_kappa_against_the_hand_computed_value():
    # pairs: 4 both pass, 3 both fail, 2 only the machine passed, 1 only the person passed.
    # pₒ = 7/10; the machine passes 6 of 10, the person 5: pₑ = (6·5 + 4·5)/100 = 0.5; κ = (0.7 − 0.5)/(1 − 0.5) = 0.4
    machine = [P, P, P, P, F, F, F, P, F, P]
    human = [P, P, F, P, F, P, F, P, F, F]
    assert cohens_kappa(machine, human) == {
        "pairs": 10, "both_pass": 4, "both_fail": 3, "only_machine_pass": 2, "only_human_pass": 1,
        "observed": 0.7, "kappa": pytest.approx(0.4),
    }  # fmt: skip
    assert cohens_kappa([P, P], [P, P])["kappa"] is None  # one verdict on both sides: chance explains everything
    assert cohens_kappa([], [])["kappa"] is None and cohens_kappa([], [])["observed"] is None


def labels(*rows: tuple[str, str, str, int]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"reviewer": r, "episode_id": e, "verdict": v, "labelled_at": pd.Timestamp(2026, 11, 3, 10, t), "partition_date": DAY,
          "queue": "failed"} for r, e, v, t in rows]
    )  # fmt: skip


def test_each_reviewers_latest_label_counts_once_against_the_grader_and_each_rubric():
    scores = pd.DataFrame({"episode_id": ["a", "b", "c"], "passed": [True, False, None]})
    judgements = pd.DataFrame(
        {"episode_id": ["a", "b", "a", "b"], "rubric": ["tone", "tone", "relevance", "relevance"],
         "normalized": [0.9, 0.25, 0.4, None], "status": ["judged", "judged", "judged", "failed"]}
    )  # fmt: skip
    given = labels(("ana", "a", "fail", 1), ("ana", "a", "pass", 2), ("ben", "b", "pass", 3), ("ben", "c", "fail", 4))
    summary = label_summary(given, scores, judgements)
    assert summary is not None
    assert (summary["labels"], summary["reviewers"], summary["passed"], summary["failed"]) == (3, 2, 2, 1)
    grader = summary["grader"]  # c has no verdict: left out
    assert (grader["pairs"], grader["both_pass"], grader["only_human_pass"]) == (2, 1, 1)
    by_rubric = {j["rubric"]: j for j in summary["judge"]}
    assert (by_rubric["tone"]["pairs"], by_rubric["tone"]["both_pass"], by_rubric["tone"]["only_human_pass"]) == (2, 1, 1)
    assert by_rubric["relevance"]["pairs"] == 1 and by_rubric["relevance"]["only_human_pass"] == 1  # b's failed call left out
    assert label_summary(given.iloc[:0], scores, judgements) is None


def pool_of(scores: pd.DataFrame, judgements: pd.DataFrame, passes_size: int = 2) -> ReviewPool:
    """The queues' pool as the viewer reads it, of a warehouse holding these rows (DuckDB reads the frames by name)."""
    con, scores = duckdb.connect(), scores.astype({"passed": "boolean", "case_passed": "boolean"})
    con.execute("CREATE TABLE current_scores AS SELECT *, $day AS partition_date FROM scores", {"day": DAY})
    con.execute("CREATE TABLE judgements AS SELECT *, $day AS partition_date FROM judgements", {"day": DAY})
    return ReviewPool(DAY, review_pool(con, DAY), calibration_size=2, passes_size=passes_size)


def test_each_queue_is_its_declared_filter_the_same_on_every_reload():
    scores = pd.DataFrame(
        {"episode_id": [f"e{n}" for n in range(8)], "agent_id": "bot",
         "passed": [F, F, P, P, P, None, F, P], "case_passed": [F, None, P, F, None, None, F, P]}
    )  # fmt: skip
    judgements = pd.DataFrame(
        {"episode_id": ["e0", "e1", "e2", "e3"], "rubric": "tone", "normalized": [0.9, 0.1, 0.8, 0.2], "status": "judged"}
    )
    pool = pool_of(scores, judgements)
    assert QUEUE_BY_NAME["failed"].episodes(pool) == ["e0", "e1", "e6"]
    calibration = QUEUE_BY_NAME["calibration"].episodes(pool)
    assert len(calibration) == 2 and set(calibration) <= {"e0", "e3", "e6"}  # drawn from the failed cases
    assert QUEUE_BY_NAME["disagreements"].episodes(pool) == ["e0"]  # e3: the judge fails it as its case does
    passes = QUEUE_BY_NAME["passes"].episodes(pool)
    assert len(passes) == 2 and set(passes) <= {"e2", "e3", "e4", "e7"}
    shuffled = pool_of(scores.sample(frac=1, random_state=1, ignore_index=True), judgements.sample(frac=1, random_state=1))
    assert all(kind.episodes(shuffled) == kind.episodes(pool) for kind in QUEUE_BY_NAME.values())


def test_the_passes_sample_read_by_position_is_the_draw_from_every_passed_id():
    """The passes queue reads only the ids it draws, not every passed episode's (a day of 200,000 took a server from
    193 to 340 MB): drawn by position, they are the ids the seeded draw from all of them gives."""
    ids = [f"ep-{n:05d}" for n in range(3_000)]
    scores = pd.DataFrame({"episode_id": ids, "agent_id": "bot", "passed": [n % 7 != 0 for n in range(3_000)],
                           "case_passed": None})  # fmt: skip
    judgements = pd.DataFrame(columns=["episode_id", "rubric", "normalized", "status"])
    passed = sorted(scores.loc[scores["passed"], "episode_id"])
    for size in (1, 40, len(passed), len(passed) + 5):
        expected = sorted(seeded_draw("passes", DAY, passed, size))
        shuffled = scores.sample(frac=1, random_state=size, ignore_index=True)
        assert QUEUE_BY_NAME["passes"].episodes(pool_of(shuffled, judgements, size)) == expected


def test_key_phrases_are_the_answers_facts_first():
    answer = "Your order A-10482 shipped on Monday via UPS and arrives in 3 days. Thanks for waiting patiently!"
    assert key_phrases(answer) == ["A-10482", "3", "Monday"]
    assert key_phrases("") == []
