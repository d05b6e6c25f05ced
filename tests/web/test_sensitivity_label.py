"""A finance probe (F7): the sensitivity bar "capex per node ($253,600-$380,400)" varied the server price alone (the
fabric unchanged) while the document's capex per node includes the fabric. The bar is named for what it varies, in
new documents and, read back, in stored ones."""

from __future__ import annotations

import copy
import datetime as dt
from typing import Any

from advisor.advice import advise
from advisor.charts import chart_tornado
from advisor.web.presenters import risk_words

NOW = dt.datetime(2026, 12, 6, 9, 0, tzinfo=dt.UTC)


def test_the_advice_names_the_server_price_bar_for_what_it_varies(bundled_data: None) -> None:
    doc = {
        "name": "7B",
        "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1.0e12, "runs_per_year": 4},
        "gpu": "h100-sxm",
        "cluster_sizes": [64],
    }
    advice = advise(doc, now=NOW).to_dict()
    quote = advice["hardware_quote"]
    # The bar that varies the server's quoted price ($317,000, without the $74,358 fabric a node).
    row = next(r for r in advice["sensitivity"] if r["base_input"] == quote["usd"])
    assert quote["networking_usd_per_node"] > 0
    assert row["input"] == "server price per node"
    assert "capex per node" not in str(chart_tornado(advice=advice).svg)


def test_a_stored_document_reads_its_old_label_as_the_server_price(example_advice: dict[str, Any]) -> None:
    stored = copy.deepcopy(example_advice)
    assert any(r["input"] == "capex per node" for r in stored["sensitivity"])  # as issued before 2026-12-06
    svg = str(chart_tornado(advice=stored).svg)
    assert "server price per node" in svg and "capex per node" not in svg
    assert "capex per node" not in risk_words(advice=stored)
