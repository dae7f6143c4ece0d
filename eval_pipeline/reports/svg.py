"""Inline SVG charts: the HTML report must open offline and attach to an email, so no chart library.

Every label that could come from data (agent names, dates) is escaped; numbers are formatted here.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 560, 190, 48, 12, 14, 34
MARKERS = ("circle", "square", "triangle", "diamond")


def line_chart(
    days: list[str],
    series: dict[str, list[float | None]],
    *,
    label: Callable[[float], str],
    title: str,
    domain: tuple[float, float] | None = None,
) -> Markup:
    """One line per series over `days` (gaps where a value is missing), every value a marker of the series' own shape,
    nudged sideways so equal values stay apart, with a <title> naming it; y ticks at the ends and at zero. `domain`:
    the fixed y range of a bounded figure (0..1); else the values' range, always holding zero."""
    values = [v for points in series.values() for v in points if v is not None]
    if not days or not values:
        return Markup('<p class="empty">No data for this chart yet.</p>')
    low, high = domain or _span(values)
    plot_width = WIDTH - LEFT - RIGHT
    step = plot_width / len(days)  # each day a slot, the day in its middle: one day sits mid-chart, not at an edge
    nudge = min(step / (len(series) + 1), 8.0)
    x = lambda i, n: LEFT + step * (i + 0.5) + nudge * (n - (len(series) - 1) / 2)  # noqa: E731
    y = lambda v: TOP + (HEIGHT - TOP - BOTTOM) * (1 - (v - low) / (high - low))  # noqa: E731
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT + 18 * ((len(series) + 2) // 3)}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" class="axis"/>',
    ]
    for tick in sorted({low, high, *([0.0] if low < 0 < high else [])}):
        parts.append(f'<text x="{LEFT - 4}" y="{y(tick) + 4:.1f}" class="tick" text-anchor="end">{escape(label(tick))}</text>')
    shown_days = range(len(days)) if len(days) <= 7 else (0, len(days) - 1)
    for i in shown_days:
        parts.append(f'<text x="{LEFT + step * (i + 0.5):.1f}" y="{HEIGHT - BOTTOM + 14}" class="tick day" '
                     f'text-anchor="middle">{escape(days[i])}</text>')  # fmt: skip
    if low < 0 < high:
        parts.append(f'<line x1="{LEFT}" y1="{y(0):.1f}" x2="{WIDTH - RIGHT}" y2="{y(0):.1f}" class="zero"/>')
    for index, (name, points) in enumerate(sorted(series.items())):
        colour = PALETTE[index % len(PALETTE)]
        for run in _runs(points):
            if len(run) > 1:
                coords = " ".join(f"{x(i, index):.1f},{y(v):.1f}" for i, v in run)
                parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for i, v in run:
                point = f"{escape(name)} {escape(days[i])}: {escape(label(v))}"
                parts.append(_marker(index, x(i, index), y(v), colour, point))
        lx, ly = LEFT + (index % 3) * 170, HEIGHT + 4 + 18 * (index // 3)
        parts.append(_marker(index, lx + 5, ly + 5, colour, escape(name)))
        parts.append(f'<text x="{lx + 14}" y="{ly + 9}" class="legend">{escape(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


def _span(values: list[float]) -> tuple[float, float]:
    """A y range for unbounded values (percent changes): theirs and zero, a tenth wider, never empty."""
    low, high = min(*values, 0.0), max(*values, 0.0)
    pad = (high - low) / 10 or 10.0
    return low - (pad if low < 0 else 0), high + pad


def _marker(index: int, cx: float, cy: float, colour: str, title: str) -> str:
    """Series `index`'s point marker: a circle, square, triangle or diamond (then again), white-edged to stand out."""
    shape, r = MARKERS[index % len(MARKERS)], 4.0
    edge = f'fill="{colour}" stroke="#fff" stroke-width="1" class="point"><title>{title}</title>'
    if shape == "circle":
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="{r}" {edge}</circle>'
    if shape == "square":
        return f'<rect x="{cx - r:.1f}" y="{cy - r:.1f}" width="{2 * r}" height="{2 * r}" {edge}</rect>'
    corners = (
        ((0, -r - 1), (r + 1, r), (-r - 1, r)) if shape == "triangle" else ((0, -r - 1), (r + 1, 0), (0, r + 1), (-r - 1, 0))
    )
    points = " ".join(f"{cx + dx:.1f},{cy + dy:.1f}" for dx, dy in corners)
    return f'<polygon points="{points}" {edge}</polygon>'


def _runs(points: list[float | None]) -> list[list[tuple[int, float]]]:
    """Consecutive non-missing points, so a missing day breaks the line instead of bridging it."""
    runs: list[list[tuple[int, float]]] = [[]]
    for i, v in enumerate(points):
        if v is None:
            runs.append([])
        else:
            runs[-1].append((i, v))
    return [run for run in runs if run]


def histogram(counts: list[int], *, title: str) -> Markup:
    """Counts of 0..1 values in equal bins (`score_histogram`), as bars."""
    if not any(counts):
        return Markup('<p class="empty">No scored episodes.</p>')
    bins, top = len(counts), max(counts)
    bar = (WIDTH - LEFT - RIGHT) / bins
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}">',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" class="axis"/>',
    ]
    for i, count in enumerate(counts):
        h = (HEIGHT - TOP - BOTTOM) * count / top
        bx = LEFT + i * bar
        parts.append(f'<rect x="{bx + 2:.1f}" y="{HEIGHT - BOTTOM - h:.1f}" width="{bar - 4:.1f}" height="{h:.1f}" class="bar"/>')
        if count:
            parts.append(
                f'<text x="{bx + bar / 2:.1f}" y="{HEIGHT - BOTTOM - h - 3:.1f}" class="tick" text-anchor="middle">{count}</text>'
            )
        parts.append(
            f'<text x="{bx + bar / 2:.1f}" y="{HEIGHT - BOTTOM + 14}" class="tick" text-anchor="middle">{i / bins:.1f}</text>'
        )
    parts.append("</svg>")
    return Markup("".join(parts))
