"""Profiled-run import: the DESIGN.md schema, every bad cell named by row and column."""

from __future__ import annotations

import csv
import io

import numpy as np
import pytest

from estimator.calibrate import public_runs
from estimator.runs import (
    COLUMNS,
    RunValidationError,
    assumed_values,
    given_virtual_stages,
    read_runs_csv,
    runs_from_records,
    write_predictions_csv,
)

HEADER = ",".join(COLUMNS)


def _csv(*rows: str, header: str = HEADER) -> str:
    return "\n".join([header, *rows]) + "\n"


GOOD = "h100-sxm,16,8,3200,7,32,4096,32,16384,32000,4096,256,2,bf16,fsdp,1,1,1,false,,,"


def _errors(text: str) -> list[tuple[int, str, str]]:
    with pytest.raises(RunValidationError) as info:
        read_runs_csv(text)
    return [(e.row, e.column, e.message) for e in info.value.errors]


def test_the_shipped_public_runs_are_valid() -> None:
    runs = public_runs()
    assert len(runs) == 279
    assert all(run.measured_tokens_per_s and run.measured_tokens_per_s > 0 for run in runs)


def test_minimal_row_takes_documented_defaults() -> None:
    (run,) = read_runs_csv("gpu,num_gpus,params_b,seq_len,global_batch\nA100-80GB,8,1.3,2048,512\n")
    assert run.gpu == "a100-80gb" and run.precision == "bf16"
    assert run.tp is None and run.strategy is None and run.gpus_per_node is None


def test_unknown_gpu_is_answered_with_the_valid_ids() -> None:
    ((row, column, message),) = _errors(_csv(GOOD, GOOD.replace("h100-sxm", "h100x", 1)))
    assert (row, column) == (2, "gpu")
    assert "valid ids:" in message and "a100-80gb" in message


@pytest.mark.parametrize(
    ("change", "column", "fragment"),
    [
        (("16,8,3200", "0,8,3200"), "num_gpus", "at least 1"),
        (("16,8,3200", "-8,8,3200"), "num_gpus", "positive integer"),
        (("3200,7,", "3200,-7,"), "params_b", "at least 0.001 and at most 100,000"),
        # The Scenario's minimum (1M parameters): 5e-324 predicted 650,753 tokens/s for a 65B geometry.
        (("3200,7,", "3200,5e-324,"), "params_b", "at least 0.001 and at most 100,000"),
        # The Scenario's 15% rule: this geometry (32 x 4096, FFN 16384) holds 5.5B to 8.9B parameters as read.
        (("3200,7,", "3200,1.5,"), "params_b", "imply 5.5B to 8.9B parameters, 269% away from params_b 1.5B"),
        (("3200,7,", "3200,70,"), "params_b", "(at most 15% allowed)"),
        (("fsdp,1,1,1", "fsdp,3,1,1"), "tp", "does not divide num_gpus"),
        (("fsdp,1,1,1", "fsdp,1,1,32"), "cp", "does not divide num_gpus"),
        (("4096,256,2", "4096,250,2"), "global_batch", "data-parallel size 16"),
        (("4096,256,2", "4096,256,3"), "micro_batch", "per-replica batch 16"),
        (("bf16", "int4"), "precision", "fp32, tf32, bf16, fp16, fp8"),
        (("fsdp", "zero4"), "strategy", "ddp, zero1"),
        ((",false,", ",maybe,"), "activation_checkpointing", "false, selective, true"),
    ],
)
def test_impossible_configurations_are_named_with_row_and_column(
    change: tuple[str, str], column: str, fragment: str
) -> None:
    bad = GOOD.replace(*change)
    assert bad != GOOD
    errors = _errors(_csv(GOOD, GOOD, bad))
    assert [(row, col) for row, col, _ in errors] == [(3, column)]
    assert fragment in errors[0][2]


