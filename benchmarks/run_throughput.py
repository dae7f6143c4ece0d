"""End-to-end throughput of `eval-pipeline run` on one day, measured as a whole subprocess against a DuckDB floor.

    .venv/bin/python benchmarks/run_throughput.py [--day 20x200x5 ...] [--million] [--repeats 3] [--history-days 60]

A day is AGENTSxTASKSxTRIALS: that many agents, distinct tasks per agent and episodes per task (so every episode id
is unique at any size). The defaults are 2x1x5 (10 episodes: the fixed start), 20x200x5 (20,000), 20x1000x5
(100,000), 20x1000x1 (20,000 episodes of 20,000 distinct tasks) and 2000x2x5 (20,000 of 2,000 agents); --million
adds 20x1000x50.

For each day (every child gets absolute paths under benchmarks/out/; one DAGSTER_HOME for all, as a deployment
keeps its instance): two days D1, D2 of the shape are generated; an untimed `run --date D1` builds the warehouse
and `duckdb_floor.py baseline` the floor's baseline table; then, --repeats times on fresh copies of both, the timed
`run --date D2 --fail-on never`, `duckdb_floor.py day` and `duckdb_floor.py load` on the same D2 file, in turn so
all see the same load. Printed: median wall, episodes/s, peak RSS (wait4 rusage, through a small launcher) of each,
the ratio of run to floor and to the load (plain DuckDB storing the day whole: what keeping it costs before any
check), the median seconds and peak RSS of every step from Dagster's step events, the read-only commands'
start-to-exit times, and the issue's targets (`TARGETS`), each met or NOT met. --history-days N also re-runs the last day of a
warehouse holding N earlier days against one holding one earlier day (about 1.0 if no stage rescans history).

The episodes are generated with string templates (no pydantic), deterministically from --seed,
in the AIR episode-store JSONL shape (one `episodes-YYYY-MM-DD.jsonl` per day), with ±4 % jitter on cost and
latency and a few percent of regressions (cost, latency, tool sequence, failed outcome).
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
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
OUT = PROJECT / "benchmarks" / "out"

# ---------------------------------------------------------------------------------------------
# Synthetic episodes
# ---------------------------------------------------------------------------------------------

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


@dataclass(frozen=True)
class Shape:
    """A day of `agents` x `tasks_per_agent` distinct tasks, each run `trials` times: every episode id unique."""

    agents: int
    tasks_per_agent: int
    trials: int

    @classmethod
    def parse(cls, text: str) -> Shape:
        try:
            shape = cls(*(int(part) for part in text.lower().split("x")))
        except (TypeError, ValueError):
            raise argparse.ArgumentTypeError(f"{text!r} is not AGENTSxTASKSxTRIALS, e.g. 20x200x5") from None
        if min(shape.agents, shape.tasks_per_agent, shape.trials) < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: every count must be >= 1")
        return shape

    @property
    def episodes(self) -> int:
        return self.agents * self.tasks_per_agent * self.trials

    @property
    def tasks(self) -> int:
        return self.agents * self.tasks_per_agent

    def __str__(self) -> str:
        return f"{self.agents}x{self.tasks_per_agent}x{self.trials}"


def _task(rng: random.Random, agent: int, agent_id: str, task_id: str, output_bytes: int = 0) -> Task:
    model, provider = (_J(x) for x in MODELS[agent % len(MODELS)])
    question = _J(f"Task {task_id}: " + " ".join(rng.choices(WORDS, k=10)) + "?")
    tools = tuple(rng.sample(TOOLS, 2))
    alt = tuple(rng.sample([x for x in TOOLS if x not in tools], 2))
    answer = " ".join(rng.choices(WORDS, k=rng.randrange(8, 20))).capitalize() + "."
    wrong = "I could not finish this task: " + " ".join(rng.choices(WORDS, k=6)) + "."

    def steps(fields):
        return tuple(
            _pct(_STEP_STATIC % (k, stype, *f)) + _STEP_DYNAMIC
            for k, ((stype, _, _), f) in enumerate(zip(_SHAPE, fields, strict=False))
        )

    def page() -> str:
        """What a tool returned beside its verdict: `output_bytes` of text (a fetched page); none, and no draw from `rng`
        (the days stay as they were), by default."""
        if not output_bytes:
            return ""
        return f', "page": {_J(" ".join(rng.choices(WORDS, k=output_bytes // 6 + 1))[:output_bytes])}'

    def head(pair):
        a, b = (_J(x) for x in pair)
        return steps(
            [
                ("null", model, provider, question, _J(f"Plan: call {pair[0]}, {pair[1]}.")),
                (a, "null", "null", _J(f'{{"call": {a}}}'), "null"),
                (a, "null", "null", "null", _J(f'{{"ok": true, "tool": {a}{page()}}}')),
                (b, "null", "null", _J(f'{{"call": {b}}}'), "null"),
                (b, "null", "null", "null", _J(f'{{"ok": true, "tool": {b}{page()}}}')),
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
        task_id=task_id,
        category=rng.choice(CATEGORIES),
        cost_usd=rng.uniform(0.001, 0.1),
        duration_ms=rng.uniform(2_000, 30_000),
        tokens=rng.randrange(800, 12_000),
        head=(head(tools), head(alt)),
        tail=(tail(answer), tail(wrong)),
        tools_used=tuple("[{}]".format(",".join(_J(x) for x in pair)) for pair in (tools, alt)),
        final_output=(_J(answer), _J(wrong)),
    )


def make_tasks(seed: int, shape: Shape, output_bytes: int = 0) -> list[Task]:
    """The shape's agents x tasks, the same on every day (so baselines carry over); each tool result `output_bytes`
    longer."""
    rng = random.Random(f"{seed}:tasks")
    aw, tw = len(str(shape.agents - 1)) + 1, len(str(shape.tasks_per_agent - 1)) + 1
    return [
        _task(rng, a, f"agent-{a:0{aw}d}", f"agent-{a:0{aw}d}/task-{t:0{tw}d}", output_bytes)
        for a in range(shape.agents)
        for t in range(shape.tasks_per_agent)
    ]


def _clock(day_prefix: str, ms: float) -> str:
    """ISO timestamp (ms, Z) of `ms` milliseconds after the day's midnight (< 24 h)."""
    s, ms = divmod(int(ms), 1000)
    m, s = divmod(s, 60)
    h, m = divmod(m, 60)
    return "%sT%02d:%02d:%02d.%03dZ" % (day_prefix, h, m, s, ms)


