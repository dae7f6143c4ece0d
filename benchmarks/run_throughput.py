"""End-to-end throughput of `eval-pipeline run`, measured as a whole subprocess.

    .venv/bin/python benchmarks/run_throughput.py [--episodes-per-day 20000] [--repeats 3] [--history-days 60]

What it measures (every child gets a fresh DuckDB file, DAGSTER_HOME and reports dir under
benchmarks/out/, all passed as absolute paths):

1. throughput: two consecutive days of N synthetic AIR episodes each, `run --start D1 --end D2
   --fail-on never`; median wall time, episodes/s (2N / wall) and median peak RSS of the child
   (`os.wait4` rusage, ru_maxrss in KiB on Linux);
2. fixed overhead: the same command over the same two days with a tiny input (10 episodes/day),
   interleaved with (1) so both see the same machine load;
3. history scaling: re-running only the last day (`run --date LAST`) of a warehouse holding
   `--history-days` earlier days, against one holding a single earlier day; the ratio should be
   about 1.0 if no stage rescans history.

The episodes are generated with string templates (no pydantic), deterministically from --seed,
in the AIR episode-store JSONL shape (one `episodes-YYYY-MM-DD.jsonl` per day): ~20 agents,
up to 200 tasks each, several trials per task a day, ±4 % jitter on cost and latency and a few
percent of regressions (cost, latency, tool sequence, failed outcome).
Exit status: 0 on success, 1 when a child run fails (its stderr is printed).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
OUT = PROJECT / "benchmarks" / "out"

# ---------------------------------------------------------------------------------------------
# Synthetic episodes
# ---------------------------------------------------------------------------------------------

AGENTS = 20
TASKS_PER_AGENT = 200
TRIALS = 5  # per task and day; N episodes/day fill N / TRIALS (agent, task) slots
JITTER = 0.04
REGRESSION_RATE = 0.03  # share of episodes that deviate (split evenly over the kinds below)
REGRESSION_KINDS = ("cost", "latency", "tools", "failure")
OMIT_FINAL_OUTPUT = 0.10  # exercises the "last llm_call output" fallback

MODELS = (
    ("gpt-4o-mini", "openai"),
    ("gpt-4o", "openai"),
    ("gpt-4.1", "openai"),
    ("claude-sonnet-4", "anthropic"),
    ("gemini-2.5-flash", "google"),
)
TOOLS = (
    "lookup_order",
    "send_email",
    "check_refund_policy",
    "issue_refund",
    "update_address",
    "search_faq",
    "escalate_to_human",
    "web_search",
    "fetch_page",
    "summarize",
    "read_file",
    "search_code",
    "edit_file",
    "run_tests",
    "get_invoice",
    "get_usage",
    "apply_credit",
)
CATEGORIES = (
    "order_status",
    "refunds",
    "account",
    "comparison",
    "summarization",
    "factual",
    "research",
    "bugfix",
    "refactor",
    "explanation",
    "invoices",
    "usage",
    "credits",
)
WORDS = (
    "order",
    "refund",
    "invoice",
    "shipped",
    "arrives",
    "credit",
    "tests",
    "pass",
    "vector",
    "database",
    "summary",
    "release",
    "python",
    "market",
    "estimate",
    "policy",
    "email",
    "label",
    "address",
    "usage",
    "spike",
    "outage",
    "fixed",
    "renamed",
    "config",
    "merged",
)

# One step's JSON. Everything fixed per task (types, tools, texts) is substituted once per task;
# per episode only the numbers, timestamp and record id are %-formatted in (no json.dumps per step).
_STEP_STATIC = '{"step_index":%d,"step_type":"%s","tool_name":%s,"model":%s,"provider":%s,"input_summary":%s,"output_summary":%s,'
_STEP_DYNAMIC = '"tokens":%d,"cost_usd":%.8f,"duration_ms":%.1f,"timestamp":"%s","air_record_id":"%s"}'
_EPISODE = (
    '{"episode_id":"%s","agent_id":"%s","status":"%s","started_at":"%s","ended_at":"%s",'
    '"total_tokens":%d,"total_cost_usd":%.8f,"total_duration_ms":%.1f,"step_count":6,'
    '"tools_used":%s,"metadata":%s,"steps":[%s]}'
)
# (step_type, share of cost/tokens, share of latency) of the six steps
_SHAPE = (
    ("llm_call", 2, 3),
    ("tool_call", 0, 2),
    ("tool_result", 0, 0.2),
    ("tool_call", 0, 2),
    ("tool_result", 0, 0.2),
    ("llm_call", 3, 3),
)
_COST_SUM = sum(c for _, c, _ in _SHAPE)
_LAT_SUM = sum(w for _, _, w in _SHAPE)
_J = json.dumps


def _pct(text: str) -> str:
    return text.replace("%", "%%")


@dataclass(frozen=True)
class Task:
    agent_id: str
    task_id: str
    category: str
    cost_usd: float
    duration_ms: float
    tokens: int
    head: tuple[tuple[str, ...], tuple[str, ...]]  # step templates 0..4: normal tools, regressed tools
    tail: tuple[str, str]  # step template 5: right answer, failed answer
    tools_used: tuple[str, str]  # JSON lists: normal, regressed
    final_output: tuple[str, str]  # JSON strings: right answer, failed answer


def _task(rng: random.Random, agent_id: str, t: int) -> Task:
    model, provider = (_J(x) for x in MODELS[int(agent_id[-2:]) % len(MODELS)])
    question = _J(f"Task {t} for {agent_id}: " + " ".join(rng.choices(WORDS, k=10)) + "?")
    tools = tuple(rng.sample(TOOLS, 2))
    alt = tuple(rng.sample([x for x in TOOLS if x not in tools], 2))
    answer = " ".join(rng.choices(WORDS, k=rng.randrange(8, 20))).capitalize() + "."
    wrong = "I could not finish this task: " + " ".join(rng.choices(WORDS, k=6)) + "."

    def steps(fields):
        return tuple(
            _pct(_STEP_STATIC % (k, stype, *f)) + _STEP_DYNAMIC
            for k, ((stype, _, _), f) in enumerate(zip(_SHAPE, fields, strict=False))
        )

    def head(pair):
        a, b = (_J(x) for x in pair)
        return steps(
            [
                ("null", model, provider, question, _J(f"Plan: call {pair[0]}, {pair[1]}.")),
                (a, "null", "null", _J(f'{{"call": {a}}}'), "null"),
                (a, "null", "null", "null", _J(f'{{"ok": true, "tool": {a}}}')),
                (b, "null", "null", _J(f'{{"call": {b}}}'), "null"),
                (b, "null", "null", "null", _J(f'{{"ok": true, "tool": {b}}}')),
            ]
        )

    def tail(text):
        return (
            _pct(
                '{{"step_index":5,"step_type":"llm_call","tool_name":null,"model":{},"provider":{},'
                '"input_summary":{},"output_summary":{},'.format(model, provider, _J("Compose the final answer."), _J(text))
            )
            + _STEP_DYNAMIC
        )

    return Task(
        agent_id=agent_id,
        task_id=f"{agent_id}/task-{t:03d}",
        category=rng.choice(CATEGORIES),
        cost_usd=rng.uniform(0.001, 0.1),
        duration_ms=rng.uniform(2_000, 30_000),
        tokens=rng.randrange(800, 12_000),
        head=(head(tools), head(alt)),
        tail=(tail(answer), tail(wrong)),
        tools_used=tuple("[{}]".format(",".join(_J(x) for x in pair)) for pair in (tools, alt)),
        final_output=(_J(answer), _J(wrong)),
    )


def make_tasks(seed: int) -> list[Task]:
    """AGENTS x TASKS_PER_AGENT tasks, the same on every day (so baselines carry over)."""
    rng = random.Random(f"{seed}:tasks")
    return [_task(rng, f"agent-{a:02d}", t) for a in range(AGENTS) for t in range(TASKS_PER_AGENT)]


def _clock(day_prefix: str, ms: float) -> str:
    """ISO timestamp (ms, Z) of `ms` milliseconds after the day's midnight (< 24 h)."""
    s, ms = divmod(int(ms), 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return "%sT%02d:%02d:%02d.%03dZ" % (day_prefix, h, m, s, ms)


_COST_W = tuple(c / _COST_SUM for _, c, _ in _SHAPE)
_LAT_W = tuple(w / _LAT_SUM for _, _, w in _SHAPE)


def day_lines(day: date, n: int, tasks: list[Task], seed: int) -> list[str]:
    """The JSONL lines of `n` episodes starting on `day`, sorted by start time."""
    rng = random.Random(f"{seed}:{day.isoformat()}")
    prefix = day.isoformat()
    slots = max(1, -(-n // TRIALS))  # ceil: (agent, task) pairs in use
    # spread the slots over agents first, so small days still see many agents
    picked = [tasks[(s % AGENTS) * TASKS_PER_AGENT + (s // AGENTS) % TASKS_PER_AGENT] for s in range(slots)]
    band = 86_400_000 * 0.95 / TRIALS  # trial k starts in the k-th band of the day
    ids = rng.randbytes(16 * 6 * n).hex()  # air_record_ids, 32 hex digits each
    uniform, random_ = rng.uniform, rng.random
    out: list[tuple[float, str]] = []
    for i in range(n):
        task = picked[i % slots]
        trial = i // slots
        cost_f = 1 + uniform(-JITTER, JITTER)
        lat_f = 1 + uniform(-JITTER, JITTER)
        status, variant, answer = "success", 0, 0
        if random_() < REGRESSION_RATE:
            kind = REGRESSION_KINDS[rng.randrange(len(REGRESSION_KINDS))]
            if kind == "cost":
                cost_f *= rng.choice((1.3, 1.6))
            elif kind == "latency":
                lat_f *= rng.choice((1.45, 1.9))
            elif kind == "tools":
                variant = 1
            else:
                status, answer = "failure", 1
        start = (trial % TRIALS) * band + uniform(0, band - 600_000)
        templates = (*task.head[variant], task.tail[answer])
        tok, cost, lat = task.tokens * cost_f, task.cost_usd * cost_f, task.duration_ms * lat_f
        steps, elapsed, tokens_sum, cost_sum = [], 0.0, 0, 0.0
        for k in range(6):
            t, c, d = round(tok * _COST_W[k]), round(cost * _COST_W[k], 8), round(lat * _LAT_W[k], 1)
            h = ids[(i * 6 + k) * 32 : (i * 6 + k + 1) * 32]
            steps.append(
                templates[k] % (t, c, d, _clock(prefix, start + elapsed), f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}")
            )
            elapsed += d
            tokens_sum += t
            cost_sum += c
        meta = '{"task_id":"%s","trial":%d,"category":"%s"%s}' % (
            task.task_id,
            trial,
            task.category,
            "" if random_() < OMIT_FINAL_OUTPUT else ',"final_output":' + task.final_output[answer],
        )
        out.append(
            (
                start,
                _EPISODE
                % (
                    f"ep-{prefix}-{task.task_id.replace('/', '-')}-t{trial}",
                    task.agent_id,
                    status,
                    _clock(prefix, start),
                    _clock(prefix, start + elapsed),
                    tokens_sum,
                    cost_sum,
                    elapsed,
                    task.tools_used[variant],
                    meta,
                    ",".join(steps),
                ),
            )
        )
    out.sort(key=lambda pair: pair[0])
    return [line for _, line in out]


def write_days(directory: Path, days: list[date], n: int, tasks: list[Task], seed: int) -> int:
    """Write one episodes-YYYY-MM-DD.jsonl per day; return the bytes written."""
    directory.mkdir(parents=True, exist_ok=True)
    total = 0
    for day in days:
        data = ("\n".join(day_lines(day, n, tasks, seed)) + "\n").encode()
        (directory / f"episodes-{day.isoformat()}.jsonl").write_bytes(data)
        total += len(data)
    return total


# ---------------------------------------------------------------------------------------------
# Running the CLI as a child process
# ---------------------------------------------------------------------------------------------

_DAY_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(\d+) episodes\s")  # the CLI's line per day


@dataclass
class ChildRun:
    label: str
    wall_s: float
    maxrss_kib: int
    returncode: int
    stdout: str
    stderr: str

    @property
    def rss_mib(self) -> float:
        return self.maxrss_kib / 1024

    def episodes_seen(self) -> int:
        return sum(int(m.group(2)) for line in self.stdout.splitlines() if (m := _DAY_LINE.match(line)))


class ChildFailed(Exception):
    pass


def eval_pipeline_exe() -> str:
    beside = Path(sys.executable).with_name("eval-pipeline")
    if beside.exists():
        return str(beside)
    found = shutil.which("eval-pipeline")
    if not found:
        raise SystemExit("eval-pipeline not found beside this python nor on PATH; run with .venv/bin/python")
    return found


def child_env(source: Path, home: Path, dagster_home: Path | None = None) -> dict[str, str]:
    """The environment of one child: every path absolute and private to `home`; nothing networked.

    `dagster_home` is shared across runs when given, as a deployment's instance is.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVAL_", "OPENAI_", "DAGSTER_"))}
    env.update(
        EVAL_EPISODE_SOURCE=str(source.resolve()),
        EVAL_DUCKDB_PATH=str((home / "eval.duckdb").resolve()),
        EVAL_REPORTS_DIR=str((home / "reports").resolve()),
        DAGSTER_HOME=str((dagster_home or home / "dagster_home").resolve()),
        EVAL_REPLAY_MODE="dry",
        PYTHONUNBUFFERED="1",
    )
    config = PROJECT / "eval.toml"
    if config.is_file():
        env["EVAL_CONFIG"] = str(config)
    return env


def run_child(label: str, args: list[str], env: dict[str, str], logdir: Path) -> ChildRun:
    """Run `eval-pipeline ARGS`; wall time and the child's peak RSS (wait4 rusage)."""
    logdir.mkdir(parents=True, exist_ok=True)
    n = len(list(logdir.glob("*.stdout")))
    out_path, err_path = logdir / f"{n:02d}-{label}.stdout", logdir / f"{n:02d}-{label}.stderr"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            [eval_pipeline_exe(), *args], stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=env, cwd=PROJECT
        )
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here; keep Popen from waiting again
    run = ChildRun(
        label, wall, usage.ru_maxrss, proc.returncode, out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
    )
    if run.returncode != 0:
        print(f"\nFAILED: eval-pipeline {' '.join(args)} ({label}) exited {run.returncode} after {wall:.1f} s", file=sys.stderr)
        print(f"--- stdout ---\n{run.stdout}--- stderr ---\n{run.stderr}", file=sys.stderr)
        raise ChildFailed(label)
    return run


def say(text: str = "") -> None:
    print(text, flush=True)


def show_child_output(run: ChildRun) -> None:
    for line in run.stdout.splitlines():
        if _DAY_LINE.match(line):
            say(f"      | {line}")


# ---------------------------------------------------------------------------------------------
# The three measurements
# ---------------------------------------------------------------------------------------------


def measure(args: argparse.Namespace, session: Path) -> list[str]:
    n, m, repeats = args.episodes_per_day, args.history_episodes_per_day, args.repeats
    d1 = date.fromisoformat(args.first_day)
    d2 = d1 + timedelta(days=1)
    range_args = ["run", "--start", d1.isoformat(), "--end", d2.isoformat(), "--fail-on", "never"]
    logs = session / "logs"

    t0 = time.perf_counter()
    tasks = make_tasks(args.seed)
    size = write_days(session / "src-throughput", [d1, d2], n, tasks, args.seed)
    gen_s = time.perf_counter() - t0
    write_days(session / "src-tiny", [d1, d2], args.tiny_episodes_per_day, tasks, args.seed)
    say(
        f"generated 2 x {n} episodes (+ task table) ({size / 2**20:.1f} MiB JSONL) in {gen_s:.2f} s "
        f"({2 * n / gen_s:,.0f} episodes/s) -> {session / 'src-throughput'}"
    )

    # 1 + 2: throughput and fixed overhead, interleaved so both see the same load
    say(
        f"\n[1+2] throughput and fixed overhead: eval-pipeline {' '.join(range_args)}  ({repeats} x, fresh warehouse each; "
        "one DAGSTER_HOME for all, created by an untimed warm-up run, as a deployment keeps its instance)"
    )
    instance_home = session / "dagster_home"
    run_child("warm-up", range_args, child_env(session / "src-tiny", session / "warm-up", instance_home), logs)
    big, tiny = [], []
    for i in range(repeats):
        for kind, runs, src in (("tp", big, "src-throughput"), ("tiny", tiny, "src-tiny")):
            home = session / f"{kind}-{i}"
            run = run_child(kind, range_args, child_env(session / src, home, instance_home), logs)
            runs.append(run)
            say(
                f"  {kind:<4} run {i + 1}/{repeats}: {run.wall_s:6.2f} s  peak RSS {run.rss_mib:6.0f} MiB"
                f"  ({run.episodes_seen()} episodes reported)"
            )
            if i == 0:
                show_child_output(run)
            if not args.keep:
                shutil.rmtree(home, ignore_errors=True)
    seen = big[0].episodes_seen()
    if seen != 2 * n:
        say(f"  WARNING: the run reported {seen} episodes, expected {2 * n}")

    big_wall = statistics.median(r.wall_s for r in big)
    big_rss = statistics.median(r.rss_mib for r in big)
    tiny_wall = statistics.median(r.wall_s for r in tiny)
    tiny_rss = statistics.median(r.rss_mib for r in tiny)

    # 3: history scaling
    last = d1 + timedelta(days=100)  # a separate stretch of days from the throughput ones
    history = [last - timedelta(days=k) for k in range(args.history_days, -1, -1)]
    long_src, short_src = session / "src-history-long", session / "src-history-short"
    t0 = time.perf_counter()
    hsize = write_days(long_src, history, m, tasks, args.seed)
    short_src.mkdir(parents=True, exist_ok=True)
    for day in history[-2:]:  # byte-identical last two days
        shutil.copy2(long_src / f"episodes-{day.isoformat()}.jsonl", short_src)
    say(
        f"\n[3] history: generated {len(history)} days x {m} episodes ({hsize / 2**20:.0f} MiB) "
        f"in {time.perf_counter() - t0:.1f} s"
    )

    homes = {"long": session / "hist-long", "short": session / "hist-short"}
    sources = {"long": long_src, "short": short_src}
    setup = {}
    for kind, first in (("long", history[0]), ("short", history[-2])):
        setup_args = ["run", "--start", first.isoformat(), "--end", last.isoformat(), "--fail-on", "never"]
        run = run_child(f"setup-{kind}", setup_args, child_env(sources[kind], homes[kind]), logs)
        setup[kind] = run
        days = (last - first).days + 1
        say(
            f"  setup {kind:<5}: eval-pipeline run --start {first} --end {last}: {days} days in {run.wall_s:.1f} s "
            f"({days * m / run.wall_s:,.0f} episodes/s, {run.wall_s / days:.2f} s/day), peak RSS {run.rss_mib:.0f} MiB"
        )
    rerun_args = ["run", "--date", last.isoformat(), "--fail-on", "never"]
    rerun: dict[str, list[ChildRun]] = {"long": [], "short": []}
    for i in range(repeats):
        for kind in ("long", "short"):
            run = run_child(f"rerun-{kind}", rerun_args, child_env(sources[kind], homes[kind]), logs)
            rerun[kind].append(run)
            say(f"  re-run {last} ({kind:<5} history) {i + 1}/{repeats}: {run.wall_s:6.2f} s  peak RSS {run.rss_mib:5.0f} MiB")
    show_child_output(rerun["long"][-1])
    show_child_output(rerun["short"][-1])
    long_wall = statistics.median(r.wall_s for r in rerun["long"])
    short_wall = statistics.median(r.wall_s for r in rerun["short"])
    long_rss = statistics.median(r.rss_mib for r in rerun["long"])
    short_rss = statistics.median(r.rss_mib for r in rerun["short"])

    marginal = big_wall - tiny_wall
    return [
        f"throughput: {2 * n} episodes in {big_wall:.2f} s (median of {repeats}) = {2 * n / big_wall:,.0f} episodes/s; "
        f"peak RSS {big_rss:.0f} MiB",
        f"fixed overhead ({args.tiny_episodes_per_day} episodes/day, same 2 days): {tiny_wall:.2f} s, peak RSS "
        f"{tiny_rss:.0f} MiB; overhead/total = {tiny_wall / big_wall:.2f}; beyond it: {marginal:.2f} s for "
        f"{2 * n} episodes = " + (f"{2 * n / marginal:,.0f} episodes/s" if marginal > 0 else "n/a"),
        f"history: last-day re-run ({m} episodes) with {args.history_days} days of history {long_wall:.2f} s vs "
        f"1 day {short_wall:.2f} s (ratio {long_wall / short_wall:.2f}); peak RSS {long_rss:.0f} vs {short_rss:.0f} MiB",
        f"history setup: {len(history)} days in {setup['long'].wall_s:.1f} s "
        f"({setup['long'].wall_s / len(history):.2f} s/day) vs 2 days in {setup['short'].wall_s:.1f} s",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes-per-day", type=int, default=20_000, help="N, for the throughput run (default 20000)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions of each measurement (default 3)")
    parser.add_argument("--history-days", type=int, default=60, help="days before the last day in the history source")
    parser.add_argument("--history-episodes-per-day", type=int, help="M (default N/10)")
    parser.add_argument("--tiny-episodes-per-day", type=int, default=10, help="input of the fixed-overhead run")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument("--first-day", default="2026-01-01", help="D1 of the throughput runs")
    parser.add_argument("--keep", action="store_true", help="keep the generated sources and warehouses")
    args = parser.parse_args(argv)
    if args.history_episodes_per_day is None:
        args.history_episodes_per_day = max(1, args.episodes_per_day // 10)
    if min(args.episodes_per_day, args.repeats, args.history_days, args.history_episodes_per_day) < 1:
        parser.error("counts must be >= 1")

    OUT.mkdir(parents=True, exist_ok=True)
    session = Path(tempfile.mkdtemp(prefix=time.strftime("throughput-%Y%m%d-%H%M%S-"), dir=OUT))
    say(
        f"eval-pipeline throughput benchmark: N={args.episodes_per_day}/day, repeats={args.repeats}, "
        f"history {args.history_days} days x {args.history_episodes_per_day}; {os.cpu_count()} CPUs; "
        f"load average {os.getloadavg()[0]:.2f}\nworking dir {session}\n"
    )
    t0 = time.perf_counter()
    try:
        summary = measure(args, session)
    except ChildFailed:
        print(f"kept {session} for inspection (logs/)", file=sys.stderr)
        return 1
    say(f"\n== summary (total benchmark time {time.perf_counter() - t0:.0f} s, load average now {os.getloadavg()[0]:.2f}) ==")
    for line in summary:
        say(line)
    if args.keep:
        say(f"\nkept {session}")
    else:
        shutil.rmtree(session, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
