"""The Advice documents' plain-JSON helpers (one json_safe for training and inference), the number
formats the reasons use, and the list of defaults a scenario relied on."""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

import numpy as np
import pandas as pd

from advisor import economics as ec
from advisor import formatting as fmt
from advisor.scenario import Scenario
from estimator import inference as inf
from estimator.calibrate import Calibration
from estimator.specs import get_gpu, unverified_since
from pricing import selectors
from pricing.models import FLOATING_MARKETS, RESERVED_MARKETS, TERM_YEARS

# The Advice document's version, raised when a document of the earlier schema no longer describes a new one: 2 from
# 2026-12-06, when TrainingBuy (additionalProperties false) gained finishes_runs and runs_per_year_fit, so that a
# client validating strictly against version 1 can tell why (an outsider's probe); 3 when it gained overflow (owning
# a size that cannot finish the year's runs and renting the rest, finance probe F2). Stored documents keep theirs.
ADVICE_VERSION: Final[int] = 3


def json_safe(value: Any) -> Any:
    """Plain JSON types; non-finite floats become null (callers add a warning where it matters)."""
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    if isinstance(value, np.ndarray):
        return [json_safe(v) for v in value.tolist()]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, dt.datetime | dt.date):
        return iso(value)
    if value is None or isinstance(value, str):
        return value
    return str(value)


def json_document(value: Mapping[str, Any]) -> dict[str, Any]:
    """A whole document (a mapping) as plain JSON types."""
    document = json_safe(value)
    assert isinstance(document, dict)
    return document


def iso(value: Any) -> str | None:
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return None
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return str(value.astimezone(dt.UTC).isoformat()).replace("+00:00", "Z")
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def num(x: Any) -> float | None:
    value = float(x)
    return value if math.isfinite(value) else None


def inf_if_not_finite(values: Any) -> np.ndarray:
    array = np.asarray(values, dtype=float)
    return np.where(np.isfinite(array), array, np.inf)


def fraction(x: Any) -> float | None:
    """A fraction of the year, or None when it is not one (above 1: never reached)."""
    value = num(x)
    return value if value is not None and 0 <= value <= 1 else None


def money(x: Any) -> str:
    return fmt.usd(x)


def n_gpus(n: Any) -> str:
    return fmt.count(int(n), "GPU")  # grouped as replica counts are: "7,195,980 GPUs"


def pct(x: Any) -> str:
    return fmt.percent(x)


def rent_rate_words(size: Mapping[str, Any], *, scenario: Mapping[str, Any]) -> str:
    """The price per GPU-hour a training size's headline rental is billed at, as its cost per run uses it, so that
    GPUs x hours x the stated price gives that cost: "$2.95 per GPU-hour", or with a yearly price decline (on-demand
    and spot are levelized over the horizon) "$2.05 per GPU-hour levelized over 5 years at an 8% discount rate from
    $2.95 today, falling 20% a year", or for a reserved term (billed per busy GPU-hour at price / utilization)
    "$2.18 per GPU-hour reserved for the term, paid whether busy or not, billed as 2 terms of 1 year on 16 GPUs side by
    side: $4.35 per busy GPU-hour at 50% utilization" (the terms: ``reserved_terms_words``).
    ``size``: a size entry of the Advice JSON; ``scenario``: its normalized
    Scenario (the decline, years and discount rate the price was levelized with)."""
    rent = size.get("rent") or {}
    market = rent.get("market") or ""
    entry = (rent.get("by_market") or {}).get(market) or {}
    offer = entry.get("offer") or rent.get("offer") or {}
    listed = offer.get("usd_per_used_gpu_hour", offer.get("usd_per_gpu_hour"))
    billed = entry.get("usd_per_busy_gpu_hour")
    if listed is None:
        return "an unknown price"
    if billed is None or math.isclose(billed, listed, rel_tol=1e-9):
        return f"{fmt.price(listed)} per GPU-hour"
    if market in RESERVED_MARKETS:
        # A term is paid for every hour whether busy or not, so a busy GPU-hour costs the price / utilization.
        return (
            f"{fmt.price(listed)} per GPU-hour reserved for the term, paid whether busy or not"
            f"{reserved_terms_words(size, market=market, scenario=scenario)}: "
            f"{fmt.price(billed)} per busy GPU-hour at {pct(listed / billed)} utilization"
        )
    if market not in FLOATING_MARKETS:
        return f"{fmt.price(listed)} per GPU-hour"
    return levelized_words(levelized=f"{fmt.price(billed)} per GPU-hour", today=fmt.price(listed), scenario=scenario)