_COST_W = tuple(c / _COST_SUM for _, c, _ in _SHAPE)
_LAT_W = tuple(w / _LAT_SUM for _, _, w in _SHAPE)


def day_lines(day: date, trials: int, tasks: list[Task], seed: int, regression_rate: float = REGRESSION_RATE) -> list[str]:
    """The JSONL lines of `trials` episodes of every task starting on `day`, sorted by start time."""
    rng = random.Random(f"{seed}:{day.isoformat()}")
    prefix = day.isoformat()
    n = trials * len(tasks)
    band = 86_400_000 * 0.95 / trials  # trial k starts in the k-th band of the day
    ids = rng.randbytes(16 * 6 * n).hex()  # air_record_ids, 32 hex digits each
    uniform, random_ = rng.uniform, rng.random
    out: list[tuple[float, str]] = []
    for i in range(n):
        task = tasks[i % len(tasks)]
        trial = i // len(tasks)
        cost_f = 1 + uniform(-JITTER, JITTER)
        lat_f = 1 + uniform(-JITTER, JITTER)
        status, variant, answer = "success", 0, 0
        if random_() < regression_rate:
            kind = REGRESSION_KINDS[rng.randrange(len(REGRESSION_KINDS))]
            if kind == "cost":
                cost_f *= rng.choice((1.3, 1.6))
            elif kind == "latency":
                lat_f *= rng.choice((1.45, 1.9))
            elif kind == "tools":
                variant = 1
            else:
                status, answer = "failure", 1
        start = trial * band + uniform(0, band * 0.9)
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


def day_file(directory: Path, day: date) -> Path:
    return directory / f"episodes-{day.isoformat()}.jsonl"


