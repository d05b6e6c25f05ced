"""advisor.charts: one SVG per chart from an Advice dict; numbers in, marks where the Advice puts them."""

from __future__ import annotations

import copy
import itertools
import re
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from advisor import charts

SVG = "{http://www.w3.org/2000/svg}"


def _parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output


def test_every_chart_is_well_formed_svg_with_its_testid(example_advice: dict[str, Any]) -> None:
    rendered = charts.advice_charts(advice=example_advice)
    ids = [c.testid for c in rendered]
    assert ids == [
        "chart-cost",
        "chart-runtime",
        "chart-scaling",
        "chart-breakeven",
        "chart-cumulative",
        "chart-sensitivity",
    ]
    for chart in rendered:
        root = _parse(str(chart.svg))
        assert root.tag == f"{SVG}svg"
        assert root.find(f"{SVG}title").text == chart.title


def test_cost_chart_draws_one_line_per_option_with_p10_p90_bands(example_advice: dict[str, Any]) -> None:
    root = _parse(str(charts.chart_cost(advice=example_advice).svg))
    assert len(root.findall(f"{SVG}polyline")) == 2  # rent and buy
    banded = sum(
        all(size[option].get("usd_per_run_p10") is not None for size in example_advice["sizes"])
        for option in ("rent", "buy")
    )
    assert banded > 0
    assert len(root.findall(f"{SVG}polygon")) == banded


def test_bands_disappear_when_the_advice_has_no_quantiles(example_advice: dict[str, Any]) -> None:
    advice = copy.deepcopy(example_advice)
    for size in advice["sizes"]:
        for key in ("run_hours_p10", "run_hours_p90"):
            size.pop(key, None)
        for option in ("rent", "buy"):
            for key in ("usd_per_run_p10", "usd_per_run_p90"):
                size[option].pop(key, None)
    assert not _parse(str(charts.chart_cost(advice=advice).svg)).findall(f"{SVG}polygon")
    assert not _parse(str(charts.chart_run_time(advice=advice).svg)).findall(f"{SVG}polygon")


def test_owned_cost_curve_reproduces_the_advice_numbers(example_advice: dict[str, Any]) -> None:
    utilization = example_advice["scenario"]["utilization"]
    for size in example_advice["sizes"]:
        f, v = charts.owned_cost_curve(size=size, utilization=utilization)
        assert f / utilization + v == pytest.approx(size["buy"]["usd_per_gpu_hour_at_utilization"], rel=1e-9)
        # Its crossing with the price break-even is measured against is the Advice's break-even utilization.
        price = size["buy"]["break_even_against"]["usd_per_gpu_hour"]
        if size["buy"]["break_even_utilization"] is None:  # never breaks even: the crossing is beyond 100%
            assert f / (price - v) > 1
        else:
            assert f / (price - v) == pytest.approx(size["buy"]["break_even_utilization"], rel=1e-6)


def test_break_even_chart_marks_each_crossing_and_the_plan(example_advice: dict[str, Any]) -> None:
    advice = copy.deepcopy(example_advice)
    size = next(s for s in advice["sizes"] if s["gpus"] == advice["recommendation"]["gpus"])
    f, v = charts.owned_cost_curve(size=size, utilization=advice["scenario"]["utilization"])
    # A rental price that makes owning pay at exactly 50% utilization.
    size["rent"]["by_market"] = {"on_demand": {"offer": {"usd_per_gpu_hour": f / 0.5 + v, "market": "on_demand"}}}
    size["buy"]["break_even_by_market"] = {"on_demand": 0.5}
    svg = str(charts.chart_breakeven(advice=advice).svg)
    assert "break-even vs on-demand 50%" in svg  # the market it is measured against, named
    assert f"planned {advice['scenario']['utilization'] * 100:.0f}%" in svg
    # A price below the owned cost at full utilization never breaks even: no marker.
    size["rent"]["by_market"] = {"spot": {"offer": {"usd_per_gpu_hour": (f + v) * 0.9, "market": "spot"}}}
    size["buy"]["break_even_by_market"] = {"spot": None}
    assert "break-even" not in str(charts.chart_breakeven(advice=advice).svg)
    # Documents from before break_even_by_market: the crossing is computed from the price line.
    size["rent"]["by_market"] = {"on_demand": {"offer": {"usd_per_gpu_hour": f / 0.5 + v, "market": "on_demand"}}}
    del size["buy"]["break_even_by_market"]
    assert "break-even vs on-demand 50%" in str(charts.chart_breakeven(advice=advice).svg)


