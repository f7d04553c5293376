"""Charts drawn on the server as SVG: no script, no chart library, readable by a screen reader (a table
follows every chart on the page, and the SVG names its figures)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from decimal import Decimal

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT, PAD_TOP, PAD_BOTTOM = 600, 180, 12, 22


@dataclass(frozen=True)
class Bar:
    day: date
    value: Decimal


def bar_chart(bars: list[Bar], *, label: str) -> SafeString:
    """Daily bars scaled to the highest one; each bar has a <title> with its day and figure."""
    top = max((bar.value for bar in bars), default=Decimal(0)) or Decimal(1)
    step = WIDTH / max(len(bars), 1)
    usable = HEIGHT - PAD_TOP - PAD_BOTTOM
    rects = []
    for index, bar in enumerate(bars):
        height = float(bar.value / top) * usable
        x = index * step + step * 0.15
        y = PAD_TOP + usable - height
        rects.append(
            (
                f"{x:.1f}",
                f"{y:.1f}",
                f"{step * 0.7:.1f}",
                f"{max(height, 0.0):.1f}",
                bar.day.isoformat(),
                bar.value,
            )
        )
    body = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" rx="2"><title>{}: ${}</title></rect>',
        rects,
    )
    ticks = ""
    if bars:
        ticks = format_html(
            '<text x="0" y="{}" class="tick">{}</text><text x="{}" y="{}" class="tick" text-anchor="end">{}</text>',
            HEIGHT - 4,
            bars[0].day.isoformat(),
            WIDTH,
            HEIGHT - 4,
            bars[-1].day.isoformat(),
        )
    return format_html(
        '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}">'
        '<line x1="0" y1="{}" x2="{}" y2="{}" class="axis"></line>{}{}</svg>',
        WIDTH,
        HEIGHT,
        label,
        HEIGHT - PAD_BOTTOM,
        WIDTH,
        HEIGHT - PAD_BOTTOM,
        body,
        ticks,
    )