def write_days(
    directory: Path, days: list[date], shape: Shape, seed: int, regression_rate: float = REGRESSION_RATE, output_bytes: int = 0
) -> int:
    """Write one episodes-YYYY-MM-DD.jsonl of the shape per day (tool results `output_bytes` longer); return the bytes
    written."""
    directory.mkdir(parents=True, exist_ok=True)
    tasks = make_tasks(seed, shape, output_bytes)
    total = 0
    for day in days:
        data = ("\n".join(day_lines(day, shape.trials, tasks, seed, regression_rate)) + "\n").encode()
        day_file(directory, day).write_bytes(data)
        total += len(data)
    return total


# ---------------------------------------------------------------------------------------------
# Running the CLI (and the floor) as a child process
# ---------------------------------------------------------------------------------------------

_DAY_LINE = re.compile(r"^(\d{4}-\d{2}-\d{2})\s+(\d+) episodes\s")  # the CLI's line per day
FLOOR = PROJECT / "benchmarks" / "duckdb_floor.py"


@dataclass
class ChildRun:
    label: str
    wall_s: float
    maxrss_kib: int
    returncode: int
    stdout: str
    stderr: str
    rss_samples: list[tuple[float, int]]  # (epoch seconds, resident KiB) every 50 ms
    started_at: float  # epoch seconds at launch

    @property
    def rss_mib(self) -> float:
        return self.maxrss_kib / 1024

    def episodes_seen(self) -> int:
        return sum(int(m.group(2)) for line in self.stdout.splitlines() if (m := _DAY_LINE.match(line)))


class ChildFailed(Exception):
    pass


MEMORY_LIMIT: dict[str, str] = {}  # EVAL_DUCKDB_MEMORY_LIMIT of every run, when --memory-limit gives one


def child_env(source: Path, home: Path, first_day: date, dagster_home: Path | None = None) -> dict[str, str]:
    """The environment of one child: every path absolute and private to `home`; nothing networked; partitions from
    `first_day` on.

    `dagster_home` is shared across runs when given, as a deployment's instance is. Bytecode is cached as a deployment
    caches it, even where this machine says not to (PYTHONDONTWRITEBYTECODE): compiling the project's sources again in
    every run cost 0.2 s of a 10-episode day.
    """
    dropped = ("EVAL_", "OPENAI_", "DAGSTER_", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if not k.startswith(dropped)}
    env.update(
        EVAL_EPISODE_SOURCE=str(source.resolve()),
        EVAL_DUCKDB_PATH=str((home / "eval.duckdb").resolve()),
        EVAL_REPORTS_DIR=str((home / "reports").resolve()),
        DAGSTER_HOME=str((dagster_home or home / "dagster_home").resolve()),
        EVAL_REPLAY_MODE="dry",
        EVAL_HISTORY_START=first_day.isoformat(),
        PYTHONUNBUFFERED="1",
        **MEMORY_LIMIT,
    )
    config = PROJECT / "eval.toml"
    if config.is_file():
        env["EVAL_CONFIG"] = str(config)
    return env


