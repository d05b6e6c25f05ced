"""`python manage.py estimate_inference --points IN.csv [--out OUT.csv]`: rows back with the predictions; exit 2
naming row and column on a bad row."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

HEADER = "gpu,precision,model,params_b,layers,hidden,heads,kv_heads,tp,concurrency,input_tokens,output_tokens,note"
GOOD = (
    "h100-sxm,fp8,llama-3.3-70b,,,,,,2,50,1000,1000,catalog id\n"
    "h100-sxm,bf16,,7,32,4096,32,32,1,10,500,200,geometry without GQA\n"
    "h200,fp8,mixtral-8x7b,,,,,,2,64,128,128,moe\n"
    "h100-sxm,bf16,llama-3.1-70b,,,,,,1,1,1000,1000,does not fit\n"
)


def run(tmp_path: Path, body: str, *extra: str) -> str:
    path = tmp_path / "points.csv"
    path.write_text(f"{HEADER}\n{body}")
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), *extra, stdout=out)
    return out.getvalue()


def test_adds_the_prediction_columns_and_keeps_the_others(tmp_path: Path) -> None:
    rows = list(csv.DictReader(io.StringIO(run(tmp_path, GOOD))))
    assert [r["note"] for r in rows] == ["catalog id", "geometry without GQA", "moe", "does not fit"]
    for r in rows[:3]:
        assert float(r["predicted_output_tokens_per_s"]) > 0
        assert 0 < float(r["predicted_ttft_s"]) <= float(r["predicted_ttft_p95_s"])
        assert 0 < float(r["predicted_tpot_s"]) <= float(r["predicted_tpot_p95_s"])
        assert int(r["max_concurrency"]) >= 1
        assert r["fits_memory"] == "true"
    # The geometry row leaves its vocabulary and MLP width to the catalog's rules, and the note says so; the shape
    # that makes holds 7.02B, which its weights and FLOPs count (as the advice's note says for the same model).
    # Each note then says what the prediction rests on (estimator.inference.notes): here the engine picked for it
    # and, for Mixtral, the uniform routing.
    picked = "no stack given: sized for trtllm, the default where it runs"
    assert [r["prediction_note"] for r in rows[:3]] == [
        picked,
        "assumed 32 layers x 4096 hidden, 32 heads, 32 KV heads: vocabulary of 128,256 tokens (not given); "
        "MLP width derived from params_b (not given); FLOPs and weights from the geometry's 7.02B parameters, not "
        f"params_b 7B (the sizes given hold that many); {picked}",
        f"{picked}; mixture of experts (2 of 8 experts per token): tokens assumed routed uniformly (no expert load "
        "imbalance), so the expert weights a step reads and its expert GEMMs are those of an even spread",
    ]
    # 141 GB of bf16 weights on one 80 GB GPU: no prediction (empty cells, as for every latency), no capacity.
    assert rows[3]["predicted_output_tokens_per_s"] == "" and rows[3]["max_concurrency"] == "0"
    assert rows[3]["predicted_ttft_s"] == "" and rows[3]["predicted_tpot_p95_s"] == ""
    assert rows[3]["fits_memory"] == "false"


def test_a_p95_latency_is_never_below_its_mean(tmp_path: Path) -> None:
    # An outsider's rows: p95 TTFT 0.123728 s under the mean 0.124083 s, and 0.599439 s under 0.601894 s (a few
    # simulated requests out of 600 waited a whole batched prefill more and pulled the mean above the p95).
    body = "h100-sxm,fp8,llama-3.1-8b,,,,,,1,200,200,200,\nh100-sxm,fp8,llama-3.3-70b,,,,,,2,200,200,200,\n"
    for r in csv.DictReader(io.StringIO(run(tmp_path, body))):
        assert float(r["predicted_ttft_p95_s"]) >= float(r["predicted_ttft_s"]) > 0
        assert float(r["predicted_tpot_p95_s"]) >= float(r["predicted_tpot_s"]) > 0


def test_a_row_that_fits_no_memory_says_so_and_why(tmp_path: Path) -> None:
    # An outsider's rows came back with exit 0, empty predictions and max_concurrency 0, and no reason; the training
    # estimate marks the same case fits_memory false.
    body = "h100-sxm,fp8,llama-3.1-405b,,,,,,1,10,100,100,\nh200,fp8,deepseek-v3,,,,,,1,10,100,100,\n"
    big, moe = csv.DictReader(io.StringIO(run(tmp_path, body)))
    for r in (big, moe):
        assert r["fits_memory"] == "false" and r["max_concurrency"] == "0" and r["predicted_ttft_s"] == ""
    assert big["prediction_note"] == "does not fit 1 x 80 GB with a KV cache for 200 tokens"
    assert moe["prediction_note"] == "does not fit 1 x 141 GB with a KV cache for 200 tokens"


def test_tp_beyond_the_nvlink_domain_is_refused_for_a_dense_model_and_noted_for_experts(tmp_path: Path) -> None:
    # An outsider's probe: tp 16 of a dense model on 8-GPU H100 servers was predicted without a word. Only a mixture
    # of experts spans servers (expert parallelism, as the advice sizes it); its collectives then cross the
    # scale-out network, which the prediction models and now says.
    with pytest.raises(CommandError) as caught:
        run(tmp_path, "h100-sxm,fp8,llama-3.3-70b,,,,,,16,10,100,100,\n")
    assert caught.value.returncode == 2
    assert "row 1, column tp: must be at most 8 for a dense model on h100-sxm" in str(caught.value)
    # A PCIe card's group is its server, not an NVLink domain (a reviewer: "its 8-GPU NVLink domain" of an L40S).
    with pytest.raises(CommandError) as caught:
        run(tmp_path, "l40s,fp8,llama-3.3-70b,,,,,,16,10,100,100,\n")
    assert "stays within its 8-GPU PCIe server;" in str(caught.value)
    with pytest.raises(CommandError) as caught:  # an AMD GPU's link is xGMI, not NVLink (a reviewer)
        run(tmp_path, "mi300x,bf16,llama-3.3-70b,,,,,,16,10,100,100,\n")
    assert "stays within its 8-GPU xGMI domain;" in str(caught.value)
    (row,) = csv.DictReader(io.StringIO(run(tmp_path, "h200,fp8,deepseek-v3,,,,,,16,10,100,100,\n")))
    assert row["fits_memory"] == "true" and float(row["predicted_output_tokens_per_s"]) > 0
    assert row["prediction_note"].startswith(
        "tp 16 spans 2 NVLink domains of 8 GPUs: its collectives run over the scale-out network; "
    )


def test_the_same_deployment_at_higher_concurrency_gives_more_tokens_and_slower_tokens(tmp_path: Path) -> None:
    body = "".join(f"h100-sxm,fp8,llama-3.1-8b,,,,,,1,{n},1000,1000,\n" for n in (1, 16, 128, 1024))
    rows = list(csv.DictReader(io.StringIO(run(tmp_path, body))))
    tput = [float(r["predicted_output_tokens_per_s"]) for r in rows]
    tpot = [float(r["predicted_tpot_s"]) for r in rows]
    ttft = [float(r["predicted_ttft_s"]) for r in rows]
    assert tput == sorted(tput) and tpot == sorted(tpot) and ttft == sorted(ttft)
    cap = int(rows[0]["max_concurrency"])
    assert cap < 1024 and ttft[-1] > 10 * ttft[0]  # past the batch cap requests wait for a slot


def test_writes_the_out_file(tmp_path: Path) -> None:
    out = tmp_path / "out.csv"
    assert run(tmp_path, GOOD, "--out", str(out)) == ""
    assert "predicted_tpot_s" in out.read_text().splitlines()[0]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ("h100-sxm,fp8,llama-9,,,,,,1,1,100,100,\n", "row 1, column model: unknown model 'llama-9'"),
        ("h100-sxm,fp8,,70,32,4096,32,8,1,1,100,100,\n", "row 1, column model: layers/hidden/heads imply"),
        ("h100-sxm,fp8,,,,,,,1,1,100,100,\n", "row 1, column model: give a catalog model id or params_b"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1.5,100,100,\n", "row 1, column concurrency: must be a positive whole"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,100,100,\nnope,fp8,llama-3.1-8b,,,,,,1,1,1,1,\n", "row 2, column gpu"),
        ("h100-sxm,fp4,llama-3.1-8b,,,,,,1,1,100,100,\n", "row 1, column precision: 'fp4' is not supported"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,,100,\n", "row 1, column input_tokens: is required"),
        # An outsider's probe: float() read these as 10, 2 and 1; a 1e300 was echoed as a 300-digit sum.
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1_0,100,100,\n", "row 1, column concurrency: must be a positive whole"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,\u0662,1,100,100,\n", "row 1, column tp: must be a positive whole"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,\uff11,100,100,\n", "row 1, column concurrency: must be a positive whole"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,1e300,100,\n", "row 1, column input_tokens: must be at most 10,000,000"),
        ("h100-sxm,fp8,llama-2-7b,,,,,,1,1,4000,200,\n", "input_tokens + output_tokens = 4,200 exceeds llama-2-7b"),
        # The prompt fits the context and the answer makes it too long: the answer is named (it was input_tokens).
        (
            "h100-sxm,fp8,llama-3.1-8b,,,,,,1,10,100,10000000,\n",
            "row 1, column output_tokens: input_tokens + output_tokens = 10,000,100 exceeds llama-3.1-8b's context",
        ),
    ],
)
def test_bad_row_exits_2_naming_row_and_column(tmp_path: Path, body: str, says: str) -> None:
    with pytest.raises(CommandError) as caught:
        run(tmp_path, body)
    assert caught.value.returncode == 2
    assert says in str(caught.value)


def test_missing_column_and_unreadable_file_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "points.csv"
    path.write_text("gpu,precision,model,tp\nh100-sxm,fp8,llama-3.1-8b,1\n")
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2 and "header, column concurrency: missing column" in str(caught.value)
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(tmp_path / "none.csv"), stdout=io.StringIO())
    assert caught.value.returncode == 2 and "--points: cannot read" in str(caught.value)


@pytest.mark.parametrize(
    ("body", "column", "says"),
    [
        # Llama 3.1 8B has 32 attention heads: tensor parallelism over 3 GPUs cannot split them.
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,3,8,1000,200,\n", "tp", "must divide the model's 32 attention heads"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,8,1000,0.5,\n", "output_tokens", "positive whole number"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,8,999.5,200,\n", "input_tokens", "positive whole number"),
        # 131,072 tokens is Llama 3.1's published context (max_position_embeddings).
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,3000000,200,\n", "input_tokens", "context of 131,072 tokens"),
        # A prompt of the whole context leaves no room for one output token: the prompt is what is too long.
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,131072,1,\n", "input_tokens", "context of 131,072 tokens"),
        ("h100-sxm,fp8,llama-3.1-8b,,,,,,1,1,131000,100,\n", "output_tokens", "the prompt leaves 72 for the answer"),
    ],
)
def test_a_point_the_engine_could_not_run_is_refused_naming_the_column(
    tmp_path: Path, body: str, column: str, says: str
) -> None:
    with pytest.raises(CommandError) as caught:
        run(tmp_path, body)
    assert f"row 1, column {column}" in str(caught.value) and says in str(caught.value)


def test_experts_without_active_experts_asks_for_them(tmp_path: Path) -> None:
    path = tmp_path / "points.csv"
    path.write_text(
        "gpu,precision,params_b,layers,hidden,heads,kv_heads,experts,tp,concurrency,input_tokens,output_tokens\n"
        "h100-sxm,bf16,47,32,4096,32,8,8,2,8,500,200\n"
    )
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert "row 1, column active_experts: is required with experts" in str(caught.value)


def test_attention_data_parallel_is_a_column_for_moe_points(tmp_path: Path) -> None:
    path = tmp_path / "dep.csv"
    path.write_text(
        "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack,attention_dp\n"
        "h200,fp8,deepseek-v3,8,1500,1024,8192,trtllm_bench,true\n"
        "h200,fp8,deepseek-v3,8,1500,1024,8192,trtllm_bench,\n"
    )
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    dep, tensor = csv.DictReader(io.StringIO(out.getvalue()))
    assert int(dep["max_concurrency"]) > 4 * int(tensor["max_concurrency"])
    assert float(dep["predicted_output_tokens_per_s"]) > float(tensor["predicted_output_tokens_per_s"])


@pytest.mark.parametrize(
    ("row", "says"),
    [
        ("h100-sxm,fp8,llama-3.1-70b,2,8,1000,100,,true", "row 1, column attention_dp: applies to mixture-of-experts"),
        ("h200,fp8,deepseek-v3,1,8,1000,100,,true", "row 1, column attention_dp: needs tp of at least 2"),
        ("h200,fp8,deepseek-v3,8,8,1000,100,,maybe", "row 1, column attention_dp: must be true or false"),
    ],
)
def test_attention_data_parallel_on_a_point_it_cannot_apply_to_exits_2(tmp_path: Path, row: str, says: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(f"gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack,attention_dp\n{row}\n")
    with pytest.raises(CommandError, match=says) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2


def test_geometry_that_contradicts_the_catalog_model_is_refused_as_the_api_refuses_it(tmp_path: Path, db: None) -> None:
    # An outsider's probe: a llama-3.1-8b row with 80 layers x 8192 hidden exited 0 with the plain 8B prediction,
    # and experts on a dense catalog model were dropped the same way; the API refused the same model with 400.
    from advisor.scenario import ScenarioError, parse_scenario

    with pytest.raises(CommandError) as caught:
        run(tmp_path, "h100-sxm,bf16,llama-3.1-8b,,80,8192,64,8,1,64,1000,1000,\n")
    assert caught.value.returncode == 2
    said = "llama-3.1-8b has layers 32; got 80 (leave it out)"
    assert f"row 1, column layers: {said}" in str(caught.value)
    with pytest.raises(ScenarioError) as api:
        parse_scenario(
            {"workload": {"kind": "inference", "model": {"name": "llama-3.1-8b", "layers": 80}}, "gpu": "h100-sxm"}
        )
    assert api.value.errors[0]["pointer"] == "/workload/model/layers" and said in api.value.errors[0]["message"]
    path = tmp_path / "experts.csv"
    path.write_text(
        "gpu,precision,model,experts,active_experts,tp,concurrency,input_tokens,output_tokens\n"
        "h100-sxm,bf16,mixtral-8x7b,8,2,2,8,100,100\n"
        "h100-sxm,bf16,llama-3.1-8b,8,2,1,8,100,100\n"
    )
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert "row 2, column experts: llama-3.1-8b has experts 0; got 8" in str(caught.value)
    assert "row 1" not in str(caught.value)  # the catalog's own geometry, repeated, is accepted


def test_attention_dp_ranks_each_schedule_their_own_token_budget(tmp_path: Path) -> None:
    # A hostile probe: one max_num_tokens for the whole group stalled decoding near 4,096 requests whatever the tp:
    # 8,192 clients on 16 GPUs (capacity 17,899) waited 250 s for a first token.
    path = tmp_path / "dep.csv"
    path.write_text(
        "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack,attention_dp\n"
        "h200,fp8,deepseek-v3,16,8192,1024,1024,trtllm_bench,true\n"
    )
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    (row,) = csv.DictReader(io.StringIO(out.getvalue()))
    assert int(row["max_concurrency"]) > 8192 and float(row["predicted_ttft_s"]) < 30


def test_attention_dp_needs_a_tp_that_divides_the_experts(tmp_path: Path) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(
        "gpu,precision,model,tp,concurrency,input_tokens,output_tokens,stack,attention_dp\n"
        "h100-sxm,fp8,mixtral-8x7b,16,8,1000,100,,true\n"
    )
    with pytest.raises(CommandError, match="row 1, column tp: must divide the model's 8 experts") as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2


@pytest.mark.parametrize("column", ["Attention_DP", "attention-dp", "Stack"])
def test_a_known_column_spelled_otherwise_is_refused_not_ignored(tmp_path: Path, column: str) -> None:
    path = tmp_path / "cased.csv"
    path.write_text(
        f"gpu,precision,model,tp,concurrency,input_tokens,output_tokens,{column}\n"
        "h200,fp8,deepseek-v3,8,64,1024,1024,true\n"
    )
    with pytest.raises(CommandError, match=f"column {column}: write it ") as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2


def test_the_help_says_concurrency_is_a_closed_loop_unlike_advises_poisson_arrivals() -> None:
    # An outsider's check: at advise's own batch, estimate_inference gave a p95 TTFT of 2.55 s where advise said
    # 1.09 s; neither said that one loads the replica with N clients started together and the other with random
    # arrivals at a rate.
    from advisor.management.commands.estimate_inference import Command

    said = " ".join(Command.help.split())
    assert "closed loop" in said and "start together" in said
    assert "Poisson" in said and "advise" in said
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    row = next(line for line in readme.splitlines() if "estimate_inference --points" in line)
    assert "closed loop" in row or "closed loop" in readme.split("estimate_inference --points", 1)[1][:600]


def test_a_row_given_by_params_b_says_what_its_prediction_assumed(tmp_path: Path) -> None:
    """An outsider's probe: a params_b 46.7 row was served as a dense 68 x 7168 model with 8 KV heads (46.9 tokens/s
    where Mixtral gives 161) and its prediction_note was empty; a name with another params_b was replaced silently."""
    body = "h100-sxm,bf16,,46.7,,,,,2,1,1000,200,\nh100-sxm,bf16,llama-3.1-70b,80,,,,,2,1,1000,200,\n"
    derived, named = csv.DictReader(io.StringIO(run(tmp_path, body)))
    note = derived["prediction_note"]
    assert note.startswith("assumed 68 layers x 7168 hidden, 56 heads, 8 KV heads: dense (no experts")
    assert "8 KV heads (not given)" in note
    assert named["prediction_note"].startswith("assumed params_b 80 replaced by llama-3.1-70b's 70.6; ")
    # A 0.5B row with no geometry was refused: "layers/hidden/heads imply 0.6B parameters, 16% away ... fix the
    # geometry" (the derived 1 x 2048 shape); its derivation now makes params_b.
    (small,) = csv.DictReader(io.StringIO(run(tmp_path, "h100-sxm,bf16,,0.5,,,,,1,1,100,100,\n")))
    assert float(small["predicted_output_tokens_per_s"]) > 0 and "15 layers x 1280 hidden" in small["prediction_note"]


LLAMA_2_7B_ROWS = (
    # The TensorRT-LLM v0.9 static-batch table's Llama-2-7B rows (FP8, 128/2048 and 2048/2048 tokens).
    "h100-sxm,fp8,{model},{params_b},{geometry},1,120,128,2048,trtllm_v0.9\n"
    "l40s,fp8,{model},{params_b},{geometry},1,64,128,2048,trtllm_v0.9\n"
    "l40s,fp8,{model},{params_b},{geometry},1,16,2048,2048,trtllm_v0.9\n"
)


def test_ffn_hidden_and_vocab_columns_are_read_as_the_api_reads_them(tmp_path: Path) -> None:
    """A serving lead's probe: Llama-2 7B given as 6.74 / 32 x 4096 / 32 heads with ffn_hidden 11008 and vocab 32000
    (no kv_heads) had both columns dropped: read with 8 KV heads and a 128,256 vocabulary "(not given)", 1.2-1.66x
    over the v0.9 table and max_concurrency 245 on L40S where the catalog's llama-2-7b gives 62."""
    path = tmp_path / "points.csv"
    header = "gpu,precision,model,params_b,layers,hidden,heads,kv_heads,ffn_hidden,vocab,tp,concurrency,"
    header += "input_tokens,output_tokens,stack\n"
    geometry = "32,4096,32,,11008,32000"
    path.write_text(
        header
        + LLAMA_2_7B_ROWS.format(model="", params_b="6.74", geometry=geometry)
        + LLAMA_2_7B_ROWS.format(model="llama-2-7b", params_b="", geometry=",,,,,")
    )
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    rows = list(csv.DictReader(io.StringIO(out.getvalue())))
    given, named = rows[:3], rows[3:]
    for g, n in zip(given, named, strict=True):
        assert "vocabulary" not in g["prediction_note"] and "MLP width" not in g["prediction_note"]
        assert g["max_concurrency"] == n["max_concurrency"]
        # Within the catalog's published 6.74B against the 6.738B the given shape holds (its weights and FLOPs).
        assert float(g["predicted_output_tokens_per_s"]) == pytest.approx(
            float(n["predicted_output_tokens_per_s"]), rel=1e-3
        )
    assert given[0]["prediction_note"].startswith("assumed 32 layers x 4096 hidden, 32 heads, 32 KV heads")


