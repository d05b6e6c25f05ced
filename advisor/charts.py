"""Every chart of the product, as inline SVG rendered on the server from an Advice dict.

One module for the planner page, the shared page, the saved-scenario page and the PDF: each
public ``chart_*`` function takes the Advice JSON (``Advice.to_dict()``) and returns a
:class:`Chart` whose ``svg`` is safe markup. Nothing here computes advice; the only arithmetic is
drawing (scales, ticks) and, for the utilization chart, evaluating the owned-cost curve
``c(u) = F / u + v`` whose two constants are read back from the Advice's own numbers.

No JavaScript and no CDN: the page works offline and WeasyPrint draws the same SVG in the PDF.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from django.utils.safestring import SafeString, mark_safe

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.advice.documents import recommended_size
from advisor.advice.models import SCALING_EFFICIENCY_MEANING
from advisor.advice.recommendation import advice_runs_judged, finishes_runs
from advisor.advice.uncertainty import sensitivity_label
from advisor.cash_flow import defaulted_sources, utilization_basis
from advisor.scenario import DEFAULTS
from pricing.models import MARKET_PHRASES, RESERVED_MARKETS, Market

RENT = "#d9480f"
BUY = "#2b8a3e"
ACCENT = "#1f6feb"
MUTED = "#5b6470"
GRID = "#e3e7ec"
MARKET_COLORS = {
    Market.ON_DEMAND.value: RENT,
    Market.SPOT.value: "#e8590c",
    Market.RESERVED_1Y.value: "#ae3ec9",
    Market.RESERVED_3Y.value: "#7048e8",
}
MARKET_LABELS = MARKET_PHRASES

WIDTH = 640
HEIGHT = 300
PAD_LEFT, PAD_RIGHT, PAD_TOP, PAD_BOTTOM = 72, 20, 34, 48
# Average width of an 11 px DejaVu Sans character: enough to keep labels apart without measuring fonts.
CHAR_WIDTH = 6.2
LEGEND_ROW = 16
LEGEND_MARGIN = 8
# Point shapes that tell apart series sharing a colour (colour x shape: 8 x 4 distinct looks).
MARKERS = ("circle", "square", "triangle", "diamond")
PALETTE_WIDE = (ACCENT, RENT, BUY, "#ae3ec9", "#7048e8", "#e8590c", "#0b7285", "#5c940d")


@dataclass(frozen=True)
class Series:
    label: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    color: str
    dash: str | None = None
    band_low: Sequence[float | None] | None = None
    band_high: Sequence[float | None] | None = None
    points: bool = True
    marker: str = "circle"


@dataclass(frozen=True)
class Key:
    """One legend entry: a label and a sample of what it stands for (colour, dash, point shape)."""

    label: str
    color: str
    dash: str | None = None
    marker: str | None = None


@dataclass(frozen=True)
class Marker:
    x: float
    y: float
    label: str
    color: str = MUTED
    label_below: bool = False


@dataclass(frozen=True)
class Chart:
    testid: str
    title: str
    svg: SafeString
    caption: str = ""
    legend: tuple[tuple[str, str], ...] = field(default_factory=tuple)


# --- number formatting shared by axes and labels ---


def format_usd(value: float) -> str:
    """An axis or label amount: ``formatting.usd``, thousands and millions short."""
    return fmt.usd(value, compact=True)


def format_hours(value: float) -> str:
    if value >= 48:
        return f"{value / 24:,.1f} d"
    return f"{value:,.1f} h"


def format_percent(value: float) -> str:
    return fmt.percent(value)


def _nice_ticks(low: float, high: float, *, count: int = 5) -> list[float]:
    if not math.isfinite(low) or not math.isfinite(high):
        return [0.0, 1.0]
    if high <= low:
        high = low + (abs(low) or 1.0)
    raw = (high - low) / count
    step = 10 ** math.floor(math.log10(raw))
    for multiple in (1, 2, 2.5, 5, 10):
        if raw <= step * multiple:
            step *= multiple
            break
    start = math.floor(low / step) * step
    ticks: list[float] = []
    value = start
    while value <= high + step * 0.5 and len(ticks) < 12:
        ticks.append(round(value, 10))
        value += step
    return ticks


class _Frame:
    """Linear (or log2) mapping from data to the plot area."""

    def __init__(
        self,
        *,
        x_range: tuple[float, float],
        y_range: tuple[float, float],
        x_log2: bool = False,
        width: int = WIDTH,
        height: int = HEIGHT,
        top_extra: int = 0,
    ) -> None:
        self.x_log2 = x_log2
        self.x0, self.x1 = (math.log2(v) for v in x_range) if x_log2 else x_range
        if self.x1 == self.x0:
            self.x0, self.x1 = self.x0 - 1, self.x1 + 1
        self.y0, self.y1 = y_range
        if self.y1 == self.y0:
            self.y1 = self.y0 + 1
        # top_extra: room above the plot for legend rows beyond the first; the plot keeps its height.
        self.width, self.height = width, height + top_extra
        self.left, self.right = PAD_LEFT, width - PAD_RIGHT
        self.top, self.bottom = PAD_TOP + top_extra, self.height - PAD_BOTTOM

    def x(self, value: float) -> float:
        v = math.log2(value) if self.x_log2 else value
        return self.left + (v - self.x0) / (self.x1 - self.x0) * (self.right - self.left)

    def y(self, value: float) -> float:
        clamped = min(max(value, self.y0), self.y1)
        return self.bottom - (clamped - self.y0) / (self.y1 - self.y0) * (self.bottom - self.top)


def _text_width(text: str, *, size: int = 11) -> float:
    return len(text) * CHAR_WIDTH * size / 11


def _point(shape: str | None, x: float, y: float, color: str, *, r: float = 3.0) -> str:
    """One data point drawn as ``shape`` (one of MARKERS; a circle when unknown)."""
    if shape == "square":
        return f'<rect x="{x - r:.1f}" y="{y - r:.1f}" width="{2 * r:.1f}" height="{2 * r:.1f}" fill="{color}"/>'
    if shape in ("triangle", "diamond"):
        corners = (
            [(x, y - r * 1.3), (x + r * 1.2, y + r), (x - r * 1.2, y + r)]
            if shape == "triangle"
            else [(x, y - r * 1.4), (x + r * 1.4, y), (x, y + r * 1.4), (x - r * 1.4, y)]
        )
        path = " ".join(f"{cx:.1f},{cy:.1f}" for cx, cy in corners)
        return f'<polygon points="{path}" fill="{color}"/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r:g}" fill="{color}"/>'


# A label's line: 11 px text and a little air.
_LABEL_LINE_PX = 14.0


def _clear_label_y(
    x: float, y: float, text: str, *, anchor: str, down: bool, placed: list[tuple[float, float, float, float]]
) -> float:
    """The baseline of a marker label moved a line at a time (down for a label below its point, else up) until it
    overlaps no label ``placed`` before it, which it then joins. Two markers a few points apart drew their labels
    over each other ("break-even vs on-demand 77%" on "100% (implied by 6 runs a year)", a new user's probe)."""
    width = len(text) * CHAR_WIDTH
    left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    step = _LABEL_LINE_PX if down else -_LABEL_LINE_PX
    for _ in range(len(placed) + 1):
        box = (left, left + width, y - 11, y + 3)
        if not any(box[0] < b[1] and b[0] < box[1] and box[2] < b[3] and b[2] < box[3] for b in placed):
            break
        y += step
    placed.append((left, left + width, y - 11, y + 3))
    return y


def _text(x: float, y: float, text: str, *, anchor: str = "middle", size: int = 11, color: str = MUTED) -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{color}">{escape(text)}</text>'
    )