def test_a_params_b_the_geometry_contradicts_is_refused_as_a_scenario_refuses_it() -> None:
    """The first public row (MPT-70B-like: 80 x 8192, FFN 32768, 64.86B) said to be 7B predicted 330,475 tokens/s
    against 66,523 measured, and a calibration of such rows was stored; the JSON records are checked the same way."""
    mpt = public_runs()[0]
    record = {**mpt.cells, "params_b": "7"}
    with pytest.raises(RunValidationError) as info:
        runs_from_records([mpt.cells, record])
    ((error),) = info.value.errors
    assert (error.row, error.column) == (2, "params_b")
    assert error.message.startswith("layers/hidden/heads/ffn_hidden/vocab imply 54.3B to 86.7B parameters, 675% away")
    # Nothing but the size: the derived geometry contradicts nothing, even where it sits far off (0.001B: 54M).
    assert runs_from_records([{"gpu": "h100-sxm", "num_gpus": 1, "params_b": 0.001, "seq_len": 512, "global_batch": 8}])


def test_missing_required_cells_and_columns() -> None:
    assert _errors(_csv(GOOD.replace("h100-sxm", "", 1)))[0][:2] == (1, "gpu")
    assert _errors("gpu,num_gpus,params_b,seq_len\nh100-sxm,8,7,4096\n") == [
        (0, "global_batch", "required column is missing from the header")
    ]


def test_json_records_are_validated_like_csv_rows() -> None:
    good = {"gpu": "l40s", "num_gpus": 4, "params_b": 1.3, "seq_len": 2048, "global_batch": 64, "tp": 2}
    assert runs_from_records([good])[0].tp == 2
    with pytest.raises(RunValidationError) as info:
        runs_from_records([good, {**good, "num_gpus": 3}])
    assert [(e.row, e.column) for e in info.value.errors] == [(2, "tp")]


def test_writer_keeps_extra_columns_and_fills_blank_layout_cells() -> None:
    text = _csv(
        "a100-80gb,8,,,1.3,,,,,,2048,512,,bf16,,2,,,,,,mine,keep-me",
        header=HEADER + ",note",
    )
    runs = read_runs_csv(text)
    out = write_predictions_csv(
        runs,
        tokens_per_s=np.array([1234.5]),
        step_time_s=np.array([0.5]),
        mfu=np.array([0.41]),
        fits_memory=np.array([True]),
        layout={
            "strategy": np.array(["zero1"], dtype=object),
            "tp": np.array([4]),
            "pp": np.array([1]),
            "cp": np.array([1]),
            "micro_batch": np.array([8]),
            "activation_checkpointing": np.array(["false"], dtype=object),
        },
    )
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert row["note"] == "keep-me" and row["source"] == "mine"
    assert row["tp"] == "2", "a given layout cell is kept"
    assert (row["strategy"], row["micro_batch"], row["activation_checkpointing"]) == ("zero1", "8", "false")
    assert row["predicted_tokens_per_s"] == "1234.5" and row["fits_memory"] == "true"


def test_stack_column_is_optional_validated_and_inferred_from_the_source() -> None:
    from estimator.runs import effective_stack

    (run,) = read_runs_csv("gpu,num_gpus,params_b,seq_len,global_batch,stack\na100-80gb,8,1.3,2048,512,NeMo\n")
    assert run.stack == "nemo"
    ((row, column, message),) = _errors(
        "gpu,num_gpus,params_b,seq_len,global_batch,stack\na100-80gb,8,1.3,2048,512,jax\n"
    )
    assert (row, column) == (1, "stack") and "megatron-lm" in message and "empty (unknown)" in message
    stacks = {effective_stack(r) for r in public_runs()}
    assert stacks == {"llm-foundry", "nemo", "megatron-lm", "torchtitan", "deepspeed", "maxtext", "other"}


def test_virtual_pipeline_column_is_validated_and_reaches_the_query_table() -> None:
    from estimator.prediction import run_queries

    header = "gpu,num_gpus,params_b,seq_len,global_batch,pp,virtual_pipeline\n"
    runs = read_runs_csv(header + "h100-sxm,16,70,4096,64,4,2\nh100-sxm,16,70,4096,64,4,\n")
    # An empty cell is searched like the layout cells (OPEN), no longer read as plain 1F1B.
    assert list(run_queries(runs)["vp"]) == [2, -1]
    ((row, column, message),) = _errors(header + "h100-sxm,16,70,4096,64,4,0.5\n")
    assert (row, column) == (1, "virtual_pipeline") and "must be an integer from 1" in message


