"""The HTML report's pieces a reader misread: trend charts' axes and points, and which worst episodes a page shows."""

import re

from eval_pipeline.reports.html import worst_shown
from eval_pipeline.reports.markdown import rate, signed_percent
from eval_pipeline.reports.svg import line_chart


def _ticks(svg: str) -> list[str]:
    return re.findall(r'class="tick"[^>]*>([^<]*)<', svg)


def test_a_first_day_of_perfect_pass_rates_reads_0_to_100_percent_with_every_agent_visible():
    """Issue 21: "200%" on the axis of a day at 100 %, and three agents at 50 % drawn as one dot."""
    series = {"a": [None, 1.0], "b": [None, 0.5], "c": [None, 0.5], "d": [None, 0.5]}
    svg = str(line_chart(["2026-11-01", "2026-11-02"], series, label=rate, title="Pass rate", domain=(0, 1)))
    assert _ticks(svg) == ["0%", "100%"]
    points = re.findall(r'(<(?:circle|rect|polygon)[^>]*class="point">)<title>([^<]*) 2026-11-02: 50%</title>', svg)
    shapes = {(marker.split()[0], marker.count(",")) for marker, _ in points}  # a triangle has 3 corners, a diamond 4
    assert sorted(name for _, name in points) == ["b", "c", "d"] and len(shapes) == 3
    xs = re.findall(r'cx="([\d.]+)"|x="([\d.]+)" y="[\d.]+" width="8\.0"|points="([\d.]+),', svg)
    assert len({next(v for v in x if v) for x in xs}) >= 4  # each agent's marker nudged to its own x


def test_percent_changes_hold_zero_and_never_read_minus_zero():
    svg = str(line_chart(["2026-11-02"], {"a": [-0.01], "b": [0.004]}, label=signed_percent, title="Latency"))
    assert "-0.0" not in svg and "0.0%" in _ticks(svg)


def test_every_failed_episode_is_shown_before_any_other():
    episodes = [{"episode_id": f"f{n}", "passed": False} for n in range(25)] + [{"episode_id": "p", "passed": True}]
    assert [e["episode_id"] for e in worst_shown(episodes, limit=20)] == [f"f{n}" for n in range(25)]
    shown = worst_shown([{"episode_id": "n", "passed": None}, {"episode_id": "f", "passed": False}], limit=2)
    assert [e["episode_id"] for e in shown] == ["f", "n"]
