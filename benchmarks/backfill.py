"""Wall time of a 30-day backfill: one `eval-pipeline run --start --end` against the same days one by one.

Usage: .venv/bin/python benchmarks/backfill.py [--days 30] [--episodes-per-day 48]

Both variants get a fresh warehouse and share one DAGSTER_HOME (as a deployment does); the
episodes come from the throughput benchmark's generator, 48 a day like the sample data.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_throughput import child_env, eval_pipeline_exe, make_tasks, run_child, write_days


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--episodes-per-day", type=int, default=48)
    args = parser.parse_args()
    first = date(2026, 1, 1)
    days = [first + timedelta(days=n) for n in range(args.days)]
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="backfill-", dir=out))
    try:
        write_days(work / "src", days, args.episodes_per_day, make_tasks(7), 7)
        instance = work / "dagster_home"
        exe = eval_pipeline_exe()
        print(f"{args.days} days x {args.episodes_per_day} episodes, {exe}")
        started = time.perf_counter()
        ranged = run_child("range", ["run", "--start", str(days[0]), "--end", str(days[-1]), "--fail-on", "never"],
                           child_env(work / "src", work / "range", instance), work)  # fmt: skip
        if ranged.returncode:
            print(ranged.stderr)
            return 1
        print(f"one run over the range:   {ranged.wall_s:7.1f} s")
        total = 0.0
        for day in days:
            single = run_child(
                "day", ["run", "--date", str(day), "--fail-on", "never"], child_env(work / "src", work / "single", instance), work
            )
            if single.returncode:
                print(single.stderr)
                return 1
            total += single.wall_s
        print(f"one run per day ({args.days}):    {total:7.1f} s  ({total / ranged.wall_s:.1f}x the range)")
        print(f"benchmark wall time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
