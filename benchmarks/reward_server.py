"""Reward server latency and throughput, as a training loop sees it.

Usage: .venv/bin/python benchmarks/reward_server.py [--repeats 5] [--seconds 3]

Starts `eval-pipeline serve-rewards` in its own process on a free loopback port, then, like one
trainer worker, sends requests one after another over a keep-alive connection: batches of 1 and 64,
of prompt/completion pairs (with a reference answer) and of six-step canonical episodes. For each it
prints the median over the runs of requests/s, items/s and the p50 / p99 request latency.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def pair(rng: random.Random) -> dict:
    order, amount = rng.randint(10000, 99999), rng.randint(20, 400)
    prompt = [{"role": "user", "content": f"Where is my refund for order A-{order}? The invoice says ${amount}.99."}]
    completion = [{"role": "assistant", "content": f"I refunded ${amount}.99 for order A-{order}; it arrives in 3-5 days."}]
    return {"prompt": prompt, "completion": completion, "expected": {"reference": f"Refunded ${amount}.99 for A-{order}."}}


def episode(rng: random.Random, index: int) -> dict:
    order = rng.randint(10000, 99999)
    steps = [
        ("llm_call", None, f"Where is order A-{order}?", "I will look it up."),
        ("tool_call", "lookup_order", json.dumps({"order_id": f"A-{order}"}), None),
        ("tool_result", "lookup_order", None, json.dumps({"status": "shipped", "eta_days": rng.randint(1, 5)})),
        ("tool_call", "send_email", json.dumps({"to": "customer", "template": "shipped"}), None),
        ("tool_result", "send_email", None, '{"sent": true}'),
        ("llm_call", None, "Summarize for the customer.", f"Order A-{order} has shipped; an email is on its way."),
    ]
    return {
        "episode_id": f"bench-{index}",
        "agent_id": "support-bot",
        "status": "success",
        "started_at": "2026-11-02T09:00:00Z",
        "metadata": {"task_id": "support-bot/where-is-my-order", "expected": {"expected_tools": ["lookup_order", "send_email"]}},
        "steps": [
            {
                "step_index": i,
                "step_type": kind,
                "tool_name": tool,
                "input_summary": given,
                "output_summary": out,
                "tokens": 120,
                "cost_usd": 0.0004,
                "duration_ms": 300.0,
            }
            for i, (kind, tool, given, out) in enumerate(steps)
        ],
    }


def body(kind: str, batch: int, rng: random.Random) -> bytes:
    items = [pair(rng) for _ in range(batch)] if kind == "pairs" else [episode(rng, i) for i in range(batch)]
    return json.dumps({kind: items}).encode()


def run_once(port: int, kind: str, batch: int, seconds: float, rng: random.Random) -> dict:
    """Requests one after another for about `seconds`; each request a fresh batch (built before timing)."""
    bodies = [body(kind, batch, rng) for _ in range(32)]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    latencies, started = [], time.perf_counter()
    while time.perf_counter() - started < seconds:
        payload = bodies[len(latencies) % len(bodies)]
        sent = time.perf_counter()
        connection.request("POST", "/reward", payload, {"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = json.loads(response.read())
        latencies.append(time.perf_counter() - sent)
        assert response.status == 200 and len(answer["rewards"]) == batch, answer
    elapsed = time.perf_counter() - started
    connection.close()
    latencies.sort()
    return {
        "rps": len(latencies) / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "requests": len(latencies),
    }


def wait_for(port: int, server: subprocess.Popen) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"the server exited with {server.returncode}")
        try:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            connection.request("GET", "/health")
            if connection.getresponse().status == 200:
                return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("the server did not answer /health within 60 s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one run")
    args = parser.parse_args()
    port = free_port()
    env = {**os.environ, "EVAL_CONFIG": str(ROOT / "eval.toml")}
    command = [sys.executable, "-m", "eval_pipeline.cli", "serve-rewards", "--port", str(port)]
    server = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    try:
        wait_for(port, server)
        rng = random.Random(7)
        print(f"reward server on 127.0.0.1:{port}, default reward; median of {args.repeats} runs of {args.seconds:g} s each")
        for kind in ("pairs", "episodes"):
            for batch in (1, 64):
                run_once(port, kind, batch, 0.5, rng)  # warm up
                runs = [run_once(port, kind, batch, args.seconds, rng) for _ in range(args.repeats)]
                rps = statistics.median(r["rps"] for r in runs)
                p50 = statistics.median(r["p50_ms"] for r in runs)
                p99 = statistics.median(r["p99_ms"] for r in runs)
                each = ", ".join(f"{r['rps']:.1f}" for r in runs)
                print(
                    f"{kind:<8} batch {batch:>2}: {rps:7.1f} requests/s ({rps * batch:7.0f} items/s), "
                    f"p50 {p50:6.1f} ms, p99 {p99:6.1f} ms  (runs: {each} requests/s)"
                )
    finally:
        server.terminate()
        server.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