def _svg(frame: _Frame, body: list[str], *, title: str) -> SafeString:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {frame.width} {frame.height}" '
        f'role="img" aria-label="{escape(title)}" class="chart-svg" '
        f'font-family="DejaVu Sans, system-ui, sans-serif">'
        f"<title>{escape(title)}</title>"
    )
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308 - every text fragment is escaped above


def _axes(
    frame: _Frame,
    *,
    x_ticks: Sequence[float],
    y_ticks: Sequence[float],
    x_format: Any,
    y_format: Any,
    x_label: str,
    y_label: str,
) -> list[str]:
    parts = []
    for tick in y_ticks:
        if tick < frame.y0 - 1e-9 or tick > frame.y1 + 1e-9:
            continue
        y = frame.y(tick)
        parts.append(f'<line x1="{frame.left}" y1="{y:.1f}" x2="{frame.right}" y2="{y:.1f}" stroke="{GRID}"/>')
        parts.append(_text(frame.left - 6, y + 4, y_format(tick), anchor="end"))
    labelled_right = -math.inf
    for tick in x_ticks:
        x = frame.x(tick)
        parts.append(f'<line x1="{x:.1f}" y1="{frame.bottom}" x2="{x:.1f}" y2="{frame.bottom + 4}" stroke="{MUTED}"/>')
        # Thin the labels: a tick whose label would touch the previous one keeps its mark and loses its label
        # (GPU counts 512, 560, 576 lie a few pixels apart on a log axis).
        label = x_format(tick)
        half = _text_width(label) / 2
        if x - half >= labelled_right + 4:
            parts.append(_text(x, frame.bottom + 16, label))
            labelled_right = x + half
    parts.append(
        f'<line x1="{frame.left}" y1="{frame.bottom}" x2="{frame.right}" y2="{frame.bottom}" stroke="{MUTED}"/>'
    )
    parts.append(f'<line x1="{frame.left}" y1="{frame.top}" x2="{frame.left}" y2="{frame.bottom}" stroke="{MUTED}"/>')
    parts.append(_text((frame.left + frame.right) / 2, frame.height - 10, x_label))
    parts.append(
        f'<text transform="translate(14 {(frame.top + frame.bottom) / 2:.1f}) rotate(-90)" text-anchor="middle" '
        f'font-size="11" fill="{MUTED}">{escape(y_label)}</text>'
    )
    return parts


def _polyline(frame: _Frame, xs: Sequence[float], ys: Sequence[float | None]) -> list[list[tuple[float, float]]]:
    """Screen points, split where a value is missing."""
    runs: list[list[tuple[float, float]]] = [[]]
    for x, y in zip(xs, ys, strict=True):
        if y is None or not math.isfinite(y):
            if runs[-1]:
                runs.append([])
            continue
        runs[-1].append((frame.x(x), frame.y(y)))
    return [run for run in runs if run]


def _series(frame: _Frame, series: Series) -> list[str]:
    parts = []
    if series.band_low is not None and series.band_high is not None:
        lows = [
            (x, lo)
            for x, lo, hi in zip(series.xs, series.band_low, series.band_high, strict=True)
            if lo is not None and hi is not None
        ]
        highs = [
            (x, hi)
            for x, lo, hi in zip(series.xs, series.band_low, series.band_high, strict=True)
            if lo is not None and hi is not None
        ]
        if len(lows) >= 2:
            outline = [(frame.x(x), frame.y(y)) for x, y in lows] + [
                (frame.x(x), frame.y(y)) for x, y in reversed(highs)
            ]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in outline)
            parts.append(f'<polygon points="{path}" fill="{series.color}" fill-opacity="0.15" stroke="none"/>')
    dash = f' stroke-dasharray="{series.dash}"' if series.dash else ""
    for run in _polyline(frame, series.xs, series.ys):
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
        parts.append(f'<polyline points="{path}" fill="none" stroke="{series.color}" stroke-width="2"{dash}/>')
        if series.points:
            parts.extend(_point(series.marker, x, y, series.color) for x, y in run)
    return parts


