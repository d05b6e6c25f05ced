"""What renting costs: the offers a scenario may rent (one frame for training and inference), the
cheapest eligible offer per market and size, and the offer documents."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from advisor.advice.documents import iso
from advisor.scenario import Scenario
from pricing import selectors


@dataclass(frozen=True)
class MarketPrices:
    """Per market: the cheapest eligible offer per size (index into the offer table) and all prices."""

    offers: pd.DataFrame
    per_used_gpu_hour: dict[str, np.ndarray]  # market -> (offers of that market, sizes) USD per used GPU-hour
    rows: dict[str, np.ndarray]  # market -> offer table row index of each size's cheapest (or -1)


def rental_offers(s: Scenario) -> pd.DataFrame:
    """The offers a scenario may rent: its manual quote as a one-row frame, else the catalog's for its GPU."""
    if s.rent.usd_per_gpu_hour is not None:
        return pd.DataFrame(
            [
                {
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


def market_prices(s: Scenario, gpus: np.ndarray) -> MarketPrices:
    frame = rental_offers(s).reset_index(drop=True)
    gpn = s.network.gpus_per_node
    count = frame["gpu_count"].to_numpy(dtype=float)[:, None]
    hourly = frame["usd_per_hour"].to_numpy(dtype=float)[:, None]
    n = gpus.astype(float)[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        instances = np.ceil(n / count)
        price = hourly * instances / n
    manual = s.rent.usd_per_gpu_hour is not None
    eligible = (count >= np.minimum(n, gpn)) | manual
    price = np.where(eligible & np.isfinite(price) & (price > 0), price, np.inf)
    per_market: dict[str, np.ndarray] = {}
    rows: dict[str, np.ndarray] = {}
    markets = frame["market"].to_numpy()
    for market in s.rent.markets:
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
    """One offer of the frame (a record), with the price per GPU-hour a size actually uses."""
    return {
        "provider": r["provider"],
        "instance": r["instance"],
        "region": r["region"],
        "market": r["market"],
        "gpu_count": float(r["gpu_count"]),
        "usd_per_hour": float(r["usd_per_hour"]),
        "usd_per_gpu_hour": float(r["usd_per_gpu_hour"]),
        "usd_per_used_gpu_hour": used_price,
        "observed_at": iso(r["observed_at"]),
        "source": r["source"],
        "is_snapshot": bool(r["is_snapshot"]),
        "stale": bool(r["stale"]),
    }


def oldest_price_date(
    s: Scenario, size_docs: list[dict[str, Any]], freshness: Mapping[str, Any], now: dt.datetime
) -> tuple[str | None, str]:
    """(date of the oldest price used, kind: manual | live | snapshot | mixed | none).

    Undated snapshot rows fall back to the snapshot's compile date (the prices are no newer than that)."""
    if s.rent.usd_per_gpu_hour is not None:
        return iso(now.date()), "manual"
    used = [d["rent"]["offer"] for d in size_docs if d["rent"]["offer"]]
    if not used:
        return None, "none"
    snapshot = {bool(o["is_snapshot"]) for o in used}
    kind = "mixed" if len(snapshot) == 2 else "snapshot" if True in snapshot else "live"
    dated = sorted(o["observed_at"] for o in used if o["observed_at"])
    if dated:
        return dated[0][:10], kind
    return freshness.get("snapshot_compiled_on"), kind