def reserved_terms_words(size: Mapping[str, Any], *, market: str, scenario: Mapping[str, Any]) -> str:
    """The terms a reserved size's cost per run bills (economics.reserved_terms), so that the utilization beside
    them reconciles with the runs' busy share (an outsider's probe: "busy 147% of the year" beside "73% utilization"
    and never the 2 side-by-side terms): ", billed as 2 terms of 1 year on 16 GPUs side by side" or ", billed as 1
    term of 1 year on 16 GPUs bought for each run". "" where the scenario gives the utilization (the term is billed
    at it) or the run time is unknown."""
    runs = (scenario.get("workload") or {}).get("runs_per_year")
    hours, gpus = size.get("run_hours"), size.get("gpus")
    if scenario.get("utilization") is not None or not runs or not hours or not gpus or market not in TERM_YEARS:
        return ""
    years = TERM_YEARS[market]
    terms, for_each_run = ec.reserved_terms(runs_per_year=runs, run_hours=hours, term_years=years)
    how = "bought for each run" if bool(for_each_run) else "side by side" if float(terms) > 1 else "held every year"
    return f", billed as {fmt.count(float(terms), 'term')} of {fmt.count(years, 'year')} on {n_gpus(gpus)} {how}"


def levelized_words(*, levelized: str, today: str, scenario: Mapping[str, Any]) -> str:
    """A rent levelized over the horizon, said with today's figure and the decline it levelizes (training's price per
    GPU-hour, inference's bill a month): "$2.05 per GPU-hour levelized over 5 years at an 8% discount rate from $2.95
    today, falling 20% a year". ``scenario``: the normalized Scenario (its decline, years and discount rate)."""
    buy, decline = scenario.get("buy") or {}, (scenario.get("rent") or {}).get("price_decline_per_year")
    rate = pct(buy.get("discount_rate"))
    return (
        f"{levelized} levelized over {fmt.plain(buy.get('years'))} years at {fmt.article(rate)} {rate} discount rate "
        f"from {today} today, falling {pct(decline)} a year"
    )


def calibration_document(calibration: Calibration, *, stack: str | None = None) -> dict[str, Any]:
    """Which calibration, and the held-out error that applies to a prediction for ``stack`` (the scenario's
    workload.stack; None: unknown, judged by leave-one-stack-out)."""
    return {
        "name": calibration.name,
        "runs": calibration.runs,
        "loo_mape": calibration.loo_mape,
        "stack": stack,
        **calibration.held_out_accuracy(stack=stack, known_stack=stack is not None),
    }


def defaulted_fields(pointer: str, defaulted: Iterable[Any]) -> list[str]:
    """The fields of the object at ``pointer`` that ``defaulted`` (the Advice's assumption pointers) lists one by one:
    an object given in part (the traffic) or left to its defaults field by field (/rent/spot)."""
    prefix = pointer + "/"
    return sorted(p.removeprefix(prefix) for p in defaulted if isinstance(p, str) and p.startswith(prefix))


TRAFFIC_POINTER = "/workload/traffic"
# Defaults serving never reads (an outsider's check: an inference Advice listed them): spot interruptions, checkpoint
# and restart price a synchronous training job's lost work, and replicas within a node talk over no inter-node fabric
# (a replica spanning nodes states the scale-out bandwidth it was sized on in its own reason: spans_nodes_reason).
NOT_SERVING_PREFIXES: Final[tuple[str, ...]] = ("/rent/spot", "/network/inter_node_gbps")


def traffic_part_assumption(where: str, value: Any, source: str, derived: bool) -> dict[str, Any]:
    """A field a partly given traffic left out: a rate ``derived`` from the given one at the default's mean/peak
    ratio, else the default's own value."""
    rate = where.endswith("_requests_per_s")
    return {
        "pointer": where,
        "value": value,
        "unit": "requests/s" if rate else "tokens",
        "source": f"derived from the given rate at the mean/peak ratio of {source}" if derived else source,
    }


