"""Deterministic sample episodes: three days of AIR-shaped agent runs with known regressions.

Why: the pipeline needs data whose right answer is known in advance. Day 1 sets the baselines,
day 2 injects one regression per scoring rule (plus an agent that only got cheaper and faster,
which must yield no finding), and day 3 mostly recovers. `EXPECTED_REGRESSIONS` lists what a
correct run must find. Output is byte-identical on every call: each episode draws from its own
`random.Random` seeded with its id, all timestamps are fixed, and the clock is never read.
"""

from __future__ import annotations

import json
import random
import string
import uuid
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from eval_pipeline.episodes.model import Episode, EpisodeStatus, Step, StepType

SEED = 20261101
SampleDays = tuple[date, date, date]


def sample_days(last: date) -> SampleDays:
    """The three sample days that end on `last`: the demo's end yesterday, the tests' on a pinned day."""
    return (last - timedelta(days=2), last - timedelta(days=1), last)


SAMPLE_DAYS: SampleDays = sample_days(date(2026, 11, 3))  # the pinned days the tests and the constants below use
TRIALS = 3  # trials 0..2 of every task, every day
JITTER = 0.04  # normal spread of cost and latency, far inside the 20 % / 30 % thresholds
PROVIDER = "openai"
PINNED_BASELINE = "billing-bot/explain-invoice"  # its day-1 trial 0 has metadata.baseline = true
HUNG_TOOL_MS = 45_000.0  # how long the timed-out run's last tool call hung before the kill


@dataclass(frozen=True)
class Task:
    slug: str
    category: str
    tools: tuple[str, ...]
    cost_usd: float  # base cost of one run; trials vary by ±JITTER around it
    duration_ms: float  # base latency of one run
    tokens: int
    question: str
    answer: str


@dataclass(frozen=True)
class Agent:
    agent_id: str
    model: str
    tasks: tuple[Task, ...]


