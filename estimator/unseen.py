"""The check on published runs the calibration has never seen (issue 13: "the same accuracy is met on published runs
the project has never seen").

``estimator/data/unseen_runs.csv`` holds published training-throughput measurements that are NOT in
``public_runs.csv`` (sources per row; estimator/data/README.md). Nothing that fits reads it: ``estimator.calibrate``
fits ``public_runs()`` only, and a test asserts the fit never opens this file. :func:`unseen_check` predicts every
row with a calibration (the shipped default in ``bench/estimator_accuracy.py``) beside the constant-MFU baseline
fitted on the public runs, so both see exactly the same data.

Rows predict as the product predicts: layout cells the source publishes are kept, open ones searched; a published
layout the memory model thinks would not fit is still predicted (the run happened, as in the fit); tokens/s capped at
the family's highest measured MFU (``prediction.cap_mfu``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from estimator.calibrate import measured_mfu, measured_tokens_per_s, naive_mfu_baseline
from estimator.model import STRATEGY_LABELS
from estimator.prediction import Calibration, Solution, cap_mfu, run_queries, solve
from estimator.runs import ProfiledRun, effective_stack, read_runs_csv
from estimator.specs import DATA_DIR, get_gpu

UNSEEN_RUNS_FILE: Final[str] = "unseen_runs.csv"
# Each file is a separate hold-out, reported on its own: once a set has been used to find model bugs it is no longer
# pristine, so a later file (unseen_runs_2.csv: Hugging Face nanotron's Ultra-Scale Playbook sweep, another stack)
# checks what the first one's fixes did to runs nobody looked at; unseen_runs_3.csv (published runs of sources none of
# the other files use: the Llama 3 and Nemotron-4 reports, MLPerf Training v3.1 GPT-3 at 4,096-10,752 H100)
# checks scales the first two lack; unseen_runs_4.csv (MaxText runs of Google's gpu-recipes on H100, H200 and B200)
# checks the MaxText stack from a second source; unseen_runs_5.csv (an outsider's set: Korthikanti et al. 2022's
# Megatron-LM runs with sequence parallelism and selective recomputation, the FlashAttention repository's GPT-3
# training table, torchtitan FP8 on H200) checks the schedules and kernels the others lack; unseen_runs_6.csv (an
# outsider's set: MLPerf Training v4.0-v5.0 NeMo runs, GPT-3 175B and Llama 3.1 405B on H100, B200 and GB200) checks
# context parallelism and Blackwell at scale (it found the context-parallel ring charged at the hidden width);
# unseen_runs_7.csv (an outsider's set: Paxml on A100 from JAX-Toolbox, Nemotron-4 15B/340B NeMo runs from
# dgxc-benchmarking) checks a JAX stack on A100 and a 340B model at 128-2,048 H100; unseen_runs_8.csv (an outsider's
# set: InternLM-7B, BLOOM's topology search and IBM fms-fsdp, all on A100) checks sources and widths no fit has seen.
UNSEEN_RUNS_FILES: Final[tuple[str, ...]] = (
    UNSEEN_RUNS_FILE,
    "unseen_runs_2.csv",
    "unseen_runs_3.csv",
    "unseen_runs_4.csv",
    "unseen_runs_5.csv",
    "unseen_runs_6.csv",
    "unseen_runs_7.csv",
    "unseen_runs_8.csv",
)
# Layout classes the bench reports per unseen set: sharded data parallelism first (ZeRO-3/FSDP/HSDP, whatever else
# the run uses), then pipeline (pp > 1), then tensor (tp > 1), else plain/ZeRO-1/2 data parallelism.
LAYOUT_CLASSES: Final[tuple[str, ...]] = ("FSDP", "PP", "TP", "DP")
_SHARDED_STRATEGIES: Final[frozenset[str]] = frozenset({"zero3", "fsdp", "hsdp"})


def unseen_runs(file: str = UNSEEN_RUNS_FILE) -> list[ProfiledRun]:
    """Published runs kept out of every fit (one of UNSEEN_RUNS_FILES in estimator/data; sources per row)."""
    if file not in UNSEEN_RUNS_FILES:
        raise ValueError(f"file must be one of {', '.join(UNSEEN_RUNS_FILES)}; got {file!r}")
    return read_runs_csv((DATA_DIR / file).read_text(encoding="utf-8"))


def every_unseen_run() -> list[ProfiledRun]:
    """All the unseen sets together (UNSEEN_RUNS_FILES in order): the pooled check. No set is the issue's whole
    test: each was gathered from the sources one outsider could reach, so a set is a handful of stacks and sizes."""
    return [run for file in UNSEEN_RUNS_FILES for run in unseen_runs(file)]


def layout_classes(solution: Solution) -> np.ndarray:
    """Each prediction's layout class (LAYOUT_CLASSES) from the layout it used (published cells, else searched)."""
    strategies = np.array([*STRATEGY_LABELS, ""], dtype=object)[np.where(solution.strategy < 0, -1, solution.strategy)]
    sharded = np.isin(strategies, list(_SHARDED_STRATEGIES))
    return np.select(
        [sharded, solution.pp > 1, solution.tp > 1], list(LAYOUT_CLASSES[:3]), default=LAYOUT_CLASSES[3]
    ).astype(object)