def _legend_rows(keys: Sequence[Key], *, left: float, right: float) -> list[list[tuple[float, Key]]]:
    """Legend entries laid out left to right, wrapping to a new row at the chart's right edge: (x, key) per row."""
    rows: list[list[tuple[float, Key]]] = [[]]
    x = left
    for key in keys:
        # Sample (16 px), the label measured a size up (the average width runs short on long ids), a gap.
        width = 16 + _text_width(key.label, size=12) + 12
        if rows[-1] and x + width > right:
            rows.append([])
            x = left
        rows[-1].append((x, key))
        x += width
    return rows


def _legend_height(keys: Sequence[Key]) -> int:
    """Room the legend needs above the plot beyond its first row (0 for a legend on one row)."""
    return (len(_legend_rows(keys, left=LEGEND_MARGIN, right=WIDTH - LEGEND_MARGIN)) - 1) * LEGEND_ROW


def _legend_key(x: float, y: float, key: Key, *, right: float) -> str:
    """A sample line (dashed as the series), its point shape, and the label, cut with an ellipsis where it would
    run past the chart (the full label stays in the entry's tooltip)."""
    dash = f' stroke-dasharray="{key.dash}"' if key.dash else ""
    marker = f' data-marker="{key.marker}"' if key.marker else ""
    room = max(int((right - x - 16) / CHAR_WIDTH), 4)
    label = key.label if len(key.label) <= room else key.label[: room - 1] + "\u2026"
    point = _point(key.marker, x + 6, y - 4, key.color) if key.marker else ""
    return (
        f'<g class="legend-key"{marker}><title>{escape(key.label)}</title>'
        f'<line x1="{x:.1f}" y1="{y - 4:.1f}" x2="{x + 12:.1f}" y2="{y - 4:.1f}" stroke="{key.color}" '
        f'stroke-width="3"{dash}/>{point}{_text(x + 16, y, label, anchor="start")}</g>'
    )


def _legend(frame: _Frame, keys: Sequence[Key]) -> list[str]:
    """The legend above the plot, wrapped in rows across the chart's width (the frame's top_extra leaves room)."""
    right = frame.width - LEGEND_MARGIN
    rows = _legend_rows(keys, left=LEGEND_MARGIN, right=right)
    return [_legend_key(x, 16 + i * LEGEND_ROW, key, right=frame.right) for i, row in enumerate(rows) for x, key in row]


def _values(seq: Sequence[float | None]) -> list[float]:
    return [v for v in seq if v is not None and math.isfinite(v)]


def _line_chart(
    *,
    testid: str,
    title: str,
    series: Sequence[Series],
    x_label: str,
    y_label: str,
    y_format: Any,
    x_format: Any = lambda v: f"{v:g}",
    x_log2: bool = False,
    x_ticks: Sequence[float] | None = None,
    y_min: float | None = None,
    y_max: float | None = None,
    markers: Sequence[Marker] = (),
    extra: Sequence[str] = (),
    caption: str = "",
    legend: Sequence[Key] | None = None,
) -> Chart:
    keys = list(legend) if legend is not None else [Key(s.label, s.color, s.dash) for s in series]
    xs = [x for s in series for x in s.xs]
    ys = [y for s in series for y in _values(s.ys)]
    ys += [y for s in series for band in (s.band_low, s.band_high) if band for y in _values(band)]
    ys += [m.y for m in markers]
    if not xs or not ys:
        return Chart(testid=testid, title=title, svg=mark_safe(""), caption="No data to draw.")
    low = min(ys) if y_min is None else y_min
    high = max(ys) if y_max is None else y_max
    ticks = _nice_ticks(low, high * 1.05 if high > 0 else high)
    frame = _Frame(
        x_range=(min(xs), max(xs)),
        y_range=(min(ticks[0], low), max(ticks[-1], high)),
        x_log2=x_log2,
        top_extra=_legend_height(keys),
    )
    body = _axes(
        frame,
        x_ticks=x_ticks if x_ticks is not None else sorted(set(xs)),
        y_ticks=ticks,
        x_format=x_format,
        y_format=y_format,
        x_label=x_label,
        y_label=y_label,
    )
    body.extend(extra)
    for s in series:
        body.extend(_series(frame, s))
    placed: list[tuple[float, float, float, float]] = []
    for marker in markers:
        x, y = frame.x(marker.x), frame.y(marker.y)
        body.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" fill="none" stroke="{marker.color}" stroke-width="2"/>')
        anchor = "end" if x > (frame.left + frame.right) / 2 else "start"
        label_x = x + (-8 if anchor == "end" else 8)
        label_y = _clear_label_y(
            label_x,
            y + 18 if marker.label_below else y - 8,
            marker.label,
            anchor=anchor,
            down=marker.label_below,
            placed=placed,
        )
        body.append(_text(label_x, label_y, marker.label, anchor=anchor, color=marker.color))
    body.extend(_legend(frame, keys))
    return Chart(
        testid=testid,
        title=title,
        svg=_svg(frame, body, title=title),
        caption=caption,
        legend=tuple((k.label, k.color) for k in keys),
    )


def line_chart(**kwargs: Any) -> Chart:
    """A line chart in the product's style (axes, ticks, legend, markers; arguments of ``_line_chart``), for
    charts drawn from other documents than the Advice (the fleet plan)."""
    return _line_chart(**kwargs)


# --- the charts ---


def _sizes(advice: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for s in advice.get("sizes", []) if s.get("gpus")]


def _get(mapping: dict[str, Any] | None, *keys: str) -> Any:
    value: Any = mapping
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _has_band(sizes: Sequence[dict[str, Any]], *keys: str) -> bool:
    return any(_get(s, *keys[:-1], keys[-1] + "_p10") is not None for s in sizes)