AGENTS: tuple[Agent, ...] = (
    Agent(
        "support-bot",
        "gpt-4o-mini",
        (
            Task(
                "where-is-my-order",
                "order_status",
                ("lookup_order", "send_email"),
                0.0031,
                4200,
                1450,
                "Where is my order A-10482? It was due on Monday.",
                "Order A-10482 shipped Oct 30 with UPS and arrives Nov 4. I emailed you the tracking link.",
            ),
            Task(
                "refund-request",
                "refunds",
                ("lookup_order", "check_refund_policy", "issue_refund"),
                0.0044,
                6100,
                2100,
                "I want a refund for order A-10391, the jacket doesn't fit.",
                "Your refund of $89.00 for order A-10391 is issued; allow 5-7 business days.",
            ),
            Task(
                "damaged-item",
                "refunds",
                ("lookup_order", "check_refund_policy", "issue_refund", "send_email"),
                0.0052,
                7900,
                2500,
                "My blender (order A-10277) arrived cracked. What can you do?",
                "Sorry about that. I refunded $129.99 for order A-10277 and emailed you a return label.",
            ),
            Task(
                "change-shipping-address",
                "account",
                ("lookup_order", "update_address"),
                0.0027,
                3600,
                1200,
                "Please ship order A-10510 to 12 Harbour St, Leith.",
                "Done: order A-10510 will now ship to 12 Harbour St, Leith.",
            ),
        ),
    ),
    Agent(
        "research-agent",
        "gpt-4o",
        (
            Task(
                "compare-vector-databases",
                "comparison",
                ("web_search", "fetch_page", "summarize"),
                0.084,
                21000,
                9200,
                "Compare pgvector and Qdrant for 10M vectors.",
                "Qdrant scales better past 10M vectors with on-disk HNSW; pgvector is simpler if you "
                "already run Postgres and stay under a few million vectors.",
            ),
            Task(
                "summarize-arxiv-paper",
                "summarization",
                ("fetch_page", "summarize"),
                0.052,
                14000,
                6100,
                "Summarize arXiv 2310.06825 in three sentences.",
                "Mistral 7B uses grouped-query and sliding-window attention. It beats Llama 2 13B on "
                "all reported benchmarks. Weights are released under Apache 2.0.",
            ),
            Task(
                "latest-python-release",
                "factual",
                ("web_search", "fetch_page"),
                0.021,
                9000,
                2600,
                "What is the latest stable Python release?",
                "The latest stable release is Python 3.15.0, published in October 2026.",
            ),
            Task(
                "market-size-estimate",
                "research",
                ("web_search", "web_search", "fetch_page", "summarize"),
                0.097,
                26000,
                11000,
                "Estimate the 2026 home battery market in Germany.",
                "Roughly EUR 2.1-2.6 billion: about 600,000 new home batteries at EUR 4,000 each.",
            ),
        ),
    ),
    Agent(
        "code-assistant",
        "gpt-4.1",
        (
            Task(
                "fix-failing-test",
                "bugfix",
                ("read_file", "edit_file", "run_tests"),
                0.038,
                18000,
                7400,
                "tests/test_parser.py::test_empty_input fails with IndexError.",
                "parse() read tokens[0] without checking for empty input; it now returns an empty Document. All 212 tests pass.",
            ),
            Task(
                "add-type-hints",
                "refactor",
                ("search_code", "read_file", "edit_file"),
                0.029,
                12000,
                5600,
                "Add type hints to utils/dates.py.",
                "Added type hints to the 7 functions in utils/dates.py; mypy reports no errors.",
            ),
            Task(
                "rename-config-key",
                "refactor",
                ("search_code", "edit_file", "run_tests"),
                0.033,
                15000,
                6300,
                "Rename the config key max_retry to max_retries everywhere.",
                "Renamed max_retry to max_retries in 5 files, with a fallback for old configs.",
            ),
            Task(
                "explain-function",
                "explanation",
                ("search_code", "read_file"),
                0.017,
                7000,
                3900,
                "What does merge_intervals in core/ranges.py do?",
                "It sorts intervals by start and merges overlapping ones in one pass.",
            ),
        ),
    ),
    Agent(
        "billing-bot",
        "gpt-4o-mini",
        (
            Task(
                "explain-invoice",
                "invoices",
                ("get_invoice",),
                0.0019,
                2600,
                900,
                "Why is invoice INV-2026-0412 higher than last month?",
                "INV-2026-0412 includes 3 seats added on Oct 12, which adds $42.00.",
            ),
            Task(
                "usage-spike",
                "usage",
                ("get_usage", "get_invoice"),
                0.0028,
                3900,
                1300,
                "Our API usage doubled this week. Why?",
                "Calls rose from 1.2M to 2.5M, almost all from the key 'staging-sync' since Oct 28.",
            ),
            Task(
                "apply-outage-credit",
                "credits",
                ("get_usage", "apply_credit"),
                0.0025,
                3400,
                1150,
                "We were down in the Oct 29 outage. Can we get a credit?",
                "I applied a $25.00 credit for the Oct 29 outage; it shows on your next invoice.",
            ),
            Task(
                "duplicate-charge",
                "disputes",
                ("get_invoice", "get_invoice", "apply_credit"),
                0.0034,
                4800,
                1600,
                "I was charged twice for October.",
                "You were billed twice for October (INV-2026-0398 and INV-2026-0401); I credited $59.00.",
            ),
        ),
    ),
)
TASKS: dict[str, tuple[Agent, Task]] = {
    f"{agent.agent_id}/{task.slug}": (agent, task) for agent in AGENTS for task in agent.tasks
}

