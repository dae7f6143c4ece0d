"""The model-answer cache (`llm_cache`) the judge and live replay share: a re-run of a day costs no calls."""

from __future__ import annotations

import json

import duckdb
import pandas as pd
import pyarrow as pa

from eval_pipeline.llm.asking import CACHE_COLUMNS
from eval_pipeline.warehouse.connection import Warehouse


def cached_answers(warehouse: Warehouse, keys: list[str]) -> dict[str, dict]:
    """key -> answer (parsed JSON), prompt_tokens, completion_tokens, for the keys the cache holds."""
    if not keys:
        return {}
    frame = warehouse.read_frame(
        "SELECT cache_key, answer, prompt_tokens, completion_tokens FROM llm_cache WHERE list_contains($keys, cache_key)",
        {"keys": keys},
    )
    return {
        row.cache_key: {
            "answer": json.loads(row.answer),
            "prompt_tokens": row.prompt_tokens,
            "completion_tokens": row.completion_tokens,
        }
        for row in frame.astype(object).where(frame.notna(), None).itertuples(index=False)
    }


def store_answers(con: duckdb.DuckDBPyConnection, new_cache: pd.DataFrame | pa.Table) -> None:
    """Add the new answers (`asking.CACHE_COLUMNS`, one row per key); a fresh sample (`run --no-cache`) replaces the
    one stored under its key. Call inside `Warehouse.transaction()`, with the rows the answers made.

    MERGE rather than a unique key: a lake warehouse has no unique keys."""
    if not len(new_cache):
        return
    updated = ", ".join(f"{column} = fresh.{column}" for column in CACHE_COLUMNS if column != "cache_key")
    con.execute(
        f"""MERGE INTO llm_cache USING (SELECT * FROM new_cache) AS fresh ON llm_cache.cache_key = fresh.cache_key
        WHEN MATCHED THEN UPDATE SET {updated}, created_at = current_timestamp
        WHEN NOT MATCHED THEN INSERT BY NAME"""
    )
