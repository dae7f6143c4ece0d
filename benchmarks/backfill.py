"""Wall time of a backfill: one `eval-pipeline run --start --end` against the same days run one by one.

Usage: .venv/bin/python benchmarks/backfill.py [--days 30] [--day 2x8x3] [--repeats 1]

Both variants get a fresh warehouse and share one DAGSTER_HOME (as a deployment does); the
episodes come from the throughput benchmark's generator (`--day`, AGENTSxTASKSxTRIALS; the default
2x8x3 is 48 episodes a day, like the sample data).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_throughput import OUT, ChildFailed, Shape, child_env, eval_pipeline_args, run_child, write_days

FIRST_DAY = date(2026, 1, 1)


def _range_and_days(work: Path, days: list[date], repeat: int) -> tuple[float, float]:
    """Seconds of one run over `days` and of one run per day, each on a warehouse of its own."""
    source, instance, logs = work / "src", work / "dagster_home", work / "logs"
    ranged = run_child(
        "range",
        eval_pipeline_args("run", "--start", str(days[0]), "--end", str(days[-1]), "--fail-on", "never"),
        child_env(source, work / f"range-{repeat}", days[0], instance),
        logs,
    )
    single = [
        run_child(
            "day",
            eval_pipeline_args("run", "--date", str(day), "--fail-on", "never"),
            child_env(source, work / f"single-{repeat}", days[0], instance),
            logs,
        ).wall_s
        for day in days
    ]
    return ranged.wall_s, sum(single)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--day", type=Shape.parse, default=Shape.parse("2x8x3"), help="each day's shape (default 2x8x3)")
    parser.add_argument("--repeats", type=int, default=1, help="timed repetitions of both variants (default 1)")
    parser.add_argument("--seed", type=int, default=20260101)
    args = parser.parse_args(argv)
    if args.days < 1 or args.repeats < 1:
        parser.error("--days and --repeats must be >= 1")
    days = [FIRST_DAY + timedelta(days=n) for n in range(args.days)]
    OUT.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="backfill-", dir=OUT))
    try:
        write_days(work / "src", days, args.day, args.seed)
        print(f"{args.days} days x {args.day.episodes} episodes ({args.day}), {args.repeats} repeat(s)", flush=True)
        started = time.perf_counter()
        try:
            walls = [_range_and_days(work, days, repeat) for repeat in range(args.repeats)]
        except ChildFailed:  # run_child printed the child's output
            return 1
        ranged, single = (statistics.median(variant) for variant in zip(*walls, strict=True))
        print(f"one run over the range:   {ranged:7.1f} s")
        print(f"one run per day ({args.days}):  {single:7.1f} s  ({single / ranged:.1f}x the range)")
        print(f"benchmark wall time {time.perf_counter() - started:.0f} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
