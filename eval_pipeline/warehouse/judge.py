"""What the judge reads (each candidate's first user message, its answer and its baseline's), what it
writes (rubric verdicts, pairwise comparisons, with its new cached answers)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from eval_pipeline.warehouse.connection import Warehouse, of_agent, replace_partition
from eval_pipeline.warehouse.llm_cache import store_answers
from eval_pipeline.warehouse.scores import scoring_input


def judge_inputs(warehouse: Warehouse, day: date, policy: str, agent_id: str | None = None) -> pd.DataFrame:
    """`episode_id, agent_id, user_input, final_output, baseline_episode_id, baseline_output` of the day's
    candidates; the baseline is the one scoring compares with (NULL where there is none)."""
    with warehouse.session():
        answers = _answers(warehouse, day, agent_id)
        paired = scoring_input(warehouse, day, policy, agent_id)
    paired = paired[["episode_id", "baseline_episode_id", "baseline_final_output"]].rename(
        columns={"baseline_final_output": "baseline_output"}
    )
    return answers.merge(paired, on="episode_id", how="left")


def _answers(warehouse: Warehouse, day: date, agent_id: str | None) -> pd.DataFrame:
    return warehouse.read_frame(
        f"""
        SELECT r.episode_id, r.agent_id,
               first(s.input ORDER BY s.step_index) AS user_input, any_value(r.final_output) AS final_output
        FROM replays r
        LEFT JOIN episode_steps s
            ON s.partition_date = r.partition_date AND s.episode_id = r.episode_id AND s.step_type = 'llm_call'
        WHERE r.partition_date = $day AND {of_agent("r.agent_id")}
        GROUP BY r.episode_id, r.agent_id
        ORDER BY r.episode_id
        """,
        {"day": day, "agent": agent_id},
    )


def write_judgements(
    warehouse: Warehouse, day: date, rubrics: pd.DataFrame, pairwise: pd.DataFrame, new_cache: pd.DataFrame, agent_id: str | None
) -> None:
    """New cache entries and the day's verdicts, in one transaction."""
    with warehouse.transaction() as con:
        store_answers(con, new_cache)
        replace_partition(con, "judgements", day, rubrics, agent_id)
        replace_partition(con, "pairwise_judgements", day, pairwise, agent_id)
