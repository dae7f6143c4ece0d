"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

try:
    from eval_pipeline_tests.fake_store import FakeStore
except ModuleNotFoundError:  # the project root is not on sys.path; pytest put this directory there
    from fake_store import FakeStore


@pytest.fixture
def fake_store() -> Iterator[FakeStore]:
    """A running fake episode store (see `fake_store.py`), empty; shut down at teardown."""
    with FakeStore() as store:
        yield store
