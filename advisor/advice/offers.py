"""What renting costs: the offers a scenario may rent (one frame for training and inference), the
cheapest eligible offer per market and size, and the offer documents."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from advisor import economics as ec
from advisor.advice.costs import costs
from advisor.advice.documents import inf_if_not_finite, iso
from advisor.advice.ownership import Hardware, manual_quote_scope
from advisor.scenario import Scenario
from pricing import selectors
from pricing.models import FLOATING_MARKETS, RESERVED_MARKETS, TERM_YEARS


@dataclass(frozen=True)
class MarketPrices:
    """Per market: the cheapest eligible offer per size (index into the offer table) and all prices."""

    offers: pd.DataFrame
    per_used_gpu_hour: dict[str, np.ndarray]  # market -> (offers of that market, sizes) USD per used GPU-hour
    rows: dict[str, np.ndarray]  # market -> offer table row index of each size's cheapest (or -1)


def rental_offers(s: Scenario) -> pd.DataFrame:
    """The offers a scenario may rent: its manual quote as a one-row frame, else the catalog's for its GPU, each
    with ``max_gpus``: the GPUs it can supply at once where the provider's cap is sourced (NaN: unknown; the
    manual quote is taken as covering any size)."""
    frame = _offers(s)
    frame["max_gpus"] = [
        selectors.offer_max_gpus(provider=p, market=m, gpu_count=c) if s.rent.usd_per_gpu_hour is None else None
        for p, m, c in zip(frame["provider"], frame["market"], frame["gpu_count"], strict=True)
    ]
    frame["max_gpus"] = frame["max_gpus"].astype(float)
    return frame


def _offers(s: Scenario) -> pd.DataFrame:
    if s.rent.usd_per_gpu_hour is not None:
        return pd.DataFrame(
            [
                {
                    "id": None,  # typed in, not a catalog offer: no history to link
                    "provider": "manual quote",
                    "instance": None,
                    "region": None,
                    "market": "on_demand",
                    "gpu": s.gpu,
                    "gpu_count": 1.0,
                    "usd_per_hour": s.rent.usd_per_gpu_hour,
                    "usd_per_gpu_hour": s.rent.usd_per_gpu_hour,
                    "observed_at": None,
                    "source": "manual quote (/rent/usd_per_gpu_hour)",
                    "is_snapshot": False,
                    "stale": False,
                }
            ]
        )
    else:
        return selectors.offers_frame(gpu=s.gpu, providers=list(s.rent.providers) or None, markets=list(s.rent.markets))


def market_prices(s: Scenario, gpus: np.ndarray, *, at_once: int = 0) -> MarketPrices:
    """Every offer's price per used GPU-hour at each size of ``gpus``; an offer is eligible where it holds a whole
    node and its provider can supply the size, or ``at_once`` GPUs when that is more (a fleet renting its peak)."""
    frame = rental_offers(s).reset_index(drop=True)
    gpn = s.network.gpus_per_node
    count = frame["gpu_count"].to_numpy(dtype=float)[:, None]
    hourly = frame["usd_per_hour"].to_numpy(dtype=float)[:, None]
    n = gpus.astype(float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        instances = np.ceil(n / count)
        price = hourly * instances / n
    manual = s.rent.usd_per_gpu_hour is not None
    # An offer supplies a size only if it holds a whole node (or the whole job) and, where the provider's cap is
    # known, enough instances at once; an unknown cap (NaN) does not exclude it (the advice warns instead).
    capacity = frame["max_gpus"].to_numpy(dtype=float)[:, None]
    eligible = ((count >= np.minimum(n, gpn)) & ~(capacity < np.maximum(n, at_once))) | manual
    price = np.where(eligible & np.isfinite(price) & (price > 0), price, np.inf)
    per_market: dict[str, np.ndarray] = {}
    rows: dict[str, np.ndarray] = {}
    markets = frame["market"].to_numpy()
    for market in s.rent.priced_markets:
        idx = np.flatnonzero(markets == market)
        table = price[idx]
        per_market[market] = table
        if idx.size:
            best = np.argmin(table, axis=0)
            found = np.isfinite(table[best, np.arange(n.shape[1])])
            rows[market] = np.where(found, idx[best], -1)
        else:
            rows[market] = np.full(n.shape[1], -1)
    return MarketPrices(frame, per_market, rows)


def offer_document(r: Mapping[str, Any], used_price: float) -> dict[str, Any]:
    """One offer of the frame (a record), with the price per GPU-hour a size actually uses; ``id`` links the
    catalog offer's price history (None for a manual quote)."""
    return {
        "id": None if pd.isna(r.get("id")) else int(r["id"]),
        "provider": r["provider"],
        "instance": r["instance"],
        "region": r["region"],
        "market": r["market"],
        "gpu_count": float(r["gpu_count"]),
        "usd_per_hour": float(r["usd_per_hour"]),
        "usd_per_gpu_hour": float(r["usd_per_gpu_hour"]),
        "usd_per_used_gpu_hour": used_price,
        "max_gpus": None if pd.isna(r.get("max_gpus")) else int(r["max_gpus"]),
        "observed_at": iso(r["observed_at"]),
        "source": r["source"],
        "is_snapshot": bool(r["is_snapshot"]),
        "stale": bool(r["stale"]),
    }


