"""Calibration: the fit recovers known parameters, documents round-trip as JSON, the shipped one reports itself."""

from __future__ import annotations

import dataclasses
import itertools
import json

import numpy as np
import pytest

from estimator import model
from estimator.calibrate import Calibration, CalibrationError, fit, load_default, public_runs
from estimator.prediction import FAMILIES, predict_runs, run_queries, solve
from estimator.runs import RunValidationError, read_runs_csv


def test_fit_recovers_throughput_generated_by_known_parameters() -> None:
    runs = [r for r in public_runs() if r.source.startswith("llm-foundry") and r.gpu == "a100-40gb"][:40]
    truth = {name: init for name, (init, _, _) in model.PARAMETER_BOUNDS.items()}
    truth.update({"eff_base": 0.45, "hidden_knee": 900.0, "attention_eff": 0.5, "family_eff.a100": 1.1})
    generated = solve(run_queries(runs), model.unpack_parameters(truth, FAMILIES), require_fit=False).tokens_per_s
    synthetic = [
        dataclasses.replace(r, tokens_per_s=float(t), step_time_s=None) for r, t in zip(runs, generated, strict=True)
    ]
    fitted = fit(synthetic, name="synthetic", held_out=False)
    predicted = predict_runs(synthetic, fitted).tokens_per_s
    fits = np.isfinite(predicted)
    assert fits.mean() > 0.8
    np.testing.assert_allclose(predicted[fits], generated[fits], rtol=0.02)
    assert fitted.report["in_sample_median_ape"] < 0.01


def test_held_out_report_has_every_figure_and_an_ordered_interval() -> None:
    runs = [r for r in public_runs() if r.gpu == "a100-80gb" and r.source.startswith("llm-foundry")][:12]
    calibration = fit(runs, name="small", prior=load_default())
    report = calibration.report
    for key in ("runs", "in_sample_mape", "loo_mape", "loo_median_ape", "loo_p90_ape", "per_gpu", "baseline"):
        assert key in report, key
    assert report["runs"] == 12 and report["per_gpu"]["a100-80gb"]["runs"] == 12
    assert len(report["residuals"]) == 12
    band = calibration.interval()
    assert band["p10_multiplier"] <= 1.0 <= band["p90_multiplier"]


def test_the_shipped_default_reports_held_out_stacks_and_config_families() -> None:
    default = load_default()
    report = default.report
    assert report["runs"] == len(public_runs()) == 279
    # Twins held out together: far fewer folds than runs; one fold per stack.
    assert 100 < report["config_families"] < 279
    stacks = {"llm-foundry", "nemo", "megatron-lm", "torchtitan", "deepspeed", "maxtext", "other"}
    assert set(report["per_stack"]) == stacks == set(report["stack_config_families"])
    assert sum(report["stack_config_families"].values()) == report["config_families"]
    assert report["loo_median_ape"] < report["baseline"]["loo"]["median_ape"]
    assert "stack_out" in report["baseline"] and report["stack_out_median_ape"] > 0
    assert 0 < report["prediction_interval"]["log_sigma"] < 1
    names = {p["name"] for p in report["parameters"]}
    assert set(default.params) == names
    for entry in report["parameters"]:
        assert {"prior", "fitted", "moved_by_data", "at_bound"} <= set(entry), entry["name"]


def test_calibration_documents_round_trip_through_json() -> None:
    default = load_default()
    again = Calibration.from_dict(json.loads(json.dumps(default.to_dict())))
    assert again == default
    assert again.theta()["eff_base"] == default.params["eff_base"]


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({"name": "", "params": {}}, "name"),
        ({"name": "x", "params": []}, "params"),
        ({"name": "x", "params": {"magic": 1.0}}, "params/magic"),
        ({"name": "x", "params": {"eff_base": "fast"}}, "params/eff_base"),
        ({"name": "x", "params": {}, "report": "good"}, "report"),
    ],
)
def test_invalid_documents_name_the_field(document: dict[str, object], field: str) -> None:
    with pytest.raises(CalibrationError) as info:
        Calibration.from_dict(document)
    assert info.value.field == field


