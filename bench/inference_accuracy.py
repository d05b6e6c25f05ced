"""Leave-one-out accuracy of the inference model's output tokens/s on the bundled TensorRT-LLM tables.

Prints, for the calibrated model and two baselines, the mean / median / 90th percentile absolute percentage
error of held-out rows:

* naive baseline (the one the issue asks for): a constant fraction of memory bandwidth turned into tokens,
  ``f x tp x BW / weight bytes``, f refitted without the held-out row;
* a stronger baseline: the same fraction fitted per input/output length pair (so it knows the request shape).

Also leave-one-GPU-out (every row of a GPU held out together) to show how the model transfers to a GPU it was not
fitted on, and the error split by table source, model and GPU. Run::

    .venv/bin/python bench/inference_accuracy.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from estimator import inference as inf


def summary(name: str, pred: np.ndarray, measured: np.ndarray) -> str:
    e = inf.ape(pred, measured)
    return (
        f"{name:<46} MAPE {e.mean():6.1%}  median {np.median(e):6.1%}  p90 {np.quantile(e, 0.9):6.1%}  "
        f"max {e.max():7.1%}"
    )


def shape_baseline_loo(table: inf.MeasuredTable) -> np.ndarray:
    """Per (isl, osl) group, the geometric-mean fraction of the other rows of the group (closed form)."""
    unit = inf._baseline_unit(table.cases)
    log_ratio = np.log(table.measured / unit)
    keys = table.cases.isl * 1e6 + table.cases.osl
    _, group = np.unique(keys, return_inverse=True)
    sums = np.bincount(group, weights=log_ratio)
    counts = np.bincount(group)
    other = np.where(counts[group] > 1, (sums[group] - log_ratio) / np.maximum(counts[group] - 1, 1), np.nan)
    return np.exp(other) * unit


def leave_one_group_out(table: inf.MeasuredTable, groups: np.ndarray, start: dict[str, float]) -> np.ndarray:
    pred = np.empty(len(table.cases))
    for g in np.unique(groups):  # one refit per held-out group
        held = groups == g
        params = inf.fit(inf.subset(table, ~held), start=start)
        pred[held] = inf.max_throughput(inf.subset(table, held).cases, params)
    return pred


def main() -> int:
    table = inf.load_table()
    n = len(table.cases)
    started = time.perf_counter()
    full = inf.fit(table)
    fit_s = time.perf_counter() - started
    started = time.perf_counter()
    loo = inf.leave_one_out(table, start=full)
    loo_s = time.perf_counter() - started
    labels = np.asarray(table.cases.labels, dtype=object)
    gpus = np.asarray([label.split()[1] for label in labels])
    models = np.asarray([label.split()[0] for label in labels])
    sources = np.asarray(table.sources)

    print(f"TensorRT-LLM max-throughput rows: {n} ({', '.join(sorted(set(table.sources)))})")
    print(f"full fit {fit_s:.2f} s (9 starts); leave-one-out {n} refits {loo_s:.1f} s")
    print()
    print("Held-out error of output tokens/s (leave one row out):")
    print(summary("calibrated serving model", loo.model_pred, loo.measured))
    print(summary("naive: constant fraction of memory bandwidth", loo.baseline_pred, loo.measured))
    shape = shape_baseline_loo(table)
    ok = np.isfinite(shape)
    print(summary(f"fraction per isl/osl pair ({ok.sum()} rows)", shape[ok], table.measured[ok]))
    print(summary("in-sample (full fit, for reference)", inf.max_throughput(table.cases, full), table.measured))
    print()
    logo = leave_one_group_out(table, gpus, full)
    print(summary("calibrated model, leave one GPU out", logo, table.measured))
    print()
    print("Leave-one-out error by group (model | naive baseline):")
    e_model, e_base = inf.ape(loo.model_pred, loo.measured), inf.ape(loo.baseline_pred, loo.measured)
    for title, keys in (("source", sources), ("model", models), ("gpu", gpus)):
        for key in sorted(set(keys)):
            m = keys == key
            print(
                f"  {title:<6} {key:<18} rows {m.sum():4d}   model {e_model[m].mean():6.1%}   "
                f"baseline {e_base[m].mean():7.1%}   leave-GPU-out {inf.ape(logo[m], table.measured[m]).mean():6.1%}"
            )
    print()
    worst = np.argsort(-e_model)[:8]
    print("Worst held-out rows (measured -> predicted output tokens/s):")
    for i in worst:
        print(f"  {labels[i]:<52} {table.measured[i]:9.0f} -> {loo.model_pred[i]:9.0f}  ({e_model[i]:.0%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
