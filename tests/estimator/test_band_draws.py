"""The Monte Carlo draws of the throughput error follow the band a prediction states (estimator.calibrate)."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.calibrate import band_log_factors, load_default


@pytest.mark.parametrize(("p10", "p90"), [(0.8, 1.3), (0.95, 1.02), (0.5, 1.1)])
def test_draws_have_the_bands_quantiles_and_the_point_as_median(p10: float, p90: float) -> None:
    draws = np.exp(band_log_factors(p10_multiplier=p10, p90_multiplier=p90, samples=2000, rng=np.random.default_rng(3)))
    low, mid, high = np.quantile(draws, [0.1, 0.5, 0.9])
    assert low == pytest.approx(p10, rel=1e-3)
    assert mid == pytest.approx(1.0, abs=1e-3)
    assert high == pytest.approx(p90, rel=1e-3)


def test_draws_are_shuffled_and_reproducible() -> None:
    a = band_log_factors(p10_multiplier=0.8, p90_multiplier=1.3, samples=500, rng=np.random.default_rng(1))
    b = band_log_factors(p10_multiplier=0.8, p90_multiplier=1.3, samples=500, rng=np.random.default_rng(1))
    assert np.array_equal(a, b)
    assert not np.all(np.diff(a) >= 0)  # not in quantile order: pairs with the price draws at random


def test_a_band_on_one_side_of_the_point_is_widened_to_it() -> None:
    draws = np.exp(
        band_log_factors(p10_multiplier=1.05, p90_multiplier=1.2, samples=2000, rng=np.random.default_rng(2))
    )
    assert np.quantile(draws, 0.1) == pytest.approx(1.0, abs=1e-9)
    assert np.quantile(draws, 0.9) == pytest.approx(1.2, rel=1e-3)


def test_held_out_accuracy_follows_whether_the_stack_has_runs() -> None:
    calibration = load_default()
    report = calibration.report
    unknown = calibration.held_out_accuracy(stack=None, known_stack=False)
    assert unknown["held_out"] == "leave-one-stack-out"
    assert unknown["held_out_median_ape"] == report["stack_out_median_ape"]
    assert unknown["baseline_held_out_median_ape"] == report["baseline"]["stack_out"]["median_ape"]
    fitted = calibration.held_out_accuracy(stack="nemo")
    assert fitted["held_out"] == "leave-one-config-family-out"
    assert fitted["held_out_median_ape"] == report["loo_median_ape"]
    assert calibration.held_out_accuracy(stack="other")["held_out"] == "leave-one-stack-out"  # a pooled label
    assert calibration.held_out_accuracy(stack="nemo", known_stack=False)["held_out"] == "leave-one-stack-out"


def test_a_calibration_without_a_stack_check_claims_none_for_an_unknown_stack() -> None:
    """A user's calibration of one stack cannot be held out by stack: an unknown stack gets no figure (the PDF said
    'None has runs in it' over the config-family figure), its own stack still gets its config-family figure."""
    import dataclasses

    from advisor.web.presenters import calibration_line

    default = load_default()
    report = {k: v for k, v in default.report.items() if not k.startswith("stack_out")}
    user = dataclasses.replace(default, report=report)
    assert user.held_out_accuracy(stack=None, known_stack=False) == {}
    assert user.held_out_accuracy(stack="nemo")["held_out"] == "leave-one-config-family-out"
    line = calibration_line(advice={"calibration": {"name": "mine", "runs": 6, "loo_mape": 0.05, "stack": None}})
    assert "never checked on a stack not given" in line and "None" not in line


def test_a_gpu_family_without_runs_states_a_band_widened_by_the_families_spread() -> None:
    """An outsider: MI300X (no calibration runs: Hopper's efficiencies, scaled by its own peaks) was stated at a
    P10-P90 band of x0.86-1.13, as narrow as H100's, while her MI300X runs measured 1.7-2x slower than predicted. The
    band of a borrowed family adds the calibrated families' efficiency spread (sd of log family_eff) to the stack's."""
    from estimator.prediction import predict
    from estimator.specs import get_gpu
    from estimator.workload import Cluster, TrainingJob

    calibration = load_default()
    spread = calibration.family_effect_sigma()
    assert 0.05 < spread < 0.5
    job = TrainingJob(params_b=8, seq_len=8192, global_batch=512, stack="torchtitan")
    h100 = predict(job, Cluster(get_gpu("h100-sxm")), [8], calibration)
    mi300x = predict(job, Cluster(get_gpu("mi300x")), [8], calibration)
    assert mi300x.interval_log_sigma == pytest.approx(float(np.hypot(h100.interval_log_sigma, spread)), rel=0.2)
    assert mi300x.p10_multiplier < h100.p10_multiplier and mi300x.p90_multiplier > h100.p90_multiplier


def test_the_borrowed_family_band_is_the_measured_error_of_borrowing() -> None:
    """An outsider's probe: MI300X (borrowing Hopper's efficiencies) was stated at P10-P90 x0.72-1.36 beside H100's
    x0.74-1.31, while the families' own efficiencies differ more than the GEMM multipliers' sd (0.11) said. The
    calibration now measures the borrowing rule itself: each calibrated family's runs predicted with the family it
    would borrow from in its place; the band takes the spread of those offsets, one per family."""
    from estimator.calibrate import _predictive_spread

    calibration = load_default()
    offsets = calibration.report["family_borrow_log_offsets"]
    assert set(offsets) == set(calibration.calibrated_families())
    # A100 predicted with its nearest other family's efficiencies (Hopper's, peak-scaled) comes out >20% slow.
    assert offsets["a100"] < -0.2
    assert calibration.family_effect_sigma() == pytest.approx(_predictive_spread(list(offsets.values())))
    fitted_only = float(
        np.std([np.log(v) for k, v in calibration.params.items() if k.startswith("family_eff.")], ddof=1)
    )
    assert calibration.family_effect_sigma() > 1.5 * fitted_only