def test_fit_needs_measured_runs() -> None:
    runs = public_runs()[:3]
    with pytest.raises(RunValidationError) as info:
        fit([dataclasses.replace(runs[0], tokens_per_s=None), runs[1]], name="x")
    assert (info.value.errors[0].row, info.value.errors[0].column) == (1, "tokens_per_s")
    with pytest.raises(RunValidationError, match="at least 2 runs"):
        fit(runs[:1], name="x")


def test_coverage_warnings_name_what_leaves_the_range_of_the_runs() -> None:
    import dataclasses

    from estimator.calibrate import coverage_warnings, load_default

    default = load_default()
    coverage = {"params_b": [1.3, 13.0], "num_gpus": [1, 32], "seq_len": [2048, 2048], "gpus": ["a100-80gb"]}
    team = dataclasses.replace(default, name="team", report={**default.report, "coverage": coverage})
    inside = coverage_warnings(team, params_b=7, num_gpus=[8, 16, 32], seq_len=2048, gpu="a100-80gb")
    assert inside == []
    outside = coverage_warnings(team, params_b=70, num_gpus=[16, 64, 128], seq_len=4096, gpu="h100-sxm")
    text = " ".join(outside)
    assert len(outside) == 4
    assert "70B parameters" in text and "1.3-13B" in text
    assert "64, 128 GPUs" in text and "1-32 GPUs" in text
    assert "4096 tokens" in text
    assert "no run on h100-sxm" in text
    # A range of one value reads as that value (a new user read "outside the 8-8B parameters").
    assert "outside the 2048 tokens" in text and "2048-2048" not in text


RUNS_HEADER = "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s,gpus_per_node,inter_node_gbps,source"


def test_a_refinements_held_out_error_holds_identical_configurations_out_together() -> None:
    """Three identical rows used to report loo_mape 0.006: each held-out row's twin stayed in the training set. (Rows
    repeating the measurement too count once: these are three measurements of one configuration.)"""
    measured = np.array([70000.0, 71000.0, 69000.0])
    runs = read_runs_csv(RUNS_HEADER + "\n" + "".join(f"h100-sxm,8,7,4096,512,{t:.0f},,,\n" for t in measured))
    prior = load_default()
    report = fit(runs, name="repeats", prior=prior).report
    # Nothing else to refine from: each held-out prediction is the prior's own.
    expected = predict_runs(runs, prior).tokens_per_s
    held_out = np.array([r["predicted_tokens_per_s"] for r in report["residuals"]])
    np.testing.assert_allclose(held_out, expected, rtol=1e-9)
    assert report["loo_mape"] == pytest.approx(float(np.mean(np.abs(expected / measured - 1))))
    assert "identical configurations held out together" in report["held_out"]


def test_a_repeat_is_the_same_configuration_however_its_defaults_and_source_are_written() -> None:
    from estimator.calibrate import refine_folds

    runs = read_runs_csv(
        RUNS_HEADER + "\n"
        "h100-sxm,8,7,4096,512,70000,,,ours\n"
        "h100-sxm,16,7,4096,512,130000,,,ours\n"
        "h100-sxm,8,7,4096,512,69000,8,3200,another paper\n"  # the typical server spelled out
        "h100-sxm,8,7,4096,1024,71000,,,ours\n"  # another batch: another configuration
    )
    folds, how = refine_folds(runs)
    assert folds.tolist() == [0, 1, 0, 2] and "identical configurations" in how


L40S = (
    "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s,strategy\n"
    "l40s,8,1.3,2048,256,40000,ddp\nl40s,16,1.3,2048,256,70000,ddp\nl40s,32,1.3,2048,256,110000,ddp\n"
    "l40s,8,7,2048,256,9000,fsdp\n"
)


def test_a_few_runs_of_a_family_without_public_runs_do_not_pin_its_predictions_at_their_own_best_mfu() -> None:
    """Four l40s rows used to set the family's cap to their own best MFU, so row 4 predicted exactly its 9000."""
    from estimator.calibrate import measured_mfu

    runs = read_runs_csv(L40S)
    prior = load_default()
    family = "ada-ampere-pcie"
    assert family in prior.borrowed_families(), "the public runs have no l40s family: it borrows"
    calibration = fit(runs, name="l40s", prior=prior)
    cap = calibration.family_mfu_max()[family]
    best = float(measured_mfu(run_queries(runs), np.array([r.tokens_per_s for r in runs])).max())
    assert cap >= prior.family_mfu_max()[family] and cap > best
    predicted = predict_runs(runs, calibration)
    assert np.all(predicted.mfu < cap), "no prediction sits at the cap"
    assert "family_mfu_cap_rule" in calibration.report