def test_a_reserved_term_is_drawn_per_busy_hour_with_no_break_even_marker(example_advice: dict[str, Any]) -> None:
    # A term is billed every hour: at 0 (owning cheaper at any utilization) the old marker divided by zero.
    advice = copy.deepcopy(example_advice)
    size = next(s for s in advice["sizes"] if s["gpus"] == advice["recommendation"]["gpus"])
    f, v = charts.owned_cost_curve(size=size, utilization=advice["scenario"]["utilization"])
    price = (f + v) * 1.2
    size["rent"]["by_market"] = {"reserved_1y": {"offer": {"usd_per_gpu_hour": price, "market": "reserved_1y"}}}
    size["buy"]["break_even_by_market"] = {"reserved_1y": 0.0}
    root = _parse(str(charts.chart_breakeven(advice=advice).svg))
    assert "break-even vs" not in ET.tostring(root, encoding="unicode")
    # Owned cost and the term per busy GPU-hour (price / u): two curves, the term's falling to its price at 100%.
    assert len(root.findall(f"{SVG}polyline")) == 2


def test_cumulative_chart_marks_the_crossover_month(example_advice: dict[str, Any]) -> None:
    advice = copy.deepcopy(example_advice)
    advice["cumulative_cost"] = {
        "gpus": 16,
        "months": [0, 12, 24, 36],
        "rent_usd": [0, 400_000, 800_000, 1_200_000],
        "buy_usd": [600_000, 700_000, 800_000, 900_000],
        "crossover_month": 24,
    }
    chart = charts.chart_cumulative(advice=advice)
    assert "crossover: month 24" in str(chart.svg)
    assert "month 24" in chart.caption
    advice["cumulative_cost"]["crossover_month"] = None
    assert "crossover" not in str(charts.chart_cumulative(advice=advice).svg)


def test_tornado_orders_inputs_by_swing(example_advice: dict[str, Any]) -> None:
    advice = copy.deepcopy(example_advice)
    advice["sensitivity"] = [
        {"input": "small", "metric": "m (USD)", "low": -1.0, "high": 1.0, "base": 0.0},
        {"input": "large", "metric": "m (USD)", "low": -10.0, "high": 10.0, "base": 0.0},
    ]
    svg = str(charts.chart_tornado(advice=advice).svg)
    assert svg.index(">large<") < svg.index(">small<")


def test_text_is_escaped(example_advice: dict[str, Any]) -> None:
    advice = copy.deepcopy(example_advice)
    advice["sensitivity"][0]["input"] = "<script>alert(1)</script>"
    svg = str(charts.chart_tornado(advice=advice).svg)
    assert "<script>" not in svg
    _parse(svg)


def test_empty_advice_gives_empty_charts_not_errors() -> None:
    for chart in charts.advice_charts(advice={"sizes": []}):
        assert str(chart.svg) == ""
        assert chart.caption


def test_money_format_keeps_the_sign() -> None:
    assert charts.format_usd(-25_000) == "-$25k"
    assert charts.format_usd(1_234_567) == "$1.23M"
    assert re.fullmatch(r"\$2\.45", charts.format_usd(2.45))


def test_alternatives_chart_places_each_gpu_at_its_time_and_cost(example_advice: dict[str, Any]) -> None:
    assert charts.chart_alternatives(advice=example_advice) is None  # no compare_gpus: no chart
    advice = copy.deepcopy(example_advice)
    advice["alternatives"] = [
        {
            "gpu": "h100-sxm",
            "gpus": 64,
            "run_hours": 100.0,
            "rent_usd_per_run": 20_000.0,
            "buy_usd_per_run": 15_000.0,
            "break_even_utilization": 0.5,
            "fits_memory": True,
        },
        {
            "gpu": "a100-80gb",
            "gpus": 64,
            "run_hours": 300.0,
            "rent_usd_per_run": 30_000.0,
            "buy_usd_per_run": None,
            "break_even_utilization": None,
            "fits_memory": True,
        },
    ]
    chart = charts.chart_alternatives(advice=advice)
    assert chart is not None and chart.testid == "chart-alternatives"
    svg = str(chart.svg)
    assert "h100-sxm" in svg and "a100-80gb" in svg
    assert "chart-alternatives" in [c.testid for c in charts.advice_charts(advice=advice)]


def test_spot_price_shows_its_interruption_overhead(example_advice: dict[str, Any]) -> None:
    from advisor.web.presenters import size_rows

    advice = copy.deepcopy(example_advice)
    size = advice["sizes"][0]
    size["rent"]["market"] = "spot"
    size["rent"]["offer"] = {"provider": "acme", "instance": "8x", "market": "spot", "usd_per_gpu_hour": 2.0}
    size["rent"]["by_market"] = {"spot": {"lost_fraction": 0.2}}
    row = size_rows(advice=advice)[0]
    assert row["rent_offer"].endswith("+25.0% run time lost to interruptions")  # 0.2 / (1 - 0.2)
    size["rent"]["market"] = "on_demand"  # the same offer bought on demand carries no such overhead
    assert "interruptions" not in size_rows(advice=advice)[0]["rent_offer"]