def _band(sizes: Sequence[dict[str, Any]], *keys: str) -> tuple[list[Any] | None, list[Any] | None]:
    if not _has_band(sizes, *keys):
        return None, None
    return (
        [_get(s, *keys[:-1], keys[-1] + "_p10") for s in sizes],
        [_get(s, *keys[:-1], keys[-1] + "_p90") for s in sizes],
    )


def _is_inference(advice: dict[str, Any]) -> bool:
    return advice.get("kind") == "inference"


def _deployments(sizes: Sequence[dict[str, Any]]) -> tuple[list[float], Any]:
    """Inference deployments as categories on the x axis: '3 GPUs (TP 1)' ..."""
    labels = [f"{s['gpus']} (TP {s.get('tp', '?')})" for s in sizes]
    return [float(i) for i in range(len(sizes))], lambda v: labels[round(v)] if 0 <= v < len(labels) else ""


def _inference_throughput(advice: dict[str, Any]) -> Chart:
    sizes = _sizes(advice)
    xs, label = _deployments(sizes)
    traffic = _get(advice, "scenario", "workload", "traffic") or {}
    series = [Series("output tokens/s", xs, [s.get("output_tokens_per_s") for s in sizes], ACCENT)]
    if traffic.get("peak_requests_per_s") and traffic.get("output_tokens"):
        demand = traffic["peak_requests_per_s"] * traffic["output_tokens"]
        series.append(Series("peak demand", xs, [demand] * len(xs), RENT, dash="6 4", points=False))
    return _line_chart(
        testid="chart-runtime",
        title="Serving capacity per deployment",
        series=series,
        x_label="deployment: GPUs (tensor parallel degree)",
        y_label="output tokens/s",
        y_format=lambda v: f"{v:,.0f}",
        x_format=label,
        x_ticks=xs,
        y_min=0,
        caption=_capacity_caption(sizes),
    )


def _capacity_caption(sizes: Sequence[dict[str, Any]]) -> str:
    """What the capacity drawn is: the peak within the latency targets, for the deployments that meet them only (an
    outsider's probe: "Each deployment is sized to serve the peak within the latency targets" over an unreachable
    target's deployments, none of which meets them)."""
    missed = [f"TP {s.get('tp', '?')}" for s in sizes if not s.get("meets_latency")]
    if not missed:
        return "Each deployment is sized to serve the peak within the latency targets."
    if len(missed) == len(sizes):
        return (
            "No deployment meets the latency targets: none has a capacity to draw (dashed: the peak's demand); the "
            "table gives the latency each reaches."
        )
    which = missed[0] if len(missed) == 1 else f"{', '.join(missed[:-1])} and {missed[-1]}"
    one = len(missed) == 1
    return (
        "Each deployment that meets the latency targets is sized to serve the peak within them; "
        f"{which} miss{'es' if one else ''} them: no capacity is drawn for {'it' if one else 'them'}."
    )


def chart_run_time(*, advice: dict[str, Any]) -> Chart:
    if _is_inference(advice):
        return _inference_throughput(advice)
    sizes = _sizes(advice)
    gpus = [s["gpus"] for s in sizes]
    low, high = _band(sizes, "run_hours")
    run_hours = [s.get("run_hours") for s in sizes]
    # Long runs read better in days; the axis then counts days so its ticks are round numbers.
    in_days = max(_values(run_hours), default=0) > 72
    scale = 1 / 24 if in_days else 1.0

    def scaled(values: Sequence[Any] | None) -> list[Any] | None:
        return None if values is None else [None if v is None else v * scale for v in values]

    caption = "Shaded: P10 to P90 of the estimate." if low else ""
    return _line_chart(
        testid="chart-runtime",
        title="Time per run vs cluster size",
        series=[
            Series("run time", gpus, scaled(run_hours) or [], ACCENT, band_low=scaled(low), band_high=scaled(high))
        ],
        x_label="GPUs",
        y_label="days per run" if in_days else "hours per run",
        y_format=(lambda v: f"{v:,.0f} d") if in_days else (lambda v: f"{v:,.1f} h"),
        x_log2=True,
        y_min=0,
        caption=caption,
    )


def _inference_cost(advice: dict[str, Any]) -> Chart:
    sizes = _sizes(advice)
    xs, label = _deployments(sizes)
    return _line_chart(
        testid="chart-cost",
        title="Cost per month by deployment",
        series=[
            Series("rent", xs, [_get(s, "rent", "usd_per_month") for s in sizes], RENT),
            Series("buy (owned, sized for the peak)", xs, [_get(s, "buy", "usd_per_month") for s in sizes], BUY),
        ],
        x_label="deployment: GPUs (tensor parallel degree)",
        y_label="USD per month",
        y_format=format_usd,
        x_format=label,
        x_ticks=xs,
        y_min=0,
        caption="Renting follows the daily traffic; owning buys for the peak.",
    )


def chart_cost(*, advice: dict[str, Any]) -> Chart:
    if _is_inference(advice):
        return _inference_cost(advice)
    sizes = _sizes(advice)
    gpus = [s["gpus"] for s in sizes]
    rent_low, rent_high = _band(sizes, "rent", "usd_per_run")
    buy_low, buy_high = _band(sizes, "buy", "usd_per_run")
    series = [
        Series(
            "rent", gpus, [_get(s, "rent", "usd_per_run") for s in sizes], RENT, band_low=rent_low, band_high=rent_high
        ),
        Series(
            "buy (owned)",
            gpus,
            [_get(s, "buy", "usd_per_run") for s in sizes],
            BUY,
            band_low=buy_low,
            band_high=buy_high,
        ),
    ]
    caption = "Shaded: P10 to P90." if rent_low or buy_low else ""
    return _line_chart(
        testid="chart-cost",
        title="Cost per run vs cluster size",
        series=series,
        x_label="GPUs",
        y_label="USD per run",
        y_format=format_usd,
        x_log2=True,
        y_min=0,
        caption=caption,
    )