# Linux counts in a child's ru_maxrss the memory of the process it was forked from, up to its exec: a child of this
# (large) process would report at least this process's peak. A small launcher forks the measured command instead,
# samples its resident memory every 50 ms (so each step's peak can be read against the step's start and end) and
# writes its ru_maxrss (KiB) to the file named by its first argument, the samples ("epoch seconds KiB" a line) to
# that name + ".samples".
_LAUNCHER = """import os, sys, time
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[2], sys.argv[2:])
samples = []
while True:
    done, status, usage = os.wait4(pid, os.WNOHANG)
    if done:
        break
    try:
        with open(f"/proc/{pid}/status") as proc:
            rss = next(line.split()[1] for line in proc if line.startswith("VmRSS:"))
        samples.append(f"{time.time():.3f} {rss}")
    except (OSError, StopIteration):
        pass
    time.sleep(0.05)
with open(sys.argv[1], "w") as rss:
    rss.write(str(usage.ru_maxrss))
with open(sys.argv[1] + ".samples", "w") as out:
    out.write("\\n".join(samples))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(label: str, argv: list[str], env: dict[str, str] | None, logdir: Path) -> ChildRun:
    """Run `argv` (`eval_pipeline_args` for the CLI); wall time and the child's peak RSS (its own wait4 rusage)."""
    logdir.mkdir(parents=True, exist_ok=True)
    n = len(list(logdir.glob("*.stdout")))
    out_path, err_path = logdir / f"{n:02d}-{label}.stdout", logdir / f"{n:02d}-{label}.stderr"
    rss_path = logdir / f"{n:02d}-{label}.maxrss"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        started_at, t0 = time.time(), time.perf_counter()
        returncode = subprocess.call(
            [sys.executable, "-c", _LAUNCHER, str(rss_path), *argv],
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=PROJECT,
        )
        wall = time.perf_counter() - t0
    maxrss = int(rss_path.read_text() or 0) if rss_path.exists() else 0
    samples_path = rss_path.with_name(rss_path.name + ".samples")
    samples = [(float(t), int(kib)) for t, kib in (line.split() for line in samples_path.read_text().splitlines())]
    out_text, err_text = out_path.read_text(errors="replace"), err_path.read_text(errors="replace")
    run = ChildRun(label, wall, maxrss, returncode, out_text, err_text, samples, started_at)
    if run.returncode != 0:
        print(f"\nFAILED: {' '.join(argv)} ({label}) exited {run.returncode} after {wall:.1f} s", file=sys.stderr)
        print(f"--- stdout ---\n{run.stdout}--- stderr ---\n{run.stderr}", file=sys.stderr)
        raise ChildFailed(label)
    return run


def eval_pipeline_args(*args: str) -> list[str]:
    """`eval-pipeline ARGS` of this checkout (`-m` from the project directory), whatever the venv has installed."""
    return [sys.executable, "-m", "eval_pipeline.cli", *args]


def floor_args(action: str, jsonl: Path, out: Path) -> list[str]:
    return [sys.executable, str(FLOOR), action, str(jsonl), "--out", str(out)]


@dataclass(frozen=True)
class StepFigure:
    start: float  # epoch seconds
    seconds: float
    peak_rss_mib: float  # the run's resident memory sampled while the step ran


def step_figures(instance_home: Path, run: ChildRun) -> dict[str, StepFigure]:
    """Seconds and peak RSS per step of the instance's latest run, from Dagster's own step start and end events."""
    import dagster as dg

    with dg.DagsterInstance.from_config(str(instance_home)) as instance:
        (latest,) = instance.get_runs(limit=1)
        stats = instance.get_run_step_stats(latest.run_id)
    return {
        stat.step_key: StepFigure(
            stat.start_time, stat.end_time - stat.start_time, _peak_mib(run.rss_samples, stat.start_time, stat.end_time)
        )
        for stat in stats
        if stat.start_time is not None and stat.end_time is not None
    }


def _peak_mib(samples: list[tuple[float, int]], start: float, end: float) -> float:
    """The highest resident memory sampled from `start` to `end`; for a step shorter than the sampling interval, the
    last sample before its end (it would otherwise read 0)."""
    inside = [kib for t, kib in samples if start <= t <= end] or [kib for t, kib in samples if t <= end][-1:]
    return max(inside, default=0) / 1024


def say(text: str = "") -> None:
    print(text, flush=True)


def show_child_output(run: ChildRun) -> None:
    for line in run.stdout.splitlines():
        if _DAY_LINE.match(line):
            say(f"      | {line}")


# ---------------------------------------------------------------------------------------------
# The measurements
# ---------------------------------------------------------------------------------------------


