"""Profiled runs: the CSV schema of DESIGN.md (and the same records as JSON), validated row by row.

Row numbers in errors are 1-based *data* rows: row 1 is the first line after the CSV header (for JSON, the first
record of the list). Empty layout cells (strategy, tp, pp, cp, micro_batch, activation_checkpointing) mean "search
the fastest feasible layout"; other empty optional cells take documented defaults: precision the GPU's best 16-bit
one (bf16, or fp16 on a GPU without bf16 such as the V100: ``default_precision``), architecture from params_b
(the model catalog's derivation, as a Scenario's: ``row_architecture``), gpus_per_node and inter_node_gbps from the
GPU's typical server.
Extra columns are kept (and written back by ``write_predictions_csv``) but ignored. ``write_predictions_csv`` writes
what it assumed into the empty cells (``assumed_values``, and the chosen layout where one fits), so its output reads
back as the same rows with the same predictions.
"""

from __future__ import annotations

import csv
import io
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Final

import numpy as np

from estimator.bounds import MAX_GPUS, RUN_COLUMN_MAXIMUM, RUN_COLUMN_MINIMUM
from estimator.catalog import (
    DERIVATIONS_KEPT,
    CatalogError,
    ModelGeometry,
    architecture_dict,
    check_geometry,
    derive_geometry,
    resolve_model,
)
from estimator.specs import GPU_IDS, PRECISIONS, GpuSpec, UnknownGpuError, UnsupportedPrecisionError, get_gpu
from estimator.workload import (
    CHECKPOINTING,
    HEAD_DIM,
    STACKS,
    STRATEGIES,
    derive_architecture,
    virtual_stage_problem,
)

COLUMNS: Final[tuple[str, ...]] = (
    "gpu",
    "num_gpus",
    "gpus_per_node",
    "inter_node_gbps",
    "params_b",
    "layers",
    "hidden",
    "heads",
    "ffn_hidden",
    "vocab",
    "seq_len",
    "global_batch",
    "micro_batch",
    "precision",
    "strategy",
    "tp",
    "pp",
    "cp",
    "activation_checkpointing",
    "tokens_per_s",
    "step_time_s",
    "source",
)
# Optional columns beyond the fixed header (DESIGN.md): read when present, written back as extras.
VIRTUAL_PIPELINE: Final[str] = "virtual_pipeline"
# Key/value heads of grouped-query attention; empty or absent = read from the row's sizes (row_kv_heads).
KV_HEADS: Final[str] = "kv_heads"
OPTIONAL_COLUMNS: Final[tuple[str, ...]] = ("stack", VIRTUAL_PIPELINE, KV_HEADS)
# Extra columns naming a mixture of experts (the estimate_inference point columns, and the Scenario's active size):
# refused rather than kept unread, since runs are modelled dense.
MOE_COLUMNS: Final[tuple[str, ...]] = ("experts", "active_experts", "active_params_b")
REQUIRED: Final[tuple[str, ...]] = ("gpu", "num_gpus", "params_b", "seq_len", "global_batch")
LAYOUT_COLUMNS: Final[tuple[str, ...]] = ("strategy", "tp", "pp", "cp", "micro_batch", "activation_checkpointing")
PREDICTED_COLUMNS: Final[tuple[str, ...]] = (
    "predicted_tokens_per_s",
    "predicted_step_time_s",
    "predicted_mfu",
    "fits_memory",
)
# Added after PREDICTED_COLUMNS when a row has no prediction: why (the constraint that rules out every layout).
NOTE_COLUMN: Final[str] = "prediction_note"
DEFAULT_PRECISION: Final[str] = "bf16"
# An empty precision cell means the first of these the GPU has: mixed-precision training runs in a 16-bit format, and
# a GPU without bf16 tensor cores (V100) trains in fp16 (with loss scaling), not in bf16 it cannot run.
DEFAULT_PRECISIONS: Final[tuple[str, ...]] = ("bf16", "fp16")
_INT_COLUMNS: Final[tuple[str, ...]] = (
    "num_gpus",
    "gpus_per_node",
    "layers",
    "hidden",
    "heads",
    "ffn_hidden",
    "vocab",
    "seq_len",
    "global_batch",
    "micro_batch",
    "tp",
    "pp",
    "cp",
)
_FLOAT_COLUMNS: Final[tuple[str, ...]] = ("inter_node_gbps", "params_b", "tokens_per_s", "step_time_s")
# Stacks of rows published without a `stack` cell, recognised from their `source` (first match wins).
# Framework names first, "megatron" last: other stacks' sources may mention Megatron in passing.
SOURCE_STACKS: Final[tuple[tuple[str, str], ...]] = (
    ("llm-foundry", "llm-foundry"),
    ("torchtitan", "torchtitan"),
    ("maxtext", "maxtext"),
    ("nemo", "nemo"),
    ("megatron-bridge", "nemo"),
    ("deepspeed", "deepspeed"),
    ("narayanan", "megatron-lm"),
    ("megatron", "megatron-lm"),
)
# The column of a RowError about the runs as a whole (JSON: the "runs" list; CSV: the document).
WHOLE_DOCUMENT: Final[str] = "runs"