def test_virtual_stages_need_a_pipeline_and_a_layer_each() -> None:
    """Megatron-LM refuses interleaving without pipeline stages and virtual stages with no layer; so does the reader
    (it took them and predicted a plain schedule). Llama 3 405B's uneven 126 layers on 16 stages x 8 are accepted."""
    header = "gpu,num_gpus,params_b,layers,seq_len,global_batch,pp,virtual_pipeline\n"
    ((row, column, message),) = _errors(header + "h100-sxm,16,70,80,4096,64,1,2\n")
    assert (row, column) == (1, "virtual_pipeline") and "needs pp > 1" in message
    ((row, column, message),) = _errors(header + "h100-sxm,16,70,80,4096,64,4,21\n")
    assert (row, column) == (1, "virtual_pipeline") and "80 layers on pp = 4 stages hold at most 20" in message
    ((_, column, message),) = _errors(header.replace("layers,", "") + "h100-sxm,16,70,4096,64,4,21\n")
    assert column == "virtual_pipeline" and "derived from params_b" in message
    runs = read_runs_csv(header + "h100-sxm,16384,405,126,8192,2048,16,8\nh100-sxm,16,70,80,4096,64,4,20\n")
    assert [given_virtual_stages(r) for r in runs] == [8, 20]


def test_a_searched_pipeline_honours_given_virtual_stages_and_absurd_ones_are_refused() -> None:
    """An outsider's probe: with pp left to the search, 65,536 or 1e9 virtual stages were taken (pp 1 or 4 chosen,
    0.15 tokens/s, or negative step times at 1e300 that failed a calibration fit)."""
    from estimator.calibrate import load_default
    from estimator.prediction import predict_runs

    header = "gpu,num_gpus,params_b,layers,seq_len,global_batch,pp,virtual_pipeline,stack\n"
    for vp, said in (("1e9", "to 65,536"), ("1e300", "to 65,536"), ("41", "80 layers on the fewest pipeline")):
        ((_, column, message),) = _errors(header + f"h100-sxm,64,70,80,4096,64,,{vp},\n")
        assert column == "virtual_pipeline" and said in message, message
    ((_, column, message),) = _errors(header + "h100-sxm,64,70,80,4096,64,4,2,deepspeed\n")
    assert column == "virtual_pipeline" and "no interleaved pipeline schedule" in message
    ((_, column, message),) = _errors(header + "h100-sxm,1024,405,126,8192,512,128,,\n")
    assert column == "pp" and "more than the 126 layers" in message
    for odd in ("1_0", "\u0662", "\uff12"):
        ((_, column, _),) = _errors(header + f"h100-sxm,64,70,80,4096,64,4,{odd},\n")
        assert column == "virtual_pipeline"
        ((_, column, _),) = _errors(header.replace(",pp,", ",tp,") + f"h100-sxm,64,70,80,4096,64,{odd},,\n")
        assert column == "tp"
    # 20 given virtual stages of an 80-layer model: the search keeps to 2 or 4 stages (20 or 40 layers each).
    (run,) = read_runs_csv(header + "h100-sxm,64,70,80,4096,64,,20,megatron-lm\n")
    solution = predict_runs([run], load_default())
    assert solution.fits_memory[0] and solution.pp[0] in (2, 4) and solution.virtual_pipeline[0] == 20


def test_stack_from_source_prefers_the_framework_named_over_a_passing_mention_of_megatron() -> None:
    from estimator.runs import stack_from_source

    assert stack_from_source("torchtitan docs: less memory than Megatron-style recompute") == "torchtitan"
    assert stack_from_source("Narayanan et al. 2021 / NVIDIA Megatron-LM README") == "megatron-lm"
    assert stack_from_source("NVIDIA NeMo / Megatron-Bridge performance summary") == "nemo"
    assert stack_from_source("a blog post") is None