@dataclass(frozen=True)
class SizeOffers:
    """One market's offers able to supply a cluster of a given size (the rule of ``market_prices``)."""

    market: str
    usd_per_used_gpu_hour: np.ndarray  # every eligible offer's price per used GPU-hour, ascending
    cheapest: dict[str, Any]  # the offer document of the cheapest


def offers_for_size(s: Scenario, *, gpus: int, at_once: int = 0) -> dict[str, SizeOffers]:
    """Per market of the scenario (in its order), the offers able to supply ``gpus`` GPUs (and ``at_once`` GPUs
    at once), priced per used GPU-hour as ``market_prices`` prices them; markets without such an offer are left
    out."""
    return offers_for_sizes(s, gpus=[gpus], at_once=at_once)[0]


def offers_for_sizes(s: Scenario, *, gpus: Sequence[int], at_once: int = 0) -> list[dict[str, SizeOffers]]:
    """``offers_for_size`` at each of ``gpus``, from one read of the offers (a fleet prices each line's size)."""
    market = market_prices(s, np.asarray(gpus, dtype=np.int64), at_once=at_once)
    columns = {c: market.offers[c].to_numpy() for c in market.offers.columns}
    out: list[dict[str, SizeOffers]] = [{} for _ in gpus]
    for m, rows in market.rows.items():
        for k, row in enumerate(rows.tolist()):
            if row < 0:
                continue
            table = market.per_used_gpu_hour[m][:, k]
            prices = np.sort(table[np.isfinite(table)])
            cheapest = offer_document({c: v[row] for c, v in columns.items()}, float(prices[0]))
            out[k][m] = SizeOffers(market=m, usd_per_used_gpu_hour=prices, cheapest=cheapest)
    return out


def price_warnings(
    s: Scenario,
    *,
    any_offers: bool,
    used: Sequence[Mapping[str, Any]],
    freshness: Mapping[str, Any],
    quotes_for: str | None = None,
) -> list[str]:
    """What to say about the prices: no offers at all (``any_offers`` false), ``used`` offers from the bundled
    snapshot, or stale. ``quotes_for``: where ``s`` is a compare_gpus row on another GPU, the scenario's own GPU,
    which /rent/usd_per_gpu_hour prices alone (manual_quote_scope)."""
    if s.rent.usd_per_gpu_hour is not None:
        return []
    out = []
    if not any_offers:
        out.append(
            f"No rental offers for {s.gpu}"
            + (f" from {', '.join(s.rent.providers)}" if s.rent.providers else "")
            + f" in {', '.join(s.rent.markets)}: the rent side is not priced "
            + (
                f"({manual_quote_scope('/rent/usd_per_gpu_hour', quotes_for)})."
                if quotes_for
                else "(give /rent/usd_per_gpu_hour)."
            )
        )
    return out + freshness_warnings(used, freshness)


