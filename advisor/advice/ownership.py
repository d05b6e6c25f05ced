"""What owning one node costs and draws: the hardware quote (pricing.selectors.hardware_quote) or the
user's manual capex, scaled to the scenario's node size."""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import numpy as np
from django.conf import settings
from django.utils import timezone

from advisor import formatting as fmt
from advisor.scenario import Scenario, ScenarioError
from estimator.specs import get_gpu
from pricing import selectors


@dataclass(frozen=True)
class Hardware:
    """What owning one node costs and draws, and where the numbers come from."""

    capex_per_node: float  # USD, all in, without fabric
    fabric_per_node: float  # USD per node, only paid when the cluster spans nodes
    load_kw_per_node: float
    idle_kw_per_node: float
    document: Mapping[str, Any]


def purchase_unit_gpus(gpu: str, gpus_per_node: int) -> int:
    """The fewest GPUs of ``gpu`` bought at once in ``gpus_per_node``-GPU nodes: one node, or where the GPU's NVLink
    domain spans servers (gpus.csv nvlink_domain > gpus_per_node: GB200 NVL72's 18 four-GPU compute trays and 9 NVLink
    Switch trays) the whole domain in whole nodes, since the estimator times tensor parallelism over that domain and a
    tray bought alone has none of it (a probe: 16 GB200 were bought as 4 trays and timed at TP 8 over NVLink)."""
    spec = get_gpu(gpu)
    if spec.nvlink_domain > spec.gpus_per_node:
        return math.ceil(spec.nvlink_domain / gpus_per_node) * gpus_per_node
    return gpus_per_node