@dataclass(frozen=True, slots=True)
class RowError:
    """One problem: ``row`` (1-based data row; 0 = the header), ``column`` and a message saying what is allowed.
    Row 0 with column ``WHOLE_DOCUMENT`` is a problem of the runs as a whole (too few of them), no header cell's."""

    row: int
    column: str
    message: str

    @property
    def whole_document(self) -> bool:
        return self.row == 0 and self.column == WHOLE_DOCUMENT

    def __str__(self) -> str:
        if self.whole_document:
            return self.message
        where = "header" if self.row == 0 else f"row {self.row}"
        return f"{where}, column {self.column}: {self.message}"


class RunValidationError(ValueError):
    """Some rows are invalid; ``errors`` lists each with its row and column. ``runs``: the rows that did validate
    (when the parser got that far), so that a later check of their values can answer in the same message."""

    def __init__(self, errors: Sequence[RowError], *, runs: Sequence[ProfiledRun] = ()) -> None:
        self.errors = list(errors)
        self.runs = list(runs)
        shown = "; ".join(str(e) for e in self.errors[:5])
        more = f" (and {len(self.errors) - 5} more)" if len(self.errors) > 5 else ""
        super().__init__(f"{len(self.errors)} invalid value(s): {shown}{more}")


@dataclass(frozen=True, slots=True)
class ProfiledRun:
    """One validated row. Optional fields are None when the cell was empty (see the module docstring)."""

    row: int
    gpu: str
    num_gpus: int
    params_b: float
    seq_len: int
    global_batch: int
    precision: str = DEFAULT_PRECISION
    gpus_per_node: int | None = None
    inter_node_gbps: float | None = None
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    ffn_hidden: int | None = None
    vocab: int | None = None
    micro_batch: int | None = None
    strategy: str | None = None
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    activation_checkpointing: str | None = None
    tokens_per_s: float | None = None
    step_time_s: float | None = None
    source: str = ""
    stack: str | None = None  # software stack (workload.STACKS); None = unknown
    cells: Mapping[str, str] = field(default_factory=dict)  # the row as read (all columns, extra ones included)

    @property
    def measured_tokens_per_s(self) -> float | None:
        """tokens_per_s, or global_batch x seq_len / step_time_s when only the step time was published."""
        if self.tokens_per_s is not None:
            return self.tokens_per_s
        if self.step_time_s is not None:
            return self.global_batch * self.seq_len / self.step_time_s
        return None


def shown_cell(raw: str, *, limit: int = 40) -> str:
    """A cell as a message quotes it: escaped (repr: no raw NUL or control bytes reach a terminal) and cut to
    ``limit`` characters (a hostile probe's 5,000-digit num_gpus came back whole in a 5,074-byte message)."""
    return repr(raw[:limit]) + ("..." if len(raw) > limit else "")


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _parse_row(row_number: int, cells: Mapping[str, object], errors: list[RowError]) -> ProfiledRun | None:
    values: dict[str, object] = {}
    start = len(errors)

    def bad(column: str, message: str) -> None:
        errors.append(RowError(row_number, column, message))

    for column, value in cells.items():
        # A profiled-run cell is one CSV cell (a hostile probe's {"a": [1, 2]} came back as Python's repr).
        if column is not None and isinstance(value, Mapping | list | tuple):
            bad(
                str(column), "must be a number, text, true/false or null (one cell of the CSV); got an object or a list"
            )
    if len(errors) > start:
        return None
    text = {k: _text(v) for k, v in cells.items() if k is not None}
    for column in REQUIRED:
        if not text.get(column, ""):
            bad(column, "is required")
    gpu = text.get("gpu", "").lower()
    if gpu:
        try:
            spec = get_gpu(gpu)
            values["gpu"] = spec.id
        except UnknownGpuError:
            bad("gpu", f"unknown gpu {shown_cell(text['gpu'])}; valid ids: {', '.join(GPU_IDS)}")
    _parse_ints(text, values, bad)
    _parse_floats(text, values, bad)
    _parse_precision(text, values, bad)
    _parse_options(text, values, bad)
    _parse_optional(text, values, bad)
    if len(errors) > start:
        return None
    _check_consistency(values, bad)
    if len(errors) > start:
        return None
    _check_virtual_stages(text, values, bad)
    _check_kv_heads(text, values, bad)
    if len(errors) > start:
        return None
    values["source"] = text.get("source", "")
    return ProfiledRun(row=row_number, cells=text, **values)  # type: ignore[arg-type]