def test_a_users_runs_only_raise_the_public_families_cap_and_above_it_keep_a_margin() -> None:
    from estimator.calibrate import USER_MFU_CAP_MARGIN, measured_mfu

    prior = load_default()
    public_cap = prior.family_mfu_max()["hopper"]
    header = "gpu,num_gpus,params_b,seq_len,global_batch,strategy,tp,pp,cp,micro_batch,activation_checkpointing"
    shape = read_runs_csv(
        f"{header}\nh100-sxm,8,7,4096,512,fsdp,1,1,1,1,false\nh100-sxm,16,7,4096,512,fsdp,1,1,1,1,false\n"
    )
    per_mfu = 1.0 / measured_mfu(run_queries(shape), np.ones(len(shape)))  # tokens/s of MFU 1
    for scale, expected in ((0.5, public_cap), (1.1, None)):
        runs = [
            dataclasses.replace(r, tokens_per_s=float(t))
            for r, t in zip(shape, scale * public_cap * per_mfu, strict=True)
        ]
        cap = fit(runs, name="hopper", prior=prior).family_mfu_max()["hopper"]
        own_best = scale * public_cap
        assert cap == pytest.approx(expected if expected is not None else own_best * (1 + USER_MFU_CAP_MARGIN))
    assert load_default().family_mfu_max()["hopper"] == prior.report["family_mfu"]["hopper"][1], "public cap unchanged"


# --------------------------------------------------------------------------------------------------- the band


def _width(band: dict[str, float]) -> float:
    return float(np.log(band["p90_multiplier"] / band["p10_multiplier"]))


def test_a_stack_known_from_one_config_family_gets_a_wider_band_than_one_known_from_many() -> None:
    default = load_default()
    families = default.report["stack_config_families"]
    assert families["maxtext"] == 1 and families["llm-foundry"] > 100
    one, many = default.interval(stack="maxtext"), default.interval(stack="llm-foundry")
    assert _width(one) > 1.3 * _width(many)
    # Both sit inside the unknown-stack band, and the generic band (no stack term) is the held-out quantiles as stored.
    assert _width(default.interval(known_stack=False)) > _width(one)
    stored = default.report["prediction_interval"]
    assert default.interval()["p10_multiplier"] == stored["p10_multiplier"]
    assert default.interval()["p90_multiplier"] == stored["p90_multiplier"]


def test_an_unknown_stack_band_holds_at_least_the_between_stack_spread() -> None:
    from estimator.calibrate import Z90

    default = load_default()
    tau = default.report["between_stack_log_sigma"]
    assert tau >= 0.2  # the fit's own random-effect width is the floor
    for band in (default.interval(known_stack=False), default.interval(stack="other"), default.interval(stack="new")):
        assert band["p10_multiplier"] <= np.exp(-Z90 * tau) + 0.02
        assert band["p90_multiplier"] >= np.exp(Z90 * tau) - 0.02
        assert _width(band) >= 2 * Z90 * tau
        assert band["log_sigma"] >= tau


def test_the_band_never_narrows_when_a_stack_s_evidence_shrinks() -> None:
    from estimator.calibrate import band_multipliers, held_out_log_errors, stack_posterior_sigma

    default = load_default()
    tau = default.report["between_stack_log_sigma"]
    s = default.report["prediction_interval"]["log_sigma"]
    errors = held_out_log_errors(default.report)
    assert errors is not None and errors.size == 279
    sigmas = np.array([stack_posterior_sigma(tau, s, k) for k in range(0, 201)])
    assert sigmas[0] == tau and np.all(np.diff(sigmas) < 0) and sigmas[-1] > 0
    # One config family keeps about half of tau (s ~ 0.13 per family against tau 0.2); a hundred keep almost none.
    assert 0.4 * tau < sigmas[1] < 0.7 * tau and sigmas[100] < 0.1 * tau
    widths = [_width(band_multipliers(default.report["prediction_interval"], errors, sd)) for sd in sigmas]
    assert all(a >= b for a, b in itertools.pairwise(widths))
    # A calibration that drops a stack's families one by one: the band never narrows.
    counts = dict(default.report["stack_config_families"])
    previous = 0.0
    for k in (16, 8, 4, 2, 1, 0):
        counts["nemo"] = k
        thinner = dataclasses.replace(default, report={**default.report, "stack_config_families": counts})
        width = _width(thinner.interval(stack="nemo")) if k else _width(thinner.interval(known_stack=False))
        assert width >= previous
        previous = width


