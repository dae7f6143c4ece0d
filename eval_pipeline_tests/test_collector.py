"""The garbage collector's pace is set in both processes that run the graph: the command and the code location's."""

from __future__ import annotations

import ast
import subprocess
import sys

from eval_pipeline.collector import THRESHOLDS

PYTHON_DEFAULTS = (700, 10, 10)  # what walked the start's objects again and again

# Each child prints gc.get_threshold() as the process running the graph has it, after Python's defaults were restored.
_THROUGH_THE_COMMAND = f"""
import gc, eval_pipeline.cli as cli
gc.set_threshold(*{PYTHON_DEFAULTS})
cli.main = lambda: print(gc.get_threshold()) or 0  # what `run` would find
cli.entry_point()
"""
_THROUGH_THE_CODE_LOCATION = f"""
import gc
from eval_pipeline.definitions import defs
gc.set_threshold(*{PYTHON_DEFAULTS})
defs()  # as Dagster's run worker loads it
print(gc.get_threshold())
"""


def _threshold_in(program: str) -> tuple[int, ...]:
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    return ast.literal_eval(done.stdout.strip().splitlines()[-1])


def test_the_command_and_the_code_location_collect_garbage_at_one_pace():
    assert _threshold_in(_THROUGH_THE_COMMAND) == THRESHOLDS
    assert _threshold_in(_THROUGH_THE_CODE_LOCATION) == THRESHOLDS
    assert THRESHOLDS[0] > PYTHON_DEFAULTS[0]
