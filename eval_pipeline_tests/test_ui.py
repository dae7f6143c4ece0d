"""`eval-pipeline ui` for real: webserver and daemon on a free port, asked over GraphQL."""

import os
import signal
import socket
import subprocess
import sys
import time

import httpx
import pytest

from eval_pipeline_tests.browser import HEADLESS, needs_chromium

pytestmark = pytest.mark.slow

QUERY = """
{ repositoriesOrError { ... on RepositoryConnection { nodes {
    name
    assetNodes { assetKey { path } groupName }
    schedules { name scheduleState { status } }
    sensors { name sensorState { status } }
} } } }
"""
ASSETS = {"episodes", "baselines", "replays", "scores", "regression_findings", "eval_report"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
def ui(tmp_path):
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "dagster_home"), "EVAL_DUCKDB_PATH": str(tmp_path / "eval.duckdb")}
    process = subprocess.Popen(
        [sys.executable, "-m", "eval_pipeline.cli", "ui", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its own process group: webserver, daemon and code server stop together
    )
    try:
        yield f"http://127.0.0.1:{port}", tmp_path
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)


def ask(base_url: str, deadline_seconds: float = 120.0) -> dict:
    deadline = time.monotonic() + deadline_seconds
    while True:
        try:
            answer = httpx.post(f"{base_url}/graphql", json={"query": QUERY}, timeout=10).json()
            nodes = answer["data"]["repositoriesOrError"].get("nodes")
            if nodes:
                return nodes[0]
        except (httpx.HTTPError, KeyError, ValueError):
            pass
        if time.monotonic() > deadline:
            raise TimeoutError("the UI did not answer in time")
        time.sleep(1)


def test_ui_serves_the_graph_the_schedules_and_running_sensors(ui):
    base_url, project = ui
    repository = ask(base_url)
    assets = {"/".join(node["assetKey"]["path"]) for node in repository["assetNodes"]}
    assert assets >= ASSETS
    assert {node["groupName"] for node in repository["assetNodes"] if node["assetKey"]["path"][0] in ASSETS} == {"evaluation"}
    schedules = {s["name"]: s["scheduleState"]["status"] for s in repository["schedules"]}
    sensors = {s["name"]: s["sensorState"]["status"] for s in repository["sensors"]}
    assert schedules == {"nightly_sweep": "RUNNING", "morning_report_check": "RUNNING"}
    assert sensors == {"new_episodes": "RUNNING", "regression_alerts": "RUNNING", "run_failure_alerts": "RUNNING"}
    assert (project / "dagster_home" / "dagster.yaml").exists()  # history persists under the project's DAGSTER_HOME


CHROMIUM_FLAGS = [*HEADLESS, "--virtual-time-budget=20000", "--dump-dom"]  # let GraphQL queries finish before the DOM is read


@needs_chromium
def test_a_browser_sees_the_six_assets_on_the_graph_page(ui):
    base_url, project = ui
    ask(base_url)  # the UI is up
    page = subprocess.run(
        ["chromium", *CHROMIUM_FLAGS, f"--user-data-dir={project / 'chromium'}", f"{base_url}/asset-groups/evaluation/lineage"],
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    assert all(f">{asset}<" in page for asset in ASSETS), page[:500]