def test_the_band_is_the_held_out_errors_convolved_with_the_stack_effect() -> None:
    from estimator.calibrate import Z90, band_multipliers

    band = {"log_sigma": 0.1, "p10_multiplier": 0.88, "p90_multiplier": 1.14}
    # Without held-out errors: the normal of log_sigma, widened in quadrature (the older rule).
    plain = band_multipliers(band, None, 0.2)
    extra = Z90 * (np.hypot(0.1, 0.2) - 0.1)
    assert plain["p10_multiplier"] == pytest.approx(0.88 * np.exp(-extra))
    assert plain["log_sigma"] == pytest.approx(np.hypot(0.1, 0.2))
    # Normal held-out errors: the convolution is the normal of the summed variances.
    errors = np.random.default_rng(0).normal(0.0, 0.1, 20_000)
    wide = band_multipliers(band, errors, 0.2)
    assert np.log(wide["p90_multiplier"]) == pytest.approx(Z90 * np.hypot(0.1, 0.2), rel=0.03)
    assert np.log(wide["p10_multiplier"]) == pytest.approx(-Z90 * np.hypot(0.1, 0.2), rel=0.03)
    # Heavy-tailed errors (mostly tight, a few far off): wider than adding the stack term to the quantiles would be.
    heavy = np.concatenate([np.random.default_rng(1).normal(0.0, 0.03, 900), np.full(50, 0.4), np.full(50, -0.4)])
    lo, hi = np.quantile(heavy, (0.1, 0.9))
    sd = float(np.std(heavy))
    quad = Z90 * (np.hypot(sd, 0.2) - sd)
    conv = band_multipliers({"log_sigma": sd, "p10_multiplier": np.exp(-hi), "p90_multiplier": np.exp(-lo)}, heavy, 0.2)
    assert _width(conv) > (hi - lo) + 2 * quad


def test_the_default_band_holds_about_eighty_percent_of_held_out_runs() -> None:
    coverage = load_default().report["band_coverage"]
    # An unknown stack's band (leave-one-stack-out) adds the between-stack spread, so it over-covers: 0.94 of runs
    # until the refit on driver-visible memory, 0.96 since (NeMo's held-out runs moved inside it). Not tuned here.
    for split, most in (("leave_one_stack_out", 0.97), ("leave_one_config_family_out", 0.95)):
        assert 0.75 <= coverage[split]["mean_over_stacks"] <= most, split
        assert 0.75 <= coverage[split]["share_of_runs"] <= most, split
    # Wider where the evidence is thin: an unseen stack's band is over twice a known config's.
    widths = {split: coverage[split]["median_log_width"] for split in coverage}
    assert widths["leave_one_stack_out"] > 2 * widths["leave_one_config_family_out"]


# --------------------------------------------------------------------------------------------------- a user's scope

# An outsider's MI300X team: Llama 3.1 8B, torchtitan FSDP, 1 to 32 GPUs (the level her report anchors to published
# figures; the knee at the node boundary is hers).
MI300X_TEAM = (
    "gpu,num_gpus,params_b,layers,hidden,heads,ffn_hidden,vocab,seq_len,global_batch,micro_batch,precision,strategy,"
    "tp,pp,cp,activation_checkpointing,tokens_per_s,source,stack\n"
    + "".join(
        f"mi300x,{n},8.03,32,4096,32,14336,128256,8192,{2 * n},2,bf16,fsdp,1,1,1,true,{t},team,torchtitan\n"
        for n, t in ((1, 4500), (2, 8800), (4, 17400), (8, 34160), (16, 62400), (32, 121600))
    )
)


@pytest.fixture(scope="module")
def mi300x_team() -> Calibration:
    return fit(read_runs_csv(MI300X_TEAM), name="mi300x-team", prior=load_default())