def owned_nodes(gpus: Any, *, gpu: str, gpus_per_node: int) -> np.ndarray:
    """The nodes bought to own ``gpus`` GPUs (broadcast; NaN stays NaN): whole purchase units
    (``purchase_unit_gpus``), ceil(gpus / unit) x unit / gpus_per_node. The one count training, inference and the
    fleet plan price owning at."""
    unit = purchase_unit_gpus(gpu, gpus_per_node)
    g = np.asarray(gpus, dtype=float)
    with np.errstate(invalid="ignore"):
        return np.ceil(g / unit - 1e-9) * (unit // gpus_per_node)


def purchase_unit_note(gpu: str, gpus_per_node: int, *, gpus: int | None = None) -> str | None:
    """The one sentence that says owned GPUs are bought in whole NVLink domains (None where a node is the unit):
    "GB200 is sold as NVL72 racks ...: 16 GPUs are bought as one 72-GPU rack (18 nodes of 4 GPUs) ...". ``gpus``: a
    size to give as the example (else the rule alone)."""
    unit = purchase_unit_gpus(gpu, gpus_per_node)
    if unit == gpus_per_node:
        return None
    spec = get_gpu(gpu)
    name = spec.name.removeprefix("NVIDIA ").removesuffix(" (per GPU)")
    nodes = f"{fmt.plain(unit // gpus_per_node)} nodes of {gpus_per_node} GPUs"
    if gpus is None:
        bought = f"owned GPUs are bought in whole {unit}-GPU racks ({nodes})"
    else:
        racks = math.ceil(gpus / unit)
        nodes = f"{fmt.plain(racks * unit // gpus_per_node)} nodes of {gpus_per_node} GPUs"
        rack_words = "one" if racks == 1 else fmt.plain(racks)
        bought = (
            f"{fmt.count(gpus, 'GPU')} {'is' if gpus == 1 else 'are'} bought as {rack_words} {unit}-GPU "
            f"rack{'s' if racks > 1 else ''} ({nodes})"
        )
    return (
        f"{name} is sold as NVL{spec.nvlink_domain} racks (its {spec.nvlink_domain}-GPU NVLink domain exists only in a "
        f"whole rack): {bought}, and owning pays capex, power, colocation and support for every GPU bought."
    )


def _fabric_source(notes: str) -> str | None:
    """Where a quote's fabric cost per node comes from: the parts of its notes that say so (the bundled quotes write
    "networking = ..."), else the whole notes; None when the quote has none."""
    parts = [part for part in notes.split("; ") if "networking" in part or "fabric" in part]
    return "; ".join(parts) or notes or None


# Enough significant digits that a scaled power figure reads as the math uses it (10.2 kW / 8 = 1.275 kW).
_KW_DIGITS: Final[int] = 4


def _manual_document(
    s: Scenario, catalog: Mapping[str, Any], *, load_kw: float, idle_kw: float | None
) -> dict[str, Any]:
    """The hardware document of a manual /buy/capex_usd: the figures the math uses (the user's all-in node price, no
    fabric on top, the catalog's power scaled to the scenario's node), labelled as the user's quote; of the catalog
    only its power figures and their source, named as the catalog's (never its name, date or price source)."""
    gpn = s.network.gpus_per_node
    power = _power_source(str(catalog["source"]))
    if catalog["name"]:
        scaled = (
            f" ({fmt.plain(catalog['power_kw'])} kW for {fmt.count(catalog['gpus_per_server'], 'GPU')}, scaled per GPU)"
            if catalog["gpus_per_server"] != gpn
            else ""
        )
        power = f"the catalog's {catalog['name']}{scaled}: {power}"
    return {
        "gpu": catalog["gpu"],
        "gpus_per_server": gpn,
        "name": None,
        "usd": float(s.buy.capex_usd or 0.0),
        "quoted_on": None,
        "source": f"manual quote (/buy/capex_usd): the all-in price of {fmt.node_of(gpn)}, no fabric added; "
        f"power {fmt.plain(load_kw, digits=_KW_DIGITS)} kW a node from {power}",
        "power_kw": load_kw,
        "idle_power_kw": idle_kw,
        "networking_usd_per_node": 0.0,
        "networking_source": None,
        "scaled_to_gpus_per_node": gpn,
        "manual": True,
    }


def _power_source(source: str) -> str:
    """The part of a hardware source that says where its power figures come from (written "power: ...")."""
    parts = [part.removeprefix("power: ") for part in source.split("; ") if part.startswith("power: ")]
    return "; ".join(parts) or source


# gpus.csv's header rule for a server without a datasheet power figure.
SERVER_POWER_RATIO_SOURCE: Final[str] = "1.82 (Epoch AI H100 server/chip power ratio, training-cost-trends energy.py)"


def _spec_power_source(source: str) -> str:
    """The parts of a gpus.csv source that give its server power (those with a kW figure, or 'power estimated' with
    the header's rule), written "power: ..." each; the whole source where none does (a probe: GB200's 7.3 kW was cited
    to the peak-FLOPS table, the first part, while its basis is '~132 kW per 18-tray rack (unc)')."""
    parts = [part for part in source.split("; ") if " kW" in part]
    if not parts and "power estimated" in source.split("; "):
        parts = [f"power estimated as gpus_per_node x tdp_w x {SERVER_POWER_RATIO_SOURCE}"]
    return "; ".join(f"power: {part}" for part in parts) or f"power: {source}"


def liquid_cooling_note(s: Scenario) -> str | None:
    """Where the GPU comes in liquid-cooled racks of several servers (its NVLink domain spans servers: GB200 NVL72)
    and the colocation price is the default, a sentence that the default is an air-cooled figure (words only: no
    sourced liquid-cooling price is held)."""
    spec = get_gpu(s.gpu)
    if spec.nvlink_domain <= spec.gpus_per_node or "/buy/colo_usd_per_kw_month" not in s.defaults_used:
        return None
    return (
        f"The colocation default (/buy/colo_usd_per_kw_month) is an air-cooled figure; an NVL{spec.nvlink_domain} "
        "rack is liquid-cooled (coolant distribution and facility water), which it does not price: give "
        "/buy/colo_usd_per_kw_month from a liquid-cooled colocation quote."
    )


def quote_age_warning(*, quoted_on: Any, today: dt.date) -> str | None:
    """A warning when the purchase quote is older than settings.HARDWARE_QUOTE_STALE_AFTER_DAYS (rental offers are
    flagged after PRICING_STALE_AFTER_HOURS; a 2020 launch price went unremarked, an outsider's probe)."""
    if quoted_on is None:
        return None
    day = quoted_on if isinstance(quoted_on, dt.date) else dt.date.fromisoformat(str(quoted_on)[:10])
    limit = int(settings.HARDWARE_QUOTE_STALE_AFTER_DAYS)
    age = (today - day).days
    if age <= limit:
        return None
    return (
        f"The hardware quote is from {day.isoformat()}, {age / 365:.1f} years old (older than {limit} days, "
        "HARDWARE_QUOTE_STALE_AFTER_DAYS): server prices move when a GPU's successor ships; ask for a current "
        "quote or give /buy/capex_usd."
    )


def manual_quote_scope(pointer: str, gpu: str) -> str:
    """Why a compare_gpus row's missing price cannot come from the scenario's manual quote ``pointer``: it is
    negotiated for the scenario's own ``gpu`` (catalog_prices_for_other_gpus), whether given or not."""
    return f"{pointer} is a quote for {gpu} (/gpu) only"


def hardware(
    s: Scenario,
    warnings: list[str],
    *,
    today: dt.date | None = None,
    quotes_for: str | None = None,
    example_gpus: int | None = None,
) -> Hardware | None:
    """What owning costs per node (the catalog quote, or the manual /buy/capex_usd) and the quote's document;
    None (with a warning) when nothing prices it. ``today``: the date quotes are aged against. ``quotes_for``: where
    ``s`` is a compare_gpus row on another GPU, the scenario's own GPU, which /buy/capex_usd prices alone. Where the
    GPU is bought in whole NVLink domains, a warning says so (purchase_unit_note, ``example_gpus`` its example)."""
    gpn = s.network.gpus_per_node
    spec = get_gpu(s.gpu)
    quote: selectors.HardwareQuoteInfo | None
    if s.buy.server:
        quote = selectors.hardware_quote(gpu=s.gpu, name=s.buy.server)
        if quote is None:
            names = selectors.hardware_quote_names(gpu=s.gpu)
            raise ScenarioError(
                [
                    {
                        "pointer": "/buy/server",
                        "message": f"no hardware quote of that name for {s.gpu}; one of: {', '.join(names) or 'none'}",
                    }
                ]
            )
    else:
        quote = selectors.hardware_quote(gpu=s.gpu, gpus_per_server=gpn) or selectors.hardware_quote(gpu=s.gpu)
    manual = s.buy.capex_usd is not None
    if quote is not None:
        scale = gpn / int(quote.gpus_per_server)  # per-GPU share when the quote's server is another size
        if scale != 1 and not manual:
            warnings.append(
                f"The hardware quote is for {fmt.node_of(quote.gpus_per_server, 'server')}; scaled per GPU to "
                f"{gpn}-GPU nodes (/network/gpus_per_node)."
            )
        idle = quote.idle_power_kw
        doc = {
            "gpu": quote.gpu,
            "gpus_per_server": int(quote.gpus_per_server),
            "name": quote.name,
            "usd": float(quote.usd),
            "quoted_on": quote.quoted_on,
            "source": quote.source,
            "power_kw": float(quote.power_kw),
            "idle_power_kw": None if idle is None else float(idle),
            "networking_usd_per_node": float(quote.networking_usd_per_node),
            "networking_source": _fabric_source(quote.notes),
            "scaled_to_gpus_per_node": gpn,
        }
        load_kw, idle_kw = float(quote.power_kw) * scale, (0.0 if idle is None else float(idle) * scale)
        fabric = float(quote.networking_usd_per_node) * scale
        capex = float(quote.usd) * scale
        if not manual and (stale := quote_age_warning(quoted_on=quote.quoted_on, today=today or timezone.now().date())):
            warnings.append(stale)
    else:
        load_kw, idle_kw, fabric, capex = spec.server_power_kw * gpn / spec.gpus_per_node, 0.0, 0.0, math.nan
        doc = {
            "gpu": s.gpu,
            "gpus_per_server": gpn,
            "name": None,
            "usd": None,
            "quoted_on": None,
            "source": _spec_power_source(spec.source),
            "power_kw": load_kw,
            "idle_power_kw": None,
            "networking_usd_per_node": 0.0,
            "scaled_to_gpus_per_node": gpn,
        }
    if s.buy.capex_usd is not None:
        capex, fabric = float(s.buy.capex_usd), 0.0  # the user's all-in node price
        doc = _manual_document(s, doc, load_kw=load_kw, idle_kw=idle_kw if doc["idle_power_kw"] is not None else None)
    if not math.isfinite(capex):
        ask = (
            f" ({manual_quote_scope('/buy/capex_usd', quotes_for)})."
            if quotes_for
            else ". Give /buy/capex_usd (the all-in price of one node) to compare with renting."
        )
        warnings.append(f"No hardware quote for {s.gpu} servers: the buy side is not priced{ask}")
        return None
    if doc.get("idle_power_kw") is None:
        doc = {**doc, "idle_assumption": "idle draw not stated: energy is counted for busy hours only"}
    if note := purchase_unit_note(s.gpu, gpn, gpus=example_gpus):
        warnings.append(note)
    if cooling := liquid_cooling_note(s):
        warnings.append(cooling)
    return Hardware(capex, fabric, load_kw, idle_kw, doc)
