"""The sample generator: deterministic bytes, valid records, and exactly the injected regressions.

Every figure is read back from the written files, as the pipeline will read them.
"""

from __future__ import annotations

import json
import re
from datetime import date
from pathlib import Path

import pytest
from pydantic import ValidationError

from eval_pipeline.episodes.model import Episode, EpisodeStatus, StepType
from eval_pipeline.episodes.samples import (
    EXPECTED_REGRESSIONS,
    MALFORMED_LINES_PER_DAY,
    SAMPLE_DAYS,
    write_samples,
)

DAY1, DAY2, DAY3 = SAMPLE_DAYS
AGENT_IDS = {"support-bot", "research-agent", "code-assistant", "billing-bot"}
SECRET = re.compile(r"sk-live-[A-Za-z0-9]{24,}")


@pytest.fixture(scope="module")
def sample_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("samples")
    write_samples(directory)
    return directory


@pytest.fixture(scope="module")
def days(sample_dir: Path) -> dict[date, tuple[list[Episode], int]]:
    """Per day: the valid episodes of its JSONL file and how many of its lines were malformed."""
    parsed = {}
    for day in SAMPLE_DAYS:
        good, bad = [], 0
        for line in (sample_dir / f"episodes-{day.isoformat()}.jsonl").read_text().splitlines():
            try:
                good.append(Episode.model_validate_json(line))
            except ValidationError:
                bad += 1
        parsed[day] = (good, bad)
    return parsed


def _by_trial(days, day: date) -> dict[tuple[str, int], Episode]:
    return {(e.task_id, e.metadata["trial"]): e for e in days[day][0]}


def test_same_bytes_every_call(tmp_path: Path) -> None:
    first = write_samples(tmp_path / "a")
    second = write_samples(tmp_path / "b")
    assert (
        [p.name for p in first]
        == [p.name for p in second]
        == [
            "episodes-2026-11-01.jsonl",
            "episodes-2026-11-02.jsonl",
            "episodes-2026-11-03.jsonl",
            "episodes-2026-11-03-extra.json",
        ]
    )
    for a, b in zip(first, second, strict=True):
        assert a.read_bytes() == b.read_bytes()


def test_good_and_malformed_counts(days) -> None:
    for day in SAMPLE_DAYS:
        good, bad = days[day]
        assert bad == MALFORMED_LINES_PER_DAY[day] > 0
        assert len(good) == (50 if day == DAY3 else 48)  # 16 tasks x 3 trials; day 3 adds 2
        assert all(e.partition_date == day for e in good)
        assert len({e.episode_id for e in good}) == len(good)


def test_malformed_lines_sit_between_good_ones(sample_dir: Path) -> None:
    lines = (sample_dir / "episodes-2026-11-01.jsonl").read_text().splitlines()
    Episode.model_validate_json(lines[0])
    Episode.model_validate_json(lines[-1])


def test_json_array_file(sample_dir: Path) -> None:
    text = (sample_dir / "episodes-2026-11-03-extra.json").read_text()
    assert text.startswith("[\n  {")
    episodes = [Episode.model_validate(record) for record in json.loads(text)]
    assert [e.metadata["trial"] for e in episodes] == [4, 5]
    assert all(e.partition_date == DAY3 and e.status is EpisodeStatus.SUCCESS for e in episodes)


def test_every_day_has_all_agents(days) -> None:
    for day in SAMPLE_DAYS:
        assert {e.agent_id for e in days[day][0]} == AGENT_IDS


def test_episode_totals_match_steps(days) -> None:
    for day in SAMPLE_DAYS:
        for e in days[day][0]:
            assert [s.step_index for s in e.steps] == list(range(len(e.steps))) == list(range(e.step_count))
            assert e.total_tokens == sum(s.tokens for s in e.steps)
            assert e.total_cost_usd == pytest.approx(sum(s.cost_usd for s in e.steps))
            assert e.total_duration_ms == pytest.approx(sum(s.duration_ms for s in e.steps))
            assert e.tools_used == list(dict.fromkeys(e.tools))
            assert e.metadata["task_id"].startswith(f"{e.agent_id}/")


def test_trial_zero_is_the_earliest_run_and_one_baseline_is_pinned(days) -> None:
    for day in SAMPLE_DAYS:
        earliest = {
            t: min((e for e in days[day][0] if e.task_id == t), key=lambda e: e.started_at)
            for t in {e.task_id for e in days[day][0]}
        }
        assert all(e.metadata["trial"] == 0 for e in earliest.values())
    pinned = [e for day in SAMPLE_DAYS for e in days[day][0] if e.metadata.get("baseline")]
    assert [(e.partition_date, e.metadata["trial"]) for e in pinned] == [(DAY1, 0)]


def test_final_output_is_sometimes_left_to_the_last_llm_call(days) -> None:
    finished = [e for e in days[DAY1][0] if e.status is EpisodeStatus.SUCCESS]
    without = [e for e in finished if "final_output" not in e.metadata]
    assert 0 < len(without) < len(finished) / 2
    assert all(e.final_output for e in without)


