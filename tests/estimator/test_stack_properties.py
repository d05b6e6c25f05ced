"""Issue 13, second pass: what a software stack's documentation says (attention kernel, tensor-parallel overlap) is a
stack property with a source (estimator/data/stacks.csv), and the random-effects fit keeps one-run stacks from
steering the shared parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from estimator import fitting, model
from estimator.calibrate import Calibration, fit, load_default, public_runs, stack_label
from estimator.prediction import FAMILIES, STACK_INDEX, UNKNOWN_STACK, case_table, job_queries, run_queries
from estimator.specs import get_gpu
from estimator.workload import STACKS, UNKNOWN_STACK_ROW, Cluster, TrainingJob, stack_properties


@pytest.fixture(scope="module")
def calibration() -> Calibration:
    return load_default()


def test_every_stack_has_documented_properties_with_a_source() -> None:
    table = stack_properties()
    assert set(table) == {*STACKS, UNKNOWN_STACK_ROW}
    for row in table.values():
        assert row.source.strip(), row.stack
        assert row.attention_vs_fa2 > 0 and row.attention_log_width > 0
        assert row.tp_comm_overlap in (0.0, 0.5, 1.0)
    # Published: NeMo overlaps tensor-parallel collectives (userbuffers), Megatron-LM 2021 did not.
    assert table["nemo"].tp_comm_overlap == 1.0 and table["megatron-lm"].tp_comm_overlap == 0.0
    assert all(row.fsdp_prefetch in (0.0, 0.5, 1.0) for row in table.values())
    # Published: the MaxText recipes pipeline their FSDP all-gathers/reduce-scatters (XLA flags); undocumented: halfway.
    assert table["maxtext"].fsdp_prefetch == 1.0 and table[UNKNOWN_STACK_ROW].fsdp_prefetch == 0.5


def _step_times(theta: dict[str, object], stacks: list[str], tp: int) -> np.ndarray:
    job = TrainingJob(params_b=70, seq_len=4096, global_batch=64, strategy="zero1", tp=tp, pp=1, cp=1, micro_batch=1)
    q = job_queries(job, Cluster(get_gpu("h100-sxm")), [64] * len(stacks))
    q["stack"] = np.array([STACK_INDEX[s] for s in stacks])
    layout = {"strategy": q["strategy"], "tp": q["tp"], "pp": q["pp"], "cp": q["cp"], "mb": q["mb"]}
    cases = case_table(q, np.arange(len(stacks)), layout | {"ac": np.zeros(len(stacks), dtype=np.int64)})
    return model.step_time(cases, theta)


def _fsdp_step_times(theta: dict[str, object], *, strategy: str, inter_node_gbps: float) -> np.ndarray:
    """Step seconds of one 70B job on 256 H100 (32 nodes) with per-layer prefetch off and on (same stack)."""
    job = TrainingJob(params_b=70, seq_len=4096, global_batch=512, strategy=strategy, tp=1, pp=1, cp=1, micro_batch=2)
    q = job_queries(job, Cluster(get_gpu("h100-sxm"), inter_node_gbps=inter_node_gbps), [256])
    layout = {"strategy": q["strategy"], "tp": q["tp"], "pp": q["pp"], "cp": q["cp"], "mb": q["mb"]}
    cases = case_table(q, np.zeros(1, dtype=np.int64), layout | {"ac": np.full(1, model.AC_FULL, dtype=np.int64)})
    share = np.asarray(theta["fsdp_prefetch_share"])
    return np.array([model.step_time(cases, theta | {"fsdp_prefetch_share": share * 0.0 + s})[0] for s in (0.0, 1.0)])


def test_per_layer_fsdp_prefetch_hides_all_but_the_edges_and_stays_communication_bound(
    calibration: Calibration,
) -> None:
    theta = model.unpack_parameters(calibration.params, FAMILIES) | {"exposed_floor": 0.6}
    unprefetched, prefetched = _fsdp_step_times(theta, strategy="fsdp", inter_node_gbps=3200)
    assert prefetched < unprefetched * 0.9  # the fitted never-hidden share no longer applies to every layer
    # A fabric too slow for compute to hide the per-layer traffic still shows in full: 25 Gb/s per node.
    slow_unprefetched, slow_prefetched = _fsdp_step_times(theta, strategy="fsdp", inter_node_gbps=25)
    assert slow_prefetched > prefetched * 3 and slow_prefetched == pytest.approx(slow_unprefetched, rel=0.05)
    # ZeRO-1 gradients are all-reduced once per step, not per layer: the stack property does not apply.
    zero1 = _fsdp_step_times(theta, strategy="zero1", inter_node_gbps=3200)
    assert zero1[0] == pytest.approx(zero1[1])


def test_only_stacks_that_overlap_tensor_parallel_collectives_hide_them(calibration: Calibration) -> None:
    # Same efficiency for every stack, so only the documented overlap differs.
    per_stack = (model.STACK_PREFIX, model.STACK_ATTENTION_PREFIX)
    params = {k: v for k, v in calibration.params.items() if not k.startswith(per_stack)}
    theta = model.unpack_parameters(params, FAMILIES) | {"stack_attention": np.ones(len(STACKS) + 1)}
    megatron, nemo = _step_times(theta, ["megatron-lm", "nemo"], tp=8)
    assert megatron > nemo * 1.02
    megatron, nemo = _step_times(theta, ["megatron-lm", "nemo"], tp=1)
    assert megatron == pytest.approx(nemo)


def test_a_stack_without_runs_keeps_its_published_attention_kernel() -> None:
    theta = model.unpack_parameters({}, FAMILIES)
    kernels = np.asarray(theta["stack_attention"])
    table = stack_properties()
    for stack in STACKS:
        assert kernels[STACK_INDEX[stack]] == table[stack].attention_vs_fa2
    assert kernels[UNKNOWN_STACK] == table[UNKNOWN_STACK_ROW].attention_vs_fa2
    # The fit's prior for a stack's kernel is the same published centre.
    runs = public_runs()[:3]
    name = model.STACK_ATTENTION_PREFIX + "nemo"
    problem = fitting.build_problem(run_queries(runs), np.ones(3), names=[name])
    assert problem.prior[0] == table["nemo"].attention_vs_fa2 and problem.log_prior[0]


def test_one_run_stacks_move_only_the_stack_mean_not_the_shared_physics() -> None:
    # The BLOOM (deepspeed) and MaxText Llama 2 7B (maxtext) rows are one run each. With random stack effects and one
    # unit-weight residual per run they re-centre the stacks' mean (eff_base, which an unseen stack predicts with, by
    # about one stack's share) and leave every other shared parameter and every other stack's fitted level where it was.
    runs = public_runs()
    single = {"deepspeed", "maxtext"}
    assert sum(stack_label(r) in single for r in runs) == 2
    with_them = fit(runs, name="all", held_out=False).params
    without = fit([r for r in runs if stack_label(r) not in single], name="without", held_out=False).params
    assert abs(with_them["eff_base"] / without["eff_base"] - 1) < 0.08
    for name, value in without.items():
        if name.startswith(model.STACK_PREFIX):
            level = with_them["eff_base"] * with_them[name] / (without["eff_base"] * value)
            assert level == pytest.approx(1.0, abs=0.01), name
        elif name != "eff_base":
            assert with_them[name] == pytest.approx(value, rel=0.03), name


def test_assumed_noise_and_stack_spread_match_what_the_fit_measures(calibration: Calibration) -> None:
    report = calibration.report
    # sigma: LOSS_SCALE is the per-run noise of the random-effects fit; tau: the stack prior's width.
    assert 0.5 < report["within_stack_log_sigma"] / fitting.LOSS_SCALE < 2.0
    assert 0.5 < report["fitted_stack_log_spread"] / fitting.STACK_PRIOR_LOG_WIDTH < 2.0
    assert not any(p["at_bound"] for p in report["parameters"])
    assert math.isclose(report["between_stack_log_sigma"], fitting.STACK_PRIOR_LOG_WIDTH) or (
        report["between_stack_log_sigma"] == report["fitted_stack_log_spread"]
    )