# (input_summary, output_summary) of each tool; the outputs are small JSON-ish results.
TOOL_IO: dict[str, tuple[str, str]] = {
    "lookup_order": ('{"order_id": "A-10482"}', '{"status": "shipped", "carrier": "UPS"}'),
    "send_email": ('{"template": "order_update"}', '{"sent": true, "message_id": "m-5521"}'),
    "check_refund_policy": ('{"sku": "JKT-220"}', '{"eligible": true, "window_days": 30}'),
    "issue_refund": ('{"amount": 89.0, "currency": "USD"}', '{"refund_id": "rf-8817"}'),
    "update_address": ('{"street": "12 Harbour St", "city": "Leith"}', '{"updated": true}'),
    "search_faq": ('{"query": "order delayed"}', '{"articles": ["shipping-delays"]}'),
    "escalate_to_human": ('{"queue": "tier-1"}', '{"ticket_id": "T-40012", "position": 7}'),
    "web_search": ('{"q": "benchmarks 2026"}', '{"results": 10, "top": "https://example.org/r"}'),
    "fetch_page": ('{"url": "https://example.org/r"}', '{"status": 200, "chars": 18432}'),
    "summarize": ('{"chars": 18432, "style": "brief"}', '{"summary_chars": 612}'),
    "read_file": ('{"path": "src/parser.py"}', '{"lines": 184}'),
    "search_code": ('{"pattern": "max_retry"}', '{"matches": 9, "files": 5}'),
    "edit_file": ('{"path": "src/parser.py", "hunks": 2}', '{"applied": true}'),
    "run_tests": ('{"args": "-q"}', '{"passed": 212, "failed": 0}'),
    "get_invoice": ('{"invoice_id": "INV-2026-0412"}', '{"total": 318.0, "lines": 4}'),
    "get_usage": ('{"window": "7d"}', '{"calls": 2500000, "top_key": "staging-sync"}'),
    "apply_credit": ('{"amount": 25.0}', '{"credit_id": "cr-221", "state": "applied"}'),
}
# What each task's last tool returned that its answer cites, so every number in an answer is
# grounded (numeric fabrication); merged into that tool's output above.
TASK_FACTS: dict[str, str] = {
    "damaged-item": '"refunded": 129.99',
    "summarize-arxiv-paper": '"title": "Mistral 7B", "compared_with": "Llama 2 13B", "license": "Apache 2.0"',
    "latest-python-release": '"latest": "3.15.0", "released": "2026-10-07"',
    "market-size-estimate": '"installs_2026": 600000, "avg_price_eur": 4000, "market_eur_bn": [2.1, 2.6]',
    "add-type-hints": '"functions_without_hints": 7',
    "explain-invoice": '"seats_added": 3, "seat_price": 14.0, "delta": 42.0',
    "usage-spike": '"calls_previous_7d": 1200000',
    "duplicate-charge": '"duplicate_total": 59.0',
}
TOOL_ERRORS = {
    "web_search": "HTTP 429 Too Many Requests from the search backend",
    "fetch_page": "HTTP 503 Service Unavailable: www.python.org",
}

# A fixed fake key, generated rather than written out so that secret scanners stay quiet.
_KEY_CHARS = string.ascii_letters + string.digits
LEAKED_KEY = "sk-live-" + "".join(random.Random(SEED).choices(_KEY_CHARS, k=32))


@dataclass(frozen=True)
class Injection:
    """How one day's trials of a task deviate from normal.

    `cost` and `latency` multiply the task's DAY-1 TRIAL-0 figures (its `first` baseline) exactly,
    so the expected delta is known; None keeps the normal ±JITTER variation.
    """

    kind: str
    cost: float | None = None
    latency: float | None = None
    tools: tuple[str, ...] | None = None
    status: EpisodeStatus = EpisodeStatus.SUCCESS
    answer: str | None = None
    answer_suffix: str = ""
    error_results: bool = False  # tool results become error steps; the run still "succeeds"


_LEAK = Injection("leaked_secret", answer_suffix=f" If the portal fails, use API key {LEAKED_KEY}.")
_DAY2: dict[str, Injection] = {
    "research-agent/compare-vector-databases": Injection("cost_critical", cost=1.50),
    "research-agent/summarize-arxiv-paper": Injection("cost_warning", cost=1.25),
    "code-assistant/fix-failing-test": Injection("latency_critical", latency=1.70),
    "code-assistant/add-type-hints": Injection("latency_warning", latency=1.35),
    "support-bot/where-is-my-order": Injection("tool_sequence", tools=("search_faq", "escalate_to_human")),
    "code-assistant/rename-config-key": Injection(
        "failed_outcome",
        status=EpisodeStatus.FAILURE,
        answer="I'm sorry, I could not finish this: after my edits the tests in test_client.py still fail.",
    ),
    # The refund tool returned 129.99; the answer states another amount.
    "support-bot/damaged-item": Injection(
        "fabricated_number",
        answer="Sorry about that. I refunded $149.99 for order A-10277 and emailed you a return label.",
    ),
    "support-bot/refund-request": _LEAK,
    "research-agent/latest-python-release": Injection("error_steps", error_results=True),
    # Cheaper and faster on every task, same tools and answers: an improvement, never a finding.
    **{f"billing-bot/{t.slug}": Injection("improvement", cost=0.6, latency=0.7) for t in AGENTS[3].tasks},
}
_INJECTIONS: tuple[dict[str, Injection], ...] = (  # by day: 1, 2, 3
    {},
    _DAY2,
    {"support-bot/refund-request": _LEAK},  # the leak persists after the recovery
)
# Extra day-3 runs beyond trials 0..2: (task_id, trial, status). The JSON array file holds 4 and 5.
_DAY3_EXTRAS = (
    ("research-agent/market-size-estimate", 3, EpisodeStatus.TIMEOUT),
    ("code-assistant/explain-function", 3, EpisodeStatus.RUNNING),
)
_ARRAY_EXTRAS = (("research-agent/market-size-estimate", 4), ("research-agent/market-size-estimate", 5))

