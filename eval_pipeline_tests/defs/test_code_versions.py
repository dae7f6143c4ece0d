"""Each asset's code version follows only the config that decides it."""

import json
import os
import subprocess
import sys

import pytest

from eval_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow

PRINT_VERSIONS = """
import json
from eval_pipeline.definitions import defs
print(json.dumps({key.to_user_string(): v for a in defs().assets for key, v in a.code_versions_by_key.items()}))
"""


def code_versions(tmp_path, config_text: str) -> dict[str, str]:
    config = tmp_path / f"eval-{abs(hash(config_text))}.toml"
    config.write_text(config_text)
    env = {**os.environ, "EVAL_CONFIG": str(config), "EVAL_DUCKDB_PATH": str(tmp_path / "eval.duckdb")}
    out = subprocess.run(
        [sys.executable, "-c", PRINT_VERSIONS], env=env, cwd=tmp_path, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def changed(before: dict[str, str], after: dict[str, str]) -> set[str]:
    return {asset for asset in before if before[asset] != after[asset]}


def test_a_threshold_edit_marks_the_verdict_and_the_findings_stale(tmp_path):
    base = (PROJECT_ROOT / "eval.toml").read_text()
    before = code_versions(tmp_path, base)
    assert changed(
        before, code_versions(tmp_path, base.replace("cost_delta = { warning = 20", "cost_delta = { warning = 25"))
    ) == {"scores", "regression_findings"}  # the scores step decides the verdict from the thresholds
    assert changed(before, code_versions(tmp_path, base.replace("correctness = 0.4", "correctness = 0.5"))) == {"scores"}
    assert changed(before, code_versions(tmp_path, base.replace('policy = "first"', 'policy = "rolling"'))) == {"baselines"}