@dataclass
class DayFigures:
    shape: Shape
    runs: list[ChildRun]
    floors: list[ChildRun]
    loads: list[ChildRun]  # `duckdb_floor.py load`: the day stored whole, a reference beside the floor
    steps: list[dict[str, StepFigure]]

    @property
    def wall_s(self) -> float:
        return statistics.median(r.wall_s for r in self.runs)

    @property
    def rss_mib(self) -> float:
        return statistics.median(r.rss_mib for r in self.runs)

    @property
    def floor_s(self) -> float:
        return statistics.median(r.wall_s for r in self.floors)

    @property
    def floor_rss_mib(self) -> float:
        return statistics.median(r.rss_mib for r in self.floors)

    @property
    def load_s(self) -> float:
        return statistics.median(r.wall_s for r in self.loads)

    def step_median(self, step: str, figure: str) -> float | None:
        values = [getattr(run[step], figure) for run in self.steps if step in run]
        return statistics.median(values) if values else None

    @property
    def outside_steps_s(self) -> float:
        return statistics.median(
            r.wall_s - sum(f.seconds for f in s.values()) for r, s in zip(self.runs, self.steps, strict=True)
        )

    @property
    def fixed_start_s(self) -> float:
        """What the issue calls the fixed start: launch to the first step's start (imports, the instance, the run's
        record)."""
        return statistics.median(
            min(f.start for f in s.values()) - r.started_at for r, s in zip(self.runs, self.steps, strict=True)
        )


def measure_day(shape: Shape, args: argparse.Namespace, session: Path, instance_home: Path) -> DayFigures:
    """`run --date D2` of a shaped day on a warehouse holding D1, against the floor on the same file, `--repeats` times.

    Every repeat starts from a copy of the same warehouse (and floor file, holding D1's baseline); the run and the
    floor alternate so both see the same machine load.
    """
    d1 = date.fromisoformat(args.first_day)
    d2 = d1 + timedelta(days=1)
    source, base, logs = session / f"src-{shape}", session / f"base-{shape}", session / "logs"
    t0 = time.perf_counter()
    size = write_days(source, [d1], shape, args.seed, output_bytes=args.tool_output_bytes)
    gen_s = time.perf_counter() - t0
    say(
        f"\n[{shape}] {shape.episodes:,} episodes a day, {shape.tasks:,} distinct tasks: generated {d1} "
        f"({size / 2**20:.0f} MiB JSONL) in {gen_s:.1f} s; setting up its warehouse (untimed)"
    )
    setup_args = eval_pipeline_args("run", "--date", d1.isoformat(), "--fail-on", "never")
    run_child(f"setup-{shape}", setup_args, child_env(source, base, d1, instance_home), logs)
    # D2's file arrives after D1's run, as the night's file does: each run finds it new and indexes it first
    write_days(source, [d2], shape, args.seed, output_bytes=args.tool_output_bytes)
    run_child(f"floor-setup-{shape}", floor_args("baseline", day_file(source, d1), base / "floor.duckdb"), None, logs)
    figures = DayFigures(shape, [], [], [], [])
    for i in range(args.repeats):
        home = session / f"{shape}-{i}"
        shutil.copytree(base, home)
        run_args = eval_pipeline_args("run", "--date", d2.isoformat(), "--fail-on", "never")
        run = run_child(f"run-{shape}", run_args, child_env(source, home, d1, instance_home), logs)
        figures.runs.append(run)
        figures.steps.append(step_figures(instance_home, run))
        floor = run_child(f"floor-{shape}", floor_args("day", day_file(source, d2), home / "floor.duckdb"), None, logs)
        figures.floors.append(floor)
        load = run_child(f"load-{shape}", floor_args("load", day_file(source, d2), home / "load.duckdb"), None, logs)
        figures.loads.append(load)
        say(
            f"  run {i + 1}/{args.repeats}: {run.wall_s:6.2f} s  peak RSS {run.rss_mib:6.0f} MiB  "
            f"({run.episodes_seen():,} episodes reported) | floor {floor.wall_s:5.2f} s  peak RSS {floor.rss_mib:5.0f} MiB"
            f" | load {load.wall_s:5.2f} s  peak RSS {load.rss_mib:5.0f} MiB"
        )
        if i == 0:
            show_child_output(run)
            if run.episodes_seen() != shape.episodes:
                say(f"  WARNING: the run reported {run.episodes_seen()} episodes, expected {shape.episodes}")
            if (stored := json.loads(load.stdout)["episodes"]) != shape.episodes:
                say(f"  WARNING: the load stored {stored} episodes, expected {shape.episodes}")
        if not args.keep:
            shutil.rmtree(home, ignore_errors=True)
    return figures


