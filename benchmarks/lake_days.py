"""A backfill on each warehouse backend: the single DuckDB file, serial, against a DuckLake with its catalog on
Postgres, by 1, 2 and 4 runs at once.

    .venv/bin/python benchmarks/lake_days.py [--days 8] [--shape 20x200x5] [--runs 1,2,4] [--repeats 3]

`--days` days of the throughput benchmark's generated episodes (`--shape`: AGENTSxTASKSxTRIALS a day) are evaluated
on the file by one `eval-pipeline run --start D1 --end DN`, and on a lake by N such processes started together, each
over its own contiguous share of the days, as N workers would (`--runs`). The lake's runs share one Dagster instance
on Postgres configured by `deploy/dagster-lake.yaml` (as deployed: at most 2 steps of the `warehouse` pool at once);
its catalog is another database of the same throwaway Postgres server on a free loopback port
(`eval_pipeline_tests/postgres.py`), its data a local directory. Every repeat of every setup starts from a fresh
warehouse and instance, the setups alternating. Printed: each repeat, then per setup the median wall, seconds per day,
episodes/s, the largest peak RSS of one process and the sum of the processes' peaks, and the ratio to the file.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.run_throughput import ChildRun, Shape, child_env, eval_pipeline_args, run_child, say, write_days
from eval_pipeline_tests.postgres import PostgresServer, lake_on, postgres_bin_dir, running_postgres

FIRST_DAY = date(2026, 3, 1)
LAKE_INSTANCE = Path(__file__).resolve().parent.parent / "deploy" / "dagster-lake.yaml"


@dataclass(frozen=True)
class Setup:
    backend: str  # "file" or "lake"
    runs: int  # processes started together, each over its share of the days

    @property
    def name(self) -> str:
        return "file, serial" if self.backend == "file" else f"lake, {self.runs} at once"


@dataclass(frozen=True)
class Outcome:
    wall_s: float
    children: list[ChildRun]

    @property
    def largest_rss_mib(self) -> float:
        return max(child.rss_mib for child in self.children)

    @property
    def summed_rss_mib(self) -> float:
        return sum(child.rss_mib for child in self.children)


def shares(days: list[date], runs: int) -> list[list[date]]:
    """`days` in `runs` contiguous shares, as equal as they divide."""
    size, extra = divmod(len(days), runs)
    cut, out = 0, []
    for n in range(runs):
        out.append(days[cut : cut + size + (n < extra)])
        cut += size + (n < extra)
    return out


def evaluate(setup: Setup, days: list[date], source: Path, home: Path, server: PostgresServer, logs: Path) -> Outcome:
    env = child_env(source, home, days[0])
    commands = [
        eval_pipeline_args("run", "--start", share[0].isoformat(), "--end", share[-1].isoformat(), "--fail-on", "never")
        for share in shares(days, setup.runs)
    ]
    with ExitStack() as databases:
        if setup.backend == "lake":
            catalog = databases.enter_context(server.database(f"lake_{home.name}"))
            instance = databases.enter_context(server.database(f"dagster_{home.name}"))
            lake = lake_on(server, catalog, home)
            (home / "dagster_home").mkdir(parents=True)
            shutil.copy(LAKE_INSTANCE, home / "dagster_home" / "dagster.yaml")
            env |= {"EVAL_WAREHOUSE": f"ducklake:{lake.catalog}", "EVAL_WAREHOUSE_DATA": lake.data_path}
            env |= server.environment(instance)
        started = time.perf_counter()
        with ThreadPoolExecutor(len(commands)) as pool:
            labels = [f"{home.name}-{setup.backend}-{n}" for n in range(len(commands))]  # log names of their own
            children = list(pool.map(lambda label, argv: run_child(label, argv, env, logs), labels, commands))
        return Outcome(time.perf_counter() - started, children)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--days", type=int, default=8)
    parser.add_argument("--shape", type=Shape.parse, default=Shape.parse("20x200x5"))
    parser.add_argument("--runs", default="1,2,4", help="how many runs at once on the lake, comma-separated")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        sys.exit("no Postgres server installed (Debian: postgresql)")
    days = [FIRST_DAY + timedelta(days=n) for n in range(args.days)]
    setups = [Setup("file", 1), *(Setup("lake", int(n)) for n in args.runs.split(","))]
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lake-days-", dir=out))
    outcomes: dict[Setup, list[Outcome]] = {setup: [] for setup in setups}
    try:
        write_days(work / "src", days, args.shape, args.seed)
        episodes = args.shape.episodes * args.days
        say(f"{args.days} days x {args.shape.episodes:,} episodes ({episodes:,} in all), {args.repeats} repeats")
        with running_postgres(bin_dir) as server:
            for repeat in range(args.repeats):
                for n, setup in enumerate(setups):
                    home = work / f"r{repeat}s{n}"
                    outcome = evaluate(setup, days, work / "src", home, server, work / "logs")
                    outcomes[setup].append(outcome)
                    say(f"  {setup.name:<16} {repeat + 1}/{args.repeats}: {outcome.wall_s:7.2f} s  "
                        f"peak RSS {outcome.largest_rss_mib:6.0f} MiB (sum {outcome.summed_rss_mib:6.0f})")  # fmt: skip
                    shutil.rmtree(home, ignore_errors=True)
        file_wall = statistics.median(outcome.wall_s for outcome in outcomes[setups[0]])
        say(f"\nmedians of {args.repeats} ({args.days} days, {args.shape} a day):")
        say("| setup | wall | per day | episodes/s | peak RSS of a run | sum of the runs' peaks | vs file |")
        say("|---|---|---|---|---|---|---|")
        for setup, done in outcomes.items():
            wall = statistics.median(outcome.wall_s for outcome in done)
            largest = statistics.median(outcome.largest_rss_mib for outcome in done)
            summed = statistics.median(outcome.summed_rss_mib for outcome in done)
            say(f"| {setup.name} | {wall:.1f} s | {wall / args.days:.2f} s | {episodes / wall:,.0f} | {largest:,.0f} MiB "
                f"| {summed:,.0f} MiB | {wall / file_wall:.2f}x |")  # fmt: skip
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