def test_a_users_calibration_predicts_families_and_stacks_it_has_no_runs_of_as_its_base(
    mi300x_team: Calibration,
) -> None:
    """Her MI300X runs moved cluster_eff to 0.42, and every published H100, A100 and B200 run fell to 0.42-0.62x of
    the default's prediction (an H100 torchtitan row from 1.01x to 0.43x of its measurement)."""
    default = load_default()
    public = public_runs()
    np.testing.assert_allclose(
        predict_runs(public, mi300x_team).tokens_per_s, predict_runs(public, default).tokens_per_s, rtol=1e-9
    )
    # Her own runs still move to her measurements (the default predicts them 1.7-2.0x).
    runs = read_runs_csv(MI300X_TEAM)
    measured = np.array([r.tokens_per_s for r in runs])
    ratio = predict_runs(runs, mi300x_team).tokens_per_s / measured
    assert np.all(np.abs(np.log(ratio)) < 0.15)
    # Her GPU with another stack is not hers either.
    nemo = [dataclasses.replace(r, stack="nemo") for r in runs]
    np.testing.assert_allclose(
        predict_runs(nemo, mi300x_team).tokens_per_s, predict_runs(nemo, default).tokens_per_s, rtol=1e-9
    )
    assert mi300x_team.report["scope"]["gpu_families"] == ["cdna3"]
    assert mi300x_team.report["scope"]["stacks"] == ["torchtitan"]


def test_a_users_calibration_covers_the_family_and_stack_pairs_its_runs_measured(mi300x_team: Calibration) -> None:
    """A hostile probe: runs of H100 torchtitan and A100 DeepSpeed predicted H100 DeepSpeed at 2x the default with no
    note, the scope being every family times every stack of the runs."""
    assert [list(pair) for pair in mi300x_team.report["scope"]["pairs"]] == [["cdna3", "torchtitan"]]
    scope = {
        "gpu_families": ["a100", "hopper"],
        "stacks": ["deepspeed", "torchtitan"],
        "pairs": [["a100", "deepspeed"], ["hopper", "torchtitan"]],
    }
    two = dataclasses.replace(mi300x_team, report={**mi300x_team.report, "scope": scope})
    assert two.covers(family="hopper", stack="torchtitan") and two.covers(family="a100", stack="deepspeed")
    assert not two.covers(family="hopper", stack="deepspeed") and not two.covers(family="a100", stack="torchtitan")
    assert two.covers(family="hopper", stack=None) and not two.covers(family="blackwell", stack=None)
    base, note = two.scoped(family="hopper", stack="deepspeed")
    assert base is two.base and note and "hopper with torchtitan" in note
    # A calibration stored before pairs were recorded keeps its families-times-stacks reading.
    older = dataclasses.replace(two, report={**two.report, "scope": {k: v for k, v in scope.items() if k != "pairs"}})
    assert older.covers(family="hopper", stack="deepspeed")


def test_a_prediction_outside_a_users_calibration_uses_its_base_and_says_so(mi300x_team: Calibration) -> None:
    from estimator import predict
    from estimator.specs import get_gpu
    from estimator.workload import Cluster, TrainingJob

    default = load_default()
    job = TrainingJob(params_b=8, seq_len=8192, global_batch=512, stack="torchtitan")
    h100 = Cluster(get_gpu("h100-sxm"))
    user, base = predict(job, h100, [8, 64, 512], mi300x_team), predict(job, h100, [8, 64, 512], default)
    np.testing.assert_allclose(user.tokens_per_s, base.tokens_per_s, rtol=1e-9)
    assert (user.p10_multiplier, user.p90_multiplier) == (base.p10_multiplier, base.p90_multiplier)
    assert any("mi300x-team" in note and "default (public runs)" in note for note in user.warnings)
    own = predict(job, Cluster(get_gpu("mi300x")), [8, 64], mi300x_team)
    assert not any("mi300x-team" in note for note in own.warnings)
    # Stored and read back, the scope holds.
    again = Calibration.from_dict(json.loads(json.dumps(mi300x_team.to_dict())))
    np.testing.assert_allclose(predict(job, h100, [8, 64, 512], again).tokens_per_s, base.tokens_per_s, rtol=1e-9)


