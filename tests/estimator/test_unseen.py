"""The held-out check on published runs the calibration has never seen (estimator/data/unseen_runs.csv)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from estimator.calibrate import fit, load_default, public_runs
from estimator.runs import ProfiledRun, effective_stack
from estimator.unseen import LAYOUT_CLASSES, UNSEEN_RUNS_FILES, every_unseen_run, unseen_check, unseen_runs


def _identity(run: ProfiledRun) -> tuple[object, ...]:
    config = (run.gpu, run.num_gpus, run.params_b, run.seq_len, run.global_batch, run.precision)
    return (*config, run.measured_tokens_per_s)


def test_the_public_fit_never_reads_any_unseen_set(opened_files: list[str]) -> None:
    runs = public_runs()
    fit(runs, name="probe", held_out=False)
    assert any(path.endswith("public_runs.csv") for path in opened_files)  # the spy does see the fit's reads
    assert len(UNSEEN_RUNS_FILES) >= 3
    assert not [path for path in opened_files if path.endswith(UNSEEN_RUNS_FILES)]


@pytest.mark.parametrize("file", UNSEEN_RUNS_FILES)
def test_no_unseen_run_is_in_the_calibration_set_or_the_shipped_default(file: str) -> None:
    unseen, public = unseen_runs(file), public_runs()
    assert not {_identity(r) for r in unseen} & {_identity(r) for r in public}
    report = load_default().report
    assert report["runs"] == len(public)
    assert not {r.source for r in unseen} & set(report["sources"])


def test_the_unseen_sets_are_disjoint_and_an_unknown_set_is_refused() -> None:
    sets = [unseen_runs(file) for file in UNSEEN_RUNS_FILES]
    for i, first in enumerate(sets):
        for second in sets[i + 1 :]:
            assert not {_identity(r) for r in first} & {_identity(r) for r in second}
            assert not {r.source for r in first} & {r.source for r in second}
    with pytest.raises(ValueError, match=r"unseen_runs_2\.csv"):
        unseen_runs("public_runs.csv")


def _configuration(run: ProfiledRun) -> tuple[object, ...]:
    return (run.gpu, run.num_gpus, run.params_b, run.seq_len, run.global_batch, run.precision)


def test_the_third_set_loads_names_its_sources_and_shares_no_configuration_with_any_other_set() -> None:
    third = unseen_runs("unseen_runs_3.csv")
    assert "unseen_runs_3.csv" in UNSEEN_RUNS_FILES and len(third) >= 10
    assert all(len(r.source) > 40 and r.measured_tokens_per_s for r in third)
    # Not even the configuration (throughput aside) of a fitted or earlier held-out row, nor any of their sources.
    others = [*public_runs(), *unseen_runs(UNSEEN_RUNS_FILES[0]), *unseen_runs(UNSEEN_RUNS_FILES[1])]
    assert not {_configuration(r) for r in third} & {_configuration(r) for r in others}
    assert not {r.source for r in third} & {r.source for r in others}
    assert {effective_stack(r) for r in third} >= {"nemo", "other"} and max(r.num_gpus for r in third) > 10_000


def test_the_second_set_publishes_full_layouts_across_tp_and_pp() -> None:
    runs = unseen_runs(UNSEEN_RUNS_FILES[1])
    assert len(runs) >= 20 and {effective_stack(r) for r in runs} == {"other"}
    assert all(None not in (r.strategy, r.tp, r.pp, r.cp, r.micro_batch, r.activation_checkpointing) for r in runs)
    assert all(r.global_batch % r.micro_batch == 0 for r in runs if r.micro_batch)
    check = unseen_check(calibration=load_default(), public=public_runs(), unseen=runs)
    # Every cell is published, so the prediction used each run's own layout and its class follows from the cells.
    expected = ["PP" if (r.pp or 1) > 1 else "TP" if (r.tp or 1) > 1 else "DP" for r in runs]
    assert list(check.layout_classes) == expected
    assert {"PP", "TP"} <= set(expected) and set(check.layout_classes) <= set(LAYOUT_CLASSES)


def test_the_unseen_runs_span_stacks_and_name_their_sources() -> None:
    unseen = unseen_runs()
    assert unseen == unseen_runs(UNSEEN_RUNS_FILES[0])
    stacks = {effective_stack(r) for r in unseen}
    assert len(unseen) >= 20 and len(stacks) >= 3 and None not in stacks
    assert all(len(r.source) > 40 for r in unseen)
    assert all(r.measured_tokens_per_s is not None for r in unseen)


def test_the_baseline_is_fitted_on_the_public_runs_only() -> None:
    public, unseen = public_runs(), unseen_runs()
    check = unseen_check(calibration=load_default(), public=public, unseen=unseen)
    # Ten times the measured throughput of every unseen run moves its error, not the baseline's prediction.
    faster = [dataclasses.replace(r, tokens_per_s=10.0 * (r.measured_tokens_per_s or 0.0)) for r in unseen]
    again = unseen_check(calibration=load_default(), public=public, unseen=faster)
    np.testing.assert_allclose(again.baseline, check.baseline)
    np.testing.assert_allclose(again.predicted, check.predicted)
    np.testing.assert_allclose(again.measured, 10.0 * check.measured)
    assert np.all(np.isfinite(check.predicted)) and np.all(check.predicted > 0)
    assert check.model_ape.shape == check.baseline_ape.shape == (len(unseen),)


def test_the_first_set_names_sharded_layouts_fsdp() -> None:
    check = unseen_check(calibration=load_default(), public=public_runs(), unseen=unseen_runs())
    strategies = check.solution.layout_labels()["strategy"]
    assert set(check.layout_classes[np.isin(strategies, ["fsdp", "hsdp"])]) == {"FSDP"}


@pytest.mark.parametrize("file", UNSEEN_RUNS_FILES[:2])
def test_the_shipped_default_beats_the_baseline_on_the_unseen_runs_overall(file: str) -> None:
    # Regression guard for bench/estimator_accuracy.py's "published runs never used in the fit" sections (figures per
    # stack and layout class there; at this commit the model's median is 15% against the baseline's 24% on the first
    # set, 7% against 18% on the second, whose P90 is 112% against 143%).
    check = unseen_check(calibration=load_default(), public=public_runs(), unseen=unseen_runs(file))
    assert np.median(check.model_ape) < np.median(check.baseline_ape)
    assert np.quantile(check.model_ape, 0.9) < np.quantile(check.baseline_ape, 0.9)


def test_the_third_set_median_beats_the_baseline_and_its_tail_is_bounded() -> None:
    # unseen_runs_3.csv at this commit: median 8.7% against the baseline's 10.2%, but P90 28.3% against 24.9%: Llama 3
    # 405B on 8,192/16,384 H100 is predicted at 0.73/0.59 of measured (its unpublished interleaving degree is read as
    # 1, so the 1F1B bubble of pp16 is charged in full). The tail is a known miss, guarded so it cannot grow unseen.
    check = unseen_check(calibration=load_default(), public=public_runs(), unseen=unseen_runs(UNSEEN_RUNS_FILES[2]))
    assert np.median(check.model_ape) < np.median(check.baseline_ape)
    assert np.median(check.model_ape) <= 0.15
    assert np.quantile(check.model_ape, 0.9) <= 0.35


def test_every_unseen_set_pooled_meets_the_issue_targets_per_stack() -> None:
    # bench/estimator_accuracy.py's pooled section after the dp x cp refit: 145 runs of 8 sets, median 9.8% against
    # the baseline's 19.2%, below it on each of the six stacks (maxtext closest: 17.1% against 18.2%). The first set
    # alone is 16.0% (its MaxText and torchtitan rows), so the guard is on the pool, where one source cannot move it.
    unseen = every_unseen_run()
    assert len(unseen) == sum(len(unseen_runs(file)) for file in UNSEEN_RUNS_FILES)
    check = unseen_check(calibration=load_default(), public=public_runs(), unseen=unseen)
    assert np.median(check.model_ape) <= 0.15
    for stack in set(check.stacks):
        own = check.stacks == stack
        assert np.median(check.model_ape[own]) < np.median(check.baseline_ape[own]), stack
