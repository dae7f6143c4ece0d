"""A backfill on each warehouse backend: the single DuckDB file against a DuckLake with its catalog on Postgres.

    .venv/bin/python benchmarks/lake_days.py [--days 8] [--shape 20x200x5] [--repeats 3]

`--days` days of the throughput benchmark's generated episodes (`--shape`: AGENTSxTASKSxTRIALS a day) are evaluated
by one `eval-pipeline run --start D1 --end DN` per backend, `--repeats` times, alternating the backends, each time
into a fresh warehouse (a new file; a new Postgres database and data directory) and a fresh DAGSTER_HOME. The lake's
catalog is a throwaway Postgres server on a free loopback port (`eval_pipeline_tests/postgres.py`), its data a
local directory. Printed: each run, then per backend the median wall, seconds per day, episodes/s and peak RSS,
and the lake's ratio to the file.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.run_throughput import ChildRun, Shape, child_env, eval_pipeline_args, run_child, say, write_days
from eval_pipeline_tests.postgres import lake_on, postgres_bin_dir, running_postgres

FIRST_DAY = date(2026, 3, 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=8)
    parser.add_argument("--shape", type=Shape.parse, default=Shape.parse("20x200x5"))
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        sys.exit("no Postgres server installed (Debian: postgresql)")
    days = [FIRST_DAY + timedelta(days=n) for n in range(args.days)]
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lake-days-", dir=out))
    runs: dict[str, list[ChildRun]] = {"file": [], "lake": []}
    command = eval_pipeline_args("run", "--start", days[0].isoformat(), "--end", days[-1].isoformat(), "--fail-on", "never")
    try:
        write_days(work / "src", days, args.shape, args.seed)
        episodes = args.shape.episodes * args.days
        say(f"{args.days} days x {args.shape.episodes:,} episodes ({episodes:,} in all), {args.repeats} repeats")
        with running_postgres(bin_dir) as server:
            for repeat in range(args.repeats):
                for backend in runs:
                    home = work / f"{backend}-{repeat}"
                    env = child_env(work / "src", home, days[0])
                    if backend == "lake":
                        with server.database(f"lake_{repeat}") as name:
                            lake = lake_on(server, name, home)
                            env |= {"EVAL_WAREHOUSE": f"ducklake:{lake.catalog}", "EVAL_WAREHOUSE_DATA": lake.data_path}
                            run = run_child(backend, command, env, work / "logs")
                    else:
                        run = run_child(backend, command, env, work / "logs")
                    runs[backend].append(run)
                    say(f"  {backend} {repeat + 1}/{args.repeats}: {run.wall_s:7.2f} s  peak RSS {run.rss_mib:6.0f} MiB")
                    shutil.rmtree(home, ignore_errors=True)
        medians = {backend: statistics.median(run.wall_s for run in done) for backend, done in runs.items()}
        say(f"\nmedians of {args.repeats} (`run --start --end` over {args.days} days, {args.shape} a day):")
        say("| backend | wall | per day | episodes/s | peak RSS |")
        say("|---|---|---|---|---|")
        for backend, done in runs.items():
            rss = statistics.median(run.rss_mib for run in done)
            say(f"| {backend} | {medians[backend]:.1f} s | {medians[backend] / args.days:.2f} s | "
                f"{episodes / medians[backend]:,.0f} | {rss:,.0f} MiB |")  # fmt: skip
        say(f"lake / file: {medians['lake'] / medians['file']:.2f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