def day_table(days: list[DayFigures], repeats: int) -> list[str]:
    """One line per day: the run's wall, episodes/s and peak RSS, the floor's, their ratio, and the load's and the
    run's ratio to it."""
    lines = [
        f"day `run --date D` on a warehouse holding D-1; medians of {repeats} runs; floor = benchmarks/duckdb_floor.py "
        "day, load = duckdb_floor.py load (the day stored whole), on the same JSONL, in the same run",
        f"{'agents x tasks x trials':>24} {'episodes':>9} {'tasks':>7} {'wall s':>8} {'episodes/s':>10} {'RSS MiB':>8}"
        f" {'floor s':>8} {'floor RSS':>9} {'x floor':>8} {'load s':>8} {'x load':>7}",
    ]
    for day in days:
        lines.append(
            f"{day.shape!s:>24} {day.shape.episodes:>9,} {day.shape.tasks:>7,} {day.wall_s:>8.2f} "
            f"{day.shape.episodes / day.wall_s:>10,.0f} {day.rss_mib:>8.0f} {day.floor_s:>8.2f} {day.floor_rss_mib:>9.0f} "
            f"{day.wall_s / day.floor_s:>8.1f} {day.load_s:>8.2f} {day.wall_s / day.load_s:>7.1f}"
        )
    return lines


def step_table(days: list[DayFigures]) -> list[str]:
    """Median seconds and peak RSS per step (Dagster's step events) of each day, so a note can say where the time
    and the memory go."""
    order: dict[str, None] = {}
    for day in days:
        for run in day.steps:
            order |= dict.fromkeys(run)
    header = f"{'step':>32}" + "".join(f" {d.shape!s:>12}" for d in days)
    lines = []
    for figure, title, digits in (("seconds", "seconds", 2), ("peak_rss_mib", "peak RSS MiB", 0)):
        lines += [f"{title} per step (median; while Dagster's step ran, start to end):", header]
        for step in order:
            cells = (d.step_median(step, figure) for d in days)
            lines.append(f"{step:>32}" + "".join(f" {'-' if c is None else f'{c:.{digits}f}':>12}" for c in cells))
        if figure == "seconds":
            lines += [
                f"{'(wall outside the steps)':>32}" + "".join(f" {d.outside_steps_s:>12.2f}" for d in days),
                f"{'(of it, before the first step)':>32}" + "".join(f" {d.fixed_start_s:>12.2f}" for d in days),
                "",
            ]
    return lines


@dataclass(frozen=True)
class Target:
    """One of the issue's targets (#19): which days it bounds, what of them it measures, and the bound."""

    says: str
    applies: Callable[[DayFigures], bool]
    measured: Callable[[DayFigures], float]
    bound: Callable[[DayFigures], float]
    unit: str


MILLION_EPISODES, TWENTY_THOUSAND = 1_000_000, 20_000
TARGETS = (
    Target("fixed start <= 2 s", lambda d: True, lambda d: d.fixed_start_s, lambda d: 2.0, "s"),
    Target(
        "20,000: wall <= 2 x floor + fixed start",
        lambda d: d.shape.episodes == TWENTY_THOUSAND,
        lambda d: d.wall_s,
        lambda d: 2 * d.floor_s + d.fixed_start_s,
        "s",
    ),
    Target(
        "1,000,000: wall <= 4 x floor", lambda d: d.shape.episodes >= MILLION_EPISODES, lambda d: d.wall_s,
        lambda d: 4 * d.floor_s, "s",
    ),
    Target(
        "1,000,000: peak RSS <= 2 GiB", lambda d: d.shape.episodes >= MILLION_EPISODES, lambda d: d.rss_mib,
        lambda d: 2048.0, "MiB",
    ),
)  # fmt: skip
READ_ONLY_BOUND_S = 1.0  # and each read-only command starts and exits within this


def target_table(days: list[DayFigures], read_only: dict[str, float]) -> list[str]:
    """Each target against the medians above, for every day it bounds, and each read-only command against its bound:
    met or NOT met."""
    rows = [
        (target.says, str(day.shape), target.measured(day), target.bound(day), target.unit)
        for target in TARGETS
        for day in days
        if target.applies(day)
    ]
    rows += [
        (f"{command} < {READ_ONLY_BOUND_S:g} s", "", seconds, READ_ONLY_BOUND_S, "s") for command, seconds in read_only.items()
    ]
    lines = ["targets (issue #19), of the medians above:", f"{'target':>46} {'day':>12} {'measured':>12} {'bound':>12}  verdict"]
    for says, day, measured, bound, unit in rows:
        verdict = "met" if measured <= bound else "NOT met"
        lines.append(f"{says:>46} {day:>12} {measured:>8.2f} {unit:<3} {bound:>8.2f} {unit:<3}  {verdict}")
    return lines


