"""How long the tests' throwaway Postgres takes: a new cluster started on a free loopback port, and stopped.

Usage: .venv/bin/python benchmarks/postgres_server.py [--repeats 3]

Prints each repeat and the median of `running_postgres` (eval_pipeline_tests/postgres.py) from entry until the
server accepts connections (initdb, then pg_ctl start), and from exit until the server is gone and its directory
removed. The session fixture pays both once per test run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from eval_pipeline_tests.postgres import postgres_bin_dir, running_postgres


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    repeats = parser.parse_args().repeats
    bin_dir = postgres_bin_dir()
    if bin_dir is None:
        sys.exit("no Postgres server installed (Debian: postgresql)")
    starts, stops = [], []
    for _ in range(repeats):
        entered = time.perf_counter()
        with running_postgres(bin_dir) as server:
            server.connect().close()
            started = time.perf_counter()
        stops.append(time.perf_counter() - started)
        starts.append(started - entered)
    for name, seconds in (("start", starts), ("stop", stops)):
        runs = " ".join(f"{value:.2f}" for value in seconds)
        print(f"{name:<5} median {statistics.median(seconds):.2f} s  ({runs}; {bin_dir})")


if __name__ == "__main__":
    main()