def _inference_per_gpu(advice: dict[str, Any]) -> Chart:
    sizes = _sizes(advice)
    xs, label = _deployments(sizes)
    per_gpu = [
        s["output_tokens_per_s"] / s["gpus"] if s.get("output_tokens_per_s") and s.get("gpus") else None for s in sizes
    ]
    return _line_chart(
        testid="chart-scaling",
        title="Output tokens/s per GPU by deployment",
        series=[Series("per GPU", xs, per_gpu, ACCENT)],
        x_label="deployment: GPUs (tensor parallel degree)",
        y_label="output tokens/s per GPU",
        y_format=lambda v: f"{v:,.0f}",
        x_format=label,
        x_ticks=xs,
        y_min=0,
        caption="How much of each GPU the deployment turns into served tokens.",
    )


def chart_scaling(*, advice: dict[str, Any]) -> Chart:
    if _is_inference(advice):
        return _inference_per_gpu(advice)
    sizes = _sizes(advice)
    gpus = [s["gpus"] for s in sizes]
    frame_hint = [1.0] * len(gpus)
    return _line_chart(
        testid="chart-scaling",
        title="Scaling efficiency vs cluster size",
        series=[
            Series("scaling efficiency", gpus, [s.get("scaling_efficiency") for s in sizes], ACCENT),
            Series("linear (ideal)", gpus, frame_hint, MUTED, dash="4 4"),
            Series("MFU", gpus, [s.get("mfu") for s in sizes], BUY),
        ],
        x_label="GPUs",
        y_label="fraction",
        y_format=format_percent,
        x_log2=True,
        y_min=0,
        y_max=1.05,
        caption=f"Scaling efficiency: {SCALING_EFFICIENCY_MEANING}. MFU: model FLOPs utilization.",
    )


def owned_cost_curve(*, size: dict[str, Any], utilization: float) -> tuple[float, float] | None:
    """(F, v) of the Advice's owned cost per busy GPU-hour ``c(u) = F / u + v``, or None: as the size states it
    (buy.fixed_usd_per_gpu_year, buy.variable_usd_per_busy_gpu_hour), older documents read back by
    economics.owned_cost_curve."""
    return ec.owned_cost_curve(
        utilization=utilization,
        usd_per_gpu_hour_at_utilization=_get(size, "buy", "usd_per_gpu_hour_at_utilization"),
        fixed_usd_per_gpu_year=_get(size, "buy", "fixed_usd_per_gpu_year"),
        variable_usd_per_busy_gpu_hour=_get(size, "buy", "variable_usd_per_busy_gpu_hour"),
        break_even_utilization=_get(size, "buy", "break_even_utilization"),
        rent_usd_per_gpu_hour=_get(size, "buy", "break_even_against", "usd_per_gpu_hour")
        or _get(size, "rent", "offer", "usd_per_gpu_hour"),
        yearly_fixed_usd=_get(size, "buy", "fixed_usd_per_year") or _get(size, "buy", "usd_per_year"),
        gpus=_get(size, "buy", "gpus_owned") or size.get("gpus"),
    )


def _market_prices(size: dict[str, Any]) -> list[tuple[str, float]]:
    """(market, USD per GPU-hour) of each rental line. Inference bills whole instances: a floating market's line is
    what a GPU-hour the replicas use costs there (usd_per_used_gpu_hour), not the listed per-GPU price."""
    prices: list[tuple[str, float]] = []
    for market, entry in (_get(size, "rent", "by_market") or {}).items():
        # Training advice nests the offer ({"offer": {...}, "usd_per_run": ...}); inference lists offers directly.
        used = _get(entry, "usd_per_used_gpu_hour") if market not in RESERVED_MARKETS else None
        price = _get(entry, "offer", "usd_per_gpu_hour") or used or _get(entry, "usd_per_gpu_hour")
        if price is not None and math.isfinite(float(price)):
            prices.append((market, float(price)))
    if not prices and _get(size, "rent", "offer", "usd_per_gpu_hour") is not None:
        offer = size["rent"]["offer"]
        prices.append((offer.get("market") or "on_demand", float(offer["usd_per_gpu_hour"])))
    return prices


def _blended_rent(size: dict[str, Any], *, inference: bool) -> tuple[str, float, float | None] | None:
    """(label, USD per busy GPU-hour, break-even utilization) of the rent as priced, where the break-even the
    headline quotes is against it rather than against any one market's line: an inference rent (its u* is against
    the monthly rent per busy GPU-hour, whatever its markets: a finance probe saw a 1-year reserved rent's 28% drawn
    as "vs on-demand 17%"), or a rent priced on more than one market (an outsider's check: the headline said 98%
    against on-demand + spot while the chart marked 90% vs on-demand)."""
    against = _get(size, "buy", "break_even_against") or {}
    markets = against.get("markets") or []
    price = against.get("usd_per_gpu_hour")
    if len(markets) < (1 if inference else 2) or price is None or not math.isfinite(float(price)):
        return None
    names = " + ".join(MARKET_LABELS.get(m, m) for m in markets)
    return f"rent as priced ({names})", float(price), _get(size, "buy", "break_even_utilization")


