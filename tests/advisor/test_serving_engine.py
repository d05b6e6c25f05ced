"""workload.serving_engine (an outsider's finding: a Scenario could not choose the serving engine, so every inference
advice was sized with TensorRT-LLM's memory and batching settings, MI300X included, where TensorRT-LLM does not run)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from advisor.advice.inference import advise_inference
from advisor.scenario import ScenarioError, parse_scenario, scenario_for_gpu
from advisor.scenario_model import SERVING_ENGINES, rule
from estimator import inference as inf
from estimator.inference.points import estimate_points_csv
from estimator.specs import GPU_IDS, get_gpu
from tests.advisor.test_scenario import CATALOG, MINIMAL

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "advisor/schemas/scenario.schema.json").read_text())
INFERENCE: dict[str, Any] = {
    "workload": {
        "kind": "inference",
        "model": {"name": "llama-3.1-70b"},
        "precision": "bf16",
        "traffic": {"peak_requests_per_s": 5, "mean_requests_per_s": 2, "input_tokens": 2000, "output_tokens": 500},
        "latency": {"ttft_p95_s": 2, "tpot_p95_s": 0.05},
    },
    "gpu": "mi300x",
}


def doc(gpu: str = "mi300x", engine: str | None = None, base: dict[str, Any] = INFERENCE) -> dict[str, Any]:
    out = copy.deepcopy(base)
    out["gpu"] = gpu
    if engine is not None:
        out["workload"]["serving_engine"] = engine
    return out


def parse(document: dict[str, Any]) -> Any:
    return parse_scenario(document, defaults=CATALOG)


def errors(document: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ScenarioError) as caught:
        parse(document)
    return {e["pointer"]: e["message"] for e in caught.value.errors}


# --- the field ------------------------------------------------------------------------------------------------


def test_the_choices_are_the_user_facing_engines_of_the_serving_table() -> None:
    """The benchmark-only rows (trtllm_v0.9, trtllm_bench) describe the engines of published tables, not a choice."""
    assert SERVING_ENGINES == ("trtllm", "nim", "vllm", "sglang")
    assert set(SERVING_ENGINES) <= set(inf.serving_stacks())
    assert rule("/workload/serving_engine", "inference").choices == SERVING_ENGINES
    assert "serving_engine" not in rule("/workload", "training").fields


def test_every_gpu_names_its_vendor() -> None:
    assert {get_gpu(g).vendor for g in GPU_IDS} == {"NVIDIA", "AMD"}
    assert get_gpu("mi300x").vendor == "AMD" and get_gpu("h100-sxm").vendor == "NVIDIA"


@pytest.mark.parametrize(("gpu", "engine"), [("h100-sxm", "trtllm"), ("b200", "trtllm"), ("mi300x", "vllm")])
def test_left_out_the_engine_is_tensorrt_llm_where_it_runs_else_vllm(gpu: str, engine: str) -> None:
    s = parse(doc(gpu))
    assert s.workload.serving_engine == engine
    assert "/workload/serving_engine" in s.defaults_used
    normalized = s.to_dict()
    assert normalized["workload"]["serving_engine"] == engine
    jsonschema.validate(normalized, SCHEMA)
    assert parse(normalized).to_dict() == normalized


@pytest.mark.parametrize(("gpu", "engine"), [("h100-sxm", "vllm"), ("h100-sxm", "nim"), ("mi300x", "sglang")])
def test_a_given_engine_is_kept(gpu: str, engine: str) -> None:
    s = parse(doc(gpu, engine))
    assert s.workload.serving_engine == engine
    assert "/workload/serving_engine" not in s.defaults_used
    jsonschema.validate(doc(gpu, engine), SCHEMA)


@pytest.mark.parametrize("engine", ["trtllm", "nim"])
def test_an_nvidia_only_engine_on_an_amd_gpu_is_refused_naming_the_field(engine: str) -> None:
    message = errors(doc("mi300x", engine))["/workload/serving_engine"]
    assert engine in message and "NVIDIA" in message and "vllm" in message


@pytest.mark.parametrize("engine", ["trtllm_bench", "trtllm_v0.9", "TRTLLM", "tensorrt-llm", ""])
def test_other_values_are_refused_as_the_schema_refuses_them(engine: str) -> None:
    assert "/workload/serving_engine" in errors(doc("h100-sxm", engine))
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(doc("h100-sxm", engine)))


def test_a_training_scenario_refuses_it_naming_the_field() -> None:
    training = copy.deepcopy(MINIMAL)
    training["workload"]["serving_engine"] = "vllm"
    message = errors(training)["/workload/serving_engine"]
    assert "inference" in message
    assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(training))
    assert "serving_engine" not in parse(MINIMAL).to_dict()["workload"]


@pytest.mark.parametrize(
    ("engine", "gpu", "expected"),
    [
        (None, "mi300x", "vllm"),  # defaulted trtllm does not run there: that GPU's default
        ("trtllm", "mi300x", "vllm"),
        ("vllm", "mi300x", "vllm"),
        ("sglang", "b200", "sglang"),
    ],
)
def test_another_gpu_keeps_the_engine_where_it_runs_else_takes_its_default(
    engine: str | None, gpu: str, expected: str
) -> None:
    """A function of the normalized engine alone, so that the normalized scenario posted back compares the same."""
    other = scenario_for_gpu(parse(doc("h100-sxm", engine)), gpu)
    assert other.workload.serving_engine == expected


# --- the advice sizes with it ---------------------------------------------------------------------------------


def engine_rows(advice: dict[str, Any]) -> dict[str, Any]:
    return {a["pointer"]: a for a in advice["assumptions"] if a["pointer"].startswith("/serving/")}


@pytest.mark.django_db
def test_an_mi300x_is_sized_with_vllm_and_the_assumptions_say_it_was_defaulted() -> None:
    """The finding's scenario (llama-3.1-70b bf16 on mi300x): TensorRT-LLM's batch cap of 2048 and its reserve of
    every request's whole output KV sized it before; vLLM's batch cap and half the output now: max_num_seqs 1024 on
    a GPU of >= 70 GiB that is not an A100 (vLLM V1 EngineArgs.get_batch_defaults; serving_stacks.csv vllm)."""
    advice = advise_inference(doc("mi300x"))
    rows = engine_rows(advice)
    assert rows["/serving/engine"]["value"] == "vllm"
    source = rows["/serving/engine"]["source"]
    assert "defaulted" in source and "NVIDIA" in source and "serving_stacks.csv vllm" in source
    assert rows["/serving/max_batch"]["value"] == 1024 and rows["/serving/kv_output_reserved"]["value"] == 0.5
    assert rows["/serving/max_num_tokens"]["value"] == 8192
    assert max(s["max_batch"] for s in advice["sizes"]) <= 1024
    assert advice["scenario"]["workload"]["serving_engine"] == "vllm"


@pytest.mark.django_db
def test_a_given_engine_sizes_the_deployments_and_is_said_given() -> None:
    default = advise_inference(doc("h100-sxm"))
    vllm = advise_inference(doc("h100-sxm", "vllm"))
    assert engine_rows(default)["/serving/engine"]["value"] == "trtllm"
    assert "defaulted" in engine_rows(default)["/serving/engine"]["source"]
    assert engine_rows(vllm)["/serving/engine"]["value"] == "vllm"
    assert "given" in engine_rows(vllm)["/serving/engine"]["source"]
    assert [s["max_batch"] for s in vllm["sizes"]] != [s["max_batch"] for s in default["sizes"]]
    assert max(s["max_batch"] for s in vllm["sizes"]) <= 1024  # vLLM's max_num_seqs on an H100
    assert engine_rows(vllm)["/serving/max_batch"]["value"] == 1024


@pytest.mark.django_db
def test_vllm_on_an_a100_states_and_uses_its_smaller_defaults() -> None:
    """vLLM V1 EngineArgs.get_batch_defaults: 256 requests / 2048 tokens per step on an A100 (excluded by name)."""
    advice = advise_inference(doc("a100-80gb", "vllm"))
    rows = engine_rows(advice)
    assert rows["/serving/max_batch"]["value"] == 256 and rows["/serving/max_num_tokens"]["value"] == 2048
    assert max(s["max_batch"] for s in advice["sizes"]) <= 256


@pytest.mark.django_db
@pytest.mark.parametrize("gpu", ["h100-sxm", "mi300x"])
def test_the_normalized_scenario_posted_back_gives_the_same_advice(gpu: str) -> None:
    other = "mi300x" if gpu == "h100-sxm" else "h100-sxm"
    first = advise_inference({**doc(gpu), "compare_gpus": [other]})
    again = advise_inference(first["scenario"])
    for key in ("sizes", "recommendation", "alternatives"):
        assert again[key] == first[key], key
    assert engine_rows(again)["/serving/engine"]["value"] == engine_rows(first)["/serving/engine"]["value"]
    if gpu == "h100-sxm":  # the MI300X row is sized with vLLM, and says so
        row = next(r for r in first["alternatives"] if r["gpu"] == "mi300x")
        assert "vllm" in row["pricing_note"]


# --- one rule with estimate_inference -------------------------------------------------------------------------

POINTS_HEADER = "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack\n"


@pytest.mark.django_db
def test_estimate_inference_refuses_an_engine_on_a_gpu_it_does_not_run_on_as_the_advice_does() -> None:
    """estimate_inference took trtllm on an MI300X without a word while the advice refused it."""
    from estimator.runs import RunValidationError

    with pytest.raises(RunValidationError) as caught:
        estimate_points_csv(POINTS_HEADER + "mi300x,bf16,llama-3.1-70b,2,8,2000,500,trtllm\n")
    (problem,) = caught.value.errors
    assert problem.column == "stack"
    assert errors(doc("mi300x", "trtllm"))["/workload/serving_engine"].startswith(problem.message)


@pytest.mark.django_db
def test_estimate_inference_left_out_the_engine_takes_the_advices_default() -> None:
    """An empty stack on an MI300X was TensorRT-LLM in estimate_inference (batch cap 996 for 8B) and vLLM (256) in
    the advice: two capacities for one deployment."""
    import csv
    import io

    text = estimate_points_csv(
        POINTS_HEADER
        + "mi300x,bf16,llama-3.1-70b,2,64,2000,500,\nmi300x,bf16,llama-3.1-70b,2,64,2000,500,vllm\n"
        + "h100-sxm,bf16,llama-3.1-70b,2,64,2000,500,\nh100-sxm,bf16,llama-3.1-70b,2,64,2000,500,trtllm\n"
    )
    rows = list(csv.DictReader(io.StringIO(text)))
    # vLLM's own cap on an MI300X is 1024 (>= 70 GiB, not an A100), so 64 concurrent 2,500-token requests are
    # bounded by KV memory: the same figure on both rows, whatever it is.
    assert rows[0]["max_concurrency"] == rows[1]["max_concurrency"]
    assert rows[0]["max_concurrency"] != rows[2]["max_concurrency"]
    assert rows[2]["max_concurrency"] == rows[3]["max_concurrency"]
    advice = advise_inference(doc("mi300x"))
    assert by_tp_max_batch(advice, 2) == by_tp_max_batch(advise_inference(doc("mi300x", "vllm")), 2)
    assert inf.serving_stack("vllm").batch_limits(inf.serving_gpu("mi300x"))[0] == 1024


def by_tp_max_batch(advice: dict[str, Any], tp: int) -> int:
    return next(int(s["max_batch"]) for s in advice["sizes"] if s["tp"] == tp)


def test_the_advice_and_the_estimator_share_one_definition_of_the_rule() -> None:
    from advisor import scenario
    from estimator.inference import engines

    assert scenario.serving_engine_problem is engines.serving_engine_problem
    assert scenario.default_serving_engine is engines.default_serving_engine


@pytest.mark.django_db
def test_an_uncalibrated_gpu_and_engine_are_warned_with_where_the_throughput_is_borrowed_from() -> None:
    """The serving calibration is TensorRT-LLM on A100/H100/H200/B200/GB200/L40S: an MI300X on vLLM was stated with
    the same accuracy and no word (an outsider's probe: 1.43x an H100's requests/s per GPU)."""
    mi300x = advise_inference(doc("mi300x"))["warnings"]
    gpu = [w for w in mi300x if "no rows on AMD Instinct MI300X" in w]
    engine = [w for w in mi300x if "no vllm rows" in w]
    assert len(gpu) == 1 and "H100" in gpu[0] and "trtllm" in gpu[0] and "accuracy" in gpu[0]
    assert len(engine) == 1 and "borrowed from trtllm" in engine[0] and "accuracy" in engine[0]
    h100 = advise_inference(doc("h100-sxm"))["warnings"]
    assert not [w for w in h100 if "serving calibration has no" in w]
    h100_vllm = advise_inference(doc("h100-sxm", "vllm"))["warnings"]
    assert [w for w in h100_vllm if "no vllm rows" in w] and not [w for w in h100_vllm if "no rows on" in w]
