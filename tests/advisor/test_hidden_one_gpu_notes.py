"""The advice's warnings speak only of the sizes the user sees: the 1-GPU "fits on one GPU" check the advice also
runs is no listed size (a new user's probe, F5)."""

from __future__ import annotations

import pytest

from advisor.advice import advise

pytestmark = pytest.mark.django_db


LLAMA_8B = {
    "name": "llama-3.1-8b",
    "params_b": 8.03,
    "layers": 32,
    "hidden": 4096,
    "heads": 32,
    "kv_heads": 8,
    "ffn_hidden": 14336,
    "vocab": 128256,
    "seq_len": 4096,
}


def _scenario(sizes: list[int]) -> dict:
    return {
        # 8,192-token sequences: one H200 holds the model only with recomputation against the driver's 150.8 GB
        # (at 4,096 the leanest layout without it, 147 GB, now fits).
        "workload": {"kind": "training", "model": {**LLAMA_8B, "seq_len": 8192}, "tokens": 300e9},
        "gpu": "h200",
        "cluster_sizes": sizes,
        "rent": {"usd_per_gpu_hour": 3.0},
    }


def test_no_recomputation_note_for_the_hidden_one_gpu_check() -> None:
    # Before: "Full activation recomputation taken ... at 1 GPUs (the leanest layout without it needs 147 GB of
    # 141 GB per GPU)" while every listed size (8-64) ran without it.
    doc = advise(_scenario([8, 16, 32, 64])).to_dict()
    assert all(size["layout"]["activation_checkpointing"] is False for size in doc["sizes"])
    assert not [w for w in doc["warnings"] if "recomputation taken" in w], doc["warnings"]
    # The one-GPU line says what fitting on one GPU takes.
    one = [w for w in doc["warnings"] if w.startswith("The model fits on one h200")]
    assert one and "with full activation recomputation" in one[0], doc["warnings"]


def test_a_listed_one_gpu_size_keeps_its_note() -> None:
    doc = advise(_scenario([1, 8])).to_dict()
    assert [w for w in doc["warnings"] if "recomputation taken" in w], doc["warnings"]
