"""The benchmark scripts run as their usage lines say, on the smallest days: a script nobody runs rots (backfill.py
once imported names the throughput benchmark no longer had). Their figures are timings, so only their shape and
their counts are asserted."""

import re
import subprocess
import sys

import pytest

from eval_pipeline.settings import PROJECT_ROOT

pytestmark = pytest.mark.slow

_SECONDS = r"\d+\.\d+ s"


def _benchmark(script: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, str(PROJECT_ROOT / "benchmarks" / script), *args],
        capture_output=True,
        text=True,
        cwd=PROJECT_ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_throughput_benchmark_reports_its_day_against_the_floor_every_step_and_the_targets():
    out = _benchmark("run_throughput.py", "--day", "1x1x2", "--repeats", "1")
    assert "WARNING" not in out, out  # the run reported, and the load stored, every episode of the day
    (row,) = [line.split() for line in out.splitlines() if line.strip().startswith("1x1x2 ")]
    shape, episodes, tasks, wall, per_second, rss, floor, floor_rss, ratio, load, load_ratio = row
    assert (shape, episodes, tasks) == ("1x1x2", "2", "1")
    assert int(per_second) == round(2 / float(wall))
    assert float(wall) / float(floor) == pytest.approx(float(ratio), rel=0.03)  # of figures rounded to 0.01 s
    assert float(wall) / float(load) == pytest.approx(float(load_ratio), rel=0.03)
    assert float(rss) > 0 and float(floor_rss) > 0
    steps = out.split("seconds per step")[1].split("peak RSS MiB per step")[0]
    memory = out.split("peak RSS MiB per step")[1].split("read-only commands")[0]
    for step in ("episodes", "scores", "regression_findings", "eval_report"):
        assert re.search(rf"^\s+{step}\s+\d+\.\d\d$", steps, re.M), steps
        assert re.search(rf"^\s+{step}\s+[1-9]\d*$", memory, re.M), memory  # a step's peak is never 0
    outside = float(re.search(r"\(wall outside the steps\)\s+(\d+\.\d\d)$", steps, re.M)[1])
    before_first_step = float(re.search(r"\(of it, before the first step\)\s+(\d+\.\d\d)$", steps, re.M)[1])
    assert 0 < before_first_step <= outside < float(wall)
    commands = re.findall(rf"^\s+(eval-pipeline .+?) +{_SECONDS}$", out, re.M)
    assert len(commands) == 4, out
    # the issue's targets that bound this day, and the read-only commands', each judged by its own figures
    targets = out.split("targets (issue #19)")[1]
    rows = re.findall(
        r"^\s+(.+?)\s+(\d+x\d+x\d+)?\s+(\d+\.\d\d) (?:s|MiB)\s+(\d+\.\d\d) (?:s|MiB)\s+(met|NOT met)$", targets, re.M
    )
    assert [(says, day) for says, day, *_ in rows] == [
        ("fixed start <= 2 s", "1x1x2"),
        *((f"{command} < 1 s", "") for command in commands),
    ], targets
    assert float(rows[0][2]) == before_first_step
    for _, _, measured, bound, verdict in rows:
        assert (verdict == "met") == (float(measured) <= float(bound))


def test_backfill_benchmark_times_one_run_over_the_range_against_one_run_a_day():
    out = _benchmark("backfill.py", "--days", "2", "--day", "1x1x2")
    assert "2 days x 2 episodes (1x1x2)" in out
    assert re.search(rf"one run over the range: +{_SECONDS}$", out, re.M), out
    assert re.search(rf"one run per day \(2\): +{_SECONDS}  \(\d+\.\dx the range\)$", out, re.M), out
