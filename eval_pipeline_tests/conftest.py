"""Shared fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from eval_pipeline_tests.fake_openai import FakeOpenAI
from eval_pipeline_tests.fake_store import FakeStore
from eval_pipeline_tests.webhook_receiver import WebhookReceiver


@pytest.fixture
def fake_store() -> Iterator[FakeStore]:
    """A running fake episode store (see `fake_store.py`), empty; shut down at teardown."""
    with FakeStore() as store:
        yield store


@pytest.fixture
def webhook() -> Iterator[WebhookReceiver]:
    """A running webhook receiver that records POSTed alerts; shut down at teardown."""
    with WebhookReceiver() as receiver:
        yield receiver


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running OpenAI-compatible server; shut down at teardown."""
    with FakeOpenAI() as server:
        yield server
