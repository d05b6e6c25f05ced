"""The fleet plan's two pictures, drawn by the product's chart module from the Fleet Plan JSON.

- Load-duration curve: GPUs wanted against the hours a year demand is at or above that level, with
  the owned level, the committed (reserved) level on top of it and the load-duration answer at u*.
- Yearly cost against owned GPUs, one point per simulated option, the cheapest marked.
Nothing here computes the plan; it only reads the document.
"""

from __future__ import annotations

from typing import Any

from advisor.charts import ACCENT, BUY, MARKET_COLORS, MUTED, RENT, Chart, Marker, Series, format_usd, line_chart
from advisor.economics import HOURS_PER_YEAR
from advisor.formatting import percent

HOURS_TICKS = tuple(HOURS_PER_YEAR * q / 4 for q in range(5))  # quarters of the year


def _gpu_ticks(values: list[float]) -> list[float]:
    top = max(values) if values else 0
    if top <= 0:
        return [0.0]
    step = max(1, round(top / 6))
    return [float(v) for v in range(0, int(top) + step, step)]


def chart_load_duration(*, plan: dict[str, Any]) -> Chart:
    curve = plan["demand"]["duration_curve"]
    rec = plan["recommendation"]
    hours = [h for h, _ in curve]
    gpus = [g for _, g in curve]
    owned = rec["owned_gpus"]
    committed = sum(t["gpus"] or 0 for t in rec["tiers"] if t["tier"].startswith("reserved"))
    series = [Series("demand at or above", hours, gpus, ACCENT, points=False)]
    if owned:
        series.append(
            Series(f"owned ({owned} GPUs)", [0, HOURS_PER_YEAR], [owned, owned], BUY, dash="6 4", points=False)
        )
    if committed:
        level = owned + committed
        series.append(
            Series(
                f"+ committed ({committed:g})",
                [0, HOURS_PER_YEAR],
                [level, level],
                MARKET_COLORS["reserved_3y"],
                dash="3 3",
            )
        )
    markers = []
    u_star, ld = rec.get("break_even_utilization"), rec["load_duration_answer"]["owned_gpus"]
    if u_star is not None and u_star <= 1:
        markers.append(Marker(u_star * HOURS_PER_YEAR, ld, f"u* = {percent(u_star)}: {ld} GPUs", color=MUTED))
    return line_chart(
        testid="chart-load-duration",
        title="Load-duration curve: GPUs wanted against hours a year at or above",
        series=series,
        x_label="hours a year at or above",
        y_label="GPUs",
        y_format=lambda v: f"{v:,.0f}",
        x_format=lambda v: f"{v:,.0f}",
        x_ticks=HOURS_TICKS,
        y_min=0,
        markers=markers,
        caption="Owning pays where the curve stays above the level for more than u* of the year.",
    )


def chart_fleet_cost(*, plan: dict[str, Any]) -> Chart:
    options = [o for o in plan["options"] if o["usd_per_year"] is not None]
    owned = [o["owned_gpus"] for o in options]
    rec = plan["recommendation"]
    series = [Series("yearly cost", owned, [o["usd_per_year"] for o in options], BUY)]
    if rec.get("all_rent_usd_per_year") is not None and owned:
        all_rent = rec["all_rent_usd_per_year"]
        series.append(Series("rent everything", [0, max(owned)], [all_rent, all_rent], RENT, dash="6 4", points=False))
    markers = (
        [
            Marker(
                rec["owned_gpus"],
                rec["usd_per_year"],
                f"cheapest: own {rec['owned_gpus']}, {format_usd(rec['usd_per_year'])}",
                BUY,
                label_below=True,
            )
        ]
        if rec["usd_per_year"] is not None
        else []
    )
    return line_chart(
        testid="chart-fleet-cost",
        title="Yearly cost against owned GPUs",
        series=series,
        x_label="owned GPUs",
        y_label="USD a year",
        y_format=format_usd,
        x_ticks=_gpu_ticks(owned),
        y_min=0,
        markers=markers,
        caption="Each point simulates the year with whole runs placed on that many owned GPUs.",
    )


def fleet_charts(*, plan: dict[str, Any]) -> list[Chart]:
    return [chart_load_duration(plan=plan), chart_fleet_cost(plan=plan)]