@dataclass(frozen=True)
class UnseenCheck:
    """Per unseen run: measured and predicted tokens/s, the baseline's, the stack label, the measured MFU, whether
    the prediction was capped at the family's MFU maximum, whether the measurement falls inside the prediction's
    P10-P90 band (``Calibration.interval``: the held-out errors convolved with the stack effect the calibration does
    not pin down, all of tau for a stack it has no runs of) and that band's width, and the layout the prediction used
    (``solution``)."""

    measured: np.ndarray
    predicted: np.ndarray
    baseline: np.ndarray
    stacks: np.ndarray
    measured_mfu: np.ndarray
    capped: np.ndarray
    within_band: np.ndarray
    solution: Solution
    # log(p90/p10) of each run's band: how wide the band had to be (a band that holds by being wide everywhere is no
    # better than a narrow one that does not)
    band_log_width: np.ndarray

    @property
    def layout_classes(self) -> np.ndarray:
        return layout_classes(self.solution)

    @property
    def model_ape(self) -> np.ndarray:
        return np.abs(self.predicted / self.measured - 1.0)

    @property
    def baseline_ape(self) -> np.ndarray:
        return np.abs(self.baseline / self.measured - 1.0)


def unseen_check(
    *, calibration: Calibration, public: Sequence[ProfiledRun], unseen: Sequence[ProfiledRun]
) -> UnseenCheck:
    """Predict ``unseen`` with ``calibration`` and with the constant-MFU-per-(GPU, precision) baseline fitted on
    ``public`` (the calibration's own training rows)."""
    every = [*public, *unseen]
    queries = run_queries(every)
    measured = measured_tokens_per_s(every)
    train = np.arange(len(every)) < len(public)
    baseline = naive_mfu_baseline(queries, measured, train)[~train]
    q = run_queries(unseen)
    solution = solve(q, calibration.theta(), require_fit=False)
    predicted, capped = cap_mfu(q, solution.tokens_per_s, calibration)
    stacks = np.array([effective_stack(run) or "unknown" for run in unseen], dtype=object)
    bands = [
        calibration.interval(
            stack=effective_stack(run), known_stack=effective_stack(run) is not None, family=get_gpu(run.gpu).family
        )
        for run in unseen
    ]
    low = predicted * np.array([band["p10_multiplier"] for band in bands])
    high = predicted * np.array([band["p90_multiplier"] for band in bands])
    return UnseenCheck(
        measured=measured[~train],
        predicted=predicted,
        baseline=baseline,
        stacks=stacks,
        measured_mfu=measured_mfu(q, measured[~train]),
        capped=capped,
        within_band=(measured[~train] >= low) & (measured[~train] <= high),
        solution=solution,
        band_log_width=np.log(high / low),
    )