@pytest.mark.parametrize(("column", "value"), [("ffn_hidden", "11008.5"), ("vocab", "-1"), ("vocab", "many")])
def test_a_bad_ffn_hidden_or_vocab_exits_2_naming_row_and_column(tmp_path: Path, column: str, value: str) -> None:
    path = tmp_path / "points.csv"
    cells = {"ffn_hidden": "11008", "vocab": "32000", column: value}
    path.write_text(
        "gpu,precision,params_b,layers,hidden,heads,ffn_hidden,vocab,tp,concurrency,input_tokens,output_tokens\n"
        f"h100-sxm,fp8,6.74,32,4096,32,{cells['ffn_hidden']},{cells['vocab']},1,8,100,100\n"
    )
    with pytest.raises(CommandError) as caught:
        call_command("estimate_inference", "--points", str(path), stdout=io.StringIO())
    assert caught.value.returncode == 2
    assert f"row 1, column {column}: must be a positive whole number" in str(caught.value)


def test_a_geometry_labelled_off_its_count_is_predicted_on_the_count_it_holds(tmp_path: Path) -> None:
    """As the advice sizes it (estimator.catalog.work_params_b): Llama-2 7B's shape labelled 7.7B holds 6.74B, and
    its weights and FLOPs are those; the note says so."""
    path = tmp_path / "points.csv"
    header = "gpu,precision,params_b,layers,hidden,heads,ffn_hidden,vocab,tp,concurrency,input_tokens,output_tokens\n"
    path.write_text(
        header
        + "h100-sxm,bf16,7.7,32,4096,32,11008,32000,1,64,2048,512\n"
        + "h100-sxm,bf16,6.74,32,4096,32,11008,32000,1,64,2048,512\n"
    )
    out = io.StringIO()
    call_command("estimate_inference", "--points", str(path), stdout=out)
    labelled, held = csv.DictReader(io.StringIO(out.getvalue()))
    assert "FLOPs and weights from the geometry's 6.74B parameters, not params_b 7.7B" in labelled["prediction_note"]
    assert labelled["max_concurrency"] == held["max_concurrency"]
    for column in ("predicted_output_tokens_per_s", "predicted_ttft_s", "predicted_tpot_s"):
        assert float(labelled[column]) == pytest.approx(float(held[column]))