def measure_history(args: argparse.Namespace, session: Path) -> list[str]:
    """The last day re-run on a warehouse holding `--history-days` earlier days, against one holding one earlier day:
    the ratio should be about 1.0 if no stage rescans history."""
    shape, repeats = args.history_day, args.repeats
    last = date.fromisoformat(args.first_day) + timedelta(days=100)  # a separate stretch of days from the others
    history = [last - timedelta(days=k) for k in range(args.history_days, -1, -1)]
    long_src, short_src = session / "src-history-long", session / "src-history-short"
    t0 = time.perf_counter()
    hsize = write_days(long_src, history, shape, args.seed)
    short_src.mkdir(parents=True, exist_ok=True)
    for day in history[-2:]:  # byte-identical last two days
        shutil.copy2(day_file(long_src, day), short_src)
    say(
        f"\n[history] generated {len(history)} days x {shape.episodes:,} episodes ({hsize / 2**20:.0f} MiB) "
        f"in {time.perf_counter() - t0:.1f} s"
    )
    logs = session / "logs"
    homes = {"long": session / "hist-long", "short": session / "hist-short"}
    sources = {"long": long_src, "short": short_src}
    setup = {}
    for kind, first in (("long", history[0]), ("short", history[-2])):
        setup_args = eval_pipeline_args("run", "--start", first.isoformat(), "--end", last.isoformat(), "--fail-on", "never")
        run = run_child(f"setup-{kind}", setup_args, child_env(sources[kind], homes[kind], history[0]), logs)
        setup[kind] = run
        days = (last - first).days + 1
        say(
            f"  setup {kind:<5}: eval-pipeline run --start {first} --end {last}: {days} days in {run.wall_s:.1f} s "
            f"({days * shape.episodes / run.wall_s:,.0f} episodes/s, {run.wall_s / days:.2f} s/day), "
            f"peak RSS {run.rss_mib:.0f} MiB"
        )
    rerun_args = eval_pipeline_args("run", "--date", last.isoformat(), "--fail-on", "never")
    rerun: dict[str, list[ChildRun]] = {"long": [], "short": []}
    for i in range(repeats):
        for kind in ("long", "short"):
            run = run_child(f"rerun-{kind}", rerun_args, child_env(sources[kind], homes[kind], history[0]), logs)
            rerun[kind].append(run)
            say(f"  re-run {last} ({kind:<5} history) {i + 1}/{repeats}: {run.wall_s:6.2f} s  peak RSS {run.rss_mib:5.0f} MiB")
    long_wall = statistics.median(r.wall_s for r in rerun["long"])
    short_wall = statistics.median(r.wall_s for r in rerun["short"])
    long_rss = statistics.median(r.rss_mib for r in rerun["long"])
    short_rss = statistics.median(r.rss_mib for r in rerun["short"])
    return [
        f"history: last-day re-run ({shape.episodes:,} episodes) with {args.history_days} days of history {long_wall:.2f} s vs "
        f"1 day {short_wall:.2f} s (ratio {long_wall / short_wall:.2f}); peak RSS {long_rss:.0f} vs {short_rss:.0f} MiB",
        f"history setup: {len(history)} days in {setup['long'].wall_s:.1f} s "
        f"({setup['long'].wall_s / len(history):.2f} s/day) vs 2 days in {setup['short'].wall_s:.1f} s",
    ]


SMALL_COMMANDS = (("query", "select 1"), ("status",), ("report", "--date", "{day}"), ("baseline", "list"))
SMALL_COMMAND_REPEATS = 5