# Malformed records per day, placed between good lines; the reader must skip and count them.
_MALFORMED: tuple[tuple[str, ...], ...] = (  # by day: 1, 2, 3
    ("truncated", "missing_agent_id", "bad_status", "bad_started_at"),
    ("bad_status", "truncated"),
    ("missing_agent_id", "bad_started_at", "truncated"),
)
MALFORMED_LINES_PER_DAY: dict[date, int] = {day: len(kinds) for day, kinds in zip(SAMPLE_DAYS, _MALFORMED, strict=True)}

EXPECTED_REGRESSIONS: list[tuple[date, str, str, str]] = [
    (day, TASKS[task_id][0].agent_id, task_id, injection.kind)
    for day, injections in zip(SAMPLE_DAYS, _INJECTIONS, strict=True)
    for task_id, injection in injections.items()
    if injection.kind != "improvement"
] + [  # a timeout is a failed outcome: correctness 0 against a successful baseline. With its
    # cost and latency deltas NULL, its weighted score (about 0.43) also falls below 0.5.
    (SAMPLE_DAYS[2], TASKS[task_id][0].agent_id, task_id, "failed_outcome")
    for task_id, _, status in _DAY3_EXTRAS
    if status is EpisodeStatus.TIMEOUT
]


def write_samples(directory: Path, days: SampleDays = SAMPLE_DAYS) -> list[Path]:
    """Write one JSONL file per sample day (episodes-YYYY-MM-DD.jsonl) plus one JSON-array file
    (`extra_file`); return the paths. Deterministic: same bytes every call (random.Random(seed),
    fixed timestamps, no clock); other `days` change the dates and ids only, never a number."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for n, day in enumerate(days):
        good = [episode.model_dump_json(exclude_none=True) for episode in _day_episodes(day, n)]
        lines = _interleave(good, [_malformed(day, i, kind, good, len(_MALFORMED[n])) for i, kind in enumerate(_MALFORMED[n])])
        paths.append(_write(directory / f"episodes-{day.isoformat()}.jsonl", "\n".join(lines) + "\n"))
    extra = [_episode(days[2], 2, task_id, trial).model_dump(mode="json", exclude_none=True) for task_id, trial in _ARRAY_EXTRAS]
    paths.append(_write(extra_file(directory, days[2]), json.dumps(extra, indent=2) + "\n"))
    return paths


def extra_file(directory: Path, last: date) -> Path:
    """The JSON-array file of the sample day `last`: only samples write a file of this name."""
    return directory / f"episodes-{last.isoformat()}-extra.json"


def written_days(directory: Path) -> SampleDays | None:
    """The sample days `write_samples` wrote into `directory` before, None when it holds none."""
    lasts = sorted(
        date.fromisoformat(path.name[len("episodes-") : -len("-extra.json")]) for path in directory.glob("episodes-*-extra.json")
    )
    return sample_days(lasts[-1]) if lasts else None


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))  # bytes, so no platform newline translation
    return path


def _day_episodes(day: date, n: int) -> list[Episode]:
    """Every task's trials 0..2 (plus day 3's extra runs) of sample day `n` (0..2), in start order like a store export."""
    injections = _INJECTIONS[n]
    episodes = [_episode(day, n, task_id, trial, injections.get(task_id)) for task_id in TASKS for trial in range(TRIALS)]
    if n == 2:
        episodes += [_episode(day, n, task_id, trial, status=status) for task_id, trial, status in _DAY3_EXTRAS]
    return sorted(episodes, key=lambda e: (e.started_at, e.episode_id))


def _episode_id(day: date, task_id: str, trial: int) -> str:
    return f"ep-{day.isoformat()}-{task_id.replace('/', '-')}-t{trial}"


def _factors(n: int, task_id: str, trial: int) -> tuple[random.Random, float, float]:
    """One generator per episode, so that editing one episode never shifts another's numbers; seeded
    with its id on the pinned days, so that redated samples have the same numbers. Its first two
    draws are the normal cost and latency factors, 1 ± JITTER."""
    rng = random.Random(f"{SEED}:{_episode_id(SAMPLE_DAYS[n], task_id, trial)}")
    return rng, 1 + rng.uniform(-JITTER, JITTER), 1 + rng.uniform(-JITTER, JITTER)


def _episode(
    day: date, n: int, task_id: str, trial: int, injection: Injection | None = None, status: EpisodeStatus | None = None
) -> Episode:
    agent, task = TASKS[task_id]
    injection = injection or Injection("normal")
    status = status or injection.status
    rng, cost_factor, latency_factor = _factors(n, task_id, trial)
    _, baseline_cost, baseline_latency = _factors(0, task_id, 0)
    if injection.cost is not None:
        cost_factor = baseline_cost * injection.cost
    if injection.latency is not None:
        latency_factor = baseline_latency * injection.latency
    started_at = _started_at(day, task_id, trial, rng)
    omit_final_output = rng.random() < 0.25  # exercises the "last llm_call output" fallback
    answer = injection.answer or _vary_case_or_space(task.answer, rng.randrange(8))
    answer += injection.answer_suffix
    steps = _steps(agent, task, injection, answer, cost_factor, latency_factor, rng)
    steps = _cut_short(steps, status)
    _stamp(steps, started_at)

    metadata: dict[str, object] = {"task_id": task_id, "trial": trial, "category": task.category}
    finished = status not in (EpisodeStatus.RUNNING, EpisodeStatus.TIMEOUT)
    if finished and (not omit_final_output or injection.answer_suffix):
        metadata["final_output"] = answer  # the leak must sit in final_output, so never omit it
    if n == 0 and trial == 0 and task_id == PINNED_BASELINE:
        metadata["baseline"] = True
    total_ms = round(sum(s.duration_ms for s in steps), 1)
    tool_calls = [s.tool_name for s in steps if s.step_type is StepType.TOOL_CALL]
    return Episode(
        episode_id=_episode_id(day, task_id, trial),
        agent_id=agent.agent_id,
        status=status,
        steps=steps,
        tools_used=list(dict.fromkeys(tool_calls)),
        total_tokens=sum(s.tokens for s in steps),
        total_cost_usd=round(sum(s.cost_usd for s in steps), 8),
        total_duration_ms=total_ms,
        step_count=len(steps),
        started_at=started_at,
        ended_at=None if status is EpisodeStatus.RUNNING else started_at + timedelta(milliseconds=total_ms),
        metadata=metadata,
    )


def _started_at(day: date, task_id: str, trial: int, rng: random.Random) -> datetime:
    """Trials 0, 1, 2 start in 7-hour bands, so trial 0 is always its task's earliest run that
    day (the `first` baseline); extra trials start from 21:00."""
    slot = list(TASKS).index(task_id)
    if trial < TRIALS:
        offset = timedelta(hours=7 * trial, minutes=20 * slot)
    else:
        offset = timedelta(hours=21, minutes=50 * (trial - TRIALS) + slot)
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return midnight + offset + timedelta(seconds=rng.randrange(600))


def _vary_case_or_space(answer: str, pick: int) -> str:
    """The same answer to a normalized comparison (case-folded, whitespace collapsed)."""
    if pick == 0:
        return answer.lower()
    if pick == 1:
        return answer.replace(" ", "  ", 2)
    return answer


def _steps(
    agent: Agent, task: Task, injection: Injection, answer: str, cost_factor: float, latency_factor: float, rng: random.Random
) -> list[Step]:
    """llm_call (the question), a tool_call/tool_result pair per tool, llm_call (the answer).

    Cost and tokens go to the two LLM calls (2:3), latency to every step by weight, so scaling
    a factor scales every step and the totals alike.
    """
    tools = injection.tools or task.tools
    llm = {"model": agent.model, "provider": PROVIDER}
    specs: list[tuple[dict[str, object], float, float]] = [  # (fields, cost weight, latency weight)
        (
            {
                "step_type": StepType.LLM_CALL,
                "input_summary": task.question,
                "output_summary": f"Plan: call {', '.join(tools)}.",
                **llm,
            },
            2,
            3,
        )
    ]
    for position, tool in enumerate(tools, 1):
        tool_in, tool_out = TOOL_IO[tool]
        if position == len(tools) and task.slug in TASK_FACTS:
            tool_out = f"{tool_out[:-1]}, {TASK_FACTS[task.slug]}}}"
        specs.append(({"step_type": StepType.TOOL_CALL, "tool_name": tool, "input_summary": tool_in}, 0, 2))
        result = (
            {"step_type": StepType.ERROR, "error": TOOL_ERRORS[tool]}
            if injection.error_results
            else {"step_type": StepType.TOOL_RESULT, "output_summary": tool_out}
        )
        specs.append(({"tool_name": tool, **result}, 0, 0.2))
    specs.append(
        ({"step_type": StepType.LLM_CALL, "input_summary": "Compose the final answer.", "output_summary": answer, **llm}, 3, 3)
    )

    cost_sum = sum(c for _, c, _ in specs)
    latency_sum = sum(w for _, _, w in specs)
    return [
        Step(
            step_index=i,
            air_record_id=str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            tokens=round(task.tokens * cost_factor * c / cost_sum),
            cost_usd=round(task.cost_usd * cost_factor * c / cost_sum, 8),
            duration_ms=round(task.duration_ms * latency_factor * w / latency_sum, 1),
            **fields,
        )
        for i, (fields, c, w) in enumerate(specs)
    ]


def _cut_short(steps: list[Step], status: EpisodeStatus) -> list[Step]:
    """A timeout hangs in its last tool call (no final answer, but the whole tool sequence, so
    only correctness flags it); a running episode has recorded only its first half so far."""
    if status is EpisodeStatus.TIMEOUT:
        last_call = max(i for i, s in enumerate(steps) if s.step_type is StepType.TOOL_CALL)
        steps = steps[: last_call + 1]
        steps[-1].duration_ms = HUNG_TOOL_MS
    elif status is EpisodeStatus.RUNNING:
        steps = steps[: len(steps) // 2]
    return steps


def _stamp(steps: list[Step], started_at: datetime) -> None:
    """Each step's timestamp is when it began: the run's start plus the steps before it."""
    elapsed = 0.0
    for step in steps:
        step.timestamp = started_at + timedelta(milliseconds=elapsed)
        elapsed += step.duration_ms


def _malformed(day: date, n: int, kind: str, good: list[str], bad: int) -> str:
    """A copy of the good record beside it with one defect, under its own id and without steps,
    so that a lenient reader can never mistake it for (or double-count) a real run."""
    record = json.loads(good[_slot(n, len(good), bad)])
    record.update(episode_id=f"ep-{day.isoformat()}-corrupt-{n}", steps=[], step_count=0)
    if kind == "missing_agent_id":
        del record["agent_id"]
    elif kind == "bad_status":
        record["status"] = "exploded"
    elif kind == "bad_started_at":
        record["started_at"] = "last Tuesday, after lunch"
    text = json.dumps(record, separators=(",", ":"))
    return text[: len(text) // 2] if kind == "truncated" else text


def _slot(n: int, good: int, bad: int) -> int:
    """Where the n-th of `bad` lines goes among `good` lines: evenly spread, never first or last."""
    return (n + 1) * good // (bad + 1)


def _interleave(good: list[str], bad: list[str]) -> list[str]:
    lines = list(good)
    for n in reversed(range(len(bad))):  # back to front, so earlier slots keep their place
        lines.insert(_slot(n, len(good), len(bad)), bad[n])
    return lines