def test_an_inference_break_even_chart_marks_the_break_even_the_headline_quotes(bundled_data: None) -> None:
    # An outsider's check: the rent was an on-demand base with a spot burst, the headline's break-even 98% at
    # $1.76 per busy GPU-hour, while the chart drew per-market lines only and marked "break-even vs on-demand 90%".
    from advisor.advice.documents import recommended_size
    from advisor.advice.inference import advise_inference

    plan = {
        "workload": {
            "kind": "inference",
            "model": {"name": "llama-3.1-8b"},
            "precision": "bf16",
            "traffic": {
                "peak_requests_per_s": 150,
                "mean_requests_per_s": 120,
                "input_tokens": 1000,
                "output_tokens": 200,
            },
            "latency": {"ttft_p95_s": 2.0, "tpot_p95_s": 0.08},
        },
        # An on-demand base with a spot burst that owning can beat (fix-money: an always-on base is billed every hour,
        # so on A100's prices owning 8 GPUs for this traffic never pays and there is no break-even to mark).
        "gpu": "h200",
    }
    advice = advise_inference(plan)
    buy = recommended_size(advice)["buy"]
    assert len(buy["break_even_against"]["markets"]) > 1 and buy["break_even_utilization"] is not None
    svg = str(charts.chart_breakeven(advice=advice).svg)
    assert f"break-even vs the rent {buy['break_even_utilization'] * 100:.0f}%" in svg
    assert "rent as priced" in svg
    assert re.findall(r"break-even vs [^<]*", svg) == [
        f"break-even vs the rent {buy['break_even_utilization'] * 100:.0f}%"
    ]


def _many_configurations() -> list[dict[str, Any]]:
    """23 configurations as the shipped calibration's report has them: long names, GPU counts 2-10 % apart."""
    counts = [8, 16, 64, 256, 512, 560, 576, 640, 768, 1024, 1120, 1152, 1536, 2240, 2304, 2520]
    return [
        {
            "config_family": f"llm-foundry/a100/bf16/L{12 + i}xH768/s2048",
            "gpus": counts[i % 4 :: 4] or counts[:2],
            "measured": [1.0 - 0.01 * k for k in range(len(counts[i % 4 :: 4]) or 2)],
            "predicted": [0.98 - 0.01 * k for k in range(len(counts[i % 4 :: 4]) or 2)],
        }
        for i in range(23)
    ]


def _text_extent(text: ET.Element) -> tuple[float, float]:
    """Left and right edge of an SVG text, at the charts' average character width."""
    x, width = float(text.get("x", 0)), len(text.text or "") * 6.2 * float(text.get("font-size", 11)) / 11
    anchor = text.get("text-anchor", "start")
    left = x - width if anchor == "end" else x - width / 2 if anchor == "middle" else x
    return left, left + width


def test_scaling_efficiency_legend_wraps_inside_the_chart_and_names_every_configuration() -> None:
    curves = _many_configurations()
    root = _parse(str(charts.chart_scaling_efficiency(curves=curves).svg))
    width = float(root.get("viewBox").split()[2])
    texts = [t for t in root.iter(f"{SVG}text") if t.text and not t.get("transform")]  # not the rotated y label
    for text in texts:
        left, right = _text_extent(text)
        assert left >= 0 and right <= width, text.text
    shown = {t.text for t in texts}
    assert all(any(c["config_family"] in label for label in shown) for c in curves)


def test_scaling_efficiency_configurations_differ_in_colour_or_marker() -> None:
    root = _parse(str(charts.chart_scaling_efficiency(curves=_many_configurations()).svg))
    keys = [g for g in root.iter(f"{SVG}g") if g.get("class") == "legend-key"]
    looks = {(k.find(f"{SVG}line").get("stroke"), k.get("data-marker")) for k in keys}
    assert len(keys) >= 23 and len(looks) == len(keys)


def test_scaling_efficiency_gpu_count_labels_do_not_overlap() -> None:
    root = _parse(str(charts.chart_scaling_efficiency(curves=_many_configurations()).svg))
    bottom = max(float(t.get("y")) for t in root.iter(f"{SVG}text") if (t.text or "").isdigit())
    ticks = sorted(
        _text_extent(t) for t in root.iter(f"{SVG}text") if (t.text or "").isdigit() and float(t.get("y")) == bottom
    )
    assert len(ticks) >= 4
    assert all(nxt[0] - prev[1] >= 4 for prev, nxt in itertools.pairwise(ticks))


