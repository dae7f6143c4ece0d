"""What the judge reads (each candidate's first user message, its answer and its baseline's), a part at a time, and
what it writes (rubric verdicts, pairwise comparisons, with its new cached answers), spooled a part at a time and
written in one transaction: what a day's judge holds is one part, and the warehouse is not held while it asks."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import closing
from datetime import date
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pyarrow.ipc

from eval_pipeline.warehouse.connection import Warehouse, clear_partition, frame_of, insert_rows, of_agent
from eval_pipeline.warehouse.llm_cache import store_answers
from eval_pipeline.warehouse.replays import candidate_parts
from eval_pipeline.warehouse.scores import day_scoring_input

# Candidates judged at a time. Read whole, a day of 200,000 with a budget of 2,000 calls took the step 25.5 s at a peak
# of 1,746 MiB (every candidate's prompts and requests built, every row held).
JUDGE_PART_EPISODES = 20_000
_SPOOLED_ROWS = 50_000  # rows of the day's candidates spooled at a time

_ANSWERS = f"""
SELECT r.episode_id, r.agent_id,
       first(s.input ORDER BY s.step_index) AS user_input, any_value(r.final_output) AS final_output
FROM replays r
LEFT JOIN episode_steps s
    ON s.partition_date = r.partition_date AND s.episode_id = r.episode_id AND s.step_type = 'llm_call'
WHERE r.partition_date = $day AND {of_agent("r.agent_id")}
GROUP BY r.episode_id, r.agent_id
"""


def judge_inputs_in_parts(warehouse: Warehouse, day: date, policy: str, agent_id: str | None = None) -> Iterator[pd.DataFrame]:
    """The day's candidates (`episode_id, agent_id, user_input, final_output, baseline_episode_id, baseline_output`, the
    baseline scoring compares with: NULL where there is none), a part of about JUDGE_PART_EPISODES at a time, each in
    episode order. The same question about the same answer falls in one part (split by a hash of both), so a run asks
    it once. The day is read in one session into a file per part, and the parts from those files."""
    with warehouse.spool(".judge-inputs-") as spool:
        files = _spool_inputs(warehouse, day, policy, agent_id, Path(spool))
        with closing(duckdb.connect()) as reader:
            for path in files:
                part = pyarrow.ipc.open_file(path).read_all()  # noqa: F841 (read by name)
                yield frame_of(reader.execute("SELECT * EXCLUDE (part) FROM part ORDER BY episode_id"))


def _spool_inputs(warehouse: Warehouse, day: date, policy: str, agent_id: str | None, spool: Path) -> list[Path]:
    with warehouse.connect(read_only=warehouse.exists()) as con:
        parts = candidate_parts(con, day, agent_id, JUDGE_PART_EPISODES)
        scoring, params = day_scoring_input(con, day, policy, agent_id)
        candidates = f"""
            SELECT a.*, p.baseline_episode_id, p.baseline_final_output AS baseline_output,
                   hash(a.user_input, a.final_output) % $parts AS part
            FROM ({_ANSWERS}) a LEFT JOIN ({scoring}) p USING (episode_id)"""
        reader = con.execute(candidates, {**params, "agent": agent_id, "parts": parts}).to_arrow_reader(_SPOOLED_ROWS)
        writers: dict[int, pyarrow.ipc.RecordBatchFileWriter] = {}
        try:
            for batch in reader:
                rows = pa.Table.from_batches([batch])
                for part in pc.unique(rows["part"]).to_pylist():
                    if part not in writers:
                        writers[part] = pyarrow.ipc.new_file(str(spool / f"part-{part}.arrow"), rows.schema)
                    writers[part].write_table(rows.filter(pc.equal(rows["part"], part)))
        finally:
            for writer in writers.values():
                writer.close()
    return [spool / f"part-{part}.arrow" for part in sorted(writers)]


class JudgementSpool:
    """A day's verdicts and new cached answers, a part at a time in files of a private directory (`Warehouse.spool`),
    written to the warehouse in one transaction (`write`): all of the day's verdicts land, or none."""

    _TABLES = ("judgements", "pairwise_judgements", "llm_cache")

    def __init__(self, warehouse: Warehouse) -> None:
        self.warehouse, self._held = warehouse, warehouse.spool(".judgements-")
        self.directory, self.parts = Path(self._held.name), 0

    def __enter__(self) -> JudgementSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self._held.cleanup()

    def add(self, rubrics: pd.DataFrame, pairwise: pd.DataFrame, new_cache: pd.DataFrame) -> None:
        for table, rows in zip(self._TABLES, (rubrics, pairwise, new_cache), strict=True):
            feather.write_feather(pa.Table.from_pandas(rows, preserve_index=False), self._file(table, self.parts))
        self.parts += 1

    def write(self, day: date, agent_id: str | None) -> None:
        """Replace the day's verdicts (one agent's, when scoped) with the spooled ones, and add the new cached answers."""
        with self.warehouse.transaction() as con:
            for table in ("judgements", "pairwise_judgements"):
                clear_partition(con, table, day, agent_id)
            for part in range(self.parts):
                rubrics, pairwise, new_cache = (feather.read_table(self._file(table, part)) for table in self._TABLES)
                store_answers(con, new_cache)
                for table, rows in (("judgements", rubrics), ("pairwise_judgements", pairwise)):
                    if rows.num_rows:
                        insert_rows(con, table, rows)

    def _file(self, table: str, part: int) -> Path:
        return self.directory / f"{table}-{part}.arrow"
