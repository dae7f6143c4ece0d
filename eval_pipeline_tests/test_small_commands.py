"""Small read-only commands start fast because they import only what they need: a structural check, not a timing.

Importing Dagster costs about a second and pandas a third of one (benchmarks/run_throughput.py and the issue's
figures say how long the commands take); each command runs here in a fresh interpreter, which then reports
which of them it loaded.
"""

import json
import os
import subprocess
import sys

import pytest

from eval_pipeline.cli import main
from eval_pipeline.episodes.samples import write_samples
from eval_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow

_LOADED = """
import json, sys
from eval_pipeline.cli import main
code = main(sys.argv[1:]) if sys.argv[1:] else 0
heavy = ("dagster", "pandas", "numpy", "pyarrow", "httpx")
print(json.dumps([code, [name for name in heavy if name in sys.modules]]), file=sys.stderr)
"""


def loaded_by(argv: list[str]) -> tuple[int, list[str]]:
    """(exit code, heavy packages loaded) of `eval-pipeline ARGV` in a fresh interpreter."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    done = subprocess.run([sys.executable, "-c", _LOADED, *argv], capture_output=True, text=True, env=env, check=False)
    code, loaded = json.loads(done.stderr.strip().splitlines()[-1])
    return code, loaded


def test_read_only_commands_load_no_dagster_and_the_command_line_no_pandas(project_env, capsys):
    write_samples(project_env / "episodes")
    assert main(["run", "--date", "2026-11-01"]) == 0
    capsys.readouterr()

    assert loaded_by([]) == (0, [])  # the command line itself: its parser and every command's module
    for argv in (
        ["query", "SELECT count(*) AS n FROM episodes", "--format", "json"],
        ["query", "SELECT * FROM scores"],
        ["query", "SELECT * FROM findings", "--format", "csv"],
        ["status"],
        ["baseline", "list", "--date", "2026-11-02"],
        ["report", "--date", "2026-11-01"],
    ):
        assert loaded_by(argv) == (0, []), argv  # rows as DuckDB gives them, printed as they are: no frames, no Dagster


def test_a_run_over_files_without_a_webhook_loads_no_http_client(project_env):
    """httpx (0.1 s to import) is for the store, the gateway and the webhook: a run that calls none does not load it."""
    write_samples(project_env / "episodes")
    code, loaded = loaded_by(["run", "--date", "2026-11-01"])
    assert code == 0 and "dagster" in loaded and "httpx" not in loaded