def _utilization_label(advice: dict[str, Any], utilization: float) -> str:
    """The break-even chart's marker of the utilization owning is priced at, named by where it came from
    (cash_flow.utilization_basis): "planned 60%" only where given; a default or the runs a year say so, and a
    serving plan's comes from its traffic (a probe: a defaulted 60% was drawn as "planned")."""
    share = format_percent(utilization)
    if _is_inference(advice):
        return f"traffic: {share} busy"
    basis = utilization_basis(
        utilization=_get(advice, "scenario", "utilization"),
        runs_per_year=_get(advice, "scenario", "workload", "runs_per_year"),
        defaulted=defaulted_sources(advice=advice),
    )
    if basis == "given":
        return f"planned {share}"
    return f"{share} ({'default' if basis.startswith('default') else basis})"


def chart_breakeven(*, advice: dict[str, Any]) -> Chart:
    """Owned $/GPU-hour vs utilization, against each rental market's price, crossings marked."""
    sizes = _sizes(advice)
    size = recommended_size(advice) or (sizes[0] if sizes else None)
    # The utilization the advice used at this size: derived from the traffic (inference), implied by the runs a
    # year or given (training); older documents carry only the scenario's.
    planned = _get(size, "buy", "utilization") if size is not None else None
    utilization = float(planned or _get(advice, "scenario", "utilization") or DEFAULTS["/utilization"].value)
    title = "Owned cost per GPU-hour vs utilization"
    if size is None or (curve := owned_cost_curve(size=size, utilization=utilization)) is None:
        return Chart(testid="chart-breakeven", title=title, svg=mark_safe(""), caption="No owned cost to draw.")
    f, v = curve
    prices = _market_prices(size)
    blended = _blended_rent(size, inference=_is_inference(advice))
    # Show the region where the decision is made: up to about twice the dearest price or planned cost.
    top = max([f / utilization + v] + [p for _, p in prices] + [blended[1] if blended else 0.0]) * 2.0
    u_min = max(0.02, min(1.0, f / max(top - v, 1e-9)))
    us = [u_min + (1.0 - u_min) * i / 60 for i in range(61)]
    owned = [f / u + v for u in us]
    owned_gpus = _get(size, "buy", "gpus_owned") or size["gpus"]
    series = [Series(f"owned ({owned_gpus} GPUs)", us, owned, BUY, points=False)]
    markers = []
    for market, price in prices:
        color = MARKET_COLORS.get(market, RENT)
        label = f"rent {MARKET_LABELS.get(market, market)}"
        if market in RESERVED_MARKETS:
            # A term is billed every hour, used or not: per busy GPU-hour it costs price / u, so it is drawn as that
            # curve and has no utilization break-even to mark (economics.break_even_against_term).
            series.append(Series(label, us, [price / u for u in us], color, dash="6 4", points=False))
            continue
        series.append(Series(label, [0.0, 1.0], [price, price], color, dash="6 4", points=False))
        # The advice's own break-even against this market (the same number the headline and the PDF quote).
        by_market = _get(size, "buy", "break_even_by_market") or {}
        # A manual rent quote is drawn as the on-demand line and keyed on_demand; proposals frozen before that keyed
        # it manual_quote, and their charts are drawn again from the stored document.
        u_star = by_market.get(market, by_market.get("manual_quote") if market == "on_demand" else None)
        if u_star is None and "break_even_by_market" not in (size.get("buy") or {}) and price > v:
            # A document issued before break_even_by_market: its break-even read back from the curve.
            u_star = float(
                ec.break_even_utilization(
                    yearly_fixed_usd=f * ec.HOURS_PER_YEAR,
                    gpus=1,
                    rent_usd_per_gpu_hour=price,
                    variable_usd_per_gpu_hour=v,
                )
            )
        if u_star is not None and u_star <= 1 and blended is None:
            label = f"break-even vs {MARKET_LABELS.get(market, market)} {format_percent(u_star)}"
            markers.append(Marker(u_star, f / u_star + v, label, color, label_below=True))
    if blended is not None:
        label, price, u_star = blended
        series.append(Series(label, [0.0, 1.0], [price, price], RENT, points=False))
        if u_star is not None:
            text = f"break-even vs the rent {format_percent(u_star)}"
            markers.append(Marker(u_star, f / u_star + v, text, RENT, label_below=True))
    markers.append(Marker(utilization, f / utilization + v, _utilization_label(advice, utilization), ACCENT))
    return _line_chart(
        testid="chart-breakeven",
        title=title,
        series=series,
        x_label="utilization (share of the year the cluster is busy)",
        y_label="USD per busy GPU-hour",
        y_format=format_usd,
        x_format=format_percent,
        x_ticks=[0.0, 0.2, 0.4, 0.6, 0.8, 1.0],
        y_min=0,
        y_max=top,
        markers=markers,
        caption="Buying pays where the owned curve falls below a rental line (a reserved term's line is its price "
        "spread over the busy hours: it is billed every hour).",
    )


