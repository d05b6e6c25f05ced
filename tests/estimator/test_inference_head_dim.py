"""A model whose head size is not hidden / heads (Qwen3-32B: 64 heads of 128 beside hidden 5120) keeps its own
head_dim in the serving model: KV bytes, attention FLOPs, and the estimate_inference rows that give it."""

from __future__ import annotations

import csv
import io

import pytest

from estimator import inference as inf
from estimator.inference.data import ServedModel, serving_gpu
from estimator.inference.points import estimate_points_csv


def test_qwen3_32b_kv_bytes_per_token_use_the_configs_head_dim() -> None:
    served = ServedModel.from_catalog("qwen3-32b")
    # 2 (K and V) x 64 layers x 8 KV heads x 128 head_dim x 2 bytes (bf16): 262,144 bytes, not 163,840 (head 80).
    assert served.kv_elements_per_token() * 2.0 == pytest.approx(2 * 64 * 8 * 128 * 2)
    cases = inf.build_cases(
        models=[served],
        gpus=[serving_gpu("h100-sxm")],
        precisions=["bf16"],
        tps=[1],
        input_tokens=[4000.0],
        output_tokens=[200.0],
        stacks=["vllm"],
    )
    assert float(cases.kv_elements[0] * cases.kv_bytes[0]) == pytest.approx(262_144)
    # QK^T and AV: 2 x 2 x 64 heads x 128 per layer.
    assert float(cases.attn_flops_per_ctx[0]) == pytest.approx(4 * 64 * 64 * 128)


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(estimate_points_csv(text, calibration=inf.default_calibration()))))


def test_a_points_row_may_give_head_dim() -> None:
    shape = "h100-sxm,bf16,32.8,64,5120,64,8,25600,151936,1,500,3996,200,vllm"
    header = "gpu,precision,params_b,layers,hidden,heads,kv_heads,ffn_hidden,vocab,tp,concurrency,input_tokens,"
    header += "output_tokens,stack"
    given = _rows(f"{header},head_dim\n{shape},128\n")[0]
    catalog = _rows(
        "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack\n"
        "h100-sxm,bf16,qwen3-32b,1,500,3996,200,vllm\n"
    )[0]
    # The row that gives head_dim is the catalog's Qwen3-32B: the same KV room and throughput, and params_b 32.8
    # stands (the geometry with 128-wide heads holds 32.76B).
    assert given["max_concurrency"] == catalog["max_concurrency"]
    assert float(given["predicted_output_tokens_per_s"]) == pytest.approx(
        float(catalog["predicted_output_tokens_per_s"]), rel=0.01
    )
    assert "30.5B" not in given["prediction_note"]
    # Without head_dim the row is read with hidden / heads = 80-wide heads: a smaller KV cache per token, more room.
    plain = _rows(f"{header}\n{shape}\n")[0]
    assert int(plain["max_concurrency"]) > int(given["max_concurrency"])


def test_a_geometry_short_of_params_b_without_head_dim_says_head_dim_may_be_why() -> None:
    """Qwen3-32B's sizes without head_dim hold 30.5B at 80-wide heads: the note says the heads may be wider."""
    header = "gpu,precision,params_b,layers,hidden,heads,kv_heads,ffn_hidden,vocab,tp,concurrency,input_tokens,"
    header += "output_tokens,stack"
    plain = _rows(f"{header}\nh100-sxm,bf16,32.8,64,5120,64,8,25600,151936,1,500,3996,200,vllm\n")[0]
    assert "not params_b 32.8B" in plain["prediction_note"]
    assert "head_dim" in plain["prediction_note"]
    assert "80" in plain["prediction_note"]
