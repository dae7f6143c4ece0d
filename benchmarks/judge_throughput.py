"""Judge throughput against a local OpenAI-compatible server that answers after 1 s.

Usage: .venv/bin/python benchmarks/judge_throughput.py [--latency 1.0] [--calls-per-slot 10]

The server runs in its own process. For each concurrency (32, 64) it judges enough episodes for
`calls-per-slot` rounds and prints calls per second against the ideal (concurrency / latency),
the client's CPU milliseconds per call, and the calls a second run makes with the cache.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from eval_pipeline.llm.gateway import Gateway
from eval_pipeline.llm.judge import RELEVANCE, judge_candidates
from eval_pipeline_tests.fake_openai import FakeOpenAI


def serve(latency: float, address: multiprocessing.Queue, stop: multiprocessing.Event) -> None:
    with FakeOpenAI() as server:
        server.latency_seconds = latency
        address.put(server.base_url)
        stop.wait()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--calls-per-slot", type=int, default=10)
    args = parser.parse_args()
    address, stop = multiprocessing.Queue(), multiprocessing.Event()
    server = multiprocessing.Process(target=serve, args=(args.latency, address, stop), daemon=True)
    server.start()
    base_url = address.get(timeout=30)
    try:
        for concurrency in (32, 64):
            n = concurrency * args.calls_per_slot
            candidates = pd.DataFrame(
                [(f"ep-{concurrency}-{i}", "bench", f"question {i}", f"answer number {i}") for i in range(n)],
                columns=["episode_id", "agent_id", "user_input", "final_output"],
            )
            cache: dict[str, dict] = {}  # stands in for the warehouse's llm_cache
            gateway = Gateway(base_url=base_url, api_key="bench", model="judge-bench", concurrency=concurrency)
            cpu, wall = time.process_time(), time.perf_counter()
            first = judge_candidates(gateway, candidates, [RELEVANCE], lambda keys: {})
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            cache.update({row.cache_key: json.loads(row.answer) for row in first.new_cache.itertuples()})
            second = judge_candidates(
                Gateway(base_url=base_url, api_key="bench", model="judge-bench", concurrency=concurrency),
                candidates,
                [RELEVANCE],
                lambda keys, cache=cache: {key: cache[key] for key in keys if key in cache},
            )
            ideal = concurrency / args.latency
            rate = first.calls / wall
            print(
                f"concurrency {concurrency:>3}: {first.calls} calls in {wall:5.1f} s = {rate:5.1f} calls/s "
                f"({rate / ideal:.0%} of ideal {ideal:.0f}/s); client CPU {1000 * cpu / first.calls:.2f} ms/call; "
                f"failed {len(gateway.usage.failures)}; second run: {second.calls} calls, {second.cache_hits} cache hits"
            )
    finally:
        stop.set()
        server.join(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
