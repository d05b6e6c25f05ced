"""A price-history step chart as inline SVG: no JavaScript, no CDN, printable."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from django.utils.html import escape

WIDTH, HEIGHT, PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 640, 230, 64, 16, 24, 36


def history_svg(points: Sequence[tuple[dt.datetime, float]], *, now: dt.datetime, title: str) -> str:
    """A step line of USD per GPU-hour from each change until the next one (the last until `now`)."""
    if not points:
        return ""
    start = points[0][0]
    end = max(now, points[-1][0] + dt.timedelta(hours=1))
    low = min(price for _, price in points)
    high = max(price for _, price in points)
    if high - low < 1e-9:
        low, high = low * 0.9, high * 1.1 + 1e-6
    span_s = (end - start).total_seconds()
    plot_w, plot_h = WIDTH - PAD_LEFT - PAD_RIGHT, HEIGHT - PAD_TOP - PAD_BOTTOM

    def x(moment: dt.datetime) -> float:
        return PAD_LEFT + plot_w * (moment - start).total_seconds() / span_s

    def y(price: float) -> float:
        return PAD_TOP + plot_h * (1 - (price - low) / (high - low))

    path = []
    for index, (moment, price) in enumerate(points):
        if index:
            path.append(f"{x(moment):.1f},{y(points[index - 1][1]):.1f}")
        path.append(f"{x(moment):.1f},{y(price):.1f}")
    path.append(f"{x(end):.1f},{y(points[-1][1]):.1f}")
    dots = "".join(
        f'<circle cx="{x(m):.1f}" cy="{y(p):.1f}" r="3"><title>{m:%Y-%m-%d %H:%M} UTC: ${p:.4f}/GPU-h</title></circle>'
        for m, p in points
    )
    ticks = "".join(
        f'<text x="{PAD_LEFT - 6}" y="{y(v) + 4:.1f}" text-anchor="end">${v:.2f}</text>'
        f'<line x1="{PAD_LEFT}" x2="{WIDTH - PAD_RIGHT}" y1="{y(v):.1f}" y2="{y(v):.1f}" class="grid"/>'
        for v in (low, (low + high) / 2, high)
    )
    return (
        f'<svg class="chart history" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" aria-label="{escape(title)}" '
        f'xmlns="http://www.w3.org/2000/svg"><title>{escape(title)}</title>'
        # Styled by static/css/app.css (svg.chart.history): the Content-Security-Policy allows no inline <style>.
        f"{ticks}"
        f'<polyline points="{" ".join(path)}"/>{dots}'
        f'<text x="{PAD_LEFT}" y="{HEIGHT - 10}">{start:%Y-%m-%d}</text>'
        f'<text x="{WIDTH - PAD_RIGHT}" y="{HEIGHT - 10}" text-anchor="end">{end:%Y-%m-%d}</text>'
        f'<text x="{PAD_LEFT + 4}" y="{PAD_TOP - 4}" class="axis">USD per GPU-hour</text></svg>'
    )