def test_an_empty_precision_takes_the_gpus_16_bit_format() -> None:
    """An empty precision on a V100 (no bf16) used to be refused as "precision 'bf16' is not supported"."""
    from estimator.specs import all_gpus

    gpus = all_gpus()
    rows = [f"{gpu.id},8,1.3,2048,512" for gpu in gpus]
    runs = read_runs_csv("gpu,num_gpus,params_b,seq_len,global_batch\n" + "\n".join(rows) + "\n")
    for gpu, run in zip(gpus, runs, strict=True):
        expected = "bf16" if "bf16" in gpu.peak_tflops else "fp16"
        assert run.precision == expected, gpu.id
    assert any(run.precision == "fp16" for run in runs), "gpus.csv has a GPU without bf16 (the V100)"


def test_a_written_precision_the_gpu_lacks_is_still_refused() -> None:
    ((row, column, message),) = _errors(
        "gpu,num_gpus,params_b,seq_len,global_batch,precision\nv100-32gb,8,1,2048,8,bf16\n"
    )
    assert (row, column) == (1, "precision") and "supported: fp32, fp16" in message and "default" not in message


ASSUMING = (
    "gpu,num_gpus,params_b,seq_len,global_batch,hidden,team\n"
    "v100-32gb,8,1.3,2048,512,,a\n"  # precision defaulted to fp16
    "h100-sxm,8,0.001,1,8,,b\n"  # a tiny model: MFU far below 1e-4
    "h100-sxm,8,405,8192,1024,,c\n"  # fits no layout on 8 GPUs
    "a100-80gb,16,7,4096,512,4096,d\n"  # hidden given: the ffn follows it
)


def _estimate(text: str) -> str:
    from estimator.calibrate import load_default
    from estimator.prediction import estimate_runs_csv

    return estimate_runs_csv(read_runs_csv(text), load_default())


def test_estimate_output_writes_what_it_assumed_and_reads_back_to_the_same_predictions() -> None:
    """The defaults of empty cells (precision, typical server, derived architecture) used to stay empty, so the output
    did not say what was assumed."""
    from estimator.runs import DEFAULTED_COLUMNS, LAYOUT_COLUMNS

    first = _estimate(ASSUMING)
    rows = list(csv.DictReader(io.StringIO(first)))
    assert [r["team"] for r in rows] == ["a", "b", "c", "d"]
    assert all(row[column] for row in rows for column in DEFAULTED_COLUMNS), "every default is written"
    v100, _, _, given_hidden = rows
    assert v100["precision"] == "fp16" and given_hidden["hidden"] == "4096"
    assert int(given_hidden["ffn_hidden"]) == 14336  # the catalog's 3.5 x hidden, as a Scenario derives it (was 4 x)
    assert all(row[c] for row in rows if row["fits_memory"] == "true" for c in LAYOUT_COLUMNS)
    assert _estimate(first) == first, "the output, read back as input, predicts (and writes) the same"


def test_estimate_output_prints_a_tiny_models_mfu_with_significant_digits() -> None:
    """predicted_mfu used to print 0.0000 for a 1M-parameter model."""
    tiny = list(csv.DictReader(io.StringIO(_estimate(ASSUMING))))[1]
    assert tiny["fits_memory"] == "true" and float(tiny["predicted_mfu"]) > 0


def test_a_row_that_fits_no_layout_keeps_its_layout_cells_as_given() -> None:
    """A row that fits nowhere used to get a "chosen" layout (ddp, tp=8) beside fits_memory=false."""
    from estimator.runs import LAYOUT_COLUMNS

    rows = list(csv.DictReader(io.StringIO(_estimate(ASSUMING))))
    huge = rows[2]
    assert huge["fits_memory"] == "false" and huge["predicted_tokens_per_s"] == ""
    assert all(huge[column] == "" for column in LAYOUT_COLUMNS)
    given = _estimate("gpu,num_gpus,params_b,seq_len,global_batch,tp,strategy\nh100-sxm,8,405,8192,1024,8,\n")
    (row,) = list(csv.DictReader(io.StringIO(given)))
    assert (row["fits_memory"], row["tp"], row["strategy"]) == ("false", "8", "")