# Defaults taken from the GPU's typical server (its spec row): their source is the published one the row holds.
TYPICAL_SERVER_POINTERS: Final[frozenset[str]] = frozenset({"/network/gpus_per_node", "/network/inter_node_gbps"})


def typical_server_source(gpu: str, *, gpus_per_node: int | None = None) -> str:
    """Where a /network default comes from: the GPU's typical server as its spec row gives it, and the published
    source that row holds (a data-provenance probe: it cited only the internal file name). ``gpus_per_node``: the
    scenario's node where the scale-out default was scaled per GPU to it (scenario.default_inter_node_gbps)."""
    spec = get_gpu(gpu)
    server = f"{spec.gpus_per_node} GPUs, {fmt.plain(spec.inter_node_gbps)} Gb/s"
    scaled = ""
    if gpus_per_node is not None and gpus_per_node != spec.gpus_per_node:
        per_node = spec.inter_node_gbps / spec.gpus_per_node * gpus_per_node
        scaled = (
            f", scaled per GPU to the {gpus_per_node}-GPU node: {fmt.plain(spec.inter_node_gbps)} / "
            f"{spec.gpus_per_node} x {gpus_per_node} = {fmt.plain(per_node)} Gb/s"
        )
    return f"the typical {spec.name} server ({server}){scaled}; source: {spec.source}"