def chart_cumulative(*, advice: dict[str, Any]) -> Chart:
    data = advice.get("cumulative_cost") or {}
    months = data.get("months") or []
    title = "Cumulative cost over the horizon"
    if not months:
        return Chart(testid="chart-cumulative", title=title, svg=mark_safe(""), caption="No horizon to draw.")
    markers = []
    crossover = data.get("crossover_month")
    if crossover is not None and crossover in months:
        y = data["buy_usd"][months.index(crossover)]
        markers.append(Marker(crossover, y, f"crossover: month {crossover}", ACCENT))
    elif crossover is not None:
        # Interpolate the buy line at the crossover month for the marker.
        for i in range(1, len(months)):
            if months[i - 1] <= crossover <= months[i]:
                t = (crossover - months[i - 1]) / (months[i] - months[i - 1])
                y = data["buy_usd"][i - 1] + t * (data["buy_usd"][i] - data["buy_usd"][i - 1])
                markers.append(Marker(crossover, y, f"crossover: month {crossover}", ACCENT))
                break
    step = 12 if months[-1] > 24 else 6
    gpus, owned = data.get("gpus"), data.get("gpus_owned")
    caption = f"{gpus} GPUs. " if gpus else ""
    if gpus and owned and owned != gpus:
        # Inference rents the deployment's GPUs and buys whole servers: the buy line is for these (a new user's probe:
        # "3 GPUs." above a buy line of 8 owned GPUs).
        caption = f"Rent: {fmt.plain(gpus)} GPUs at the peak; buy: {fmt.plain(owned)} owned GPUs (whole servers). "
    caption += (
        f"Buying's cumulative cash falls below renting's in month {crossover}."
        if crossover is not None
        else "The lines do not cross within the horizon."
    )
    # Undiscounted cash: the decision compares present costs, which the chart alone may seem to contradict.
    rate = (advice.get("npv") or {}).get("discount_rate")
    caption += " Undiscounted cash; the decision compares present costs" + (
        f" (discounted at {float(rate) * 100:g}% a year)." if rate is not None else "."
    )
    return _line_chart(
        testid="chart-cumulative",
        title=title,
        series=[
            Series("rent", months, data.get("rent_usd") or [], RENT, points=len(months) <= 20),
            Series("buy (owned)", months, data.get("buy_usd") or [], BUY, points=len(months) <= 20),
        ],
        x_label="months",
        y_label="cumulative cash USD (undiscounted)",
        y_format=format_usd,
        x_ticks=list(range(0, int(months[-1]) + 1, step)),
        y_min=0,
        markers=markers,
        caption=caption,
    )


def chart_tornado(*, advice: dict[str, Any]) -> Chart:
    """Sensitivity tornado: each input's low and high swing of one metric around its base."""
    rows = [r for r in advice.get("sensitivity") or [] if r.get("low") is not None and r.get("high") is not None]
    title = "Sensitivity"
    if not rows:
        return Chart(
            testid="chart-sensitivity", title=title, svg=mark_safe(""), caption="No sensitivity in this advice."
        )
    rows = sorted(rows, key=lambda r: -abs(r["high"] - r["low"]))
    base = rows[0].get("base", 0.0) or 0.0
    values = [base] + [r["low"] for r in rows] + [r["high"] for r in rows]
    ticks = _nice_ticks(min(values), max(values))
    bar_h = 22
    height = PAD_TOP + PAD_BOTTOM + bar_h * len(rows) + 10
    frame = _Frame(x_range=(ticks[0], ticks[-1]), y_range=(0, 1), width=WIDTH, height=height)
    frame.left = 170
    body = []
    for tick in ticks:
        x = frame.x(tick)
        body.append(f'<line x1="{x:.1f}" y1="{frame.top}" x2="{x:.1f}" y2="{frame.bottom}" stroke="{GRID}"/>')
        body.append(_text(x, frame.bottom + 16, format_usd(tick)))
    metric = rows[0].get("metric", "")
    body.append(_text((frame.left + frame.right) / 2, height - 10, metric))
    for i, row in enumerate(rows):
        y = frame.top + 4 + i * bar_h
        x_base = frame.x(base)
        for value, color, name in ((row["low"], ACCENT, "low"), (row["high"], RENT, "high")):
            x = frame.x(value)
            left, width = min(x, x_base), abs(x - x_base)
            tip = f"{escape(sensitivity_label(row))} {name}: {escape(format_usd(value))}"
            body.append(
                f'<rect x="{left:.1f}" y="{y:.1f}" width="{max(width, 1):.1f}" height="{bar_h - 6}" fill="{color}" '
                f'fill-opacity="0.75"><title>{tip}</title></rect>'
            )
        body.append(_text(frame.left - 6, y + bar_h / 2 + 1, sensitivity_label(row), anchor="end", color="#1b1f24"))
    x_base = frame.x(base)
    body.append(f'<line x1="{x_base:.1f}" y1="{frame.top}" x2="{x_base:.1f}" y2="{frame.bottom}" stroke="#1b1f24"/>')
    body.extend(_legend(frame, [Key("input at its low value", ACCENT), Key("input at its high value", RENT)]))
    return Chart(
        testid="chart-sensitivity",
        title=title,
        svg=_svg(frame, body, title=title),
        caption=f"Base: {format_usd(base)}. Bars: the metric with one input at its low or high value.",
    )


def chart_residuals(*, points: Sequence[tuple[float, float, str]]) -> Chart:
    """Calibration fit: measured vs held-out predicted tokens/s (log-log), one point per profiled run (held out as
    the report's ``held_out`` says; the page prints it)."""
    title = "Held-out predicted vs measured tokens/s"
    good = [(m, p, g) for m, p, g in points if m > 0 and p > 0]
    if not good:
        return Chart(testid="chart-residuals", title=title, svg=mark_safe(""), caption="No runs to draw.")
    low = min(min(m, p) for m, p, _ in good)
    high = max(max(m, p) for m, p, _ in good)
    lo_exp, hi_exp = math.floor(math.log10(low)), math.ceil(math.log10(high))
    if hi_exp == lo_exp:
        hi_exp += 1
    colors: dict[str, str] = {}
    for _, _, gpu in good:
        colors.setdefault(gpu, PALETTE_WIDE[len(colors) % len(PALETTE_WIDE)])
    keys = [Key(gpu, color, marker="circle") for gpu, color in colors.items()]
    frame = _Frame(x_range=(lo_exp, hi_exp), y_range=(lo_exp, hi_exp), height=340, top_extra=_legend_height(keys))
    ticks = list(range(lo_exp, hi_exp + 1))
    body = _axes(
        frame,
        x_ticks=ticks,
        y_ticks=ticks,
        x_format=lambda v: f"1e{int(v)}",
        y_format=lambda v: f"1e{int(v)}",
        x_label="measured tokens/s",
        y_label="predicted tokens/s",
    )
    body.append(
        f'<line x1="{frame.x(lo_exp):.1f}" y1="{frame.y(lo_exp):.1f}" x2="{frame.x(hi_exp):.1f}" '
        f'y2="{frame.y(hi_exp):.1f}" stroke="{MUTED}" stroke-dasharray="4 4"/>'
    )
    for measured, predicted, gpu in good:
        color = colors[gpu]
        body.append(
            f'<circle cx="{frame.x(math.log10(measured)):.1f}" cy="{frame.y(math.log10(predicted)):.1f}" r="3.5" '
            f'fill="{color}" fill-opacity="0.8"><title>{escape(gpu)}: measured {measured:,.0f}, '
            f"predicted {predicted:,.0f}</title></circle>"
        )
    body.extend(_legend(frame, keys))
    return Chart(
        testid="chart-residuals",
        title=title,
        svg=_svg(frame, body, title=title),
        caption="Dashed: a perfect prediction. Distance from it is the error.",
        legend=tuple(colors.items()),
    )