def measure_small_commands(shape: Shape, args: argparse.Namespace, session: Path, instance_home: Path) -> dict[str, float]:
    """The read-only commands' median wall time, start to exit, by command line, on the warehouse `measure_day` set up
    for `shape` (holding D1; the shared instance holds every run so far)."""
    d1 = args.first_day
    env = child_env(session / f"src-{shape}", session / f"base-{shape}", date.fromisoformat(d1), instance_home)
    medians = {}
    for command in SMALL_COMMANDS:
        argv = [part.format(day=d1) for part in command]
        runs = [
            run_child(f"small-{argv[0]}", eval_pipeline_args(*argv), env, session / "logs") for _ in range(SMALL_COMMAND_REPEATS)
        ]
        medians["eval-pipeline " + " ".join(argv)] = statistics.median(run.wall_s for run in runs)
    return medians


def small_command_table(shape: Shape, medians: dict[str, float]) -> list[str]:
    lines = [f"read-only commands on the warehouse of [{shape}], start to exit (median of {SMALL_COMMAND_REPEATS}):"]
    return lines + [f"{command:>40} {seconds:>6.2f} s" for command, seconds in medians.items()]


# the fixed start, 20k, 100k, 20k of 20,000 distinct tasks, 20k of 2,000 agents
DEFAULT_DAYS = ("2x1x5", "20x200x5", "20x1000x5", "20x1000x1", "2000x2x5")
MILLION = "20x1000x50"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--day",
        dest="days",
        action="append",
        type=Shape.parse,
        help=f"a day to measure, AGENTSxTASKSxTRIALS (repeatable; default {', '.join(DEFAULT_DAYS)})",
    )
    parser.add_argument("--million", action="store_true", help=f"also a day of 1,000,000 episodes ({MILLION}; minutes)")
    parser.add_argument("--repeats", type=int, default=3, help="timed repetitions of each measurement (default 3)")
    parser.add_argument("--history-days", type=int, default=0, help="also measure a re-run with this many days of history")
    parser.add_argument("--history-day", type=Shape.parse, default=Shape.parse("20x100x1"), help="the shape of a history day")
    parser.add_argument("--seed", type=int, default=20260101)
    parser.add_argument(
        "--tool-output-bytes", type=int, default=0, help="text each tool result returns beside its verdict (a fetched page)"
    )
    parser.add_argument("--first-day", default="2026-01-01", help="D1, the day the warehouse holds before the timed run")
    parser.add_argument("--keep", action="store_true", help="keep the generated sources and warehouses")
    parser.add_argument("--memory-limit", help="EVAL_DUCKDB_MEMORY_LIMIT of the runs (default: the project's own)")
    args = parser.parse_args(argv)
    days: list[Shape] = args.days or [Shape.parse(text) for text in DEFAULT_DAYS]
    if args.million:
        days.append(Shape.parse(MILLION))
    if args.repeats < 1 or args.history_days < 0:
        parser.error("--repeats must be >= 1, --history-days >= 0")
    if args.memory_limit:
        MEMORY_LIMIT["EVAL_DUCKDB_MEMORY_LIMIT"] = args.memory_limit

    OUT.mkdir(parents=True, exist_ok=True)
    session = Path(tempfile.mkdtemp(prefix=time.strftime("throughput-%Y%m%d-%H%M%S-"), dir=OUT))
    say(
        f"eval-pipeline throughput benchmark: days {', '.join(map(str, days))} (agents x tasks x trials), "
        f"repeats={args.repeats}; DuckDB memory limit {args.memory_limit or 'default'}; {os.cpu_count()} CPUs; "
        + (f"tool results {args.tool_output_bytes:,} bytes longer; " if args.tool_output_bytes else "")
        + f"load average {os.getloadavg()[0]:.2f}\nworking dir {session}"
    )
    t0 = time.perf_counter()
    instance_home = session / "dagster_home"  # one instance for all runs, as a deployment keeps its instance
    try:
        figures = [measure_day(shape, args, session, instance_home) for shape in days]
        summary = [*day_table(figures, args.repeats), "", *step_table(figures)]
        read_only = measure_small_commands(days[0], args, session, instance_home)
        summary += [*small_command_table(days[0], read_only), "", *target_table(figures, read_only)]
        if args.history_days:
            summary += ["", *measure_history(args, session)]
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