@pytest.mark.parametrize(
    ("task_id", "cost", "latency"),
    [
        ("research-agent/compare-vector-databases", 1.50, None),
        ("research-agent/summarize-arxiv-paper", 1.25, None),
        ("code-assistant/fix-failing-test", None, 1.70),
        ("code-assistant/add-type-hints", None, 1.35),
        ("billing-bot/explain-invoice", 0.6, 0.7),
        ("billing-bot/duplicate-charge", 0.6, 0.7),
    ],
)
def test_injected_ratios_against_day1_trial0(days, task_id: str, cost, latency) -> None:
    baseline = _by_trial(days, DAY1)[(task_id, 0)]
    for trial in range(3):
        candidate = _by_trial(days, DAY2)[(task_id, trial)]
        cost_ratio = candidate.total_cost_usd / baseline.total_cost_usd
        latency_ratio = candidate.total_duration_ms / baseline.total_duration_ms
        assert cost_ratio == pytest.approx(cost, rel=1e-3) if cost else 0.9 < cost_ratio < 1.1
        assert latency_ratio == pytest.approx(latency, rel=1e-3) if latency else 0.9 < latency_ratio < 1.1


def test_billing_bot_only_improves_on_day2(days) -> None:
    day1, day2 = _by_trial(days, DAY1), _by_trial(days, DAY2)
    billing = [key for key in day2 if key[0].startswith("billing-bot/")]
    assert len(billing) == 12
    for task_id, trial in billing:
        candidate, baseline = day2[(task_id, trial)], day1[(task_id, 0)]
        assert candidate.total_cost_usd < baseline.total_cost_usd
        assert candidate.total_duration_ms < baseline.total_duration_ms
        assert candidate.tools == baseline.tools
        assert candidate.final_output.casefold().split() == baseline.final_output.casefold().split()


def test_everything_not_injected_stays_inside_thresholds(days) -> None:
    """Only the listed tasks may deviate; all others keep cost and latency within 10 % of day 1."""
    day1 = _by_trial(days, DAY1)
    injected = {(day, task_id) for day, _, task_id, _ in EXPECTED_REGRESSIONS}
    injected |= {(DAY2, task_id) for task_id, _ in day1 if task_id.startswith("billing-bot/")}
    for day in SAMPLE_DAYS:
        for e in days[day][0]:
            if (day, e.task_id) in injected or e.status is not EpisodeStatus.SUCCESS:
                continue
            baseline = day1[(e.task_id, 0)]
            assert 0.9 < e.total_cost_usd / baseline.total_cost_usd < 1.1
            assert 0.9 < e.total_duration_ms / baseline.total_duration_ms < 1.1
            assert e.tools == baseline.tools
            assert e.final_output.casefold().split() == baseline.final_output.casefold().split()
            assert not any(s.is_error for s in e.steps)


def test_qualitative_injections(days) -> None:
    day1, day2, day3 = (_by_trial(days, day) for day in SAMPLE_DAYS)
    for trial in range(3):
        tools = day2[("support-bot/where-is-my-order", trial)].tools
        assert tools and not set(tools) & set(day1[("support-bot/where-is-my-order", 0)].tools)

        failed = day2[("code-assistant/rename-config-key", trial)]
        assert failed.status is EpisodeStatus.FAILURE
        assert failed.final_output != day1[("code-assistant/rename-config-key", 0)].final_output

        for leaking_day in (day2, day3):
            assert SECRET.search(leaking_day[("support-bot/refund-request", trial)].metadata["final_output"])
        assert not SECRET.search(day1[("support-bot/refund-request", trial)].final_output)

        fabricated = day2[("support-bot/damaged-item", trial)].final_output
        assert "$149.99" in fabricated and "129.99" in day2[("support-bot/damaged-item", trial)].steps[-2].output_summary

        erring = day2[("research-agent/latest-python-release", trial)]
        errors = [s for s in erring.steps if s.step_type is StepType.ERROR and s.error]
        assert erring.status is EpisodeStatus.SUCCESS and len(errors) == 2 and len(erring.steps) == 6


def test_day3_cut_short_runs(days) -> None:
    day3 = _by_trial(days, DAY3)
    timeout = day3[("research-agent/market-size-estimate", 3)]
    assert timeout.status is EpisodeStatus.TIMEOUT and timeout.ended_at is not None
    assert "final_output" not in timeout.metadata and timeout.steps[-1].step_type is StepType.TOOL_CALL
    assert timeout.tools == _by_trial(days, DAY1)[("research-agent/market-size-estimate", 0)].tools
    running = day3[("code-assistant/explain-function", 3)]
    assert running.status is EpisodeStatus.RUNNING and running.ended_at is None
    expected = (DAY3, "research-agent", "research-agent/market-size-estimate", "failed_outcome")
    assert expected in EXPECTED_REGRESSIONS


def test_expected_regressions_cover_every_kind() -> None:
    kinds = {kind for _, _, _, kind in EXPECTED_REGRESSIONS}
    assert kinds == {
        "cost_warning",
        "cost_critical",
        "latency_warning",
        "latency_critical",
        "tool_sequence",
        "failed_outcome",
        "leaked_secret",
        "error_steps",
        "fabricated_number",
    }
    assert all(agent != "billing-bot" for _, agent, _, _ in EXPECTED_REGRESSIONS)
