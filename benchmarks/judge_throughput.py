"""Judge throughput against a local OpenAI-compatible server that answers after 1 s.

Usage: .venv/bin/python benchmarks/judge_throughput.py [--latency 1.0] [--calls-per-slot 10] [--repeats 3]

The server runs in its own process. For each concurrency (32, 64) it judges enough episodes for
`calls-per-slot` rounds and prints the median calls per second against the ideal (concurrency /
latency), the client's CPU milliseconds per call, and the calls a second run makes with the cache;
for the gateway's aiohttp transport and, as the baseline, the SDK's default httpx one.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import RELEVANCE, judge_partition
from eval_pipeline_tests.fake_openai import FakeOpenAI


def serve(latency: float, address: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with FakeOpenAI() as server:
        server.latency_seconds = latency
        address.put(server.base_url)
        stop.wait()


TRANSPORTS = ("aiohttp", "httpx")  # ours, and the SDK's default as the baseline measured in the same run


def run_once(base_url: str, concurrency: int, args: argparse.Namespace, transport: str) -> dict:
    n = concurrency * args.calls_per_slot
    candidates = pd.DataFrame(
        [
            (f"ep-{concurrency}-{i}-{time.perf_counter_ns()}", "bench", f"question {i} {time.perf_counter_ns()}", f"answer {i}")
            for i in range(n)
        ],
        columns=["episode_id", "agent_id", "user_input", "final_output"],
    )
    gateway = Gateway(base_url=base_url, api_key="bench", model="judge-bench", concurrency=concurrency)
    if transport == "httpx":  # swap in the SDK's default client, everything else equal
        gateway._client = gateway._openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=gateway.max_retries)
    cpu, wall = time.process_time(), time.perf_counter()
    first = judge_partition(gateway, candidates, [RELEVANCE], lambda keys: {})
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    cache = {row.cache_key: {**row._asdict(), "answer": json.loads(row.answer)} for row in first.new_cache.itertuples()}
    second = judge_partition(
        Gateway(base_url=base_url, api_key="bench", model="judge-bench", concurrency=concurrency),
        candidates,
        [RELEVANCE],
        lambda keys: {key: cache[key] for key in keys if key in cache},  # stands in for the warehouse's llm_cache
    )
    return {
        "rate": first.calls / wall,
        "cpu_ms": 1000 * cpu / first.calls,
        "failed": len(gateway.usage.failures),
        "second_calls": second.calls,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--calls-per-slot", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    address, stop = multiprocessing.Queue(), multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(args.latency, address, stop), daemon=True)
    server.start()
    base_url = address.get(timeout=30)
    try:
        for concurrency in (32, 64):
            figures = {
                transport: [run_once(base_url, concurrency, args, transport) for _ in range(args.repeats)]
                for transport in TRANSPORTS
            }
            ideal = concurrency / args.latency
            for transport, runs in figures.items():
                rate, each = statistics.median(r["rate"] for r in runs), ", ".join(f"{r['rate']:.1f}" for r in runs)
                cpu = statistics.median(r["cpu_ms"] for r in runs)
                print(
                    f"concurrency {concurrency:>3} {transport:<8}: median of {len(runs)}: {rate:5.1f} calls/s "
                    f"({rate / ideal:.0%} of ideal {ideal:.0f}/s); client CPU {cpu:.2f} ms/call; "
                    f"runs {each} calls/s; failed {sum(r['failed'] for r in runs)}; "
                    f"second run: {max(r['second_calls'] for r in runs)} calls"
                )
    finally:
        stop.set()
        server.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
