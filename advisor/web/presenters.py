"""Turn an Advice dict into what the templates print: formatted numbers with units, rows, charts.

Shared by every page that shows an Advice and by the PDF proposal, so the two always agree.
Formatting only: every number comes from the Advice as it is.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from advisor import charts
from advisor import formatting as fmt
from advisor.advice import documents
from advisor.advice.documents import NOT_SERVING_PREFIXES, defaulted_fields, latency_error_words, rent_rate_words
from advisor.advice.fleet.pricing import PEAK_HOURS
from advisor.advice.inference import tpot_words
from advisor.advice.models import SCALING_EFFICIENCY_MEANING
from advisor.advice.offers import quoted_offers
from advisor.advice.recommendation import (
    advice_runs_judged,
    cheapest_marks,
    fastest_candidate,
    finishes_runs,
    own_option_usd_per_run,
    owns_with_overflow,
)
from advisor.advice.uncertainty import sensitivity_label
from advisor.cash_flow import defaulted_sources, utilization_basis
from advisor.charts import format_hours, format_percent
from advisor.scenario import TRAINING_ONLY_DEFAULTS
from advisor.scenario_model import KINDS, rule
from advisor.web.serving_calibration import serving_calibration_url
from estimator.specs import capacity_words

MARKET_LABELS = charts.MARKET_LABELS
STRATEGY_LABELS = {
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "ZeRO-3",
    "fsdp": "FSDP",
    "hsdp": "HSDP",
}


def _get(mapping: Any, *keys: str) -> Any:
    value = mapping
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def usd(value: Any) -> str:
    """Money in a table cell: ``formatting.usd``, thousands and millions short."""
    return fmt.usd(value, compact=True)


def usd_exact(value: Any) -> str:
    """Money in full (``formatting.usd``): whole dollars with separators, cents below $100 (an outside tester: the
    PDF's "$4" a run beside the reasons' "$4.26"); the sign before the dollar ("-$2,282,882", not "$-2,282,882")."""
    return fmt.usd(value)


def percent(value: Any) -> str:
    return "n/a" if value is None else format_percent(float(value))


def break_even_text(value: Any, *, digits: int = 0, priced: bool = True) -> str:
    """A break-even utilization; above 100% (or none) owning never matches the rental price; "n/a" where renting or
    owning is not priced (``priced`` false), as nothing was compared (a finance approver: the summary's "n/a" beside
    a sizes table's "never" on unpriced rows, which reads as owning priced and always losing)."""
    if not priced:
        return "n/a"
    if value is None or float(value) > 1:
        return "never"
    return fmt.percent(value, digits=digits)


def size_break_even_text(size: dict[str, Any], *, digits: int = 0) -> str:
    """A size's break-even utilization, "n/a" where renting or owning is not priced there (an outsider's probe:
    "not priced · n/a · n/a · never" on inference rows the API gives no figures for)."""
    priced = [
        any((size.get(side) or {}).get(key) is not None for key in ("usd_per_run", "usd_per_month"))
        for side in ("rent", "buy")
    ]
    return break_even_text(_get(size, "buy", "break_even_utilization"), digits=digits, priced=all(priced))


def hours(value: Any) -> str:
    return "n/a" if value is None else format_hours(float(value))


def hours_in_one_unit(*values: Any) -> list[str]:
    """Several durations (a run time and its P10-P90 band) in the unit the largest of them takes in
    ``format_hours``, so a range never mixes units ("45.6 h to 3.4 d" was an outsider's probe)."""
    known = [float(v) for v in values if v is not None]
    days = bool(known) and format_hours(max(known)).endswith(" d")
    return ["n/a" if v is None else f"{float(v) / 24:,.1f} d" if days else format_hours(float(v)) for v in values]


def layout_text(layout: dict[str, Any] | None) -> str:
    if not layout:
        return "n/a"
    parts = [STRATEGY_LABELS.get(str(layout.get("strategy")), str(layout.get("strategy") or "layout searched"))]
    for key, label in (("tp", "TP"), ("pp", "PP"), ("cp", "CP")):
        if layout.get(key) not in (None, 1):
            parts.append(f"{label} {layout[key]}")
    if layout.get("virtual_pipeline") not in (None, 1):
        parts.append(f"interleaved x{layout['virtual_pipeline']}")
    if layout.get("micro_batch") is not None:
        parts.append(f"micro-batch {layout['micro_batch']}")
    checkpointing = layout.get("activation_checkpointing")
    if checkpointing not in (None, False, "false"):
        parts.append("full recompute" if checkpointing in (True, "true") else f"{checkpointing} recompute")
    return " · ".join(parts)


def offer_text(size: dict[str, Any], *, advice: dict[str, Any]) -> str:
    """A training size's rental offer and the price its cost per run is billed at (``rent_rate_words``)."""
    offer = _get(size, "rent", "offer")
    if not offer:
        return "no offer"
    market = market_label(offer.get("market", ""))
    where = " ".join(str(part) for part in (offer.get("provider"), offer.get("instance")) if part)
    rate = rent_rate_words(size, scenario=advice.get("scenario") or {})
    return f"{where or 'unnamed offer'} {market} at {rate}"


def _plan_offer_text(offer: dict[str, Any] | None) -> str:
    """ "cudo sapphire-rapids-h100_1x4v8gb on-demand at $1.85 per GPU-hour": one offer of an inference plan."""
    if not offer:
        return "no offer"
    where = " ".join(str(part) for part in (offer.get("provider"), offer.get("instance")) if part) or "unnamed offer"
    return f"{where} {market_label(offer.get('market', ''))} at {fmt.price(offer.get('usd_per_gpu_hour'))} per GPU-hour"


def inference_offer_text(size: dict[str, Any]) -> str:
    """An inference plan's rental prices: its base offer billed all month and its burst offer while needed, each with
    its price (an outsider's probe: the compare page showed the spot burst at $1.25 alone while 70% of the rent was an
    on-demand base at $1.8528 from another provider). Documents without a base or a burst: rent.offer alone."""
    rent = size.get("rent") or {}
    parts = []
    if rent.get("base_offer") and rent.get("base_instances"):
        count = fmt.count(rent["base_instances"], "instance")
        parts.append(f"base: {count} of {_plan_offer_text(rent['base_offer'])} all month")
    burst = rent.get("burst_instances_mean")
    if rent.get("burst_offer") and burst:
        word = "instance" if burst == 1 else "instances"
        parts.append(f"burst: {burst:.2g} {word} of {_plan_offer_text(rent['burst_offer'])} on average")
    return " + ".join(parts) or _plan_offer_text(rent.get("offer"))


def spot_overhead_text(size: dict[str, Any]) -> str:
    """Beside a spot price: the run time lost to interruptions (Young/Daly), which the cost per run includes."""
    if _get(size, "rent", "market") != "spot":
        return ""
    lost = _get(size, "rent", "by_market", "spot", "lost_fraction")
    if lost is None or not 0 <= lost < 1:
        return ""
    return f", +{fmt.percent(lost / (1 - lost), digits=1)} run time lost to interruptions"


def own_per_run(size: Mapping[str, Any], *, advice: Mapping[str, Any]) -> Any:
    """The own option's cost per run the Advice compared (recommendation.own_option_usd_per_run: with the runs one
    cluster cannot finish rented, where it priced them); buy.usd_per_run where the Advice has no own option (the
    marked figure of a size that cannot finish the runs, documents issued before buy.overflow)."""
    own = own_option_usd_per_run(size, runs_per_year=advice_runs_judged(advice))
    return own if own is not None else _get(size, "buy", "usd_per_run")


def overflow_text(size: Mapping[str, Any], *, advice: Mapping[str, Any]) -> str:
    """ "$1,779,434 a year ($71,177 a run): 19.4 of 25 runs owned, 5.6 rented at $85,243 a run" where the size's own
    option rents the runs one cluster cannot finish (buy.overflow); "" otherwise."""
    runs = advice_runs_judged(advice)
    if runs is None or not owns_with_overflow(size, runs_per_year=runs):
        return ""
    overflow = size["buy"]["overflow"]
    return (
        f"{usd_exact(overflow['usd_per_year'])} a year ({usd_exact(overflow['usd_per_run'])} a run): "
        f"{fmt.runs(overflow['owned_runs'])} of {runs:g} runs owned, {fmt.runs(overflow['rented_runs'])} rented at "
        f"{usd_exact(overflow['rented_usd_per_run'])} a run"
    )


def owned_fit_text(size: dict[str, Any], *, advice: dict[str, Any]) -> str:
    """ "only 2.33 of 4 runs a year fit on one cluster" where the Advice says one owned cluster of this size cannot
    finish the year's runs (buy.finishes_runs false), so the owned cost per run beside it assumes more than the cluster
    can do (an outsider's probe: 64 GPUs at $1.21M a run, unmarked, for 4 runs of 340 days); "" otherwise."""
    buy = size.get("buy") or {}
    if buy.get("finishes_runs") is not False:
        return ""
    runs = _get(advice, "scenario", "workload", "runs_per_year")
    fit = buy.get("runs_per_year_fit")
    if fit is None or runs is None:
        return "one cluster cannot finish the runs a year"
    text = f"only {fmt.plain(fit)} of {fmt.plain(runs)} runs a year fit on one cluster"
    if not overflow_text(size, advice=advice):
        return text
    overflow = buy["overflow"]
    per_run, per_year = usd_exact(overflow["usd_per_run"]), usd_exact(overflow["usd_per_year"])
    return f"{text}; with the rest rented {per_run} a run, {per_year} a year"


def memory_text(size: Mapping[str, Any], *, gpu: Mapping[str, Any]) -> str:
    """ "85.5 of 85.5 GB/GPU": a size's need against the capacity it was checked against, in one unit (a first-time
    user: "yes, 86 GB/GPU" beside an "80GB" GPU); what the capacity is, the table's caption says once
    (``memory_meaning``: the sentence in every cell pushed the sizes table past its box at 1280 px). An Advice issued
    before its gpu block carried the capacity: the need alone, "85.5 GB/GPU"."""
    need = size.get("memory_per_gpu_gb")
    if need is None:
        return "n/a"
    if gpu.get("memory_capacity_gb") is None or gpu.get("memory_gb") is None:
        return f"{need:.1f} GB/GPU"
    return f"{need:.1f} of {gpu['memory_capacity_gb']:.1f} GB/GPU"


# A serving deployment's memory per GPU, part by part (advice.models.MemoryBudgetPerGpu), in the order the engine
# takes it: the KV cache gets what the others leave.
MEMORY_BUDGET_PARTS: Final = (
    ("weights", "weights_gb"),
    ("activations", "activations_gb"),
    ("runtime", "runtime_gb"),
    ("KV cache", "kv_cache_gb"),
)


def memory_budget_text(size: Mapping[str, Any]) -> str:
    """ "weights 145.4 + activations 1.5 + runtime 1.0 + KV cache 2.6 GB": what an inference size's
    memory_per_gpu_gb is made of (a serving lead's probe: weights of 145.4 GB beside a "141GB" GPU with nothing
    saying what the deployment holds against what); "" for a document issued before the budget."""
    budget = size.get("memory_budget_per_gpu")
    if not budget:
        return ""
    return " + ".join(f"{word} {budget[key]:.1f}" for word, key in MEMORY_BUDGET_PARTS) + " GB"


def memory_meaning(*, advice: Mapping[str, Any]) -> str:
    """The sizes table's caption of what its memory figures are held against ("" for an Advice without it)."""
    gpu = advice.get("gpu") or {}
    if gpu.get("memory_capacity_gb") is None or gpu.get("memory_gb") is None:
        return ""
    capacity = capacity_words(capacity_gb=gpu["memory_capacity_gb"], datasheet_gb=gpu["memory_gb"])
    return f"Fits memory: each size's need per GPU against {capacity}."


def size_rows(*, advice: dict[str, Any]) -> list[dict[str, Any]]:
    recommended = _get(advice, "recommendation", "gpus")
    rows = []
    for size in advice.get("sizes", []):
        band = ""
        run_time, low_time, high_time = hours_in_one_unit(
            size.get("run_hours"), size.get("run_hours_p10"), size.get("run_hours_p90")
        )
        if size.get("run_hours_p10") is not None and size.get("run_hours_p90") is not None:
            band = f"{low_time} to {high_time}"
        be_low = _get(size, "buy", "break_even_utilization_p10")
        be_high = _get(size, "buy", "break_even_utilization_p90")
        break_even_band = ""
        if be_low is not None and be_high is not None and abs(be_high - be_low) > 0.005:
            low, high = sorted((be_low, be_high))
            break_even_band = f"P10-P90 {break_even_text(low)} to {break_even_text(high)}"
        rows.append(
            {
                "gpus": size.get("gpus"),
                "nodes": size.get("nodes"),
                "layout": layout_text(size.get("layout")),
                "run_time": run_time,
                "run_time_band": band,
                "rent_per_run": usd(_get(size, "rent", "usd_per_run")),
                "rent_offer": offer_text(size, advice=advice) + spot_overhead_text(size),
                "buy_per_run": usd(_get(size, "buy", "usd_per_run")),
                "owned_per_gpu_hour": usd(_get(size, "buy", "usd_per_gpu_hour_at_utilization")),
                "owned_fit": owned_fit_text(size, advice=advice),
                "mfu": percent(size.get("mfu")),
                "scaling_efficiency": percent(size.get("scaling_efficiency")),
                "fits_memory": bool(size.get("fits_memory")),
                "memory": memory_text(size, gpu=advice.get("gpu") or {}),
                "break_even": size_break_even_text(size),
                "break_even_band": break_even_band,
                "break_even_hours": (
                    ""
                    if _get(size, "buy", "break_even_hours_per_year") is None
                    else f"{size['buy']['break_even_hours_per_year']:,.0f} h/yr"
                ),
                "recommended": size.get("gpus") == recommended,
            }
        )
    return rows


def _rent_plan_text(rent: dict[str, Any]) -> str:
    """ "1 instance of 8 GPUs on on-demand all month (3 replicas) + 0.65 spot instances of 8 GPUs on average (1.3
    replicas)": renting bills whole instances, which may hold several replicas (a reviewer: "3 base on on-demand"
    beside a bill for one 8-GPU instance). Documents without instances: "2 base on 1-year reserved + 0.40 burst on
    on-demand (mean)". "not priced" when renting has no plan."""
    if rent.get("usd_per_month") is None:
        return "not priced"
    if rent.get("base_instances") is not None:
        return _instance_plan_text(rent)
    base, base_market = rent.get("base_replicas"), market_label(rent.get("base_market") or "")
    plan = f"{fmt.plain(base)} base on {base_market}" if base and base_market else "no reserved base"
    burst, burst_market = rent.get("burst_replicas_mean"), market_label(rent.get("burst_market") or "")
    if burst and burst_market:
        plan += f" + {burst:.2f} burst on {burst_market} (mean)"
    return plan


def _gpus_of(offer: Any) -> str:
    """ "of 8 GPUs" for an offer's instance; "" where the offer does not say."""
    gpus = offer.get("gpu_count") if isinstance(offer, dict) else None
    return "" if gpus is None else f" of {fmt.count(gpus, 'GPU')}"


def _instance_plan_text(rent: dict[str, Any]) -> str:
    base, base_market = rent.get("base_instances"), market_label(rent.get("base_market") or "")
    if base and base_market:
        plan = f"{fmt.count(base, 'instance')}{_gpus_of(rent.get('base_offer'))} on {base_market} all month"
        plan += f" ({fmt.count(rent.get('base_replicas'), 'replica')})"
    else:
        plan = "no reserved base"
    burst, burst_market = rent.get("burst_instances_mean"), market_label(rent.get("burst_market") or "")
    if burst and burst_market:
        word = "instance" if burst == 1 else "instances"
        plan += f" + {burst:.2g} {burst_market} {word}{_gpus_of(rent.get('burst_offer'))} on average"
        plan += f" ({fmt.plain(rent.get('burst_replicas_mean'), digits=2)} replicas)"
    return plan


def _rented_note(rent: dict[str, Any]) -> str | None:
    """ "1.6 rented instances of 8 GPUs on average" (base + mean burst, what renting bills); replicas for documents
    without instances; None where the rent has no plan."""
    base, burst = rent.get("base_instances"), rent.get("burst_instances_mean")
    if base is None or burst is None:
        base, burst = rent.get("base_replicas"), rent.get("burst_replicas_mean")
        return None if base is None or burst is None else f"{base + burst:.2g} rented on average"
    sizes = {_gpus_of(rent.get(o)) for o in ("base_offer", "burst_offer") if rent.get(o)}
    of = sizes.pop() if len(sizes) == 1 else ""  # two offers of different instance sizes: the plan column says
    word = "instance" if base + burst == 1 else "instances"
    return f"{base + burst:.2g} rented {word}{of} on average"


def _deployment_text(size: dict[str, Any]) -> str:
    """ "TP 1 x 3 replicas (2 at the mean rate, 1 rented instance of 8 GPUs on average), about 14 in flight per replica
    at the peak"
    (older documents: "batch 16", the sized capacity's); a deployment that cannot serve the traffic says why
    instead. The average is what renting bills (base + mean burst); an outsider's probe read
    "(mean 1)" as the replicas billed, 1.6 on average."""
    tp = f"TP {fmt.plain(size.get('tp'))}"
    if not size.get("fits_memory"):
        return f"{tp}: does not fit in memory"
    if size.get("replicas") is None:
        return f"{tp}: misses the latency targets"
    text = f"{tp} x {fmt.count(size['replicas'], 'replica')}"
    notes = []
    if size.get("replicas_mean") is not None:
        notes.append(f"{fmt.plain(size['replicas_mean'])} at the mean rate")
    rented = _rented_note(size.get("rent") or {})
    if rented:
        notes.append(rented)
    if notes:
        text += f" ({', '.join(notes)})"
    at_peak = size.get("batch_at_peak")
    if at_peak is not None:
        # What the peak puts on each replica (peak / replicas), not the replica's sized capacity (an outsider's probe:
        # "batch 125" was the capacity's, 54 at the peak).
        count = f"{at_peak:.0f}" if at_peak >= 10 else f"{at_peak:.2g}"
        return text + f", about {count} in flight per replica at the peak"
    return text + (f", batch {size['batch']}" if size.get("batch") is not None else "")


def _latencies(ttft: Any, tpot: Any, *, output_tokens: float) -> str:
    return f"TTFT {fmt.duration_s(ttft)}, {tpot_words(f'TPOT {fmt.duration_s(tpot)}', output_tokens=output_tokens)}"


def _output_tokens(advice: Mapping[str, Any]) -> float:
    """The request shape's output tokens; unbounded where a partial document lacks them (its TPOT is shown)."""
    tokens = _get(advice, "scenario", "workload", "traffic", "output_tokens")
    return float(tokens) if tokens is not None else math.inf


def _latency_text(size: dict[str, Any], *, peak: Any, output_tokens: float) -> str:
    """A deployment's p95 latencies and the load they are at (an outsider's probe: the row's "TTFT 142 ms, TPOT 50 ms",
    at the replica's sized capacity, beside the summary's 130 ms / 45 ms at the peak, with nothing saying which load
    either is at): "p95 at the sized rate of 6.13 requests/s per replica: TTFT 142 ms, TPOT 50 ms; at the peak (5
    requests/s per replica): TTFT 130 ms, TPOT 45 ms". One that misses the targets reports a lone client's load
    (estimator.inference.sizing.best_under_latency)."""
    ttft, tpot = size.get("ttft_s"), size.get("tpot_s")
    if ttft is None or tpot is None:
        return "n/a"
    if not size.get("meets_latency"):
        return f"p95 for a lone client: {_latencies(ttft, tpot, output_tokens=output_tokens)}"
    rate = size.get("replica_requests_per_s")
    per_gpu = size.get("requests_per_s_per_gpu")
    per_gpu_text = "" if per_gpu is None or size.get("tp", 1) == 1 else f" ({per_gpu:.3g} per GPU)"
    load = "p95" if rate is None else f"p95 at the sized rate of {rate:.3g} requests/s per replica{per_gpu_text}"
    text = f"{load}: {_latencies(ttft, tpot, output_tokens=output_tokens)}"
    at_peak = (size.get("ttft_s_at_peak"), size.get("tpot_s_at_peak"))
    if None in at_peak or not peak or not size.get("replicas"):
        return text
    # What the peak puts on each replica (peak / replicas), as the recommendation's reasons say it.
    peak_latencies = _latencies(*at_peak, output_tokens=output_tokens)
    return text + f"; at the peak ({peak / size['replicas']:.3g} requests/s per replica): {peak_latencies}"


# The column of a deployment's usd_per_million_output_tokens, the cheaper of renting and owning (an outsider's probe:
# the owned $1.09 sat among rented figures under a header that did not say so).
PER_MILLION_LABEL: Final = "Per million output tokens (cheaper of rent and own)"


def per_million_side(size: dict[str, Any]) -> str:
    """ "rented" or "owned": which of the deployment's rent and buy figures its usd_per_million_output_tokens is (the
    Advice's cheaper of the two); "" where it is neither or not priced."""
    usd = size.get("usd_per_million_output_tokens")
    if usd is None:
        return ""
    for side, word in (("rent", "rented"), ("buy", "owned")):
        if _get(size, side, "usd_per_million_output_tokens") == usd:
            return word
    return ""


def inference_rows(*, advice: dict[str, Any]) -> list[dict[str, Any]]:
    recommended = documents.recommended_size({**advice, "kind": "inference"})
    rows = []
    for size in advice.get("sizes", []):
        rent = size.get("rent") or {}
        rows.append(
            {
                "gpus": size.get("gpus") if size.get("gpus") is not None else "n/a",
                "layout": _deployment_text(size),
                "latency": _latency_text(
                    size,
                    peak=_get(advice, "scenario", "workload", "traffic", "peak_requests_per_s"),
                    output_tokens=_output_tokens(advice),
                ),
                "meets_latency": bool(size.get("meets_latency")),
                "fits_memory": bool(size.get("fits_memory")),
                "memory": memory_text(size, gpu=advice.get("gpu") or {}),
                "memory_budget": memory_budget_text(size),
                "throughput": "n/a"
                if size.get("output_tokens_per_s") is None
                else f"{size['output_tokens_per_s']:,.0f} tok/s",
                "rent_per_month": usd(rent.get("usd_per_month")),
                "rent_plan": _rent_plan_text(rent),
                "buy_per_month": usd(_get(size, "buy", "usd_per_month")),
                "buy_gpus": _get(size, "buy", "gpus_owned") or "",
                "per_million": usd_cents(size.get("usd_per_million_output_tokens")),
                "per_million_side": per_million_side(size),
                "break_even": size_break_even_text(size),
                "recommended": size is recommended,
            }
        )
    return rows


def recommended_size(*, advice: dict[str, Any]) -> dict[str, Any] | None:
    size: dict[str, Any] | None = documents.recommended_size(advice)
    return size


def is_inference(advice: dict[str, Any]) -> bool:
    return advice.get("kind") == "inference"


def usd_cents(value: Any) -> str:
    if value is None:
        return "n/a"
    number = float(value)
    return f"-${-number:,.2f}" if number < 0 else f"${number:,.2f}"


ACTION_LABELS = {"buy": "Buy", "rent": "Rent", "none": "No deployment meets the targets"}
NO_FIT_LABEL = "No candidate size fits the model in memory"  # training, action none
NOT_PRICED_LABEL = "Not priced: no rental offer or price, and no hardware quote or capex"  # action none with a size
RUNS_UNFINISHED_LABEL = "No size finishes the year's runs"  # training, none_reason runs_unfinished
# training, none_reason not_priced where owning is priced: it cannot finish the runs alone, the rest has no rent price
OVERFLOW_NOT_PRICED_LABEL = (
    "Not priced: owning cannot finish the year's runs, and renting the rest has no offer or price"
)


def _relax_note(entry: dict[str, Any]) -> str:
    """ "120 GPUs, rent $56,770 a month": what the change costs (older documents: nothing)."""
    if entry.get("gpus") is None:
        return ""
    cost = f", {entry['action']} {usd_exact(entry.get('usd_per_month'))} a month" if entry.get("action") else ""
    return f"{fmt.count(entry['gpus'], 'GPU')}{cost}"


def _unmet_headline(advice: dict[str, Any]) -> dict[str, Any]:
    """Action none: the deployment that comes nearest, the latency it reaches, and what would meet the targets."""
    recommendation = advice.get("recommendation") or {}
    closest = recommendation.get("closest") or {}
    relax = [r for r in recommendation.get("relax") or [] if r.get("meets_latency")]
    figures = []
    if closest:
        figures.append(
            {
                "key": "closest",
                "label": "Nearest deployment",
                "value": f"TP {fmt.plain(closest.get('tp'))}",
                "note": f"TTFT {fmt.duration_s(closest.get('ttft_s'))} (target "
                f"{fmt.duration_s(closest.get('ttft_target_s'))}), "
                + tpot_words(
                    f"TPOT {fmt.duration_s(closest.get('tpot_s'))} (target "
                    f"{fmt.duration_s(closest.get('tpot_target_s'))})",
                    output_tokens=_output_tokens(advice),
                ),
            }
        )
    figures += [
        {"key": f"relax_{i}", "label": "Would meet the targets", "value": r.get("text", ""), "note": _relax_note(r)}
        for i, r in enumerate(relax)
    ]
    return {
        "action": "none",
        "action_label": ACTION_LABELS["none"],
        "gpus": None,
        "gpus_text": None,
        "reasons": recommendation.get("reasons") or [],
        "figures": figures,
        # As many figures as alternatives: the PDF lists them one under another (a row left each a few mm wide).
        "figures_layout": "list",
    }


def _inference_headline(advice: dict[str, Any]) -> dict[str, Any]:
    recommendation = advice.get("recommendation") or {}
    action = recommendation.get("action")
    if action == "none" and not recommendation.get("gpus"):
        return _unmet_headline(advice)
    size = recommended_size(advice=advice) or {}
    chosen, other = ("buy", "rent") if action == "buy" else ("rent", "buy")
    words = {"buy": "owned", "rent": "rented"}
    replicas = fmt.count(size.get("replicas"), "replica") if size.get("replicas") is not None else "no replicas"
    return {
        "action": action,
        "action_label": action_label(recommendation, sizes=advice.get("sizes") or []),
        "gpus": recommendation.get("gpus"),
        "gpus_text": gpus_bought_text(advice=advice),
        "reasons": recommendation.get("reasons") or [],
        "figures": [
            {
                "key": "cost_per_month",
                "label": f"Cost per month ({words[chosen]})",
                "value": usd_exact(_get(size, chosen, "usd_per_month")),
                "note": f"vs {usd_exact(_get(size, other, 'usd_per_month'))} {words[other]}",
            },
            {
                "key": "usd_per_million_output_tokens",
                "label": "Cost per million output tokens",
                "value": usd_cents(_get(size, chosen, "usd_per_million_output_tokens")),
                "note": f"TP {fmt.plain(size.get('tp'))} x {replicas} at the peak",
            },
            {
                "key": "break_even",
                "label": f"Break-even utilization {break_even_market_words(size)}",
                "value": size_break_even_text(size),
                "note": f"traffic keeps owned GPUs {percent(_get(size, 'buy', 'utilization'))} busy",
            },
            *_capacity_band_figure(recommendation.get("capacity_band")),
            *_latency_band_figure(
                recommendation.get("latency_band"), recommendation.get("gpus"), recommendation.get("tp")
            ),
        ],
    }


CAPACITY_BAND_GPUS: Final[str] = "GPUs at the peak (P10-P90)"
CAPACITY_BAND_COST: Final[str] = "Per million output tokens (P10-P90)"
# A band measured on other GPUs or engines (capacity_band.covers_deployment false) is no P10-P90 for this deployment
UNCOVERED_BAND: Final[str] = "band not measured on this deployment"
UNCOVERED_BAND_GPUS: Final[str] = f"GPUs at the peak ({UNCOVERED_BAND})"
UNCOVERED_BAND_COST: Final[str] = f"Per million output tokens ({UNCOVERED_BAND})"


def _covers_deployment(band: Mapping[str, Any]) -> bool:
    """Whether the band's held-out errors were measured on the deployment's GPU and engine; a document from before
    the flag reads as it was shown then."""
    return bool(band.get("covers_deployment", True))


def _capacity_band_costs(band: Mapping[str, Any]) -> str:
    """ "$0.16-$0.21": the cost per million output tokens at the P90 capacity, then at the P10."""
    return (
        f"{usd_cents(band['usd_per_million_output_tokens_at_p90'])}-"
        f"{usd_cents(band['usd_per_million_output_tokens_at_p10'])}"
    )


def gpu_range(low: Any, high: Any) -> str:
    """ "8-16 GPUs", or "8 GPUs" where both ends are the same count (a band printed "8-8 GPUs")."""
    return f"{fmt.plain(low)} GPUs" if low == high else f"{fmt.plain(low)}-{fmt.plain(high)} GPUs"


def _capacity_band_figure(band: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The recommended deployment's GPUs at the peak over the P10-P90 of a replica's capacity (the Advice's
    recommendation.capacity_band), with the cost per million output tokens over it; none without a band."""
    if not band:
        return []
    covered = _covers_deployment(band)
    over = (
        "over the serving model's held-out error"
        if covered
        else "over the serving model's held-out error on calibrated GPUs and engines, which does not cover this "
        "deployment's GPU or engine"
    )
    return [
        {
            "key": "capacity_band",
            "label": CAPACITY_BAND_GPUS if covered else UNCOVERED_BAND_GPUS,
            "value": gpu_range(band["gpus_at_p90"], band["gpus_at_p10"]),
            "note": f"{_capacity_band_costs(band)} per million output tokens {over}",
        }
    ]


LATENCY_BAND_GPUS: Final[str] = "GPUs at the peak (latency error)"
UNCOVERED_LATENCY_BAND_GPUS: Final[str] = "GPUs at the peak (latency error elsewhere)"


def _latency_band_value(band: Mapping[str, Any], gpus: Any) -> str:
    """ "496-1,360 GPUs" from the low end to the high end, the recommended count inside; where an end meets no
    deployment, the range to the recommended count and which end (a probe: "480 GPUs; none ..." hid the 1,296
    recommended)."""
    ends = [band["gpus_if_latency_lower"], band["gpus_if_latency_higher"]]
    known = [n for n in ends if n is not None]
    counts = gpu_range(min([*known, gpus]), max([*known, gpus]))
    missing = [end for end, n in zip(("low", "high"), ends, strict=True) if n is None]
    return counts + "".join(f"; none meets the targets at the {end} end" for end in missing)


def _latency_band_figure(band: Mapping[str, Any] | None, gpus: Any, tp: Any = None) -> list[dict[str, Any]]:
    """The recommended deployment's GPUs at the peak were the real p95 latencies at either end of the serving
    model's latency error (the Advice's recommendation.latency_band); none without a band."""
    if not band or gpus is None:
        return []
    return [
        {
            "key": "latency_band",
            "label": LATENCY_BAND_GPUS if band.get("covers_deployment", True) else UNCOVERED_LATENCY_BAND_GPUS,
            "value": _latency_band_value(band, gpus),
            # Both ends keep the recommended TP (a serving re-check: "none" at the high end held at that TP only).
            "note": (f"at TP {fmt.plain(tp)}: " if tp else "")
            + (latency_error_words(band) if "ttft_ratio_p10" in band else ""),
        }
    ]


def gpus_bought_text(*, advice: dict[str, Any]) -> str | None:
    """The GPUs a decision names, as the headline says them: "12 NVIDIA H100 SXM5 80GB GPUs", or, buying a serving
    deployment in whole servers, what is bought and what the deployment uses: "16 ... GPUs in 2 x 8-GPU servers (the
    deployment uses 12)" (a finance probe: "Buy 12 GPUs" beside the $634,000 of 16). None without GPUs, and None
    where there is no decision (action none): its label is a sentence of its own that names the size, and the GPUs
    after it ran on ("... takes 39,897 hours a run 16 NVIDIA H100 SXM5 80GB GPUs", a first-time user's probe)."""
    recommendation = advice.get("recommendation") or {}
    gpus = recommendation.get("gpus")
    if not gpus or recommendation.get("action") == "none":
        return None
    name = _get(advice, "gpu", "name") or _get(advice, "scenario", "gpu")
    owned, nodes = recommendation.get("gpus_owned"), recommendation.get("nodes")
    if not owned or not nodes:
        return f"{fmt.plain(gpus)} {name} GPUs"
    text = f"{fmt.plain(owned)} {name} GPUs in {fmt.plain(nodes)} x {fmt.plain(owned // nodes)}-GPU servers"
    return text if owned == gpus else f"{text} (the deployment uses {fmt.plain(gpus)})"


def _issued_none_reason(size: Mapping[str, Any]) -> str | None:
    """The none_reason a training document issued before it existed (2026-12-06) was decided on: its chosen size runs
    (a run time) and renting or owning is priced there, so no size finished the runs (a hostile review, F4: these read
    "Not priced"); None otherwise (the label then falls back to whether a size is named)."""
    if size.get("run_hours") is None:
        return None
    priced = _get(size, "rent", "usd_per_run") is not None or _get(size, "buy", "usd_per_run") is not None
    return "runs_unfinished" if priced else None


def action_label(recommendation: Mapping[str, Any], *, sizes: Sequence[Mapping[str, Any]] = ()) -> str:
    """What the recommendation says in words: rent or buy; none by its none_reason (training: nothing fits, not
    priced, or no size finishes the year's runs, the fastest of ``sizes`` named); training documents issued before it
    by their chosen size (``_issued_none_reason``); inference by whether a size is named."""
    action = recommendation.get("action")
    chosen = next((d for d in sizes if d.get("gpus") == recommendation.get("gpus")), {})
    reason = recommendation.get("none_reason") or _issued_none_reason(chosen)
    if action == "none" and reason == "runs_unfinished":
        fastest = fastest_candidate(sizes)
        return RUNS_UNFINISHED_LABEL + (
            f": the fastest, {fmt.count(fastest['gpus'], 'GPU')}, takes {fmt.hours(fastest['run_hours'])} a run"
            if fastest
            else ""
        )
    if action == "none":
        priced = reason == "not_priced" if reason else bool(recommendation.get("gpus"))
        if not priced:
            return NO_FIT_LABEL
        return OVERFLOW_NOT_PRICED_LABEL if _get(chosen, "buy", "usd_per_run") is not None else NOT_PRICED_LABEL
    return ACTION_LABELS.get(action or "", "No recommendation")


def break_even_market_words(size: dict[str, Any]) -> str:
    """Which price the break-even compares against: "vs on-demand", "vs your quote"."""
    market = _get(size, "buy", "break_even_against", "market") or _get(size, "buy", "break_even_market")
    offer = _get(size, "rent", "offer") or {}
    if offer.get("provider") == "manual quote":
        return "vs your rental quote"
    markets = _get(size, "buy", "break_even_against", "markets") or []
    if len(markets) > 1:  # inference: a base and a burst on two markets, priced together
        return "vs the rent"
    return f"vs {MARKET_LABELS[market]}" if market in MARKET_LABELS else ""


def chosen_market_break_even(size: dict[str, Any]) -> tuple[str, str] | None:
    """(label, value) of the break-even against the rental market the advice chose, where that is not the market the
    headline break-even is measured against (an outsider's probe: a spot decision showed only on-demand's 64%, spot's
    "never" appeared nowhere); None otherwise."""
    chosen = _get(size, "rent", "market")
    by_market = _get(size, "buy", "break_even_by_market") or {}
    against = _get(size, "buy", "break_even_against", "market") or _get(size, "buy", "break_even_market")
    if chosen is None or chosen == against or chosen not in by_market or chosen not in MARKET_LABELS:
        return None
    return f"Break-even utilization vs {MARKET_LABELS[chosen]} (the market chosen)", break_even_text(by_market[chosen])


def utilization_words(*, advice: dict[str, Any], size: dict[str, Any]) -> str:
    """ "planned 60%" (given), "77% busy, implied by 4 runs a year" or "60% busy, default: DESIGN.md example"
    (cash_flow.utilization_basis; an outsider's probe: the defaulted 60% read as planned)."""
    used = _get(size, "buy", "utilization")
    given = _get(advice, "scenario", "utilization")
    basis = utilization_basis(
        utilization=given,
        runs_per_year=_get(advice, "scenario", "workload", "runs_per_year"),
        defaulted=defaulted_sources(advice=advice),
    )
    if basis != "given" and used is not None:
        return f"{percent(used)} busy, {basis}"
    return f"planned {percent(used if used is not None else given)}"


def headline(*, advice: dict[str, Any]) -> dict[str, Any]:
    """The recommendation and the three numbers that matter, for the page and the PDF summary."""
    if is_inference(advice):
        return _inference_headline(advice)
    recommendation = advice.get("recommendation") or {}
    action = recommendation.get("action")
    size = recommended_size(advice=advice) or {}
    chosen = [figure for figure in [chosen_market_break_even(size)] if figure is not None]
    rent_run, own_run = _get(size, "rent", "usd_per_run"), own_per_run(size, advice=advice)
    cost, alternative = (own_run, rent_run) if action == "buy" else (rent_run, own_run)
    owned = "owned, the rest rented" if overflow_text(size, advice=advice) else "owned"
    return {
        "action": action,
        "action_label": action_label(recommendation, sizes=advice.get("sizes") or []),
        "gpus": recommendation.get("gpus"),
        "gpus_text": gpus_bought_text(advice=advice),
        "reasons": recommendation.get("reasons") or [],
        "figures": [
            {
                "key": "cost_per_run",
                "label": f"Cost per run ({owned if action == 'buy' else 'rented'})",
                "value": usd_exact(cost),
                "note": f"vs {usd_exact(alternative)} {'rented' if action == 'buy' else owned}",
            },
            {
                "key": "run_time",
                "label": "Time per run",
                "value": hours(size.get("run_hours")),
                "note": fmt.gpus_on_nodes(size.get("gpus"), size.get("nodes")) if size else "",
            },
            {
                "key": "break_even",
                "label": f"Break-even utilization {break_even_market_words(size)}".strip(),
                "value": size_break_even_text(size),
                "note": "; ".join(
                    [utilization_words(advice=advice, size=size)]
                    + [f"{label.removeprefix('Break-even utilization ')}: {value}" for label, value in chosen]
                ),
            },
        ],
    }


def _break_even_figure(advice: dict[str, Any], size: dict[str, Any]) -> str:
    """The recommended size's break-even, "n/a" where renting or owning is not priced; with no size, why there is
    none (an outsider's probe: an unreachable serving target's key figures read "Break-even utilization: never")."""
    if size:
        return size_break_even_text(size, digits=1)
    # The headline's words: a serving plan with no size has no deployment meeting the targets (_unmet_headline).
    why = (
        ACTION_LABELS["none"]
        if is_inference(advice)
        else action_label(advice.get("recommendation") or {}, sizes=advice.get("sizes") or [])
    )
    return f"n/a ({why[:1].lower()}{why[1:]})"


def _capacity_band_rows(band: Mapping[str, Any] | None) -> list[tuple[str, str]]:
    """The PDF summary's rows of the recommendation's capacity band (none without one)."""
    if not band:
        return []
    figure = _capacity_band_figure(band)[0]
    cost_label = CAPACITY_BAND_COST if _covers_deployment(band) else UNCOVERED_BAND_COST
    return [(figure["label"], figure["value"]), (cost_label, _capacity_band_costs(band))]


def key_figures(*, advice: dict[str, Any]) -> list[tuple[str, str]]:
    """The recommended size's figures at full precision, as the PDF's summary prints them."""
    size = recommended_size(advice=advice) or {}
    break_even = (f"Break-even utilization {break_even_market_words(size)}".strip(), _break_even_figure(advice, size))
    if is_inference(advice):
        return [
            ("Rented cost per month", usd_exact(_get(size, "rent", "usd_per_month"))),
            ("Owned cost per month", usd_exact(_get(size, "buy", "usd_per_month"))),
            ("Rented cost per million output tokens", usd_cents(_get(size, "rent", "usd_per_million_output_tokens"))),
            ("Owned cost per million output tokens", usd_cents(_get(size, "buy", "usd_per_million_output_tokens"))),
            break_even,
            *_capacity_band_rows((advice.get("recommendation") or {}).get("capacity_band")),
            *(
                (figure["label"], figure["value"])
                for figure in _latency_band_figure(
                    (advice.get("recommendation") or {}).get("latency_band"),
                    (advice.get("recommendation") or {}).get("gpus"),
                )
            ),
        ]
    run_hours = size.get("run_hours")
    overflow = overflow_text(size, advice=advice)
    return [
        ("Rented cost per run", usd_exact(_get(size, "rent", "usd_per_run"))),
        ("Owned cost per run", usd_exact(own_per_run(size, advice=advice))),
        *([("Owning and renting the rest", overflow)] if overflow else []),
        ("Time per run", "n/a" if run_hours is None else f"{float(run_hours):,.1f} hours"),
        break_even,
        *[figure for figure in [chosen_market_break_even(size)] if figure is not None],
    ]


def freshness(*, advice: dict[str, Any]) -> dict[str, Any]:
    """The price-freshness badge: snapshot or live, when the offers the advice quotes were observed (the oldest of
    them: ``prices_as_of``; an outsider's probe: the badge gave the newest observation of any offer of the GPU,
    quoted or not), how many are undated, or the user's own quote."""
    info = advice.get("price_freshness") or {}
    kind = info.get("kind") or ("live" if info.get("live") else "snapshot" if info.get("snapshot") else "unknown")
    quoted = advice.get("prices_as_of")
    observed = quoted or info.get("newest_observed_at") or info.get("observed_at")
    observed = str(observed)[:10] if observed else None
    undated = int(info.get("undated_offers") or 0)
    compiled = info.get("snapshot_compiled_on")
    # Before any advice (an outsider's probe: the catalog's newest date was read as the quoted offers' oldest).
    if not quoted:
        dates = (f"the catalog's newest observation {observed}" if observed else "no dated offer in the catalog") + (
            f", {undated} offers undated" if undated else ""
        )
    elif undated and observed == compiled:  # none of the quoted offers is dated: only the compile date bounds them
        dates = f"quoted offers undated, no newer than the snapshot compiled {compiled}"
    else:
        dates = f"quoted offers observed {observed} or later" + (f", {undated} undated" if undated else "")
    if kind == "snapshot":
        text = f"Snapshot prices, {dates}"
        if compiled and observed != compiled:
            text += f" (compiled {compiled})"
    elif kind in ("live", "mixed"):
        text = f"{'Live' if kind == 'live' else 'Live and snapshot'} prices, {dates}"
    elif kind == "manual":
        text = "Your own rental quote (no catalog price used)"
    else:
        text = info.get("label") or (f"Prices as of {observed}" if observed else "No price data")
    return {"kind": kind, "observed_at": observed, "text": text, "stale": bool(info.get("stale")) and kind != "manual"}


def _unmet_prices_text(advice: Mapping[str, Any]) -> str | None:
    """Where no deployment meets the targets, what prices the alternatives that would (an outsider's probe: the cover
    said "no rental offer quoted" above alternatives at $50k-$303k a month); None where none of them is priced."""
    priced = [r for r in (advice.get("recommendation") or {}).get("relax") or [] if r.get("action")]
    if not priced:
        return None
    label = str((advice.get("price_freshness") or {}).get("label") or "no price state recorded")
    verb = "uses" if len(priced) == 1 else "use"
    return (
        f"Prices: no deployment meeting the targets is quoted; the {fmt.count(len(priced), 'priced alternative')} "
        f"below {verb} the catalog's current prices (this GPU's: {label[:1].lower()}{label[1:]})"
    )


def prices_as_of_text(*, advice: Mapping[str, Any]) -> str:
    """The headline date of the prices (the PDF's cover; the workbook's Summary should read the same) saying what the
    date is: ``prices_as_of`` is the oldest observation among the offers used, but where none of them is dated it is
    the snapshot's compile date (an outside tester read 'Prices as of 2026-12-02' as an observation date)."""
    info = advice.get("price_freshness") or {}
    as_of = advice.get("prices_as_of")
    if info.get("kind") == "manual":
        return f"Prices: your own rental quote ({as_of or 'n/a'})"
    # Each offer once, however many sizes quote it (advisor.advice.offers.price_dates counts them so).
    used = {
        (o.get("provider"), o.get("instance"), o.get("region"), o.get("market")): o
        for o in quoted_offers(list(advice.get("sizes") or []))
    }
    undated = sum(1 for o in used.values() if not o.get("observed_at"))
    if not used:
        return _unmet_prices_text(advice) or "Prices: n/a (no rental offer quoted)"
    if undated == len(used):
        compiled = info.get("snapshot_compiled_on")
        return (f"Prices: snapshot compiled {compiled}; " if compiled else "Prices: ") + (
            "the offers used carry no observation date"
        )
    oldest = f"Prices as of {as_of}, the oldest observation among the offers used"
    return oldest + (f" ({undated} of {len(used)} undated)" if undated else "")


def fleet_prices_as_of_text(*, plan: Mapping[str, Any]) -> str:
    """``prices_as_of_text`` of a Fleet Plan, for its PDF, pages and workbook: the offers it quotes are its tiers'
    and each job line's ``rent_offers`` (advisor.advice.fleet.service dates the plan by them). A plan made before it
    carried ``price_freshness`` has its compile date only where no offer is dated, which is then its prices_as_of
    (an auditor: the fleet PDF printed that compile date as "Prices as of 2026-12-02", an observation date)."""
    manual = ((plan.get("fleet") or {}).get("rent") or {}).get("usd_per_gpu_hour") is not None
    as_of = plan.get("prices_as_of")
    freshness = plan.get("price_freshness") or {"snapshot_compiled_on": as_of}
    if manual:
        freshness = {**freshness, "kind": "manual"}
    lines = [{"rent": (plan.get("tier_prices") or {}).get("offers") or {}}]
    lines += [{"rent": job.get("rent_offers") or {}} for job in plan.get("jobs") or []]
    return prices_as_of_text(advice={"prices_as_of": as_of, "price_freshness": freshness, "sizes": lines})


def held_out_words(held_out: str | None) -> str:
    """How a calibration's held-out error was measured (``held_out``: the Advice's calibration.held_out), in the words
    the planner, the PDF, the workbook and the calibrations pages use: "held out by software stack"."""
    if held_out == "leave-one-stack-out":
        return "held out by software stack"
    if held_out in (None, "", "leave-one-config-family-out"):
        return "held out by configuration family"
    return f"held out {held_out}"


def calibration_line(*, advice: dict[str, Any], short: bool = False) -> str:
    """Which calibration, and how accurate it is for this scenario: the held-out error that applies (by software
    stack when the scenario's stack is unknown or has no runs) beside the constant-MFU guess, and the P10-P90 band
    the cost ranges use; the plain held-out error (loo_mape) where the Advice carries no held-out figures. ``short``:
    the error and band only (the PDF's one-page summary; its calibration section has the whole line)."""
    calibration = advice.get("calibration") or {}
    if not calibration:
        return "Estimates are uncalibrated."
    runs, name = fmt.count(calibration.get("runs"), "profiled run"), calibration.get("name") or "unnamed"
    median = calibration.get("held_out_median_ape")
    if median is None:
        mape = calibration.get("loo_mape")
        accuracy = "unknown accuracy" if mape is None else f"held-out error {fmt.percent(mape, digits=1)} of tokens/s"
        if "stack" in calibration:  # a training Advice: no held-out figure applies to this scenario's stack
            stack = calibration["stack"]
            which = f"stack '{stack}'" if stack else "a stack not given"
            accuracy += f" within its own runs; it was never checked on {which}, so expect larger errors"
        return f"Throughput calibrated on {runs} ('{name}'): {accuracy}."
    stack = calibration.get("stack")
    how = held_out_words(calibration.get("held_out"))
    if calibration.get("held_out") == "leave-one-stack-out":
        check = f"stack '{stack}' judged as unseen" if stack else "stack not given"
    else:
        # A user's calibration predicts a job naming no stack with the stacks' prior mean for its stack effect, not
        # as its runs' stack (Calibration.covers; estimator.prediction's note), and judges it by its own held-out
        # runs (Calibration.held_out_accuracy).
        check = (
            f"{stack} has runs in it"
            if stack
            else "no stack given: predicted with the stacks' prior mean, not as its runs' stack, and judged by its runs"
        )
    band = advice.get("uncertainty") or {}
    low, high = band.get("throughput_p10_multiplier"), band.get("throughput_p90_multiplier")
    spread = f", P10-P90 x{low:.2f}-x{high:.2f}" if low is not None and high is not None else ""
    error = f"median error {fmt.percent(median, digits=1)} of tokens/s"
    if short:
        return f"Throughput {how}: {error}{spread}."
    baseline = calibration.get("baseline_held_out_median_ape")
    guess = "" if baseline is None else f" (constant-MFU guess {fmt.percent(baseline, digits=1)})"
    return f"Throughput calibrated on {runs} ('{name}'); {check}, so {how}: {error}{guess}{spread}."


def fleet_calibration_lines(*, plan: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(job, calibration line) for each fleet job whose run hours come from a scenario, once per job (a service's
    peak-hours lines carry its calibration too): the line its own advice prints (``calibration_line``), so the fleet
    names the calibration and held-out error behind its estimated GPU-hours (a finance probe found none)."""
    out: dict[str, str] = {}
    for job in plan.get("jobs") or []:
        calibration = job.get("calibration")
        if calibration:
            name = str(job["name"]).removesuffix(f" ({PEAK_HOURS})")
            out.setdefault(name, calibration_line(advice={"calibration": calibration}))
    return list(out.items())


ASSUMPTION_POINTERS = {
    "Traffic": "/workload/traffic",
    "Request size": "/workload/traffic",
    "Latency targets": "/workload/latency",
    "Sequence length": "/workload/model/seq_len",
    "Global batch": "/workload/global_batch",
    "Precision": "/workload/precision",
    "Runs per year": "/workload/runs_per_year",
    "Cluster sizes": "/cluster_sizes",
    "Network": "/network/gpus_per_node",
    "Rental markets": "/rent/markets",
    "Providers": "/rent/providers",
    "Service life": "/buy/years",
    "Discount rate": "/buy/discount_rate",
    "Residual value": "/buy/residual_fraction",
    "Electricity": "/buy/power_usd_per_kwh",
    "Colocation": "/buy/colo_usd_per_kw_month",
    "Support": "/buy/support_fraction_per_year",
    "Staff": "/buy/staff_usd_per_year",
    "Software": "/buy/software_usd_per_gpu_year",
    "Utilization": "/utilization",
}


# The utilization row's source where the scenario gives none: it is the runs' own share, not anybody's input.
IMPLIED_UTILIZATION_SOURCE: Final = "not given: implied by the runs per year (your input) and each size's run time"

# Rows that show part of one Scenario object: the fields of it each row stands for.
PART_SUFFIX: Final[dict[str, str]] = {"Traffic": "_requests_per_s", "Request size": "_tokens"}


def assumptions(*, advice: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(input, value with unit, where it came from): the user's own input or the default's source."""
    sources = {a.get("pointer"): a for a in advice.get("assumptions") or [] if isinstance(a, dict)}
    rows = []
    shown: set[str] = set()
    for label, value in _assumption_values(advice=advice):
        pointer = ASSUMPTION_POINTERS.get(label, "")
        default = sources.get(pointer)
        # An object given in part (the traffic): its left-out fields are listed as defaults field by field.
        suffix = PART_SUFFIX.get(label, "")
        parts = [f for f in defaulted_fields(pointer, sources) if pointer and f.endswith(suffix)]
        if default is None and parts:
            source = "your input; " + "; ".join(
                f"{field}: {sources[f'{pointer}/{field}'].get('source', 'default')}" for field in parts
            )
        elif label == GPU_LABEL:
            source = gpu_source(gpu=advice.get("gpu") or {})
        elif label == POWER_LABEL:
            source = power_source(quote=advice.get("hardware_quote") or {})
        elif label == "Utilization" and _get(advice, "scenario", "utilization") is None:
            source = IMPLIED_UTILIZATION_SOURCE
        elif default is None:
            source = "your input" if label in ASSUMPTION_POINTERS else ""
        else:
            source = default_source(default)
        if label == "Electricity" and "/buy/pue" in sources:
            source = f"{source}; PUE: {default_source(sources['/buy/pue'])}"
        rows.append((label, value, source))
        shown.add(pointer)
    # Every other input the scenario gave (a finance approver: a 15% price decline, which turned a buy into a rent,
    # and the compared GPUs were in no row), under a label read off its pointer.
    for pointer, value in scenario_inputs(advice=advice):
        if pointer not in sources and not _shown_by(pointer, shown | FIXED_ROW_POINTERS):
            rows.append((pointer_label(pointer), _assumed_value({"value": value}), "your input"))
    # Whatever else the Advice assumed (a reviewer: the serving engine's settings and the calendar reached the JSON
    # and the XLSX but not the page or the PDF a customer reads), under a label read off its pointer.
    for key, assumed in sources.items():
        if isinstance(key, str) and key and not _shown_by(key, shown):
            rows.append((pointer_label(key), _assumed_value(assumed), default_source(assumed)))
    return rows


# What the fixed rows of _assumption_values print besides their ASSUMPTION_POINTERS (whole objects by their prefix).
FIXED_ROW_POINTERS: Final[frozenset[str]] = frozenset(
    {
        "/name",
        "/gpu",
        "/workload/kind",
        "/workload/model",
        "/workload/tokens",
        "/network",
        "/rent/usd_per_gpu_hour",
        "/buy/capex_usd",
    }
)


def scenario_inputs(*, advice: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """(JSON pointer, value) of every field of the Advice's scenario that holds a value, objects opened field by field
    and lists kept whole; a null field (left to the advice: the implied utilization, the catalog price) or an empty
    list is no input, nor, serving, a field only training reads.
    The one list the PDF's and the workbook's assumptions are drawn from."""
    inputs: list[tuple[str, Any]] = []

    def walk(pointer: str, value: Any) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                walk(f"{pointer}/{key}", inner)
        elif value is not None and value != []:
            inputs.append((pointer, value))

    walk("", advice.get("scenario") or {})
    skipped = (*NOT_SERVING_PREFIXES, *TRAINING_ONLY_DEFAULTS) if is_inference(dict(advice)) else ()
    return [(p, v) for p, v in inputs if p != "/name" and not p.startswith(skipped)]


# Pointers another row shows: the PUE is in the electricity row; the serving engine in the advice's /serving/engine
# assumption, which says whether it was given or defaulted (the normalized scenario always carries it, so listed as a
# scenario input it read "your input" for an engine nobody chose).
SHOWN_IN_OTHER_ROWS: Final[frozenset[str]] = frozenset({"/buy/pue", "/workload/serving_engine"})

POINTER_WORDS: Final[dict[str, str]] = {
    "kv": "KV",
    "gb": "GB",
    "usd": "USD",
    "gpu": "GPU",
    "gpus": "GPUs",
    "num": "number of",
    "pue": "PUE",
    "ttft": "TTFT",
    "tpot": "TPOT",
    "tp": "TP",
    "capex": "capex",
}


def pointer_label(pointer: str) -> str:
    """ "/serving/kv_fraction" -> "Serving: KV fraction"; "/compare_gpus" -> "Compare GPUs"."""
    parts = [" ".join(POINTER_WORDS.get(w, w) for w in part.split("_")) for part in pointer.strip("/").split("/")]
    head, rest = parts[0], " ".join(parts[1:])
    head = head[:1].upper() + head[1:]
    return f"{head}: {rest}" if rest else head


def market_label(market: str) -> str:
    """A market id in words: "reserved_1y" -> "1-year reserved"; an id it does not know as it is."""
    return MARKET_LABELS.get(market, market)


def _scenario_defines(pointer: str) -> bool:
    for kind in KINDS:
        try:
            rule(pointer, kind)
        except KeyError:
            continue
        return True
    return False


# A JSON pointer standing alone in a sentence ("give /buy/capex_usd."), not part of a path or a URL.
_POINTER_IN_TEXT: Final = re.compile(r"(?<![\w/.:-])(?:/[a-z][a-z0-9_]*)+")
_MARKET_IN_TEXT: Final = re.compile(r"\b(" + "|".join(re.escape(market) for market in MARKET_LABELS) + r")\b")


def plain_words(text: str) -> str:
    """The Advice's reason or warning for a reader of the PDF and the workbook: each market id in words and each
    pointer the Scenario defines as its field label, quoted ("remove spot from /rent/markets" -> "remove spot
    from “Rent: markets”"); the rest as it is. The Advice JSON keeps them (API clients read them)."""

    def label(match: re.Match[str]) -> str:
        pointer = match.group(0)
        return f"“{pointer_label(pointer)}”" if _scenario_defines(pointer) else pointer

    return _MARKET_IN_TEXT.sub(lambda match: market_label(match.group(1)), _POINTER_IN_TEXT.sub(label, text))


def _shown_by(pointer: str, shown: set[str]) -> bool:
    """Whether a fixed row shows the pointer: its own, or a field of an object a row shows (the traffic's)."""
    if pointer in SHOWN_IN_OTHER_ROWS:
        return True
    return any(p and (pointer == p or pointer.startswith(p + "/")) for p in shown)


def _assumed_value(assumption: dict[str, Any]) -> str:
    """ "0.9 fraction of ...", "trtllm (serving engine)", "none (GPU ids)": the value with its unit."""
    value, unit = assumption.get("value"), str(assumption.get("unit") or "")
    if isinstance(value, bool) or value is None or isinstance(value, str | list):
        if isinstance(value, list):
            text = ", ".join(str(v) for v in value) or "none"
        else:
            text = "none given" if value is None else str(value)
        return f"{text} ({unit})" if unit else text
    if isinstance(value, int | float):
        return f"{fmt.plain(value)} {unit}".rstrip()
    return str(value)


UNDATED_SOURCE: Final = "(the source states no date)"


def default_source(default: dict[str, Any]) -> str:
    """ "default: <source> (as of <date>)": how the page, the PDF and the workbook word a default's origin. An
    undated source's as_of is the day it was read (the issue day), not its date: not printed as one."""
    source = "default: " + str(default.get("source", ""))
    if default.get("as_of") and UNDATED_SOURCE not in source:
        source += f" (as of {default['as_of']})"
    return source


def _g(value: Any) -> str:
    """A number without a trailing .0 (7.0 -> 7, 3200.0 -> 3200); other values as they are."""
    if isinstance(value, float) and value.is_integer():
        return f"{int(value):,}" if abs(value) >= 10_000 else str(int(value))
    return "n/a" if value is None else str(value)


def _geometry_text(model: dict[str, Any]) -> str:
    """ "80 layers x 8192 hidden, 64 heads (8 KV heads): 70.6B parameters implied"; what was assumed follows."""
    dims = {
        k: model.get(k) if isinstance(model.get(k), int) else "n/a" for k in ("layers", "hidden", "heads", "kv_heads")
    }
    text = f"{dims['layers']} layers x {dims['hidden']} hidden, {dims['heads']} heads ({dims['kv_heads']} KV heads)"
    if model.get("experts"):
        text += f", {model['active_experts']} of {model['experts']} experts per token"
    text += f": {fmt.plain(model.get('implied_params_b'))}B parameters implied"
    assumed = model.get("assumed") or []
    return text + (f"; assumed {'; '.join(assumed)}" if assumed else "")


def _assumption_values(*, advice: dict[str, Any]) -> list[tuple[str, str]]:
    scenario = advice.get("scenario") or {}
    workload = scenario.get("workload") or {}
    model = workload.get("model") or {}
    buy = scenario.get("buy") or {}
    rent = scenario.get("rent") or {}
    gpu = advice.get("gpu") or {}
    rows: list[tuple[str, str]] = [
        ("Workload", f"{workload.get('kind', 'training')}, {_g(model.get('params_b'))}B parameters"),
    ]
    if model.get("name"):
        rows[0] = ("Workload", f"{workload.get('kind', 'training')}, {model['name']} ({_g(model.get('params_b'))}B)")
    implied = _get(advice, "model", "implied_params_b")
    if implied:
        rows.append(("Model geometry", _geometry_text(advice.get("model") or {})))
    if workload.get("tokens") is not None:
        rows.append(("Tokens per run", fmt.tokens(workload["tokens"])))
    traffic, latency = workload.get("traffic"), workload.get("latency")
    if traffic:
        rows += [
            (
                "Traffic",
                f"peak {_g(traffic.get('peak_requests_per_s'))} requests/s, "
                f"mean {_g(traffic.get('mean_requests_per_s'))} requests/s",
            ),
            (
                "Request size",
                f"{traffic.get('input_tokens')} prompt tokens, {traffic.get('output_tokens')} output tokens",
            ),
        ]
    if latency:
        rows.append(
            (
                "Latency targets",
                f"time to first token p95 {_g(latency.get('ttft_p95_s'))} s, "
                f"time per output token p95 {_g(latency.get('tpot_p95_s'))} s",
            )
        )
    if not traffic:
        rows += [
            ("Sequence length", f"{model.get('seq_len', 'n/a')} tokens"),
            ("Global batch", f"{workload.get('global_batch', 'n/a')} sequences"),
            ("Runs per year", _g(workload.get("runs_per_year"))),
        ]
    rows += [
        ("Precision", str(workload.get("precision", "n/a"))),
        (GPU_LABEL, gpu_line(gpu=gpu, fallback=str(scenario.get("gpu", "n/a")))),
        *_cluster_rows(scenario, inference=bool(traffic)),
        (
            "Rental markets",
            ", ".join(market_label(m) for m in rent.get("markets") or []) or "all",
        ),
        ("Providers", ", ".join(rent.get("providers") or []) or "all"),
    ]
    if rent.get("usd_per_gpu_hour") is not None:
        rows.append(("Your rental quote", f"{fmt.price(rent['usd_per_gpu_hour'])} per GPU-hour"))
    if buy.get("capex_usd") is not None:
        rows.append(("Your purchase quote", f"${buy['capex_usd']:,.0f} per node"))
    rows += ownership_rows(buy=buy)
    rows += server_power_rows(quote=advice.get("hardware_quote") or {})
    if not traffic and scenario.get("utilization") is None:
        rows.append(("Utilization", f"implied per size by {fmt.runs_a_year(workload.get('runs_per_year'))}"))
    elif not traffic:
        rows.append(("Utilization", f"{percent(scenario.get('utilization'))} of the year busy"))
    return rows


GPU_LABEL: Final = "GPU"


def gpu_line(*, gpu: Mapping[str, Any], fallback: str = "n/a") -> str:
    """The GPU spec the result rests on, in one line: "NVIDIA H100 SXM5 80GB: 989.4 TFLOPS bf16 dense, 80 GB at
    3.35 TB/s, NVLink 900 GB/s, 8 GPUs per server at 3,200 Gb/s scale-out, 700 W" (a data-provenance probe: the page
    and the PDF named the GPU only, while MFU and every estimate rest on these figures). A figure the document lacks
    (an Advice issued before it carried them) is left out."""
    name = str(gpu.get("name") or fallback)
    parts = []
    if gpu.get("peak_tflops") is not None:
        precision = f" {gpu['precision']}" if gpu.get("precision") else ""
        parts.append(f"{fmt.plain(gpu['peak_tflops'], digits=5)} TFLOPS{precision} dense")
    if gpu.get("memory_gb") is not None:
        memory = f"{fmt.plain(gpu['memory_gb'])} GB"
        if gpu.get("memory_bw_gbps") is not None:
            memory += f" at {fmt.plain(gpu['memory_bw_gbps'] / 1000, digits=4)} TB/s"
        parts.append(memory)
    if gpu.get("nvlink_gbps") is not None:
        parts.append(f"scale-up link {fmt.plain(gpu['nvlink_gbps'])} GB/s")
    if gpu.get("gpus_per_node") is not None and gpu.get("inter_node_gbps") is not None:
        parts.append(
            f"{fmt.plain(gpu['gpus_per_node'])} GPUs per server at {fmt.plain(gpu['inter_node_gbps'])} Gb/s scale-out"
        )
    if gpu.get("tdp_w") is not None:
        parts.append(f"{fmt.plain(gpu['tdp_w'])} W")
    return f"{name}: {', '.join(parts)}" if parts else name


def gpu_source(*, gpu: Mapping[str, Any]) -> str:
    """Where the GPU line's figures come from: the spec row's published source, and the date its table gives the
    values it marks "unc" (the table records no day each row was read: no date is printed for the others)."""
    source = str(gpu.get("source") or "")
    if not source:
        return ""
    dated = (
        f"; values marked unc: from memory, not re-verified as of {gpu['unverified_since']}"
        if gpu.get("unverified_since")
        else ""
    )
    return f"source: {source}{dated}"


def ownership_rows(*, buy: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(label, value) of the ownership terms (a scenario's or a fleet's ``buy``), worded as the proposals print them."""
    return [
        ("Service life", f"{_g(buy.get('years'))} years"),
        ("Discount rate", percent(buy.get("discount_rate"))),
        ("Residual value", f"{percent(buy.get('residual_fraction'))} of capex"),
        ("Electricity", f"${buy.get('power_usd_per_kwh', 0):,.3f} per kWh, PUE {buy.get('pue', 'n/a')}"),
        ("Colocation", f"${buy.get('colo_usd_per_kw_month', 0):,.0f} per kW-month"),
        ("Support", f"{percent(buy.get('support_fraction_per_year'))} of capex per year"),
        ("Staff", f"${buy.get('staff_usd_per_year', 0):,.0f} per year"),
        # Per owned GPU (a finance reviewer: $72,000 a year for 16 GPUs was in no PDF's assumptions).
        ("Software", f"${buy.get('software_usd_per_gpu_year', 0):,.0f} per owned GPU a year"),
    ]


def server_power_rows(*, quote: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The power per server the colocation and energy are billed on, with its source and idle draw (an outsider's
    probe: 10.2 kW was only at the end of the quote's source string, and that idle energy counted zero nowhere)."""
    if quote.get("power_kw") is None:
        return []
    idle = quote.get("idle_power_kw")
    idle_text = f"idle {idle:g} kW" if idle is not None else "idle draw not stated: energy counts busy hours only"
    return [(POWER_LABEL, f"{quote['power_kw']:g} kW (maximum rating; {idle_text})")]


POWER_LABEL: Final = "Power per server"


def power_source(*, quote: Mapping[str, Any]) -> str:
    """Where the power per server comes from: the quote's source from its "power: " part on (the Source column, not
    the value's: a finance approver found it inside the value)."""
    source = str(quote.get("source") or "")
    return source.split("power: ", 1)[1] if "power: " in source else source


def _cluster_rows(scenario: dict[str, Any], *, inference: bool) -> list[tuple[str, str]]:
    """Cluster sizes and the network for training; for inference only the server size, which sets how owned GPUs
    are bought (an outsider's probe: a serving plan listed "Cluster sizes 1...512 GPUs - your input", given by no
    one and used by nothing: deployments are sized from the traffic, and replicas share no fabric)."""
    network = scenario.get("network") or {}
    if inference:
        return [("Network", f"{_g(network.get('gpus_per_node'))} GPUs per server (owned capacity is whole servers)")]
    return [
        ("Cluster sizes", ", ".join(str(s) for s in scenario.get("cluster_sizes", [])) + " GPUs"),
        (
            "Network",
            f"{_g(network.get('gpus_per_node'))} GPUs per node, "
            f"{_g(network.get('inter_node_gbps'))} Gb/s per node between nodes",
        ),
    ]


def fabric_usd_per_node(*, advice: Any) -> float | None:
    """The hardware quote's network fabric per node where the plan may buy it: training adds it to the purchase when
    the cluster spans nodes; serving never does (its replicas are independent: advisor.advice.inference), so the page,
    the PDF and the workbook list no fabric for it (an outsider's probe: a serving plan's price sources read "network
    fabric ... purchase $74,358", a price in no figure of the plan). None where it is not bought or not quoted."""
    quote = advice.get("hardware_quote") or {}
    if is_inference(advice) or not quote.get("networking_usd_per_node"):
        return None
    return float(quote["networking_usd_per_node"])


def offer_source(offer: Mapping[str, Any]) -> dict[str, Any]:
    """One rental offer as a row of the price sources."""
    return {
        "what": " ".join(str(p) for p in (offer.get("provider"), offer.get("instance")) if p)
        + (f" ({offer['region']})" if offer.get("region") else ""),
        "market": market_label(offer.get("market", "")),
        "price": f"{fmt.price(offer.get('usd_per_gpu_hour', 0))} per GPU-hour",
        "observed_at": (
            str(offer["observed_at"])[:10]
            if offer.get("observed_at")
            else "not recorded (bundled snapshot)"
            if offer.get("is_snapshot")
            else "not recorded"
        ),
        "source": offer.get("source", ""),
    }


def offer_key(offer: Mapping[str, Any]) -> tuple[Any, ...]:
    return (offer.get("provider"), offer.get("instance"), offer.get("region"), offer.get("market"))


def quote_sources(*, quote: Mapping[str, Any] | None, fabric: float | None) -> list[dict[str, Any]]:
    """The hardware quote (and the fabric per node where it is bought) as rows of the price sources."""
    if not quote:
        return []
    sources = [
        {
            "what": ("your purchase quote for" if quote.get("manual") else "purchase of")
            + f" one {fmt.plain(quote.get('gpus_per_server'))}-GPU {quote.get('gpu', '')} server",
            "market": "purchase",
            "price": usd_exact(quote.get("usd")),
            "observed_at": quote.get("quoted_on") or "n/a",
            "source": quote.get("source", ""),
        }
    ]
    if fabric is not None:
        sources.append(
            {
                "what": f"network fabric per {fmt.plain(quote.get('gpus_per_server'))}-GPU node, added to the "
                "purchase when the cluster spans nodes",
                "market": "purchase",
                "price": usd_exact(fabric),
                "observed_at": quote.get("quoted_on") or "n/a",
                "source": quote.get("networking_source") or quote.get("source", ""),
            }
        )
    return sources


def price_sources(*, advice: dict[str, Any]) -> list[dict[str, Any]]:
    """Every distinct rental offer the Advice used, and the hardware quote, with observed dates."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for size in advice.get("sizes", []):
        offers = [_get(size, "rent", "offer")]
        for entry in (_get(size, "rent", "by_market") or {}).values():
            # Training nests each market's offer under "offer"; inference lists the offers themselves.
            offers.append(_get(entry, "offer") or (entry if _get(entry, "usd_per_gpu_hour") is not None else None))
        for offer in offers:
            if offer:
                seen.setdefault(offer_key(offer), offer_source(offer))
    quote = advice.get("hardware_quote")
    sources = [*seen.values(), *quote_sources(quote=quote, fabric=fabric_usd_per_node(advice=advice))]
    return sources + compared_sources(advice=advice, listed={*seen, _quote_key(quote)})


def _quote_key(quote: Mapping[str, Any] | None) -> tuple[Any, ...]:
    quote = quote or {}
    return ("quote", quote.get("gpu"), quote.get("usd"), quote.get("quoted_on"), quote.get("source"))


def compared_sources(*, advice: Mapping[str, Any], listed: set[tuple[Any, ...]]) -> list[dict[str, Any]]:
    """The offers and server quotes the compared GPUs (training's alternatives) are priced at, each once and not
    again where ``listed`` already has it, named for the GPU they price (an outsider's probe: the h200 and A100 rows
    rested on offers and a 2021 quote that no price source listed)."""
    sources = []
    for alternative in advice.get("alternatives") or []:
        offer, quote = alternative.get("offer"), alternative.get("hardware_quote")
        if offer and offer_key(offer) not in listed:
            listed.add(offer_key(offer))
            row = offer_source(offer)
            sources.append({**row, "what": f"{row['what']}, for the compared {alternative.get('gpu')}"})
        if quote and _quote_key(quote) not in listed:
            listed.add(_quote_key(quote))
            fabric = quote.get("networking_usd_per_node")
            sources.extend(quote_sources(quote=quote, fabric=float(fabric) if fabric else None))
    return sources


# Sensitivity units (advisor.advice.uncertainty.SENSITIVITY_INPUTS) that are shares, written as percents.
_PERCENT_UNITS: Final[frozenset[str]] = frozenset(
    {"fraction", "per year", "fraction of capex", "fraction of capex/year"}
)


def _sensitivity_number(row: Mapping[str, Any], value: float) -> str:
    """An input value of a sensitivity row in its row's unit: "$2.36 per GPU-hour", "$380,400", "64%", "4 years",
    "810,108 tokens/s", "1.3" (a ratio). Only shares are percents (a finance probe: the throughput range read
    "8.1e+07%-1.22e+08%" when every other unit was taken for a fraction)."""
    unit = row.get("unit") or ""
    if unit == "years":
        return f"{value:g} years"
    if unit == "USD/GPU-hour":
        return f"${value:,.2f} per GPU-hour"
    if unit.startswith("USD"):
        return usd_exact(value)
    if unit in _PERCENT_UNITS:
        return f"{value * 100:.3g}%"
    if unit == "ratio":
        return f"{value:.3g}"
    return f"{value:,.0f} {unit}" if abs(value) >= 100 else f"{value:.3g} {unit}".rstrip()


def _sensitivity_value(row: Mapping[str, Any], value: float) -> str:
    """The same in a sentence: "a rental price of $2.36 per GPU-hour (-20%)", "4 years of ownership"."""
    name, base, number = sensitivity_label(row), float(row.get("base_input") or 0.0), _sensitivity_number(row, value)
    if (row.get("unit") or "") == "years":
        return f"{number} of ownership"
    if (row.get("unit") or "") == "fraction of capex/year":  # a share, not a quantity: no "a support of 12%"
        return f"{name} of {number} of the purchase price a year"
    unit = row.get("unit") or ""
    change = f" ({(value / base - 1) * 100:+.0f}%)" if base and (unit.startswith("USD") or unit == "tokens/s") else ""
    return f"a {name} of {number}{change}"


# Sensitivity units whose input owning minus renting is linear in (prices, amounts and shares of the purchase price:
# rent is hours x price, the purchase's annuity, support and residual are proportional to it, energy to the power
# price and PUE), so the input where the decision flips lies on the line between the base and the tested end. The
# others (utilization, throughput, years, discount rate) are not: for those the tested end is stated.
_LINEAR_UNITS: Final[frozenset[str]] = frozenset({"fraction of capex", "fraction of capex/year", "ratio"})


def _flip_phrase(row: Mapping[str, Any], end: str) -> str:
    """Where the decision flips toward ``end``: "above a rental price of $3.23 per GPU-hour (+9.6%)" where the
    difference is linear in the input (the crossover; a finance probe: the tested +20% end read as the break-even), "at
    a utilization of 84%" (the tested end) where it is not."""
    unit, base, at_end = row.get("unit") or "", float(row["base"]), float(row[end])
    base_input, end_input = float(row.get("base_input") or 0.0), float(row[f"{end}_input"])
    if (unit.startswith("USD") or unit in _LINEAR_UNITS) and base != at_end and base_input:
        crossover = base_input + (end_input - base_input) * base / (base - at_end)
        return f"{'above' if end_input > base_input else 'below'} {_sensitivity_value(row, crossover)}"
    return f"at {_sensitivity_value(row, end_input)}"


def _flips_and_holds(rows: list[Mapping[str, Any]], *, cheaper: bool) -> tuple[list[str], list[str]]:
    """Where owning minus renting changes sign within the tested ranges (_flip_phrase), and the inputs whose whole
    range keeps it."""
    flips: list[str] = []
    holds: list[str] = []
    for row in rows:
        ends = [end for end in ("low", "high") if row.get(end) is not None and (float(row[end]) > 0) == cheaper]
        flips.extend(_flip_phrase(row, end) for end in ends)
        if not ends:
            low, high = (_sensitivity_number(row, float(row[f"{end}_input"])) for end in ("low", "high"))
            holds.append(f"{sensitivity_label(row)} ({low}-{high})")
    return flips, holds


def _in_list(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def risk_words(*, advice: Mapping[str, Any]) -> str:
    """The risk in plain words, from the recommended size's P10-P90 cost per run and the sensitivity rows: where the
    rent-or-own decision flips, and over which tested ranges it holds (an outsider's probe: the chart's input values
    were in SVG tooltips only, and the cost band was printed nowhere)."""
    size = documents.recommended_size(dict(advice)) or {}
    parts = []
    rent, buy = size.get("rent") or {}, size.get("buy") or {}
    if rent.get("usd_per_run_p90") is not None and rent.get("usd_per_run_p10") is not None:
        # The own option's band: owning and renting the runs it cannot finish where that is the option (buy.overflow;
        # a hostile probe, F1: the owned runs' band alone was printed), the owned runs' where it finishes them.
        overflow = buy.get("overflow") if overflow_text(size, advice=advice) else None
        band, what = (overflow, "owned, the rest rented") if overflow else (buy, "owned")
        owned = [usd_exact(band.get(k)) for k in ("usd_per_run_p90", "usd_per_run_p10") if band.get(k) is not None]
        also = f" ({owned[0]} and {owned[1]} {what})" if len(owned) == 2 else ""
        parts.append(
            f"1 chance in 10 a run costs more than {usd_exact(rent['usd_per_run_p90'])} renting, and 1 in 10 less "
            f"than {usd_exact(rent['usd_per_run_p10'])}{also}: the spread of the run time's prediction"
        )
    rows = [r for r in advice.get("sensitivity") or [] if r.get("base") is not None]
    if rows:
        cheaper = float(rows[0]["base"]) < 0
        flips, holds = _flips_and_holds(rows, cheaper=cheaper)
        if flips:
            parts.append(f"owning would cost {'more' if cheaper else 'less'} than renting {_in_list(flips)}")
        if holds:
            parts.append(f"the decision holds over the range tested for {', '.join(holds)}")
    return ("Risk: " + "; ".join(parts) + ".") if parts else ""


def alternative_finishes(*, advice: Mapping[str, Any], alternative: Mapping[str, Any]) -> dict[str, Any]:
    """Whether a compared GPU's size finishes the year's runs owned and rented (recommendation.finishes_runs), and
    when owning cannot, the words: an outsider's probe found an A100 needing 18,018 h of cluster time a year priced
    as a usable option."""
    runs = advice_runs_judged(advice)
    run_hours = alternative.get("run_hours")
    owned, rented = (finishes_runs(run_hours=run_hours, runs_per_year=runs, owned=side) for side in (True, False))
    text = ""
    if run_hours is not None and not owned:
        text = (
            f"Owning cannot finish {runs:g} runs a year: {fmt.count(round(run_hours * runs), 'hour')} of one "
            f"cluster's time against the year's 8,760"
            + ("; renting only as clusters side by side" if rented else "; nor can renting finish one run in a year")
            + (
                "; owning is priced with the runs it cannot finish rented"
                if alternative.get("buy_overflow_usd_per_run") is not None
                else ""
            )
        )
    return {"buy": owned, "rent": rented, "text": text}


def sentences(*parts: Any) -> str:
    """Notes as sentences, each ending with one full stop, joined by spaces (a finance approver: a compared GPU's
    warnings joined with ".;")."""
    texts = [str(part).strip().rstrip(".;").strip() for part in parts if part and str(part).strip()]
    return " ".join(f"{text}." for text in texts if text)


def alternative_rows(*, advice: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per compared GPU (scenario.compare_gpus) at its recommended size; the cheapest marked as the Advice
    states it (recommendation.cheapest_marks). Training compares cost per run, inference cost per month."""
    monthly = is_inference(advice)
    rows = []
    marks = cheapest_marks(advice)
    for alt, cheapest in zip(advice.get("alternatives") or [], marks, strict=True):
        rent, buy = (
            (alt.get("rent_usd_per_month"), alt.get("buy_usd_per_month"))
            if monthly
            else (alt.get("rent_usd_per_run"), alt.get("buy_usd_per_run"))
        )
        if alt.get("not_compared"):
            note = alt["not_compared"]
        elif not alt.get("fits_memory"):
            note = "does not fit in memory"
        elif monthly and not alt.get("meets_latency"):
            note = "no deployment meets the latency targets"
        else:
            note = sentences(alt.get("pricing_note"), *(alt.get("warnings") or []))
        finishes = alternative_finishes(advice=advice, alternative=alt)
        if not monthly and alt.get("gpus") and not finishes["buy"]:
            note = sentences(finishes["text"], note)
            # The own option there is owning and renting the rest, the figure the row is ranked by.
            buy = alt.get("buy_overflow_usd_per_run", buy)
        rows.append(
            {
                "gpu": alt.get("gpu"),
                "size": (fmt.count(alt.get("gpus"), "GPU") + (f" (TP {alt['tp']})" if alt.get("tp") else ""))
                if alt.get("gpus")
                else "none",
                "run_time": usd_cents(alt.get("usd_per_million_output_tokens"))
                if monthly
                else hours(alt.get("run_hours")),
                "rent": usd_exact(rent),
                "buy": usd_exact(buy),
                "break_even": break_even_text(
                    alt.get("break_even_utilization"), priced=rent is not None and buy is not None
                )
                if not monthly
                else "",
                "note": note,
                "cheapest": cheapest,
            }
        )
    return rows


def model_line(*, advice: dict[str, Any]) -> str:
    """The model the numbers are for, with the size its geometry implies (so a contradiction is visible)."""
    model = advice.get("model") or {}
    if not model.get("implied_params_b"):
        return ""
    name = f"{model['name']}: " if model.get("name") else ""
    return f"Model {name}{_geometry_text(model)}."


def results_context(*, advice: dict[str, Any]) -> dict[str, Any]:
    return {
        "model_line": model_line(advice=advice),
        "alternatives": alternative_rows(advice=advice),
        "advice": advice,
        "headline": headline(advice=advice),
        "key_figures": key_figures(advice=advice),
        "rows": inference_rows(advice=advice) if is_inference(advice) else size_rows(advice=advice),
        "scaling_meaning": SCALING_EFFICIENCY_MEANING,
        "memory_meaning": memory_meaning(advice=advice),
        "kind": advice.get("kind") or "training",
        "charts": charts.advice_charts(advice=advice),
        "freshness": freshness(advice=advice),
        "prices_as_of_text": prices_as_of_text(advice=advice),
        "calibration_line": calibration_line(advice=advice),
        "calibration_url": serving_calibration_url(advice=advice),
        "calibration_summary": calibration_line(advice=advice, short=True),
        "warnings": advice.get("warnings") or [],
        "assumptions": assumptions(advice=advice),
        "price_sources": price_sources(advice=advice),
        "gpu_name": _get(advice, "gpu", "name") or _get(advice, "scenario", "gpu"),
    }


def compare_columns(*, pairs: list[tuple[Any, dict[str, Any] | None]]) -> dict[str, Any]:
    """Side-by-side rows for 2-4 saved scenarios: (scenario, Advice or None when it no longer validates)."""
    columns = []
    for scenario, advice in pairs:
        if advice is None:
            columns.append({"scenario": scenario, "valid": False})
            continue
        top = headline(advice=advice)
        size = recommended_size(advice=advice) or {}
        if is_inference(advice):
            money = {
                "Rent per month": usd_exact(_get(size, "rent", "usd_per_month")),
                "Own per month": usd_exact(_get(size, "buy", "usd_per_month")),
                PER_MILLION_LABEL: " ".join(
                    part
                    for part in (usd_cents(size.get("usd_per_million_output_tokens")), per_million_side(size))
                    if part
                ),
            }
        else:
            money = {
                "Time per run": hours(size.get("run_hours")),
                "Rent per run": usd_exact(_get(size, "rent", "usd_per_run")),
                "Own per run": usd_exact(own_per_run(size, advice=advice)),
            }
        columns.append(
            {
                "scenario": scenario,
                "valid": True,
                "money": tuple(money),
                "values": {
                    "Recommendation": f"{top['action_label']} {top['gpus'] or ''} GPUs".strip(),
                    "GPU": str(_get(advice, "gpu", "name") or _get(advice, "scenario", "gpu")),
                    **money,
                    "Owned $/GPU-hour at plan": usd(_get(size, "buy", "usd_per_gpu_hour_at_utilization")),
                    "Rental price": (
                        inference_offer_text(size) if is_inference(advice) else offer_text(size, advice=advice)
                    ),
                    "Break-even utilization": size_break_even_text(size),
                    "Scaling efficiency": percent(size.get("scaling_efficiency")),
                    "Prices": freshness(advice=advice)["text"],
                    "Calibration": calibration_line(advice=advice),
                    **{f"Input: {label}": value for label, value, _ in assumptions(advice=advice)},
                },
            }
        )
    labels: list[str] = []
    for column in columns:
        for label in column.get("values", {}):
            if label not in labels:
                labels.append(label)
    # The cost rows of both kinds together, then the other figures, then the inputs: a later column's own rows were
    # appended at the very bottom, so an inference scenario's per-month cost sat below some 30 input rows beside a
    # training one and read as no cost at all (a new user's probe).
    money_labels = {label for column in columns for label in column.get("money", ())}
    labels.sort(
        key=lambda label: (
            0 if label in ("Recommendation", "GPU") else 1 if label in money_labels else 2 + label.startswith("Input: ")
        )
    )
    rows = []
    for label in labels:
        values = [c["values"].get(label, "") if c["valid"] else "invalid scenario" for c in columns]
        rows.append({"label": label, "values": values, "differs": len(set(values)) > 1})
    return {"columns": columns, "rows": rows}