def test_break_even_chart_names_the_utilization_by_where_it_came_from(example_advice: dict[str, Any]) -> None:
    # A probe: a scenario that gave neither /utilization nor runs a year had its defaulted 60% drawn "planned 60%".
    advice = copy.deepcopy(example_advice)
    advice["assumptions"] = [
        *[a for a in advice.get("assumptions") or [] if a.get("pointer") != "/utilization"],
        {"pointer": "/utilization", "source": "DESIGN.md example; applies where runs_per_year is not given"},
    ]
    svg = str(charts.chart_breakeven(advice=advice).svg)
    assert "planned" not in svg
    assert "60% (default)" in svg


def test_scaling_efficiency_is_worded_once_as_the_data_is_computed(example_advice: dict[str, Any]) -> None:
    # A new user's probe (F8): the caption said "relative to the smallest size" while the values are relative to the
    # size with the best per-GPU throughput (the 70B preset: 64 GPUs 99.96%, 128 GPUs 100%, 256 GPUs 97%).
    from advisor.advice.models import SCALING_EFFICIENCY_MEANING, TrainingSize
    from advisor.proposal import METHOD_NOTES
    from advisor.web.presenters import results_context

    assert "best throughput per GPU" in SCALING_EFFICIENCY_MEANING
    caption = charts.chart_scaling(advice=example_advice).caption
    assert SCALING_EFFICIENCY_MEANING in caption and "smallest" not in caption
    assert SCALING_EFFICIENCY_MEANING in (TrainingSize.model_fields["scaling_efficiency"].description or "")
    assert any(SCALING_EFFICIENCY_MEANING in line for line in METHOD_NOTES)
    assert not any("relative to the smallest" in line for line in METHOD_NOTES)
    assert results_context(advice=example_advice)["scaling_meaning"] == SCALING_EFFICIENCY_MEANING


def test_inference_cumulative_chart_names_the_owned_gpus_of_its_buy_line(example_advice: dict[str, Any]) -> None:
    # A new user's probe (F10): the 8B serving chart said "3 GPUs." while its buy line is the 8 owned GPUs (one server).
    advice = copy.deepcopy(example_advice)
    advice["cumulative_cost"] = {
        "gpus": 3,
        "gpus_owned": 8,
        "months": [0, 12, 24],
        "rent_usd": [0.0, 1.0e4, 2.0e4],
        "buy_usd": [3.0e5, 3.1e5, 3.2e5],
        "crossover_month": None,
    }
    caption = charts.chart_cumulative(advice=advice).caption
    assert caption.startswith("Rent: 3 GPUs at the peak; buy: 8 owned GPUs (whole servers)."), caption
    del advice["cumulative_cost"]["gpus_owned"]  # training: one size for both lines
    assert charts.chart_cumulative(advice=advice).caption.startswith("3 GPUs. ")


def _boxes(svg: str) -> list[tuple[str, float, float, float, float]]:
    """The marker labels of a chart (text with a share and a space: "break-even vs on-demand 77%") as boxes."""
    boxes = []
    for text in _parse(svg).iter(f"{SVG}text"):
        if text.text and "%" in text.text and " " in text.text and not text.get("transform"):
            left, right = _text_extent(text)
            y = float(text.get("y", 0))
            boxes.append((text.text, left, right, y - 11, y + 3))
    return boxes


def test_break_even_chart_labels_do_not_overlap(example_advice: dict[str, Any]) -> None:
    # A new user's probe (F10): 70B at 6 runs a year, utilization implied 100%: "break-even vs on-demand 77%" and
    # "100% (implied by 6 runs a year)" were drawn 3 px apart over each other.
    from advisor.advice.documents import recommended_size

    advice = copy.deepcopy(example_advice)
    advice["scenario"]["utilization"] = None
    advice["scenario"]["workload"]["runs_per_year"] = 6
    size = recommended_size(advice=advice)
    size["buy"]["utilization"] = 1.0
    size["buy"]["break_even_by_market"] = {"on_demand": 0.77}
    advice["scenario"]["rent"]["markets"] = ["on_demand"]
    boxes = _boxes(str(charts.chart_breakeven(advice=advice).svg))
    assert len(boxes) >= 2, boxes
    for a, b in itertools.combinations(boxes, 2):
        apart = a[2] <= b[1] or b[2] <= a[1] or a[4] <= b[3] or b[4] <= a[3]
        assert apart, (a, b)