def _fractions(values: Any) -> list[float | None]:
    return [float(v) if isinstance(v, int | float) and math.isfinite(v) else None for v in values or []]


def chart_scaling_efficiency(*, curves: Sequence[dict[str, Any]]) -> Chart:
    """Calibration fit: measured (solid) and predicted (dashed) scaling efficiency by GPU count, one look (colour x
    point shape) per configuration (the report's ``scaling_efficiency`` curves: gpus, measured, predicted as
    fractions). The legend names each configuration once; solid and dashed are the caption's."""
    series: list[Series] = []
    keys: list[Key] = []
    for i, curve in enumerate(c for c in curves if c.get("gpus")):
        color = PALETTE_WIDE[i % len(PALETTE_WIDE)]
        marker = MARKERS[(i // len(PALETTE_WIDE)) % len(MARKERS)]
        xs = [float(g) for g in curve["gpus"]]
        family = str(curve.get("config_family") or f"runs {i + 1}")
        keys.append(Key(family, color, marker=marker))
        series.append(Series(f"{family}: measured", xs, _fractions(curve.get("measured")), color, marker=marker))
        series.append(
            Series(f"{family}: predicted", xs, _fractions(curve.get("predicted")), color, dash="5 4", marker=marker)
        )
    return _line_chart(
        testid="chart-scaling-efficiency",
        title="Scaling efficiency by GPU count, measured and predicted",
        series=series,
        x_label="GPUs",
        y_label="scaling efficiency",
        y_format=format_percent,
        x_log2=True,
        y_min=0.0,
        y_max=1.0,
        legend=keys,
        caption="Solid: measured; dashed: predicted. Tokens/s per GPU relative to the smallest run of each "
        "configuration; where the lines part, the fit misses your cluster's knee.",
    )


def chart_alternatives(*, advice: dict[str, Any]) -> Chart | None:
    """Training with compare_gpus: each GPU at its recommended size as a point, time per run against the cheaper
    of renting and owning per run (lower left is better); None without alternatives."""
    if _is_inference(advice) or not advice.get("alternatives"):
        return None
    runs = advice_runs_judged(advice)
    rows = [row for a in advice["alternatives"] if (row := _alternative_point(a, runs_per_year=runs)) is not None]
    title = "GPU types: cost and time per run"
    if not rows:
        return Chart(testid="chart-alternatives", title=title, svg=mark_safe(""), caption="No GPU could be priced.")
    hours = [h for _, h, _ in rows]
    colored = [(gpu, h, usd, _PALETTE[i % len(_PALETTE)]) for i, (gpu, h, usd) in enumerate(rows)]
    return _line_chart(
        testid="chart-alternatives",
        title=title,
        series=[Series(gpu, [h], [usd], color, points=True) for gpu, h, usd, color in colored],
        x_label="hours per run (each GPU at its recommended size)",
        y_label="USD per run (cheaper of renting and owning)",
        y_format=format_usd,
        x_format=format_hours,
        x_ticks=sorted(set(hours)),
        y_min=0,
        markers=[Marker(h, usd, gpu, color) for gpu, h, usd, color in colored],
        caption="Lower left is cheaper and faster.",
    )


def _alternative_point(alternative: dict[str, Any], *, runs_per_year: float | None) -> tuple[str, float, float] | None:
    """(label, hours per run, USD per run) of a compared GPU: the cheaper of renting and owning among those that
    finish the year's runs (recommendation.finishes_runs, as the table's cheapest mark), the label saying so where
    owning cannot or neither can (an A100 needing 18,015 h of one cluster a year was plotted at its owned cost)."""
    hours = alternative.get("run_hours")
    priced = {
        side: float(alternative[f"{side}_usd_per_run"])
        for side in ("rent", "buy")
        if alternative.get(f"{side}_usd_per_run") is not None
    }
    if hours is None or not priced:
        return None
    finishing = {
        side: usd
        for side, usd in priced.items()
        if finishes_runs(run_hours=hours, runs_per_year=runs_per_year, owned=side == "buy")
    }
    label = str(alternative["gpu"])
    if not finishing:
        label += " (cannot finish the runs)"
    elif "buy" in priced and "buy" not in finishing:
        label += " (rented: owning cannot finish the runs)"
    return label, float(hours), min((finishing or priced).values())


_PALETTE = [ACCENT, BUY, RENT, "#7048e8", "#e67700", "#0c8599"]


def advice_charts(*, advice: dict[str, Any]) -> list[Chart]:
    """The charts of one Advice, in the order the page and the PDF show them."""
    charts = [
        chart_cost(advice=advice),
        chart_run_time(advice=advice),
        chart_scaling(advice=advice),
        chart_breakeven(advice=advice),
        chart_cumulative(advice=advice),
        chart_tornado(advice=advice),
    ]
    alternatives = chart_alternatives(advice=advice)
    return charts + ([alternatives] if alternatives is not None else [])
