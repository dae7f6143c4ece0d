"""Inline SVG charts: the HTML report must open offline and attach to an email, so no chart library.

Every label that could come from data (agent names, dates) is escaped; numbers are formatted here.
"""

from __future__ import annotations

from collections.abc import Callable

from markupsafe import Markup, escape

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#ca8a04", "#db2777", "#4b5563", "#65a30d")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 560, 190, 48, 12, 14, 34


def line_chart(days: list[str], series: dict[str, list[float | None]], *, label: Callable[[float], str], title: str) -> Markup:
    """One line per series over `days` (gaps where a value is missing), with min/max y ticks and a legend."""
    values = [v for points in series.values() for v in points if v is not None]
    if not days or not values:
        return Markup('<p class="empty">No data for this chart yet.</p>')
    low, high = min(values), max(values)
    if low == high:
        low, high = low - 1, high + 1
    x = lambda i: LEFT + (WIDTH - LEFT - RIGHT) * (i / (len(days) - 1) if len(days) > 1 else 0.5)  # noqa: E731
    y = lambda v: TOP + (HEIGHT - TOP - BOTTOM) * (1 - (v - low) / (high - low))  # noqa: E731
    parts = [
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT + 18 * ((len(series) + 2) // 3)}" role="img" '
        f'aria-label="{escape(title)}">',
        f'<line x1="{LEFT}" y1="{HEIGHT - BOTTOM}" x2="{WIDTH - RIGHT}" y2="{HEIGHT - BOTTOM}" class="axis"/>',
        f'<text x="{LEFT - 4}" y="{y(high) + 4:.1f}" class="tick" text-anchor="end">{escape(label(high))}</text>',
        f'<text x="{LEFT - 4}" y="{y(low) + 4:.1f}" class="tick" text-anchor="end">{escape(label(low))}</text>',
        f'<text x="{LEFT}" y="{HEIGHT - BOTTOM + 14}" class="tick">{escape(days[0])}</text>',
        f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - BOTTOM + 14}" class="tick" text-anchor="end">{escape(days[-1])}</text>',
    ]
    if low < 0 < high:
        parts.append(f'<line x1="{LEFT}" y1="{y(0):.1f}" x2="{WIDTH - RIGHT}" y2="{y(0):.1f}" class="zero"/>')
    for index, (name, points) in enumerate(sorted(series.items())):
        colour = PALETTE[index % len(PALETTE)]
        for run in _runs(points):
            if len(run) == 1:
                i, v = run[0]
                parts.append(f'<circle cx="{x(i):.1f}" cy="{y(v):.1f}" r="2.5" fill="{colour}"/>')
            else:
                coords = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in run)
                parts.append(f'<polyline points="{coords}" fill="none" stroke="{colour}" stroke-width="2"/>')
        lx, ly = LEFT + (index % 3) * 170, HEIGHT + 4 + 18 * (index // 3)
        parts.append(f'<rect x="{lx}" y="{ly}" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{lx + 14}" y="{ly + 9}" class="legend">{escape(name)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))


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
