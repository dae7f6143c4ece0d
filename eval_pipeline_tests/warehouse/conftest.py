"""The warehouse tests run on each backend."""

from __future__ import annotations

import pytest

from eval_pipeline.warehouse.connection import Warehouse
from eval_pipeline_tests.postgres import lake_on


@pytest.fixture(params=["file", "lake"])
def warehouse(request, tmp_path) -> Warehouse:
    """A new warehouse of each backend: the single DuckDB file, and a DuckLake whose catalog is a database of the
    session's throwaway Postgres (its data under `tmp_path/lake`)."""
    if request.param == "file":
        return Warehouse(tmp_path / "eval.duckdb")
    lake = lake_on(request.getfixturevalue("postgres_server"), request.getfixturevalue("postgres_db"), tmp_path)
    return Warehouse(tmp_path / "eval.duckdb", lake=lake)