def test_empty_heads_follow_a_given_hidden_so_the_output_reads_back() -> None:
    """A 2.7B row with hidden 2560 used to run with the 24 heads derived from params_b alone (2560 / 24 is no head
    size), and its estimate output, heads written back, was refused on reading it again."""
    text = "gpu,num_gpus,params_b,seq_len,global_batch,hidden\nh100-sxm,8,2.7,2048,512,2560\n"
    first = _estimate(text)
    (row,) = list(csv.DictReader(io.StringIO(first)))
    assert int(row["hidden"]) % int(row["heads"]) == 0 and row["fits_memory"] == "true"
    assert _estimate(first) == first


def test_a_defaulted_heads_that_cannot_divide_the_given_hidden_or_tp_is_refused_naming_it() -> None:
    header = "gpu,num_gpus,params_b,seq_len,global_batch,hidden,tp"
    ((row, column, message),) = _errors(f"{header}\nh100-sxm,8,2.7,2048,512,1000,\n")
    assert (row, column) == (1, "heads") and "give heads" in message
    ((row, column, message),) = _errors(f"{header}\nh100-sxm,10,2.7,2048,520,,5\n")
    assert (row, column) == (1, "tp") and "give heads" in message


def test_a_mixture_of_experts_row_is_refused_at_its_experts_column_not_at_params_b() -> None:
    """Runs are modelled dense: a Mixtral 8x7B row (46.7B, 32 x 4096, 8 experts, 2 active) was refused at params_b
    for a geometry '85% away', or, sized to its active parameters, would calibrate the model off by 3.6x."""
    mixtral = {"gpu": "h100-sxm", "num_gpus": 8, "params_b": 46.7, "seq_len": 4096, "global_batch": 64}
    mixtral |= {"layers": 32, "hidden": 4096, "heads": 32, "ffn_hidden": 14336, "vocab": 32000}
    for extra, column in (
        ({"experts": 8, "active_experts": 2}, "experts"),
        ({"active_params_b": 12.9}, "active_params_b"),
    ):
        with pytest.raises(RunValidationError) as info:
            runs_from_records([{**mixtral, **extra}])
        assert [(e.row, e.column) for e in info.value.errors] == [(1, column)]
        assert "mixture-of-experts run" in info.value.errors[0].message
    dense = {**mixtral, "params_b": 7, "ffn_hidden": 11008}
    assert runs_from_records([{**dense, "experts": 1}, {**dense, "experts": ""}, {**dense, "active_params_b": 7}])


def test_a_small_model_row_may_sit_as_far_off_as_its_own_derivation() -> None:
    """Below ~1B the geometry derived from params_b sits past 15% (0.5B derives as 0.7B-1.1B: embeddings); a row
    giving only its vocab (32000 -> 32001) was refused for the derived layers and hidden it never gave."""
    small = {"gpu": "h100-sxm", "num_gpus": 1, "params_b": 0.5, "seq_len": 512, "global_batch": 8}
    assert runs_from_records([small, {**small, "vocab": 32001}])
    with pytest.raises(RunValidationError) as info:
        runs_from_records([{**small, "layers": 48, "hidden": 2048}])
    assert [e.column for e in info.value.errors] == ["params_b"] and "away from params_b 0.5B" in info.value.errors[
        0
    ].message


def test_messages_quote_cells_escaped_and_shortened() -> None:
    """A hostile probe: a 5,000-digit num_gpus came back whole in a 5,074-byte message, and a NUL byte in a cell
    reached the terminal raw."""
    row = {"gpu": "h100-sxm", "num_gpus": "9" * 5000, "params_b": 7, "seq_len": 4096, "global_batch": 8}
    with pytest.raises(RunValidationError) as info:
        runs_from_records([row, {**row, "num_gpus": 8, "gpu": "h1\x00" + "x" * 100}])
    first, second = (e.message for e in info.value.errors)
    assert len(first) < 200 and first.endswith("'...")
    assert "\x00" not in second and "\\x00" in second and len(second) < 300


