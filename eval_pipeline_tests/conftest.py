"""Shared fixtures."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

# The tests pin their days (the samples end 2026-11-03), so their partitions must not follow the clock. Set before
# any test module imports the definitions, which build the partitions once.
os.environ.setdefault("EVAL_HISTORY_START", "2025-01-01")

from eval_pipeline.cli.command import obey_interrupts
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.settings import PROJECT_ROOT
from eval_pipeline_tests.fake_openai import FakeOpenAI
from eval_pipeline_tests.fake_store import FakeStore
from eval_pipeline_tests.postgres import PostgresServer, postgres_bin_dir, running_postgres
from eval_pipeline_tests.s3_store import S3Store, running_s3
from eval_pipeline_tests.webhook_receiver import WebhookReceiver

# The tests run Dagster in this process, as `eval-pipeline` does; under a CI that starts them with SIGINT ignored
# they need the same cure (see `obey_interrupts`).
obey_interrupts()


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
def s3_store() -> Iterator[S3Store]:
    """An S3-compatible store on 127.0.0.1 with an empty bucket (see `s3_store.py`); stopped at teardown."""
    with running_s3() as store:
        yield store


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    """A running OpenAI-compatible server; shut down at teardown."""
    with FakeOpenAI() as server:
        yield server


def project_environment(root: Path) -> dict[str, str]:
    """The variables that point every path the CLI resolves under `root`, offline."""
    return {
        "EVAL_EPISODE_SOURCE": str(root / "episodes"),
        "EVAL_DUCKDB_PATH": str(root / "eval.duckdb"),
        "EVAL_REPORTS_DIR": str(root / "reports"),
        "DAGSTER_HOME": str(root / "dagster_home"),
        "EVAL_CONFIG": str(PROJECT_ROOT / "eval.toml"),
        "EVAL_REPLAY_MODE": "dry",
        "EVAL_UI_BASE_URL": "http://127.0.0.1:3000",
        "EVAL_VIEWER_BASE_URL": "http://127.0.0.1:8765",  # the links reports and alerts carry
    }


@pytest.fixture
def project_env(tmp_path, monkeypatch) -> Path:
    """Every path the CLI resolves points under tmp_path; the process environment is restored after."""
    monkeypatch.chdir(tmp_path)
    for name, value in project_environment(tmp_path).items():
        monkeypatch.setenv(name, value)
    return tmp_path


@pytest.fixture
def sample_root(project_env) -> Path:
    """`project_env` with the sample episodes in its source."""
    write_samples(project_env / "episodes")
    return project_env


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A throwaway Postgres server for the whole session (see `postgres.py`), stopped at its end."""
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        pytest.skip("no Postgres server installed: no initdb under /usr/lib/postgresql/*/bin or on PATH (Debian: postgresql)")
    with running_postgres(bin_dir) as server:
        yield server


@pytest.fixture
def postgres_db(postgres_server) -> Iterator[str]:
    """A new empty database of the session's server for this test alone, dropped after."""
    with postgres_server.database(f"test_{uuid.uuid4().hex[:12]}") as name:
        yield name


@pytest.fixture
def postgres_env(postgres_server: PostgresServer, postgres_db: str, monkeypatch) -> PostgresServer:
    """The connection in the environment, as a deployment gives it (inherited by the runs the tests start)."""
    for name, value in postgres_server.environment(postgres_db).items():
        monkeypatch.setenv(name, value)
    return postgres_server