def assumptions_used(s: Scenario, *, catalog: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """Each default the scenario relied on, with its value, unit and source."""
    from advisor.scenario import DEFAULTS, TRAINING_ONLY_DEFAULTS

    catalog = catalog or {}
    normalized = s.to_dict()

    def value_at(where: str) -> Any:
        node: Any = normalized
        for part in where.strip("/").split("/"):
            node = node.get(part) if isinstance(node, dict) else None
        return node

    out = []
    for where in s.defaults_used:
        if s.workload.kind == "inference" and (
            where in TRAINING_ONLY_DEFAULTS or where.startswith(NOT_SERVING_PREFIXES)
        ):
            continue
        if where in DEFAULTS:
            d = DEFAULTS[where]
            source = d.source
            if where in TYPICAL_SERVER_POINTERS:
                scaled_to = s.network.gpus_per_node if where == "/network/inter_node_gbps" else None
                source = typical_server_source(s.gpu, gpus_per_node=scaled_to)
            row = {"pointer": where, "value": value_at(where), "unit": d.unit, "source": source}
            out.append({**row, "as_of": d.as_of} if d.as_of else row)
        elif where.startswith(TRAFFIC_POINTER + "/"):
            rates = {f"{TRAFFIC_POINTER}/{k}" for k in ("peak_requests_per_s", "mean_requests_per_s")}
            derived = where in rates and not rates <= set(s.defaults_used)  # the other rate was given
            out.append(traffic_part_assumption(where, value_at(where), DEFAULTS[TRAFFIC_POINTER].source, derived))
        elif where.startswith("/buy/"):
            if not catalog:
                catalog = selectors.ownership_defaults()
            row = catalog.get(where.removeprefix("/buy/"), {})
            out.append(
                {
                    "pointer": where,
                    "value": value_at(where),
                    "unit": row.get("unit"),
                    "source": row.get("source"),
                    "as_of": iso(row.get("as_of")),
                }
            )
    return out


GPU_UNITS: Final[Mapping[str, str]] = {
    "peak_tflops": "TFLOP/s, dense (non-sparse) peak at the precision",
    "memory_gb": (
        "GB as the datasheet names the part, a binary figure (the H100's 80 is 80 GiB; estimator/data/gpus.csv): not "
        "the capacity a job is checked against (memory_capacity_gb)"
    ),
    "memory_capacity_gb": (
        "GB (1e9 bytes), the device memory the driver reports: what each size's memory_per_gpu_gb is checked against"
    ),
    "memory_bw_gbps": "GB/s, HBM bandwidth",
    "nvlink_gbps": "GB/s per GPU, scale-up link (NVLink/xGMI, else PCIe x16), bidirectional aggregate",
    "gpus_per_node": "GPUs in the typical server",
    "inter_node_gbps": "Gb/s per node, scale-out network of the typical server",
    "tdp_w": "W per GPU, board power",
}
FP4_SOURCE: Final = (
    "fp4 peak: NVIDIA/dgxc-benchmarking 'Peak Theoretical Throughput' table (estimator/data/inference/gpus.csv)"
)


def gpu_document(gpu: str, precision: str, *, serving: bool = False) -> dict[str, Any]:
    """The GPU spec an Advice rests on: the figures the estimate read (``GPU_UNITS``; serving reads its peak from
    estimator.inference.serving_gpu, which adds the fp4 peaks), the published source the spec row holds, and
    ``unverified_since``: the date the table's header gives its values marked "unc" (from memory), set only where this
    row's source marks one. The table has no date column, so no date the spec was read is stated (none is invented).
    One document for training and inference."""
    spec = get_gpu(gpu)
    peak = spec.peak_tflops.get(precision)
    source = spec.source
    if serving:
        peak = inf.serving_gpu(gpu).peak_tflops.get(precision)
        if precision not in spec.peak_tflops and peak is not None:
            source = f"{source}; {FP4_SOURCE}"
    return {
        "id": spec.id,
        "name": spec.name,
        "memory_gb": spec.memory_gb,
        "memory_capacity_gb": spec.memory_bytes / 1e9,
        "peak_tflops": peak,
        "precision": precision,
        "memory_bw_gbps": spec.memory_bw_gbps,
        "nvlink_gbps": spec.nvlink_gbps,
        "gpus_per_node": spec.gpus_per_node,
        "inter_node_gbps": spec.inter_node_gbps,
        "tdp_w": spec.tdp_w,
        "units": dict(GPU_UNITS),
        "source": source,
        "unverified_since": unverified_since() if re.search(r"\bunc\b", spec.source) else None,
    }


def model_document(s: Scenario) -> dict[str, Any]:
    """The model the advice ran: catalog name (or null), the given size, the size its geometry implies, the
    geometry and what was assumed rather than given."""
    m = s.workload.model
    return {
        "name": m.name,
        "params_b": m.params_b,
        "implied_params_b": m.implied_params_b,
        "layers": m.layers,
        "hidden": m.hidden,
        "heads": m.heads,
        "kv_heads": m.kv_heads,
        "ffn_hidden": m.ffn_hidden,
        "vocab": m.vocab,
        "experts": m.experts,
        "active_experts": m.active_experts,
        "active_params_b": m.active_params_b or m.params_b,
        "assumed": list(m.assumed),
    }


def recommended_size(advice: Mapping[str, Any]) -> Any:
    """The size the recommendation names, or None. Inference matches the TP too, and only a deployment that fits
    and meets the targets: TP 4 x 18 and TP 8 x 9 are both 72 GPUs at different costs (an outsider's check: the
    headline, present cost and compare row quoted TP 4's beside a TP 8 recommendation). Documents issued before the
    recommendation carried tp match by GPUs alone."""
    rec = advice.get("recommendation") or {}
    gpus, tp = rec.get("gpus"), rec.get("tp")
    if gpus is None:
        return None
    inference = advice.get("kind") == "inference"
    for size in advice.get("sizes") or []:
        if size.get("gpus") != gpus or (tp is not None and size.get("tp") != tp):
            continue
        if not inference or (size.get("meets_latency") and size.get("fits_memory")):
            return size
    return None


def ratio_text(x: float) -> str:
    """ "0.41x": a measured / modelled multiple to two significant digits."""
    return f"{x:.2g}x"


def latency_error_words(band: Mapping[str, Any]) -> str:
    """ "real mean TTFT 0.41x-4.8x and TPOT 0.81x-1.1x the modelled, each at 8 in 10 of the published latency points it
    was never fitted on (its P10-P90), measured on other GPUs, precisions or engines than this one" (the last part where
    the check did not measure this deployment)."""
    words = (
        f"real mean TTFT {ratio_text(band['ttft_ratio_p10'])}-{ratio_text(band['ttft_ratio_p90'])} and TPOT "
        f"{ratio_text(band['tpot_ratio_p10'])}-{ratio_text(band['tpot_ratio_p90'])} the modelled, each at 8 in 10 of "
        "the published latency points it was never fitted on"
    )
    elsewhere = ", measured on other GPUs, precisions or engines than this one"
    return words if band["covers_deployment"] else words + elsewhere