@pytest.mark.parametrize("params_b", [0.5, 7.0, 70.6, 175.0])
def test_a_row_given_only_params_b_takes_the_scenarios_geometry(params_b: float) -> None:
    """An outsider's probe: the estimate path derived its own GPT-3-rule shape (70.6 -> 71 x 9216, FFN 36864, vocab
    32000; 0.5 -> 14 x 2048) where advise takes the catalog's (80 x 8192, FFN 28672, vocab 128256): 510,137 against
    522,598 tokens/s at 512 H100s, and 776,895 against 1,159,373 for 0.5B on 8."""
    from estimator.catalog import architecture_dict, derive_geometry
    from estimator.workload import TrainingJob

    (run,) = runs_from_records(
        [{"gpu": "h100-sxm", "num_gpus": 8, "params_b": params_b, "seq_len": 4096, "global_batch": 64}]
    )
    expected = architecture_dict(derive_geometry(params_b=params_b))
    assumed = assumed_values(run)
    assert {k: assumed[k] for k in expected} == expected
    job = TrainingJob(params_b=params_b, seq_len=4096, global_batch=64)
    assert {k: getattr(job, k) for k in expected} == expected
    # A given hidden takes the catalog's MLP width for it (3.5 x hidden in steps of 256; it was 4 x hidden), in both.
    (given,) = runs_from_records([{**run.cells, "params_b": 70.6, "hidden": 8192}])
    job = TrainingJob(params_b=70.6, seq_len=4096, global_batch=64, hidden=8192)
    assert assumed_values(given)["ffn_hidden"] == job.ffn_hidden == 28672


def test_a_row_with_no_layout_says_which_constraint_rules_it_out() -> None:
    """Rows with no layout used to read fits_memory=false with nothing else, memory or not (an outside tester's
    probe); a prediction_note now names the constraint, and a row with a prediction leaves it empty."""
    from estimator.runs import NOTE_COLUMN

    text = (
        "gpu,num_gpus,params_b,layers,seq_len,global_batch,strategy\n"
        "h100-sxm,232,1.3,24,2048,256,\n"  # 8 x 29: only 29 pipeline stages split the batch; the model has 24 layers
        "h100-sxm,40,1.3,24,2048,256,fsdp\n"  # FSDP runs no pipeline: 5 does not divide the batch
        "h100-sxm,8,405,126,8192,1024,\n"  # memory
        "h100-sxm,24,1.3,24,2048,256,\n"  # a 3-stage pipeline (or tp) splits it
    )
    first = _estimate(text)
    rows = list(csv.DictReader(io.StringIO(first)))
    deep, fsdp, huge, fits = (row[NOTE_COLUMN] for row in rows)
    assert [row["fits_memory"] for row in rows] == ["false", "false", "false", "true"]
    assert "29 pipeline stages" in deep and "24 layers" in deep
    assert "global batch of 256" in fsdp and "given strategy" in fsdp and "memory" not in fsdp
    assert "85.5 GB per GPU" in huge and "80 GB part" in huge and "leanest needs" in huge
    assert fits == ""
    assert _estimate(first) == first, "the note column reads back as the same output"
    assert NOTE_COLUMN not in _estimate(text.split("h100-sxm,232")[0] + "h100-sxm,24,1.3,24,2048,256,\n").split("\n")[0]


