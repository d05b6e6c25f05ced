"""Speed of the advice pipeline: median time of ``advise()`` against the estimator alone.

    .venv/bin/python bench/advise.py [--repeats 30] [--inference]

A 7B training scenario on H100 SXM with 10 candidate sizes (1..512 GPUs), every provider and every
market of the bundled price snapshot (loaded into a throwaway SQLite database, so nothing of yours
is touched). Prints the median of ``advise()`` (parse, offers frame, hardware quote, freshness,
estimator, economics, Monte Carlo of 2,000 draws, tornado), the median of ``estimator.predict``
alone for the same sizes, and their ratio. Issue 5's target: ``advise()`` under 50 ms here.

``--inference``: an inference scenario instead (Llama 3.1 70B on H100 SXM, FP8, 1000/200 tokens, 50 requests/s at
peak, p95 targets 1 s / 50 ms; sized over TP 1-8 by estimator.inference.size_deployments), beside
``size_deployments`` alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from djangokit import median_seconds, setup_django  # noqa: E402

TARGET_MS = 50.0
SIZES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512]
SCENARIO = {
    "name": "bench: 7B pretraining, 10 sizes, all providers and markets",
    "workload": {"kind": "training", "model": {"params_b": 7}, "tokens": 1e12, "runs_per_year": 4},
    "gpu": "h100-sxm",
    "cluster_sizes": SIZES,
    "rent": {"providers": [], "markets": ["on_demand", "spot", "reserved_1y", "reserved_3y"]},
}


INFERENCE_SCENARIO = {
    "name": "bench: 70B chat serving, TP 1-8, all providers and markets",
    "workload": {
        "kind": "inference",
        "model": {"name": "llama-3.1-70b"},
        "precision": "fp8",
        "traffic": {"peak_requests_per_s": 50, "mean_requests_per_s": 20, "input_tokens": 1000, "output_tokens": 200},
        "latency": {"ttft_p95_s": 1.0, "tpot_p95_s": 0.05},
    },
    "gpu": "h100-sxm",
    "rent": {"providers": [], "markets": ["on_demand", "spot", "reserved_1y", "reserved_3y"]},
}


def inference_bench(repeats: int) -> int:
    from advisor.advice import advise
    from estimator import inference as inf

    sizing_ms = median_ms(
        lambda: inf.size_deployments(
            model=inf.ServedModel.from_catalog("llama-3.1-70b"),
            gpu="h100-sxm",
            precision="fp8",
            input_tokens=1000,
            output_tokens=200,
            peak_requests_per_s=50,
            mean_requests_per_s=20,
            ttft_p95_s=1.0,
            tpot_p95_s=0.05,
        ),
        repeats,
    )
    advise_json_ms = median_ms(lambda: advise(INFERENCE_SCENARIO).to_dict(), repeats)
    print(f"inference size_deployments alone: {sizing_ms:8.2f} ms (median of {repeats})")
    print(f"inference advise(dict) + to_dict(): {advise_json_ms:8.2f} ms")
    verdict = "meets" if advise_json_ms < TARGET_MS else "MISSES"
    print(f"target: advise under {TARGET_MS:.0f} ms -> {verdict} ({advise_json_ms:.1f} ms with parsing and JSON)")
    return 0


def median_ms(fn: Callable[[], object], repeats: int) -> float:
    return median_seconds(fn, repeats) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--inference", action="store_true", help="an inference scenario instead")
    args = parser.parse_args()

    setup_django(prefix="bench-advise-")
    if args.inference:
        return inference_bench(args.repeats)
    from advisor.advice import advise
    from advisor.scenario import parse_scenario
    from estimator import predict
    from estimator.calibrate import load_default
    from estimator.specs import get_gpu
    from estimator.workload import Cluster, TrainingJob
    from pricing.selectors import hardware_quote, offers_frame, price_freshness

    calibration = load_default()
    scenario = parse_scenario(SCENARIO)
    offers = offers_frame(gpu="h100-sxm")
    print(
        f"scenario: {len(SIZES)} sizes, {len(offers)} offers of h100-sxm from {offers['provider'].nunique()} providers "
        f"in {offers['market'].nunique()} markets"
    )
    w = scenario.workload
    job = TrainingJob(
        params_b=w.model.params_b,
        seq_len=w.model.seq_len,
        global_batch=w.global_batch,  # type: ignore[arg-type]
        precision=w.precision,
    )
    cluster = Cluster(gpu=get_gpu("h100-sxm"))

    advise_ms = median_ms(lambda: advise(scenario, calibration=calibration), args.repeats)
    advise_json_ms = median_ms(lambda: advise(SCENARIO, calibration=calibration).to_dict(), args.repeats)
    estimator_ms = median_ms(lambda: predict(job, cluster, SIZES, calibration), args.repeats)
    selectors_ms = median_ms(
        lambda: (offers_frame(gpu="h100-sxm"), price_freshness(gpu="h100-sxm"), hardware_quote(gpu="h100-sxm")),
        args.repeats,
    )
    print(f"estimator.predict alone:          {estimator_ms:8.2f} ms (median of {args.repeats})")
    print(f"pricing selectors alone:          {selectors_ms:8.2f} ms (offers frame, freshness, hardware quote)")
    print(f"advise(Scenario):                 {advise_ms:8.2f} ms")
    print(f"advise(dict) + to_dict():         {advise_json_ms:8.2f} ms")
    print(f"ratio advise / estimator:         {advise_ms / estimator_ms:8.1f} x")
    verdict = "meets" if advise_json_ms < TARGET_MS else "MISSES"
    print(f"target: advise under {TARGET_MS:.0f} ms -> {verdict} ({advise_json_ms:.1f} ms with parsing and JSON)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
