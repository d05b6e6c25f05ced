"""The open-loop queueing formula against the simulated endless stream: mean and p95 TTFT and TPOT. Run::

    .venv/bin/python bench/inference_tail.py [--requests 2000] [--seeds 2] [--quick]   # ~10 min; --quick ~2 min

The sizing promises a p95 under random (Poisson) arrivals, the traffic a production deployment sees. The formula
(estimator.inference.latency.open_loop) is checked here against the reference for the same engine model, the
step-by-step simulation (estimator.inference.simulate.simulate_open_loop) of a long run at the same rate, with the
start from an empty engine and the drain at the end left out (``trim``), over several seeds of the arrivals. The
grid: Llama 3.1 8B and 70B and Mixtral 8x7B (MoE) on H100 SXM (FP8), A100 80GB (BF16) and L40S (FP8), every TP
degree of 1-8 where the weights fit, request shapes 200/200 to 20000/2000, at 0.2-0.9 of the replica's capacity
(its requests/s at the batch cap). Printed: per utilisation the median and the 10-90% range of formula/simulated
for mean and p95 TTFT and TPOT (1.00 = agreement), and the worst cases. No published table takes part.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimator import inference as inf
from estimator.inference.simulate import simulate_open_loop

MODELS = ("llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b")
GPUS = (("h100-sxm", "fp8"), ("a100-80gb", "bf16"), ("l40s", "fp8"))
SHAPES = ((200, 200), (1000, 200), (2000, 500), (5000, 500), (20000, 2000))
UTILISATIONS = (0.2, 0.5, 0.7, 0.9)
STEADY_TURNOVERS = 8.0
QUICK_SHAPES = ((200, 200), (2000, 500), (20000, 2000))


def grid(shapes: tuple[tuple[int, int], ...]) -> tuple[inf.ServingCases, list[str]]:
    """Every (model, GPU, TP, shape) whose weights fit; the smallest and largest fitting TP of each model and GPU."""
    rows = []
    for m in MODELS:
        model = inf.ServedModel.from_catalog(m)
        for gpu, precision in GPUS:
            for isl, osl in shapes:
                rows += [(model, gpu, precision, tp, isl, osl) for tp in (1, 2, 4, 8)]
    c = inf.build_cases(
        models=[r[0] for r in rows],
        gpus=[inf.serving_gpu(r[1]) for r in rows],
        precisions=[r[2] for r in rows],
        tps=[r[3] for r in rows],
        input_tokens=[float(r[4]) for r in rows],
        output_tokens=[float(r[5]) for r in rows],
    )
    params = inf.default_calibration().params
    fits = np.floor(inf.max_batch(c, params)) >= 4.0  # a replica that holds a few requests at least
    keep = []
    for i, r in enumerate(rows):  # the smallest TP that fits and TP 8 (a small and a wide group)
        if not fits[i]:
            continue
        same = [j for j, q in enumerate(rows) if q[:3] == r[:3] and q[4:] == r[4:] and fits[j]]
        if i in (same[0], same[-1]):
            keep.append(i)
    idx = np.asarray(keep)
    labels = [f"{rows[i][0].name} {rows[i][1]} tp{rows[i][3]} {rows[i][4]}/{rows[i][5]}" for i in keep]
    return c.take(idx), labels


def take(p: inf.LoadPoint, idx: np.ndarray) -> inf.LoadPoint:
    return inf.LoadPoint(**{f: getattr(p, f)[idx] for f in inf.LoadPoint.__dataclass_fields__})


def spread(x: np.ndarray) -> str:
    x = x[np.isfinite(x)]
    if not len(x):
        return "       -        "
    lo, med, hi = np.quantile(x, [0.1, 0.5, 0.9])
    return f"{med:5.2f} [{lo:4.2f}-{hi:4.2f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--quick", action="store_true", help="three request shapes only")
    args = parser.parse_args()
    params = inf.default_calibration().params
    base, labels = grid(QUICK_SHAPES if args.quick else SHAPES)
    n, u = len(base), np.repeat(np.asarray(UTILISATIONS), len(base))
    c = base.take(np.tile(np.arange(n), len(UTILISATIONS)))
    capacity = inf.throughput_at_batch(c, params, np.floor(inf.max_batch(c, params))) / c.osl
    start = time.perf_counter()
    formula = inf.open_loop(c, params, u * capacity)
    formula_s = time.perf_counter() - start
    # A run is a steady stream only when it holds many turnovers of the requests in flight: keep the rows whose
    # mean in flight (the formula's; Little's law) is at most 1/STEADY_TURNOVERS of the requests.
    steady = formula.in_flight <= args.requests / STEADY_TURNOVERS
    left_out = int((~steady).sum())
    keep = np.flatnonzero(steady)
    c, u, formula = c.take(keep), u[keep], take(formula, keep)
    rate = u * capacity[keep]
    trim = args.requests // 10
    start = time.perf_counter()
    runs = [
        simulate_open_loop(c, params, rate, requests=args.requests, seed=20 + k, trim=trim) for k in range(args.seeds)
    ]
    sim_s = time.perf_counter() - start
    sim = {f: np.mean([getattr(r, f) for r in runs], axis=0) for f in ("ttft_s", "ttft_p95_s", "tpot_s", "tpot_p95_s")}
    print(
        f"{n} cases x {len(UTILISATIONS)} utilisations; simulated {args.seeds} seeds x {args.requests} requests "
        f"({trim} trimmed at each end) in {sim_s:.1f} s; the formula in {formula_s * 1e3:.1f} ms; {left_out} rows "
        f"left out (more than 1/{STEADY_TURNOVERS:.0f} of the requests in flight: a run that short is a transient)"
    )
    print("formula / simulated, median [10%-90%] over the grid:")
    print(f"{'load':>5}  {'TTFT mean':>17}  {'TTFT p95':>17}  {'TPOT mean':>17}  {'TPOT p95':>17}")
    ratios = {f: getattr(formula, f) / sim[f] for f in sim}
    for level in UTILISATIONS:
        k = u == level
        cells = "  ".join(spread(ratios[f][k]) for f in ("ttft_s", "ttft_p95_s", "tpot_s", "tpot_p95_s"))
        print(f"{level:5.1f}  {cells}")
    cells = "  ".join(spread(ratios[f]) for f in ("ttft_s", "ttft_p95_s", "tpot_s", "tpot_p95_s"))
    print(f"{'all':>5}  {cells}")
    seed_spread = np.std([r.ttft_p95_s for r in runs], axis=0) / np.maximum(sim["ttft_p95_s"], 1e-12)
    print(f"seed-to-seed spread of the simulated p95 TTFT: median {np.median(seed_spread):.1%}")
    worst = np.argsort(-np.abs(np.log(ratios["ttft_p95_s"])))[:8]
    print("largest p95 TTFT disagreements (formula/simulated; mean TTFT and p95 TPOT beside):")
    for i in worst:
        print(
            f"  {labels[keep[i] % n]:<40} load {u[i]:.1f}: p95 TTFT {ratios['ttft_p95_s'][i]:5.2f} "
            f"({formula.ttft_p95_s[i] * 1e3:8.1f} vs {sim['ttft_p95_s'][i] * 1e3:8.1f} ms)  mean TTFT "
            f"{ratios['ttft_s'][i]:5.2f}  p95 TPOT {ratios['tpot_p95_s'][i]:5.2f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
