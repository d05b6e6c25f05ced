"""The serving calibration's band of a replica's capacity: from its own held-out errors (hold out by model), the
rule training's band uses (estimator.calibrate.log_error_band)."""

from __future__ import annotations

import numpy as np

from estimator import inference as inf
from estimator.calibrate import log_error_band


def test_default_calibration_stores_one_held_out_error_per_row():
    cal = inf.default_calibration()
    errors = np.asarray(cal.held_out_log_errors)
    assert errors.size == cal.runs
    ape = np.abs(np.expm1(errors))  # |predicted - measured| / measured
    # bench/inference_accuracy.py section 1, hold out by model: median 15.2%, p90 31.3%
    assert abs(np.median(ape) - 0.152) < 0.005
    assert abs(np.quantile(ape, 0.9) - 0.313) < 0.005


def test_capacity_band_is_the_held_out_errors_band():
    cal = inf.default_calibration()
    band = inf.capacity_band(cal)
    assert band is not None
    expected = log_error_band(np.asarray(cal.held_out_log_errors))
    assert band["p10_multiplier"] == expected["p10_multiplier"]
    assert band["p90_multiplier"] == expected["p90_multiplier"]
    assert band["p10_multiplier"] < 1.0 < band["p90_multiplier"]


def test_capacity_band_round_trips_and_is_absent_from_an_older_document():
    cal = inf.default_calibration()
    again = inf.calibration_from_json(inf.calibration_document(cal))
    assert again.held_out_log_errors == cal.held_out_log_errors
    older = {k: v for k, v in inf.calibration_document(cal).items() if k != "held_out_by_model"}
    assert inf.capacity_band(inf.calibration_from_json(older)) is None


def test_log_error_band_is_measured_over_predicted():
    # log(predicted / measured): over-predicting by e (error +) means capacity lower than predicted
    errors = np.log(np.linspace(0.8, 1.6, 81))
    band = log_error_band(errors)
    assert np.isclose(band["p10_multiplier"], 1 / np.quantile(np.linspace(0.8, 1.6, 81), 0.9))
    assert np.isclose(band["p90_multiplier"], 1 / np.quantile(np.linspace(0.8, 1.6, 81), 0.1))