def freshness_warnings(used: Sequence[Mapping[str, Any]], freshness: Mapping[str, Any]) -> list[str]:
    """Snapshot prices among the ``used`` offers, and stale live ones with the oldest live observation, for training,
    inference and the fleet alike. (An `if snapshot ... elif stale` dropped the stale warning whenever any snapshot
    offer was quoted too, so mixed advice citing 10-day-old live prices said only that some came from the snapshot.)"""
    out = []
    if any(o["is_snapshot"] for o in used):
        out.append(
            f"Prices come from the bundled snapshot (compiled {freshness.get('snapshot_compiled_on')}), "
            "not a live feed."
        )
    stale_live = [o for o in used if o["stale"] and not o["is_snapshot"]]
    if stale_live:
        dated = sorted(str(o["observed_at"]) for o in stale_live if o["observed_at"])
        oldest = f": the oldest live observation is {dated[0][:10]}" if dated else ""
        out.append(f"Some live prices are older than {freshness.get('stale_after_hours')} hours (stale){oldest}.")
    return out


def quoted_offers(size_docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every offer an Advice quotes: each size's headline offer and the offers of its other markets."""
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if "usd_per_gpu_hour" in node and "provider" in node and "observed_at" in node:
                found.append(node)
                return
            for value in node.values():
                walk(value)

    for doc in size_docs:
        walk(doc.get("rent"))
    return found


def price_dates(
    s: Scenario, size_docs: list[dict[str, Any]], freshness: dict[str, Any], now: dt.datetime, warnings: list[str]
) -> tuple[str | None, str]:
    """(prices_as_of, kind: manual | live | snapshot | mixed | none), for training and inference alike.

    prices_as_of is the oldest observation among the offers the Advice quotes. Offers without an observation
    date are counted and named in `freshness` (undated_offers, undated) and in a warning; only when none is
    dated does it fall back to the snapshot's compile date (those prices are no newer than that)."""
    return offers_dates(s, quoted_offers(size_docs), freshness, now, warnings)


def oldest_offer_date(
    s: Scenario, used: Sequence[Mapping[str, Any]], freshness: Mapping[str, Any], now: dt.datetime
) -> tuple[str | None, str]:
    """(date of the oldest of the ``used`` offer documents, kind), as ``price_dates`` says it (the fleet plan)."""
    return offers_dates(s, list(used), dict(freshness), now, [])


def offers_dates(
    s: Scenario,
    offers: Sequence[Mapping[str, Any]],
    freshness: dict[str, Any],
    now: dt.datetime,
    warnings: list[str],
) -> tuple[str | None, str]:
    """``price_dates`` of a list of offer documents (``freshness`` and ``warnings`` are added to)."""
    if s.rent.usd_per_gpu_hour is not None:
        return iso(now.date()), "manual"
    # The same offer may be quoted at several sizes: count it once, by its natural key.
    used = {(o["provider"], o["instance"], o["region"], o["market"]): o for o in offers}
    if not used:
        return None, "none"
    snapshot = {bool(o["is_snapshot"]) for o in used.values()}
    kind = "mixed" if len(snapshot) == 2 else "snapshot" if True in snapshot else "live"
    undated = sorted(" ".join(str(part or "-") for part in key) for key, o in used.items() if not o["observed_at"])
    freshness["undated_offers"] = len(undated)
    freshness["undated"] = undated
    dated = sorted(o["observed_at"] for o in used.values() if o["observed_at"])
    as_of = dated[0][:10] if dated else freshness.get("snapshot_compiled_on")
    if undated:
        named = "; ".join(undated[:3]) + (f"; and {len(undated) - 3} more" if len(undated) > 3 else "")
        meaning = "counts the dated ones only" if dated else "is the snapshot's compile date (an upper bound)"
        warnings.append(
            f"{len(undated)} of the {len(used)} offers quoted carry no observation date ({named}): "
            f"prices as of {as_of} {meaning}."
        )
    return as_of, kind


@dataclass(frozen=True)
class RentPricing:
    """Renting at each candidate size: every market's cheapest eligible price per used GPU-hour and cost, the
    headline market per size (lowest cost per run) and the price break-even is measured against."""

    market: MarketPrices
    markets: list[str]
    used_price: dict[str, np.ndarray]  # market -> price per used GPU-hour per size (inf: none)
    by_market_costs: dict[str, dict[str, np.ndarray]]  # market -> rent_rate, rent_hours, rent_usd_per_run per size
    headline: np.ndarray  # per size: index into `markets`
    has_rent: np.ndarray
    head_price: np.ndarray
    head_term_years: np.ndarray  # per size: the headline market's term in years, 0 where it is not a term
    head_spot: np.ndarray
    head_floating: np.ndarray
    be_price: np.ndarray
    be_market: np.ndarray
    spot_lost: np.ndarray

    def headline_costs(
        self,
        *,
        s: Scenario,
        gpus: np.ndarray,
        nodes: np.ndarray,
        tokens_per_s: np.ndarray,
        hw: Hardware | None,
        break_even_factor: Any = None,
        overrides: Mapping[str, Any] | None = None,
    ) -> dict[str, np.ndarray]:
        """The cost model at each size's headline market; the price break-even is measured against scaled by
        ``break_even_factor`` when given (the Monte Carlo's draw over that market's own offers)."""
        scaled = break_even_factor is not None
        return costs(
            s=s,
            gpus=gpus,
            nodes=nodes,
            tokens_per_s=tokens_per_s,
            rent_price=self.head_price,
            term_years=self.head_term_years,
            spot_lost=np.where(self.head_spot, self.spot_lost, 0.0),
            floating=self.head_floating,
            break_even_price=self.be_price * break_even_factor if scaled else self.be_price,
            hw=hw,
            overrides=overrides,
            break_even_committed=np.isin(self.be_market, list(RESERVED_MARKETS)),
        )


def _cheapest_used_prices(market: MarketPrices) -> dict[str, np.ndarray]:
    used_price: dict[str, np.ndarray] = {}
    for m, rows in market.rows.items():
        table = market.per_used_gpu_hour[m]
        used_price[m] = np.where(rows >= 0, np.min(table, axis=0) if table.size else np.inf, np.inf)
    return used_price


def _break_even_prices(
    used_price: Mapping[str, np.ndarray], markets: list[str], headline: np.ndarray, has_rent: np.ndarray, n: int
) -> tuple[np.ndarray, np.ndarray]:
    """Break-even against on-demand (or the manual quote), else the cheapest market's price: (price, market)."""
    if "on_demand" in used_price and np.isfinite(used_price["on_demand"]).any():
        be_price = used_price["on_demand"].copy()
        be_market = np.where(np.isfinite(be_price), "on_demand", "").astype(object)
    else:
        be_price = np.full(n, np.inf)
        be_market = np.full(n, "", dtype=object)
    for i in range(n):
        if not np.isfinite(be_price[i]) and markets and has_rent[i]:
            m = markets[headline[i]]
            be_price[i] = used_price[m][i]
            be_market[i] = m
    return be_price, be_market


def price_rent(*, s: Scenario, gpus: np.ndarray, nodes: np.ndarray, tokens_per_s: np.ndarray) -> RentPricing:
    """Every market at once (axis 0 the market, axis 1 the size), then the headline market per size."""
    market = market_prices(s, gpus)
    spot_lost = ec.spot_lost_fraction(
        nodes=nodes,
        interruptions_per_node_hour=s.rent.spot.interruptions_per_node_hour,
        checkpoint_s=s.rent.spot.checkpoint_s,
        restart_s=s.rent.spot.restart_s,
    )
    markets = list(market.rows)
    used_price = _cheapest_used_prices(market)
    column = np.array(markets, dtype=object)[:, None]
    all_markets = costs(
        s=s,
        gpus=gpus,
        nodes=nodes,
        tokens_per_s=tokens_per_s,
        rent_price=np.array([used_price[m] for m in markets]).reshape(len(markets), len(gpus)),
        term_years=np.array([[TERM_YEARS.get(m, 0.0)] for m in markets]).reshape(len(markets), 1),
        spot_lost=np.where(column == "spot", spot_lost, 0.0),
        floating=np.isin(column, list(FLOATING_MARKETS)),
        break_even_price=np.inf,
        hw=None,
    )
    by_market_costs = {
        m: {
            k: np.broadcast_to(all_markets[k], (len(markets), len(gpus)))[j]
            for k in ("rent_rate", "rent_hours", "rent_usd_per_run")
        }
        for j, m in enumerate(markets)
    }
    per_run = inf_if_not_finite(all_markets["rent_usd_per_run"]).reshape(len(markets), len(gpus))
    headline = np.argmin(per_run, axis=0) if markets else np.zeros(len(gpus), dtype=int)
    has_rent = np.isfinite(per_run[headline, np.arange(len(gpus))]) if markets else np.zeros(len(gpus), bool)
    be_price, be_market = _break_even_prices(used_price, markets, headline, has_rent, len(gpus))
    head = [markets[h] for h in headline] if markets else [None] * len(gpus)
    return RentPricing(
        market=market,
        markets=markets,
        used_price=used_price,
        by_market_costs=by_market_costs,
        headline=headline,
        has_rent=has_rent,
        head_price=np.array([used_price[m][i] if m else np.inf for i, m in enumerate(head)]),
        head_term_years=np.array([TERM_YEARS.get(m, 0.0) if m else 0.0 for m in head]),
        head_spot=np.array([m == "spot" if m else False for m in head]),
        head_floating=np.array([m in FLOATING_MARKETS if m else False for m in head]),
        be_price=be_price,
        be_market=be_market,
        spot_lost=spot_lost,
    )


def break_even_by_market(
    *, s: Scenario, rent: RentPricing, base: Mapping[str, np.ndarray], gpus: np.ndarray
) -> dict[str, np.ndarray]:
    """Break-even utilization (DESIGN.md: u* = A / (N 8760 (r - v))) against each market's cheapest price per used
    GPU-hour at each size: floating markets levelized like the headline, spot per useful hour (price / (1 - lost)),
    reserved terms by economics.break_even_against_term (0: owning is cheaper at any utilization).
    A manual rent quote is keyed ``on_demand``, the market rent.by_market prices it under (DESIGN: {market: u*}; it
    was keyed ``manual_quote``, which no table of the document joins on). Infinite where the market has no offer or
    never breaks even."""
    out: dict[str, np.ndarray] = {}
    manual = s.rent.usd_per_gpu_hour is not None
    with np.errstate(divide="ignore", invalid="ignore"):
        # A manual quote is priced as on-demand only (the terms have no price): an outsider's probe found the terms'
        # "never" overwriting the quote's break-even under the one key.
        for m in ["on_demand"] if manual else rent.markets:
            price = rent.used_price[m] * (base["level"] if m in FLOATING_MARKETS else 1.0)
            if m == "spot":
                price = price / np.maximum(1e-12, 1.0 - rent.spot_lost)
            be = ec.break_even_for_market(
                yearly_fixed_usd=base["yearly_fixed"],
                gpus=gpus,
                price_usd_per_gpu_hour=price,
                variable_usd_per_gpu_hour=base["variable"],
                committed=m in RESERVED_MARKETS,  # billed every hour: 0 where owning is cheaper at any utilization
            )
            if m not in RESERVED_MARKETS:
                be = np.where(be > 0, be, np.inf)
            out[m] = np.where(np.isfinite(be), be, np.inf)
    return out


def capacity_warning(size_docs: list[dict[str, Any]]) -> str | None:
    """One warning naming the sizes priced at an offer whose capacity is unpublished and that need more than one
    instance of it (no provider promises that many at once)."""
    unknown = [
        (d["gpus"], o)
        for d in size_docs
        if (o := d["rent"]["offer"]) is not None
        and o["max_gpus"] is None
        and o["provider"] != "manual quote"
        and d["gpus"] > o["gpu_count"]
    ]
    if not unknown:
        return None
    sizes = ", ".join(str(n) for n in dict.fromkeys(n for n, _ in unknown))
    providers = ", ".join(dict.fromkeys(o["provider"] for _, o in unknown))
    return (
        f"Capacity unknown: the sizes of {sizes} GPUs are priced at {providers} offers as if that many instances "
        "were available at once; the providers publish no limit (pricing/data/capacity_caps.csv lists the known "
        "ones). Confirm capacity before relying on these prices."
    )
