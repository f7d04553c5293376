"""Charts drawn on the server as SVG: no script, no chart library, readable by a screen reader (a table
follows every chart on the page, and the SVG names its figures)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from decimal import Decimal
from typing import Any

from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

WIDTH, HEIGHT, PAD_TOP, PAD_BOTTOM = 600, 160, 12, 2


@dataclass(frozen=True)
class Bar:
    day: date
    value: Decimal

    @property
    def figure(self) -> str:
        """The value to two places, as the table under a chart shows it (cheaper than `floatformat`)."""
        return f"{self.value:.2f}"


def bar_chart(bars: list[Bar], *, label: str, unit: str = "$") -> SafeString:
    """Daily bars scaled to the highest one; each bar has a <title> with its day and figure (`unit` before
    it when it is "$", else after it). The first and last days are written under the chart in HTML, so that
    they keep the page's text size on a phone, where the drawing shrinks."""
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
                f"${bar.value}" if unit == "$" else f"{bar.value} {unit}",
            )
        )
    body = format_html_join(
        "",
        '<rect x="{}" y="{}" width="{}" height="{}" rx="2"><title>{}: {}</title></rect>',
        rects,
    )
    ticks = ""
    if bars:
        ticks = format_html(
            '<div class="chart-ticks" aria-hidden="true"><span>{}</span><span>{}</span></div>',
            bars[0].day.isoformat(),
            bars[-1].day.isoformat(),
        )
    return format_html(
        '<svg class="chart" viewBox="0 0 {} {}" role="img" aria-label="{}">'
        '<line x1="0" y1="{}" x2="{}" y2="{}" class="axis"></line>{}</svg>{}',
        WIDTH,
        HEIGHT,
        label,
        HEIGHT - PAD_BOTTOM,
        WIDTH,
        HEIGHT - PAD_BOTTOM,
        body,
        ticks,
    )


def daily_chart(rows: list[dict[str, Any]], key: str, *, days: int, label: str, unit: str = "") -> SafeString:
    """A bar a day for the last `days` UTC days from rows of `{"date": "YYYY-MM-DD", key: figure}`; days
    without a row are zero."""
    by_day = {row["date"]: Decimal(row[key]) for row in rows}
    today = timezone.now().date()
    bars = [
        Bar(day=day, value=by_day.get(day.isoformat(), Decimal(0)))
        for day in (today - timedelta(days=offset) for offset in range(days - 1, -1, -1))
    ]
    return bar_chart(bars, label=label, unit=unit)