@pytest.mark.parametrize(
    ("sizes", "kv_heads"),
    [
        # Full geometry: the sizes tell the attention apart (GPT-3 175B multi-head; Llama 3.1 405B 8 KV heads).
        ("175,96,12288,96,49152,50257", 96),
        ("405.9,126,16384,128,53248,128256", 8),
        # params_b and hidden only: the layers and MLP width are derived from params_b, so the sizes say nothing of
        # the attention (a reviewer: GPT-3 175B and Llama 2 7B given so were read with 8 KV heads, GPT-3's
        # context-parallel ring 12x light and its run 8.5% fast): every head a KV head, as before.
        ("175,,12288,,,", 96),
        ("6.74,,4096,,,", 32),
    ],
)
def test_a_rows_kv_heads_are_read_from_its_sizes_only_when_it_gives_them(sizes: str, kv_heads: int) -> None:
    from estimator.runs import row_kv_heads

    params, layers, hidden, heads, ffn, vocab = sizes.split(",")
    cells = f"h100-sxm,64,8,3200,{params},{layers},{hidden},{heads},{ffn},{vocab},8192,64,1,bf16,,8,1,2,true,1000,,x"
    (run,) = read_runs_csv(_csv(cells))
    assert row_kv_heads(run) == kv_heads


def test_an_optional_kv_heads_column_is_validated_against_the_heads() -> None:
    header = "gpu,num_gpus,params_b,layers,hidden,heads,seq_len,global_batch,kv_heads\n"
    ((row, column, message),) = _errors(header + "h100-sxm,16,7,32,4096,32,4096,64,5\n")
    assert (row, column) == (1, "kv_heads") and "divide" in message
    assert read_runs_csv(header + "h100-sxm,16,7,32,4096,32,4096,64,\n")  # empty: read from the sizes


def test_an_estimate_row_says_when_memory_forced_full_recomputation() -> None:
    # An outsider's probe: Nemotron-4 340B at NeMo's recipe (TP8 PP8 VP12 MBS1) on 128 H100 was predicted with full
    # recomputation, which the source did not run, and the estimate output said nothing of why. Held against the
    # driver-visible 85.5 GB that recipe fits without it (second row); at 8192 tokens (twice the activations) it does
    # not (first row).
    header = (
        "gpu,num_gpus,params_b,layers,hidden,heads,ffn_hidden,vocab,seq_len,global_batch,micro_batch,strategy,tp,pp,"
        "cp,virtual_pipeline,stack"
    )
    text = (
        f"{header}\n"
        "h100-sxm,128,341,96,18432,96,73728,256000,8192,32,1,zero1,8,8,1,12,nemo\n"
        "h100-sxm,128,341,96,18432,96,73728,256000,4096,32,1,zero1,8,8,1,12,nemo\n"  # the published run
    )
    rows = list(csv.DictReader(io.StringIO(_estimate(text))))
    assert [r["activation_checkpointing"] for r in rows] == ["true", "false"]
    assert "recomputation" in rows[0]["prediction_note"] and " GB" in rows[0]["prediction_note"]
    assert rows[1]["prediction_note"] == ""
    # Recomputation the row gives is its own choice: nothing to say.
    given = text.replace("virtual_pipeline,stack", "virtual_pipeline,stack,activation_checkpointing")
    given = given.replace(",12,nemo\n", ",12,nemo,true\n")
    assert "prediction_note" not in _estimate(given)


def test_an_upload_derives_each_distinct_geometry_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """An outsider's probe: 20,000 rows of 50 sizes took 17 s to be refused at the layout budget, deriving the
    catalog geometry 10 times per row while reading them and again to size the search (estimator.catalog's
    derivation, uncached). Counted, not timed: a row repeats a size, the derivation is not repeated."""
    from estimator import catalog
    from estimator.prediction import run_search_size

    derivations = 0
    nearest = catalog._nearest_dense_shape

    def counted(params_b: float) -> catalog.ModelGeometry | None:
        nonlocal derivations
        derivations += 1
        return nearest(params_b)

    monkeypatch.setattr(catalog, "_nearest_dense_shape", counted)
    header = "gpu,num_gpus,params_b,seq_len,global_batch,strategy,tp,pp,micro_batch,note"
    sizes = (7.125, 13.375)
    rows = [f"h100-sxm,{8 * (1 + i % 4)},{sizes[i % 2]},4096,512,,,,,x" for i in range(200)]
    runs = read_runs_csv(_csv(*rows, header=header))
    assert run_search_size(runs) > 0
    assert derivations <= len(sizes), f"{derivations} derivations for {len(sizes)} sizes"
