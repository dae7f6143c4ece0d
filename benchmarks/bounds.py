"""Bounded work for hostile inputs: the checks and the reward server take time in proportion to their input, the collector
memory in proportion to its limits.

Usage: .venv/bin/python benchmarks/bounds.py [--repeats 5]

Measures whichever `eval_pipeline` Python imports, so `PYTHONPATH=/path/to/other/checkout` measures that one
(its servers run from that checkout too). Each figure is the median of --repeats runs, with a baseline measured in
the same run, so that the ratio, not the machine, tells the story:

1. the checks (`run_checks`, numeric fabrication among them) on a 300 KB episode, a tool's meter readings and an
   answer stating totals that match none of them, against the same episode at a tenth of the size: linear is ~10x;
2. `serve-rewards` (its own process) answering a 277 KiB request, a prompt/completion pair of the same kind, against
   a tenth of it; and `GET /health` sent while that request is scored, against `GET /health` on an idle server;
3. `collect` (its own process, Linux: peak RSS from /proc): its peak RSS after a 3 MiB gzip bomb (3 GiB of zeros
   in one gzip member) against its peak after one small export. The collector runs with an address-space limit
   (--memory-limit-gib) so that a collector without bounds fails instead of exhausting the machine.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import resource
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import eval_pipeline
from eval_pipeline.config import ChecksConfig
from eval_pipeline.scoring.checks import run_checks
from eval_pipeline.scoring.trajectory import ToolCall, Trajectory

ROOT = Path(eval_pipeline.__file__).resolve().parent.parent  # the checkout measured
EPISODE_BYTES = 300_000
REQUEST_BYTES = 277 * 1024
BOMB_ZEROS = 3 * 1024**3  # compresses to about 3 MiB


def meter_report(size: int, seed: int) -> tuple[str, str]:
    """(a tool's output, an answer) of `size` bytes together: a meter's readings (1-100 kWh), half the bytes, and an
    answer stating daily totals (1,000-9,999 kWh), which match none of them: each claim is checked against every
    reading, the numeric-fabrication check's worst case."""
    rng = random.Random(seed)
    readings = json.dumps({"readings": [round(rng.uniform(1, 100), 1) for _ in range(size // 2 // 6)]})
    totals = ", ".join(f"{rng.uniform(1000, 9999):,.1f} kWh" for _ in range((size - len(readings)) // 13))
    return readings, f"Daily totals: {totals}."


def median_seconds(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def ratio_line(name: str, value: float, baseline_name: str, baseline: float, unit: str = "s") -> str:
    shown = (lambda v: f"{v * 1000:9.1f} ms") if unit == "s" else (lambda v: f"{v / 2**20:9.0f} MiB")
    return f"{name:<44} {shown(value)}   {baseline_name:<30} {shown(baseline)}   ratio {value / baseline:7.1f}x"


def checks(repeats: int) -> None:
    def episode(size: int) -> Trajectory:
        output, answer = meter_report(size, seed=size)
        return Trajectory("bench", "meter-bot", "success", answer, ["Daily totals?"], [ToolCall("readings", "{}", output)], 1)

    large, small = episode(EPISODE_BYTES), episode(EPISODE_BYTES // 10)
    config = ChecksConfig()
    made_up = sum(issue.check == "numeric_fabrication" for issue in run_checks(large, config))
    size = len(large.final_output or "") + len(large.calls[0].output or "")
    print(f"checks: {size:,} byte episode, {made_up} numbers matching no source")
    print(ratio_line("  all checks, 300 KB episode", median_seconds(lambda: run_checks(large, config), repeats),
                     "30 KB episode", median_seconds(lambda: run_checks(small, config), repeats)))  # fmt: skip


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def environment(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "EVAL_CONFIG": str(ROOT / "eval.toml"), "DAGSTER_HOME": str(home),
            "EVAL_DUCKDB_PATH": str(home / "eval.duckdb"), "EVAL_EPISODE_SOURCE": str(home / "episodes")}  # fmt: skip


def start(command: list[str], home: Path, **limits: int) -> subprocess.Popen:
    """An `eval-pipeline` command of the measured checkout in its own process, once it says it listens."""

    def limit_memory() -> None:
        if "address_space" in limits:
            resource.setrlimit(resource.RLIMIT_AS, (limits["address_space"], limits["address_space"]))

    process = subprocess.Popen([sys.executable, "-m", "eval_pipeline.cli", *command], cwd=ROOT, env=environment(home),
                               stdout=subprocess.PIPE, text=True, preexec_fn=limit_memory)  # fmt: skip
    if not process.stdout or not process.stdout.readline():
        raise SystemExit(f"{command[0]} did not start")
    return process


def request(port: int, method: str, path: str, body: bytes | None = None, headers: dict | None = None) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=3600)
    try:
        connection.request(method, path, body, headers or {})
        response = connection.getresponse()
        return response.status, response.read()
    except OSError as exc:
        return 0, str(exc).encode()  # the server dropped the connection
    finally:
        connection.close()


def reward_server(repeats: int, home: Path) -> None:
    def pair_request(size: int) -> bytes:
        """The readings as the prompt (the user gives them) and the totals as the completion, `size` bytes as sent."""

        def pair(content: int) -> bytes:
            output, answer = meter_report(content, seed=size)
            return json.dumps({"pairs": [{"prompt": output, "completion": answer}]}).encode()

        return pair(size * size // len(pair(size)))  # the JSON escapes of the prompt take their share

    port = free_port()
    server = start(["serve-rewards", "--port", str(port)], home)
    try:
        while request(port, "GET", "/health")[0] != 200:
            time.sleep(0.1)
        large, small = pair_request(REQUEST_BYTES), pair_request(REQUEST_BYTES // 10)
        print(f"serve-rewards: {len(large):,} byte request")

        def score(body: bytes) -> Callable[[], object]:
            return lambda: request(port, "POST", "/reward", body, {"Content-Type": "application/json"})

        def health() -> Callable[[], object]:
            return lambda: request(port, "GET", "/health")

        print(ratio_line("  POST /reward, 277 KiB request", median_seconds(score(large), repeats),
                         "27.7 KiB request", median_seconds(score(small), repeats)))  # fmt: skip
        during = []
        for _ in range(repeats):
            scoring = threading.Thread(target=score(large))
            scoring.start()
            time.sleep(0.05)  # the large request is on its way
            during.append(median_seconds(health(), 1))
            scoring.join()
        print(ratio_line("  GET /health while that request is scored", statistics.median(during),
                         "GET /health, idle", median_seconds(health(), repeats)))  # fmt: skip
    finally:
        server.terminate()
        server.wait(30)


def peak_rss(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return next(int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmHWM:"))


def gzip_bomb() -> bytes:
    member = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    megabyte = bytes(2**20)
    return b"".join(member.compress(megabyte) for _ in range(BOMB_ZEROS // len(megabyte))) + member.flush()


def collector(home: Path, memory_limit: int) -> None:
    bomb = gzip_bomb()
    port = free_port()
    process = start(["collect", "--port", str(port)], home, address_space=memory_limit)
    try:
        small = json.dumps({"resourceSpans": []}).encode()
        status = request(port, "POST", "/v1/traces", small, {"Content-Type": "application/json"})[0]
        baseline = peak_rss(process.pid)
        print(f"collect: small export answered {status}; a {len(bomb) / 2**20:.1f} MiB gzip bomb of {BOMB_ZEROS / 2**30:.0f} GiB "
              f"of zeros (address space limited to {memory_limit / 2**30:.0f} GiB):")  # fmt: skip
        headers = {"Content-Type": "application/json", "Content-Encoding": "gzip"}
        status, answer = request(port, "POST", "/v1/traces", bomb, headers)
        print(f"  answered {status or 'nothing'}: {answer[:100].decode(errors='replace')}")
        print(ratio_line("  peak RSS after the bomb", peak_rss(process.pid), "after one small export", baseline, unit="B"))
    finally:
        process.terminate()
        process.wait(30)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory-limit-gib", type=float, default=12, help="address space of the collector under test")
    args = parser.parse_args()
    print(f"measuring {ROOT}; medians of {args.repeats} runs")
    with tempfile.TemporaryDirectory(prefix="bounds-") as home:
        checks(args.repeats)
        reward_server(args.repeats, Path(home))
        collector(Path(home), int(args.memory_limit_gib * 2**30))
    return 0


if __name__ == "__main__":
    sys.exit(main())
