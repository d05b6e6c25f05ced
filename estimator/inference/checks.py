"""How the calibrated serving model fares on published latency measurements it was never fitted on, as figures a
calibration document carries (and an Advice states beside its p95 latencies).

The check: NVIDIA NIM v1.8.0's closed-loop benchmark table (estimator/data/inference/nim_latency.csv: Llama 3.1 8B
TP1 and Llama 3.3 70B TP2, H100 FP8, concurrency 1-250, five request shapes), each point simulated as the benchmark
runs it (estimator.inference.simulate.simulate_closed_loop). Reported: the share of points whose mean TTFT is within
35% of the measured and whose TPOT is within 20% (issue 20's bars), and the median error of each; bench/
inference_accuracy.py prints the same figures per model and shape beside a no-queueing baseline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import numpy as np

from estimator.inference.data import ServingCases, build_cases, read_data_csv, serving_gpu
from estimator.inference.fit import ape, table_gpu, table_model
from estimator.inference.simulate import simulate_closed_loop

LATENCY_FILE: Final[str] = "nim_latency.csv"
TTFT_WITHIN: Final[float] = 0.35
TPOT_WITHIN: Final[float] = 0.20


def row_cases(rows: Sequence[Mapping[str, str]], *, isl: str, osl: str, default_stack: str = "trtllm") -> ServingCases:
    """A published table's rows as serving cases (its ``stack`` column, else ``default_stack``; ``isl``/``osl``: the
    names of its length columns; an ``attention_dp`` column of true/false where the table has one)."""
    return build_cases(
        models=[table_model(r["model"]) for r in rows],
        gpus=[serving_gpu(table_gpu(r["gpu"])) for r in rows],
        precisions=[r["precision"].lower() for r in rows],
        tps=[int(r["tp"]) for r in rows],
        input_tokens=[float(r[isl]) for r in rows],
        output_tokens=[float(r[osl]) for r in rows],
        stacks=[r.get("stack") or default_stack for r in rows],
        attention_dp=[(r.get("attention_dp") or "").strip().lower() == "true" for r in rows],
    )


# The engines a benchmarked stack runs: NIM serves these models on TensorRT-LLM (nim_latency.csv's header).
ENGINES_OF_STACK: Final[dict[str, tuple[str, ...]]] = {"nim": ("nim", "trtllm")}
RATIO_QUANTILES: Final[tuple[tuple[str, float], ...]] = (("p10", 0.1), ("p90", 0.9))


def ratio_quantiles(name: str, ratio: np.ndarray) -> dict[str, float]:
    """``{name}_ratio_p10`` and ``_p90``: the P10 and P90 of measured / modelled over the finite points."""
    finite = ratio[np.isfinite(ratio) & (ratio > 0)]
    return {f"{name}_ratio_{label}": round(float(np.quantile(finite, q)), 4) for label, q in RATIO_QUANTILES}


def latency_check(params: Mapping[str, float]) -> dict[str, Any]:
    """The calibrated model (``params``) against the NIM closed-loop table: points, the share within the bars and
    the median absolute error of mean TTFT and of TPOT (fractions), and where the measurements come from."""
    rows = read_data_csv(LATENCY_FILE)
    cases = row_cases(rows, isl="input_tokens", osl="output_tokens")
    load = simulate_closed_loop(cases, params, np.asarray([float(r["concurrency"]) for r in rows]))
    measured_ttft = np.asarray([float(r["ttft_ms"]) for r in rows]) / 1e3
    measured_tpot = np.asarray([float(r["itl_ms"]) for r in rows]) / 1e3
    ttft, tpot = ape(load.ttft_s, measured_ttft), ape(load.tpot_s, measured_tpot)
    models = sorted({r["model"] for r in rows})
    return {
        "points": len(rows),
        "ttft_within": TTFT_WITHIN,
        "ttft_share_within": round(float(np.mean(ttft <= TTFT_WITHIN)), 4),
        "ttft_median_ape": round(float(np.median(ttft)), 4),
        "tpot_within": TPOT_WITHIN,
        "tpot_share_within": round(float(np.mean(tpot <= TPOT_WITHIN)), 4),
        "tpot_median_ape": round(float(np.median(tpot)), 4),
        # What the real latency is, as a multiple of the model's: the band an Advice sizes its latency error over
        # (an outsider: the within-bars are pass marks, not the error; real TTFT ran 0.41-4.84x the model's).
        **ratio_quantiles("ttft", measured_ttft / load.ttft_s),
        **ratio_quantiles("tpot", measured_tpot / load.tpot_s),
        "gpus": sorted({table_gpu(r["gpu"]) for r in rows}),
        "precisions": sorted({r["precision"].lower() for r in rows}),
        "engines": sorted({engine for r in rows for engine in ENGINES_OF_STACK.get(r["stack"], (r["stack"],))}),
        "source": f"estimator/data/inference/{LATENCY_FILE}: NVIDIA NIM v1.8.0 closed-loop benchmarks "
        f"({', '.join(models)}; H100 FP8; concurrency 1-250), never fitted",
    }