def plain_number(raw: str) -> float | None:
    """A cell as a number written the plain way (ASCII digits, point, exponent, sign), else None: ``float`` also
    takes '1_0' and other scripts' digits (U+0662, U+FF12), which a spreadsheet would not read as the same number."""
    if not raw.isascii() or "_" in raw:
        return None
    try:
        return float(raw)
    except ValueError:
        return None


def _parse_ints(text: Mapping[str, str], values: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """Whole positive numbers (counts, sizes)."""
    for column in _INT_COLUMNS:
        raw = text.get(column, "")
        if not raw:
            continue
        number = plain_number(raw)
        if number is None:
            bad(column, f"must be a positive integer, got {shown_cell(raw)}")
            continue
        if not math.isfinite(number) or number != int(number) or number < 1:
            bad(column, f"must be a positive integer (at least 1), got {shown_cell(raw)}")
            continue
        if number > RUN_COLUMN_MAXIMUM[column]:
            bad(column, f"must be an integer from 1 to {RUN_COLUMN_MAXIMUM[column]:,.0f}, got {shown_cell(raw)}")
            continue
        values[column] = int(number)


def _parse_floats(text: Mapping[str, str], values: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """Positive numbers (bandwidth, model size, throughput or step time)."""
    for column in _FLOAT_COLUMNS:
        raw = text.get(column, "")
        if not raw:
            continue
        number = plain_number(raw)
        if number is None:
            bad(column, f"must be a positive number, got {shown_cell(raw)}")
            continue
        low = RUN_COLUMN_MINIMUM[column]
        if not (math.isfinite(number) and low <= number <= RUN_COLUMN_MAXIMUM[column]):
            most = RUN_COLUMN_MAXIMUM[column]
            bad(column, f"must be a number at least {low:g} and at most {most:,g}, got {shown_cell(raw)}")
            continue
        values[column] = number


def default_precision(gpu: GpuSpec) -> str:
    """The precision an empty cell means on ``gpu``: the first of DEFAULT_PRECISIONS it supports (bf16 where it can)."""
    supported = gpu.supported_precisions()
    return next((p for p in DEFAULT_PRECISIONS if p in supported), DEFAULT_PRECISION)


def _parse_precision(text: Mapping[str, str], values: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """The precision, defaulted to the GPU's 16-bit one (``default_precision``), and one the GPU supports."""
    given = text.get("precision", "").lower()
    spec = get_gpu(str(values["gpu"])) if "gpu" in values else None
    precision = given or (default_precision(spec) if spec is not None else DEFAULT_PRECISION)
    if precision not in PRECISIONS:
        bad("precision", f"must be one of {', '.join(PRECISIONS)}; got {shown_cell(text['precision'])}")
        return
    values["precision"] = precision
    if spec is None:
        return
    try:
        spec.peak_flops(precision)
    except UnsupportedPrecisionError as exc:
        # Only a written precision gets here, or a GPU with no 16-bit format at all: say which it was.
        bad("precision", ("" if given else "empty, so the default applies, but ") + str(exc))


def _parse_options(text: Mapping[str, str], values: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """Strategy and activation checkpointing: one of the known values, or empty for the search."""
    strategy = text.get("strategy", "").lower()
    if strategy:
        if strategy in STRATEGIES:
            values["strategy"] = strategy
        else:
            got = shown_cell(text["strategy"])
            bad("strategy", f"must be one of {', '.join(STRATEGIES)} or empty (search); got {got}")
    checkpointing = text.get("activation_checkpointing", "").lower()
    if checkpointing:
        if checkpointing in CHECKPOINTING:
            values["activation_checkpointing"] = checkpointing
        else:
            allowed = ", ".join(CHECKPOINTING)
            got = text["activation_checkpointing"]
            bad("activation_checkpointing", f"must be one of {allowed} or empty (search); got {shown_cell(got)}")


def _parse_optional(text: Mapping[str, str], values: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """The OPTIONAL_COLUMNS: ``stack`` (STACKS or empty/unknown) and ``virtual_pipeline`` (a positive integer)."""
    stack = text.get("stack", "").lower()
    if stack and stack != "unknown":
        if stack in STACKS:
            values["stack"] = stack
        else:
            bad("stack", f"must be one of {', '.join(STACKS)} or empty (unknown); got {shown_cell(text['stack'])}")
    for column in MOE_COLUMNS:
        # Extra columns are kept unread, but these would be silently wrong: a run is modelled dense (every parameter
        # active), so a mixture of experts' row would calibrate the model off by its total/active parameter ratio.
        number = plain_number(text.get(column, ""))
        if number is not None and number != (1.0 if column != "active_params_b" else values.get("params_b")):
            bad(
                column,
                "a mixture-of-experts run: profiled runs are modelled as dense models (every parameter active in "
                "every token), so this row cannot calibrate the estimator; leave it out (a Scenario's "
                f"workload.model takes experts); got {shown_cell(text[column])}",
            )
            break
    virtual = text.get("virtual_pipeline", "")
    if virtual:
        number = plain_number(virtual)
        if number is None or not (math.isfinite(number) and number == int(number) and 1 <= number <= MAX_GPUS):
            bad(
                "virtual_pipeline",
                f"must be an integer from 1 (no interleaving) to {MAX_GPUS:,} or empty; got {shown_cell(virtual)}",
            )


def _check_consistency(v: dict[str, object], bad: Callable[[str, str], None]) -> None:
    """Impossible configurations, each named by the column to fix."""
    ints = {k: int(x) for k, x in v.items() if k in _INT_COLUMNS}  # type: ignore[call-overload]
    n = ints["num_gpus"]
    given = {k: ints[k] for k in ("tp", "pp", "cp") if k in ints}
    model_parallel = math.prod(given.values())
    if n % model_parallel:
        column = next(k for k in ("cp", "pp", "tp") if k in given and given[k] > 1)
        product = " x ".join(f"{k}={val}" for k, val in given.items())
        bad(column, f"{product} = {model_parallel} does not divide num_gpus = {n}")
        return
    batch = ints["global_batch"]
    micro = ints.get("micro_batch")
    if len(given) == 3:
        dp = n // model_parallel
        if batch % dp:
            bad("global_batch", f"{batch} is not divisible by the data-parallel size {dp} = num_gpus / (tp x pp x cp)")
            return
        if micro is not None and (batch // dp) % micro:
            bad("micro_batch", f"{micro} does not divide the per-replica batch {batch // dp} = global_batch / {dp}")
            return
    elif micro is not None and batch % micro:
        bad("micro_batch", f"{micro} does not divide global_batch = {batch}")
        return
    if not _check_heads(ints, float(v["params_b"]), bad):  # type: ignore[arg-type]
        return
    if not _check_size(ints, float(v["params_b"]), bad):  # type: ignore[arg-type]
        return
    if "cp" in ints and ints["seq_len"] % ints["cp"]:
        bad("cp", f"{ints['cp']} does not divide seq_len = {ints['seq_len']}")


def _check_virtual_stages(text: Mapping[str, str], v: Mapping[str, object], bad: Callable[[str, str], None]) -> None:
    """A given pp against the layers, and a given virtual_pipeline against pp (given or searched), the layers and
    the row's stack (estimator.workload.virtual_stage_problem)."""
    given_layers = v.get("layers")
    hidden = v.get("hidden")
    arch = row_architecture(float(v["params_b"]), None if hidden is None else int(hidden))  # type: ignore[arg-type, call-overload]
    layers = int(arch["layers"] if given_layers is None else given_layers)  # type: ignore[call-overload]
    derived = "" if given_layers is not None else " (layers derived from params_b: give layers)"
    pp = v.get("pp")
    if pp is not None and int(pp) > layers:  # type: ignore[call-overload]
        bad("pp", f"{pp} pipeline stages is more than the {layers} layers{derived}: at most one stage per layer")
        return
    raw = text.get(VIRTUAL_PIPELINE, "")
    if not raw:
        return
    stack = v.get("stack")
    problem = virtual_stage_problem(
        virtual=int(float(raw)),
        pp=None if pp is None else int(pp),  # type: ignore[call-overload]
        layers=layers,
        stack=str(stack) if stack else stack_from_source(str(text.get("source", ""))),
    )
    if problem is not None:
        bad(VIRTUAL_PIPELINE, problem + derived)


@lru_cache(maxsize=DERIVATIONS_KEPT)  # asked several times per row while reading it, and again to predict it
def default_heads(params_b: float, hidden: int | None) -> int:
    """An empty heads cell: the row's hidden (given, or derived from params_b) in heads of the derivation's HEAD_DIM
    where that divides it, else the heads derived from params_b. A given hidden is followed as the ffn follows it: the
    heads derived from params_b alone need not divide it (hidden 2560 of a 2.7B model against 24)."""
    arch = derive_architecture(params_b)
    width = arch["hidden"] if hidden is None else hidden
    return width // HEAD_DIM if width % HEAD_DIM == 0 else arch["heads"]


def _check_kv_heads(text: Mapping[str, str], v: Mapping[str, object], bad: Callable[[str, str], None]) -> None:
    """An optional ``kv_heads`` cell: a whole number that divides the heads (given or defaulted) and that a given tp
    divides, as Megatron-Core splits the key/value groups over the tensor-parallel ranks."""
    raw = text.get(KV_HEADS, "")
    if not raw:
        return
    number = plain_number(raw)
    hidden = v.get("hidden")
    heads = int(v.get("heads") or default_heads(float(v["params_b"]), None if hidden is None else int(hidden)))  # type: ignore[arg-type, call-overload]
    if number is None or not (math.isfinite(number) and number == int(number) and 1 <= number <= heads):
        bad(
            KV_HEADS,
            f"must be an integer from 1 to heads ({heads}) or empty (read from the sizes); got {shown_cell(raw)}",
        )
    elif heads % int(number):
        bad(KV_HEADS, f"{int(number)} does not divide heads = {heads}")
    elif v.get("tp") is not None and int(number) % int(v["tp"]):  # type: ignore[call-overload]
        bad("tp", f"{v['tp']} does not divide kv_heads = {int(number)}")


def given_kv_heads(run: ProfiledRun) -> int | None:
    """The row's optional ``kv_heads`` cell (validated when read), or None when it is empty or absent."""
    raw = run.cells.get(KV_HEADS, "")
    return int(float(raw)) if raw else None


def _check_heads(ints: Mapping[str, int], params_b: float, bad: Callable[[str, str], None]) -> bool:
    """heads divides hidden and tp divides heads, the heads given or defaulted (``default_heads``: a row must
    not run, nor be written back, with an architecture that cannot exist); False after naming the column to fix."""
    heads = ints.get("heads") or default_heads(params_b, ints.get("hidden"))
    which = "" if "heads" in ints else " (the default of the empty heads cell: give heads)"
    if "hidden" in ints and ints["hidden"] % heads:
        bad("heads", f"{heads}{which} does not divide hidden = {ints['hidden']}")
        return False
    if "tp" in ints and heads % ints["tp"]:
        bad("tp", f"{ints['tp']} does not divide heads = {heads}{which}")
        return False
    return True


@lru_cache(maxsize=DERIVATIONS_KEPT)  # asked several times per row while reading it, and again to predict it
def row_architecture(params_b: float, hidden: int | None) -> Mapping[str, int]:
    """The architecture a row's empty cells take: the model catalog's derivation from params_b, as a Scenario's
    (estimator.catalog.derive_geometry; an outsider's probe: the estimate ran its own GPT-3 rule, 70.6 -> 71 x 9216,
    where advise ran 80 x 8192), at the row's hidden where it gives one (the layers that make params_b at that width,
    the MLP width the catalog's ``ffn_for_hidden``). Read-only: one answer serves every row of that size."""
    if hidden is None:
        return MappingProxyType(derive_architecture(params_b))
    heads = default_heads(params_b, hidden)
    # A heads that cannot divide the hidden is refused naming heads (_check_heads); the layers need some reading.
    geometry = derive_geometry(params_b=params_b, hidden=hidden, heads=heads if hidden % heads == 0 else 1)
    return MappingProxyType(architecture_dict(geometry))


def _filled_geometry(ints: Mapping[str, int], params_b: float) -> dict[str, int]:
    """layers, hidden, heads, ffn_hidden, vocab of a row, its empty cells as ``assumed_values`` fills them."""
    arch = row_architecture(params_b, ints.get("hidden"))
    return {
        "layers": ints.get("layers", arch["layers"]),
        "hidden": arch["hidden"],
        "heads": ints.get("heads") or default_heads(params_b, ints.get("hidden")),
        "ffn_hidden": ints.get("ffn_hidden", arch["ffn_hidden"]),
        "vocab": ints.get("vocab", arch["vocab"]),
    }


def _row_geometry(ints: Mapping[str, int], params_b: float) -> ModelGeometry:
    """The row's geometry, its empty cells as ``assumed_values`` fills them; a row gives no KV heads, MLP kind or
    tying (estimator.catalog.check_geometry reads it every way real models are built)."""
    g = _filled_geometry(ints, params_b)
    layers, hidden, heads, ffn, vocab = g["layers"], g["hidden"], g["heads"], g["ffn_hidden"], g["vocab"]
    return ModelGeometry("", params_b, params_b, layers, hidden, heads, heads, hidden // heads, ffn, vocab=vocab)


@lru_cache(maxsize=4096)  # bounded: an upload may bring thousands of sizes; run_queries asks once per row
def _read_kv_heads(params_b: float, layers: int, hidden: int, heads: int, ffn_hidden: int, vocab: int) -> int:
    try:
        geometry = resolve_model(
            params_b=params_b, layers=layers, hidden=hidden, heads=heads, ffn_hidden=ffn_hidden, vocab=vocab
        )
    except CatalogError:  # a row the size check let through on another reading: every head a KV head, as before
        return heads
    # Only the two layouts a size can tell apart are taken: the derivation's grouped-query default and multi-head. A
    # geometry far from params_b lets every KV count compete and a small model's label rounding pick one (MPT-125M
    # labelled 0.136B read as multi-query): that says nothing about its attention.
    default = derive_geometry(params_b=params_b, layers=layers, hidden=hidden, heads=heads).kv_heads
    return geometry.kv_heads if geometry.kv_heads == default else heads


def row_kv_heads(run: ProfiledRun) -> int:
    """The KV heads of a row's model: what context parallelism passes round its ring. The profiled-run CSV has no
    kv_heads column, so a row that gives its layers, heads and MLP width is read as a Scenario's sizes without kv_heads
    are (estimator.catalog.resolve_model: 8 KV heads where that agrees with params_b, multi-head attention where only
    it does: GPT-3 175B, Llama 2 7B, MPT; an outsider's probe: Llama 3.1 405B's ring was charged at 128 KV heads, its
    runs 12-14% slow). A row that leaves them to params_b's derivation says nothing of its attention (a reviewer:
    GPT-3 175B given by params_b and hidden alone was read with 8 KV heads): every head a KV head, as before. A run's
    tp stays bounded by its heads unless the optional kv_heads cell gives them; a given cell is taken as it is. The
    one reading for every use of a row's KV heads: the ring, and the K and V activations it holds (an outsider's
    probe: Nemotron-4 340B held multi-head was called unable to run TP8 PP8 VP12 on 128 H100 without recomputation)."""
    given = given_kv_heads(run)
    if given is not None:
        return given
    filled = assumed_values(run)
    dims = {
        name: int(value if (value := getattr(run, name)) is not None else filled[name])
        for name in ("layers", "hidden", "heads", "ffn_hidden", "vocab")
    }
    if run.layers is None or run.heads is None or run.ffn_hidden is None:
        return dims["heads"]
    return _read_kv_heads(float(run.params_b), **dims)


def _check_size(ints: Mapping[str, int], params_b: float, bad: Callable[[str, str], None]) -> bool:
    """params_b within the Scenario's tolerance of what the row's geometry implies: the Scenario's own rule,
    estimator.catalog.check_geometry (a gated or plain MLP, any KV heads, tied or untied embeddings; a geometry
    derived from params_b contradicts nothing): a 65B geometry said to be 7B predicted 5x its measured throughput.
    A geometry that is params_b's own derivation (nothing given, or an estimate's output read back) passes, as in a
    Scenario."""
    if _filled_geometry(ints, params_b) == _filled_geometry({}, params_b):
        return True
    try:
        check_geometry(
            _row_geometry(ints, params_b),
            params_b=params_b,
            kv_heads_given=False,
            what="layers/hidden/heads/ffn_hidden/vocab",
        )
    except CatalogError as error:
        bad("params_b", str(error).split(": ", 1)[1])
        return False
    return True


def stack_from_source(source: str) -> str | None:
    """The stack a published row's ``source`` names (SOURCE_STACKS), or None when it names none."""
    text = source.lower()
    return next((stack for key, stack in SOURCE_STACKS if key in text), None)


def given_virtual_stages(run: ProfiledRun) -> int | None:
    """Virtual pipeline stages per GPU of an interleaved schedule as the row gives them (optional ``virtual_pipeline``
    cell; 1 = plain 1F1B), or None when the cell is empty: searched like the layout cells, in stacks that offer the
    interleaved schedule (estimator/data/stacks.csv). Validated when the row is read."""
    raw = run.cells.get(VIRTUAL_PIPELINE, "")
    return int(float(raw)) if raw else None


def virtual_stages(run: ProfiledRun) -> int:
    """The row's given virtual stages, 1 when the cell is empty (how a configuration is compared, not predicted)."""
    return given_virtual_stages(run) or 1


def effective_stack(run: ProfiledRun) -> str | None:
    """The row's ``stack`` cell, else the stack its source names, else None (unknown)."""
    return run.stack if run.stack is not None else stack_from_source(run.source)


# The optional cells with a documented default (beside the layout, which is searched instead).
DEFAULTED_COLUMNS: Final[tuple[str, ...]] = (
    "precision",
    "gpus_per_node",
    "inter_node_gbps",
    "layers",
    "hidden",
    "heads",
    "ffn_hidden",
    "vocab",
)


def assumed_values(run: ProfiledRun) -> dict[str, str | int | float]:
    """The documented default of each of the row's empty DEFAULTED_COLUMNS cells, as predicting uses it (one
    definition for ``prediction.run_queries`` and the write-back): the precision ``default_precision`` chose,
    gpus_per_node and inter_node_gbps of the GPU's typical server, the architecture of ``row_architecture`` (the
    catalog's, as a Scenario's, at a given hidden) and empty heads as ``default_heads``."""
    spec = get_gpu(run.gpu)
    defaults: dict[str, str | int | float] = {
        "gpus_per_node": spec.gpus_per_node,
        "inter_node_gbps": spec.inter_node_gbps,
        **row_architecture(run.params_b, run.hidden),
        "heads": default_heads(run.params_b, run.hidden),
    }
    assumed = {k: v for k, v in defaults.items() if getattr(run, k) is None}
    if not run.cells.get("precision", ""):  # the field always holds a precision: the cell says whether it was given
        assumed["precision"] = run.precision
    return assumed


def runs_from_records(records: Sequence[Mapping[str, object]]) -> list[ProfiledRun]:
    """Validate JSON records (one mapping per run, keys = CSV columns); row numbers are 1-based list positions."""
    if not isinstance(records, Sequence) or isinstance(records, str | bytes):
        raise RunValidationError([RowError(0, WHOLE_DOCUMENT, "must be a list of objects")])
    errors: list[RowError] = []
    runs: list[ProfiledRun] = []
    for number, record in enumerate(records, start=1):
        if not isinstance(record, Mapping):
            errors.append(RowError(number, "runs", "must be an object with the profiled-run columns"))
            continue
        run = _parse_row(number, record, errors)
        if run is not None:
            runs.append(run)
    # Every bad row is reported (the input's size bounds the work): callers show the first ones and count the rest.
    if errors:
        raise RunValidationError(errors, runs=runs)
    if not runs:
        raise RunValidationError([RowError(0, WHOLE_DOCUMENT, "no runs: at least one row is needed")])
    return runs


def repeated_names(names: Sequence[str]) -> list[str]:
    """The names given more than once, sorted. Counted in one pass: ``names.count`` per name took 64 s on a
    40,000-column header."""
    return sorted(name for name, times in Counter(names).items() if times > 1)


def read_runs_csv(text: str) -> list[ProfiledRun]:
    """Parse and validate profiled-run CSV text (header + one row per run)."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in (reader.fieldnames or [])]
    repeated = repeated_names(header)
    if repeated:  # csv.DictReader would silently keep the last of them
        raise RunValidationError([RowError(0, h, "column appears more than once in the header") for h in repeated])
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise RunValidationError([RowError(0, c, _missing_column(c, header)) for c in missing])
    reader.fieldnames = header
    return runs_from_records([{k: v for k, v in row.items() if k is not None} for row in reader])


def _missing_column(column: str, header: Sequence[str]) -> str:
    """What a required column missing from ``header`` is told, naming a header cell that spells it in another case
    (`GPU`): the schema's names are lower case, and a cell in capitals is an extra column, kept and ignored."""
    message = "required column is missing from the header"
    found = [name for name in header if name.casefold() == column]
    return message if not found else f"{message} (found {found[0]!r}: column names are lower case)"


def header_of(runs: Sequence[ProfiledRun]) -> list[str]:
    """The schema columns first, then extra columns in the order first seen."""
    extra: dict[str, None] = {}
    for run in runs:
        for key in run.cells:
            if key not in COLUMNS and key not in PREDICTED_COLUMNS and key != NOTE_COLUMN:
                extra.setdefault(key, None)
    return [*COLUMNS, *extra]


def write_predictions_csv(
    runs: Sequence[ProfiledRun],
    *,
    tokens_per_s: np.ndarray,
    step_time_s: np.ndarray,
    mfu: np.ndarray,
    fits_memory: np.ndarray,
    layout: Mapping[str, np.ndarray],
    notes: Sequence[str] | None = None,
) -> str:
    """The rows back as CSV with the predicted columns added and every empty cell that was assumed filled in: the
    documented defaults (``assumed_values``) and, where a layout fits, the chosen layout. A row that fits no layout
    keeps its layout cells as given (the search found nothing to write) and empty predicted times. Read back, the
    output predicts the same.

    ``notes``: per run, why it has no prediction, or what its prediction should be read with (full recomputation
    the memory model forced); '' where nothing; written into a ``prediction_note`` column after the predicted ones
    when any is not empty.

    ``layout`` maps each of LAYOUT_COLUMNS (and optionally ``virtual_pipeline``) to one value per run. The chosen
    virtual stages are written where the search chose them: into the ``virtual_pipeline`` column when the input has
    one, or a column added when a row that fits chose an interleaved schedule."""
    out = io.StringIO()
    header = [*header_of(runs), *PREDICTED_COLUMNS]
    if notes is not None and any(notes):
        header.append(NOTE_COLUMN)
    written = [*LAYOUT_COLUMNS]
    if VIRTUAL_PIPELINE in layout:
        chose_interleaving = np.any(np.asarray(fits_memory, dtype=bool) & (np.asarray(layout[VIRTUAL_PIPELINE]) > 1))
        if VIRTUAL_PIPELINE not in header and chose_interleaving:
            header.insert(header.index(PREDICTED_COLUMNS[0]), VIRTUAL_PIPELINE)
        if VIRTUAL_PIPELINE in header:
            written.append(VIRTUAL_PIPELINE)
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    for i, run in enumerate(runs):
        row = {k: run.cells.get(k, "") for k in header}
        row.update({k: _cell(v) for k, v in assumed_values(run).items()})
        fits = bool(fits_memory[i])
        for column in written if fits else ():
            if not row[column]:
                row[column] = _cell(layout[column][i])
        row["predicted_tokens_per_s"] = f"{tokens_per_s[i]:.6g}" if fits else ""
        row["predicted_step_time_s"] = f"{step_time_s[i]:.6g}" if fits else ""
        # Significant digits, not decimals: a tiny model's MFU is far below 0.0001 and must not print as 0.
        row["predicted_mfu"] = f"{mfu[i]:.4g}" if fits else ""
        row["fits_memory"] = "true" if fits else "false"
        if NOTE_COLUMN in header:
            row[NOTE_COLUMN] = notes[i] if notes is not None else ""
        writer.writerow(row)
    return out.getvalue()


def _cell(value: object) -> str:
    if isinstance(value, np.integer | int):
        return str(int(value)) if int(value) > 0 else ""
    if isinstance(value, float | np.floating):
        return f"{float(value):.15g}"  # exact for the bandwidths of gpus.csv; reads back as the same number
    return "" if value is None else str(value)