def test_a_calibration_that_loses_to_the_constant_mfu_baseline_on_its_held_out_runs_says_so(
    mi300x_team: Calibration,
) -> None:
    """Held out, her MI300X fit missed by a median 6.7% where a constant MFU missed by 4.0%: no warning."""
    from estimator.calibrate import fit_warnings

    report = mi300x_team.report
    assert report["loo_median_ape"] > report["baseline"]["loo"]["median_ape"]
    notes = [n for n in fit_warnings(name="mi300x-team", report=report) if "constant-MFU baseline" in n]
    assert len(notes) == 1 and "6.7%" in notes[0] and "4.0%" in notes[0]
    assert notes[0] in report["warnings"], "stored with the fit"
    assert fit_warnings(name="default", report=load_default().report) == []


def test_a_flagged_residual_trend_is_a_fit_warning_that_says_what_it_means(mi300x_team: Calibration) -> None:
    """Her runs lose 13-16% per GPU past the node; the fit stays flat and over-predicts 16 and 32 GPUs by 9-12%. The
    report flagged the trend, but only the fit page showed it."""
    from estimator.calibrate import fit_warnings

    report = mi300x_team.report
    assert report["residual_trend_flagged"]
    notes = [n for n in fit_warnings(name="mi300x-team", report=report) if "per doubling" in n]
    assert len(notes) == 1 and "over-predicts" in notes[0] and "larger" in notes[0]
    assert notes[0] in report["warnings"]


def test_rows_that_repeat_a_configuration_and_its_measurement_count_once(mi300x_team: Calibration) -> None:
    """The same 6 runs pasted into 1,000 rows (only the source differs) overpowered the prior (overlap 0.70 -> 0.007)
    and shrank the held-out MAPE from 7.0% to 1.6% and the band from x0.87-1.10 to x0.98-1.03."""
    header, *body = MI300X_TEAM.splitlines()
    pasted = [line.replace(",team,", f",sweep {i},") for i in range(20) for line in body]
    many = fit(read_runs_csv("\n".join([header, *pasted]) + "\n"), name="mi300x-team", prior=load_default())
    assert many.params == pytest.approx(mi300x_team.params, rel=1e-9)
    for key in ("loo_mape", "loo_median_ape", "in_sample_mape"):
        assert many.report[key] == pytest.approx(mi300x_team.report[key], rel=1e-9), key
    assert many.interval() == pytest.approx(mi300x_team.interval(), rel=1e-9)
    assert many.report["runs"] == 6 and many.report["duplicate_rows_merged"] == 114
    assert len(many.report["residuals"]) == 6
    assert any("114 row(s)" in note and "counted once" in note for note in many.report["warnings"])
    assert mi300x_team.report["duplicate_rows_merged"] == 0


def test_a_users_calibration_judges_its_own_stack_and_an_unnamed_one_by_its_own_held_out_runs(
    mi300x_team: Calibration,
) -> None:
    """All of a team's runs were stack `other` (or the scenario named none), and the Advice said the calibration
    'was never checked on stack other': held_out_accuracy treated the pooled label as unknown."""
    header, *body = MI300X_TEAM.splitlines()
    other = fit(
        read_runs_csv("\n".join([header, *(line.replace("torchtitan", "other") for line in body)]) + "\n"),
        name="other-team",
        prior=load_default(),
    )
    for calibration, stack in ((other, "other"), (other, None), (mi300x_team, "torchtitan"), (mi300x_team, None)):
        accuracy = calibration.held_out_accuracy(stack=stack, known_stack=stack is not None)
        assert accuracy["held_out_median_ape"] == calibration.report["loo_median_ape"], stack
        assert accuracy["held_out"] == "leave-one-configuration-out"
        assert accuracy["baseline_held_out_median_ape"] == calibration.report["baseline"]["loo"]["median_ape"]
    # A stack it has no runs of is not judged by them: the base predicts it; the shipped default's rule is unchanged.
    assert mi300x_team.held_out_accuracy(stack="nemo") == load_default().held_out_accuracy(stack="nemo")
    assert load_default().held_out_accuracy(stack="other")["held_out"] == "leave-one-stack-out"
    assert load_default().held_out_accuracy(stack=None, known_stack=False)["held_out"] == "leave-one-stack-out"


