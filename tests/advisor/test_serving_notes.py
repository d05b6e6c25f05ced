"""What a serving prediction rests on is said, with the same words, by estimate_inference's prediction_note and
the inference Advice's warnings (estimator.inference.notes): a KV cache of few requests (an outsider's probe:
Qwen3-32B on one H100 under vLLM held about 8 of 500 requests, measured throughput 0.6x the model's, no word), a GPU
or engine the calibration has no rows of, the engine picked where none was given, a PCIe group, a mixture of
experts."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from advisor.advice.inference import advise_inference
from tests.advisor.test_inference_advice import NOW, catalog, scenario  # noqa: F401 (catalog: a fixture)

HEADER = "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack"


def notes(tmp_path: Path, body: str) -> list[str]:
    path = tmp_path / "points.csv"
    path.write_text(f"{HEADER}\n{body}")
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    return [r["prediction_note"] for r in csv.DictReader(io.StringIO(out.getvalue()))]


def test_a_kv_cache_of_few_requests_is_noted_with_what_the_engine_does(tmp_path: Path) -> None:
    vllm, trtllm, roomy = notes(
        tmp_path,
        "h100-sxm,bf16,qwen3-32b,1,500,3996,200,vllm\n"
        "h100-sxm,bf16,qwen3-32b,1,500,3996,200,trtllm\n"
        "h100-sxm,fp8,llama-3.1-8b,1,16,1000,1000,trtllm\n",
    )
    # 4: vLLM v0.11.0 logged 4.45 GiB of KV for Qwen3-32B on one H100 (llm-d/llm-d-benchmark
    # config_explorer/empirical-vllm-memory-results.md), 4.4 requests of 3996 + 200 / 2 tokens at 256 KiB each.
    assert "the KV cache holds 4 requests (fewer than the 500 asked for)" in vllm
    assert "preempts them when the pages run out, recomputing their prefill, which this model does not" in vllm
    assert "the KV cache holds" in trtllm and "reserves each request's whole output on admission" in trtllm
    assert "KV cache holds" not in roomy


def test_what_the_calibration_has_no_rows_of_and_the_picked_engine_are_noted(tmp_path: Path) -> None:
    gh200, mi300x, vllm, pcie, moe, measured = notes(
        tmp_path,
        "gh200,fp8,llama-3.1-70b,1,8,1000,1000,trtllm\n"
        "mi300x,fp8,llama-3.1-8b,1,8,1000,1000,\n"
        "h100-sxm,fp8,llama-3.1-8b,1,8,1000,1000,vllm\n"
        "l40s,fp8,llama-3.1-70b,8,8,1000,1000,trtllm\n"
        "h200,fp8,mixtral-8x7b,2,8,1000,1000,trtllm\n"
        "h100-sxm,fp8,llama-3.1-8b,1,8,1000,1000,trtllm\n",
    )
    assert "The serving calibration has no rows on NVIDIA GH200" in gh200
    assert "fitted on trtllm runs on" in gh200 and "H100" in gh200
    assert mi300x.startswith("no stack given: sized for vllm, because the default trtllm runs on NVIDIA GPUs only")
    assert "no rows on AMD Instinct MI300X" in mi300x and "no vllm rows" in mi300x
    assert "The serving calibration has no vllm rows: its throughput is borrowed from trtllm" in vllm
    assert pcie.startswith("tp 8 over PCIe (no NVLink): every all-reduce costed at fabrics.csv pcie")
    assert "mixture of experts (2 of 8 experts per token): tokens assumed routed uniformly" in moe
    assert measured == ""  # a calibrated GPU, precision and engine, given, with room: nothing to say


@pytest.mark.usefixtures("catalog")
def test_the_advice_warns_where_the_recommended_kv_cache_holds_few_requests() -> None:
    traffic = {"peak_requests_per_s": 0.5, "mean_requests_per_s": 0.2, "input_tokens": 30000, "output_tokens": 200}
    given = scenario(model={"name": "qwen3-32b"}, traffic=traffic, latency={"ttft_p95_s": 60.0, "tpot_p95_s": 0.5})
    given["workload"]["serving_engine"] = "vllm"
    doc = advise_inference(given, now=NOW)
    rec = doc["recommendation"]
    tp = rec["tp"]
    held = next(d for d in doc["sizes"] if d["tp"] == tp)["max_batch"]
    assert held < 16
    assert any(w.startswith(f"TP {tp}: The KV cache holds {held:,} requests (under 16)") for w in doc["warnings"])
