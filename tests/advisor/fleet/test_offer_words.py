"""A line priced at a one-GPU offer names it in the singular (a first-time user: "... sapphire-rapids-h100_1x4v8gb
(1 GPUs)")."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from advisor.advice.fleet.service import _name_line_offers


def test_a_one_gpu_offer_is_named_in_the_singular() -> None:
    node = {"provider": "big", "instance": "p5.48xlarge", "gpu_count": 8, "usd_per_used_gpu_hour": 3.0}
    one = {"provider": "cudo", "instance": "h100_1x", "gpu_count": 1, "usd_per_used_gpu_hour": 2.0}
    priced: Any = SimpleNamespace(offers={"on_demand": node}, offers_of=lambda unit: {"on_demand": one})
    doc: dict[str, Any] = {"jobs": [{"name": "chat"}], "recommendation": {"reasons": []}}
    _name_line_offers(doc, priced, [1])
    (reason,) = doc["recommendation"]["reasons"]
    assert "cudo h100_1x (1 GPU) at $2.00" in reason and "GPUs)" not in reason, reason