@pytest.fixture(scope="module")
def nanotron_team() -> tuple[list, Calibration]:
    """26 nanotron runs no fit reads (an ML lead uploaded them as her team's own): refined from the default."""
    from estimator.specs import DATA_DIR

    runs = read_runs_csv((DATA_DIR / "unseen_runs_2.csv").read_text(encoding="utf-8"))
    return runs, fit(runs, name="nanotron-team", prior=load_default())


def test_a_refinement_reports_its_prior_on_the_same_held_out_runs_and_warns_only_when_the_runs_show_it_wins(
    nanotron_team: tuple[list, Calibration],
) -> None:
    """The team's calibration missed its own held-out runs by a median 15.6% where the default, never refitted on
    them, missed by 8.8% (13.3% against 8.8% since the refit that reduces gradients over the data- x context-parallel
    ranks): the report compares the two on the same runs, run by run. The default is better on 10 of the 26 runs
    only (one-sided paired Wilcoxon p = 0.81 since that refit; 12 and 0.65 after the one that shards states over
    the context-parallel ranks, 15 and 0.34 before it, 14 and 0.43 before the refit on driver-visible memory, 15
    and 0.18 before the earlier 2026-12-06 refit), which does not show it better: no advice to keep it (the
    median alone told three teams to keep the default their own fits beat on held-back runs,
    test_calibrate_team.py); runs the default does predict better still get it (same file)."""
    from estimator.calibrate import fit_warnings, prior_comparison

    runs, team = nanotron_team
    report = team.report
    prior = report["prior_on_held_out"]
    assert prior["name"] == load_default().name
    measured = np.array([run.measured_tokens_per_s for run in runs])
    by_default = predict_runs(runs, load_default()).tokens_per_s
    assert prior["median_ape"] == pytest.approx(float(np.median(np.abs(by_default / measured - 1))), abs=0.01)
    np.testing.assert_allclose(prior["predicted_tokens_per_s"], by_default, rtol=1e-9)
    assert prior["median_ape"] < report["loo_median_ape"]
    comparison = prior_comparison(report)
    assert comparison is not None and comparison["runs"] == 26
    assert comparison["prior_better_runs"] == 10 and comparison["p_value"] > 0.05 and not comparison["prior_better"]
    assert not [n for n in fit_warnings(name=team.name, report=report) if "predicts these runs better" in n]


def test_no_prior_warning_when_the_refinement_beats_its_prior() -> None:
    from estimator.calibrate import fit_report_warnings

    report = {"loo_median_ape": 0.05, "prior_on_held_out": {"name": "default (public runs)", "median_ape": 0.20}}
    assert not [n for n in fit_report_warnings(name="ours", report=report) if "predicts these runs better" in n]


def test_parameters_pinned_at_a_bound_are_warned_for_any_calibration(nanotron_team: tuple[list, Calibration]) -> None:
    """nvlink_eff fitted to 0.200 (its lower bound) and fabric_eff to 0.999 (its upper), both moved by the data, with
    no warning: the at-bound rule was the public fit's only. (Refined from today's default, fabric_eff 1.000 is
    pinned; overlap 0.000 was pinned beside it before the refit that shards states over the context-parallel ranks.)"""
    from estimator.calibrate import fit_warnings

    _, team = nanotron_team
    pinned = [note for note in fit_warnings(name=team.name, report=team.report) if "pinned at a bound" in note]
    assert len(pinned) == 1
    assert "fabric_eff 1.000 (its upper bound" in pinned[0]
    default = load_default()
    assert not [n for n in fit_warnings(name=default.name, report=default.report) if "pinned at a bound" in n]


def test_a_job_naming_no_stack_is_described_as_predicted_the_way_it_is() -> None:
    """README said a job naming no stack on a team's family 'counts as yours'; an ML lead read it as the team's stack,
    but it is predicted by the team's calibration with the stacks' prior mean for its stack effect (1.1% above
    `stack: other`, with the note 'Software stack unknown'). The README and the stored scope rule say so."""
    from pathlib import Path

    from estimator.calibrate import refine_scope

    runs = [r for r in public_runs() if r.gpu == "h100-sxm"][:2]
    rule = refine_scope(runs, base="default (public runs)")["rule"]
    assert "stacks' prior mean" in rule and "name the stack" in rule
    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert "counts as yours" not in readme
    assert "predicted by your calibration with the stacks' prior mean for its stack effect" in readme
