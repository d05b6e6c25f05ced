"""Serving points as CSV (``manage.py estimate_inference``): validated row by row with the row/column errors of
estimator.runs, predicted in one vectorised pass, written back with the prediction columns added.

Columns (DESIGN.md): ``gpu, precision, model`` (catalog id) or ``params_b, layers, hidden, heads, kv_heads[,
ffn_hidden, vocab, experts, active_experts, head_dim]`` (geometry left out is derived as the API derives it:
estimator.catalog.resolve_model), ``tp, concurrency, input_tokens, output_tokens``; optional ``stack``
(serving_stacks.csv, one that runs on the GPU; empty = the GPU's default: trtllm on NVIDIA GPUs, vllm elsewhere,
estimator.inference.engines) and ``attention_dp`` (true: a mixture-of-experts model served attention data-parallel
over its tp GPUs with expert-parallel experts, TensorRT-LLM's "DEP"; empty or false: tensor parallel). Extra
columns are kept. Row numbers are 1-based data rows (row 1 = the first line after the header).

Written back: the predictions, ``fits_memory`` (true/false, as the training ``estimate`` writes it) and
``prediction_note``: why a row has no prediction, or what the prediction assumed of it (empty when nothing).
"""

from __future__ import annotations

import csv
import io
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, replace
from typing import Final

import numpy as np

from estimator.bounds import MAX_GEOMETRY, MAX_GPUS, MAX_PARAMS_B
from estimator.catalog import (
    GEOMETRY_FIELDS,
    CatalogError,
    context_problem,
    resolve_model,
    served_context,
    work_params_b,
)
from estimator.inference.data import (
    PRECISIONS,
    InferenceError,
    ServedModel,
    ServingGpu,
    gpu_overrides,
    serving_gpu,
    serving_stack,
)
from estimator.inference.engines import default_serving_engine, serving_engine_problem
from estimator.inference.fit import InferenceCalibration, default_calibration
from estimator.inference.notes import (
    default_engine_note,
    engine_of_stack,
    kv_capacity_warning,
    moe_note,
    pcie_group_note,
    serving_coverage,
    uncalibrated_serving_warnings,
)
from estimator.inference.sizing import (
    PointEstimate,
    ServingPoint,
    does_not_fit_text,
    estimate_points,
    parallel_degrees,
)
from estimator.runs import NOTE_COLUMN, RowError, RunValidationError, plain_number
from estimator.specs import UnknownGpuError, get_gpu

REQUIRED: Final[tuple[str, ...]] = ("gpu", "precision", "tp", "concurrency", "input_tokens", "output_tokens")
# ffn_hidden and vocab are optional like the rest: without them a 7B geometry is ambiguous (the derived MLP width
# absorbs params_b), so a serving lead's Llama-2 7B rows were read with 8 KV heads and a 128,256 vocabulary.
GEOMETRY: Final[tuple[str, ...]] = GEOMETRY_FIELDS
# An optional extra column (not in DESIGN.md's list): the width of one attention head where the model sets it
# (Qwen3-32B: 128 beside hidden / heads = 80); hidden / heads when empty.
HEAD_DIM: Final[str] = "head_dim"
# Upper bounds of the numbers a point gives (estimator.bounds, the Scenario's own limits); others: MAX_GEOMETRY.
POINT_MAXIMUM: Final[dict[str, float]] = {"tp": MAX_GPUS, "params_b": MAX_PARAMS_B}
OUTPUT_COLUMNS: Final[tuple[str, ...]] = (
    "predicted_output_tokens_per_s",
    "predicted_ttft_s",
    "predicted_tpot_s",
    "max_concurrency",
    "predicted_ttft_p95_s",
    "predicted_tpot_p95_s",
)
FITS_COLUMN: Final[str] = "fits_memory"  # the training estimate's column (estimator.runs.PREDICTED_COLUMNS)


def _number(text: Mapping[str, str], column: str, bad: list[RowError], row: int, *, integer: bool) -> float | None:
    raw = text.get(column, "").strip()
    if not raw:
        return None
    value = plain_number(raw)
    if value is None or not math.isfinite(value) or value <= 0 or (integer and value != int(value)):
        kind = "a positive whole number" if integer else "a positive number"
        bad.append(RowError(row, column, f"must be {kind}, got {raw[:40]!r}"))
        return None
    limit = POINT_MAXIMUM.get(column, MAX_GEOMETRY)
    if value > limit:
        bad.append(RowError(row, column, f"must be at most {limit:,.0f}, got {raw[:40]!r}"))
        return None
    return value


def _model(text: Mapping[str, str], bad: list[RowError], row: int) -> tuple[ServedModel, tuple[int, str]] | None:
    """The served model and its context (tokens, where they come from: estimator.catalog.served_context)."""
    name = text.get("model", "").strip()
    params_b = _number(text, "params_b", bad, row, integer=False)
    dims = {c: _number(text, c, bad, row, integer=True) for c in (*GEOMETRY, HEAD_DIM)}
    if not name and params_b is None:
        bad.append(RowError(row, "model", "give a catalog model id or params_b (with optional geometry)"))
        return None
    if dims["experts"] is not None and dims["active_experts"] is None:
        bad.append(RowError(row, "active_experts", "is required with experts (how many experts a token runs through)"))
        return None
    try:
        g = resolve_model(
            name=name or None,
            params_b=params_b,
            layers=_int(dims["layers"]),
            hidden=_int(dims["hidden"]),
            heads=_int(dims["heads"]),
            kv_heads=_int(dims["kv_heads"]),
            ffn_hidden=_int(dims["ffn_hidden"]),
            vocab=_int(dims["vocab"]),
            experts=_int(dims["experts"]),
            active_experts=_int(dims["active_experts"]),
            head_dim=_int(dims[HEAD_DIM]),
        )
    except CatalogError as exc:
        column = "model" if exc.field in ("name", "model") else exc.field
        bad.append(RowError(row, column, str(exc).split(": ", 1)[1]))
        return None
    # Weights and FLOPs of a dense geometry the row gave are the parameters it holds, as the advice sizes them.
    work, note = work_params_b(g, geometry_given=not name and any(v is not None for v in dims.values()))
    if work != g.params_b:
        g = replace(g, params_b=work, active_params_b=work, assumed=(*g.assumed, *([note] if note else [])))
    return ServedModel.from_geometry(g), served_context(max_context=g.max_context)


def _int(value: float | None) -> int | None:
    return None if value is None else int(value)


def _point(text: Mapping[str, str], row: int, bad: list[RowError]) -> ServingPoint | None:
    before = len(bad)
    for column in REQUIRED:
        if not text.get(column, "").strip():
            bad.append(RowError(row, column, "is required"))
    gpu = text.get("gpu", "").strip().lower()
    precision = text.get("precision", "").strip().lower()
    if gpu:
        try:
            spec = serving_gpu(gpu)
            if precision in PRECISIONS:
                spec.peak_flops(precision)
        except UnknownGpuError as exc:
            bad.append(RowError(row, "gpu", str(exc)))
        except InferenceError as exc:
            bad.append(RowError(row, "precision", str(exc).split(": ", 1)[1]))
    if precision and precision not in PRECISIONS:
        bad.append(RowError(row, "precision", f"must be one of {', '.join(PRECISIONS)}; got {precision!r}"))
    stack = text.get("stack", "").strip().lower()
    if stack:
        try:
            serving_stack(stack)
            # The advice's rule (estimator.inference.engines): TensorRT-LLM on an MI300X was sized without a word.
            gpu_known = gpu and not any(e.column == "gpu" for e in bad[before:])
            problem = serving_engine_problem(stack, gpu) if gpu_known else None
            if problem:
                bad.append(RowError(row, "stack", problem))
        except InferenceError as exc:
            bad.append(RowError(row, "stack", str(exc).split(": ", 1)[1]))
    # Requests and tokens are counted in whole units; a fraction of a token has no meaning to the engine.
    numbers = {
        c: _number(text, c, bad, row, integer=True) for c in ("tp", "concurrency", "input_tokens", "output_tokens")
    }
    resolved = _model(text, bad, row)
    if len(bad) > before or resolved is None:
        return None
    model, context = resolved
    _check_scale_up(model=model, gpu=gpu, tp=int(numbers["tp"] or 1), bad=bad, row=row)
    attention_dp = _attention_dp(text, model=model, tp=int(numbers["tp"] or 1), bad=bad, row=row)
    _check_fits_model(model=model, context=context, numbers=numbers, bad=bad, row=row, attention_dp=attention_dp)
    if len(bad) > before:
        return None
    return ServingPoint(
        model=model,
        gpu=gpu,
        precision=precision,
        tp=int(numbers["tp"] or 1),
        concurrency=float(numbers["concurrency"] or 1),
        input_tokens=float(numbers["input_tokens"] or 1),
        output_tokens=float(numbers["output_tokens"] or 1),
        stack=stack,
        attention_dp=attention_dp,
    )


def _attention_dp(text: Mapping[str, str], *, model: ServedModel, tp: int, bad: list[RowError], row: int) -> bool:
    raw = text.get("attention_dp", "").strip().lower()
    if raw in ("", "false", "0", "no"):
        return False
    if raw not in ("true", "1", "yes"):
        bad.append(RowError(row, "attention_dp", f"must be true or false (or empty), got {raw[:40]!r}"))
    elif not model.experts:
        bad.append(RowError(row, "attention_dp", "applies to mixture-of-experts models only; this model is dense"))
    elif tp < 2:
        bad.append(RowError(row, "attention_dp", "needs tp of at least 2 (the GPUs the experts are spread over)"))
    elif model.experts % tp:
        # Expert parallelism places whole experts on GPUs (a hostile probe: 8 experts over 64 GPUs was 1/8 each).
        bad.append(RowError(row, "tp", f"must divide the model's {model.experts} experts under attention_dp; got {tp}"))
    else:
        return True
    return False


def _check_scale_up(*, model: ServedModel, gpu: str, tp: int, bad: list[RowError], row: int) -> None:
    """A dense model's tensor-parallel group stays on the GPU's scale-up link (its NVLink domain), the degrees the
    advice sizes (sizing.parallel_degrees); only a mixture of experts spans more (expert parallelism). An outsider's
    tp 16 of a dense 70B on 8-GPU H100 servers was predicted without a word."""
    served = serving_gpu(gpu)
    domain = served.scale_up_gpus
    if tp not in parallel_degrees(model=model, scale_up=domain, tps=[tp]):
        bad.append(
            RowError(
                row,
                "tp",
                f"must be at most {domain} for a dense model on {gpu} (tensor parallelism stays within its "
                f"{domain}-GPU {served.scale_up_name}; only a mixture of experts spans more); got {tp}",
            )
        )


def _note(point: ServingPoint, *, fits: bool, kv_requests: float, engine_cap: float) -> str:
    """Why a point has no prediction, and what its prediction assumed (empty when neither applies): the same
    warnings as the inference Advice's (estimator.inference.notes)."""
    notes = []
    if not fits:
        # The advice's words for the same case (advisor.advice.inference: no deployment fits), with the datasheet's
        # memory as it gives it (the model sizes the KV cache from the driver's larger figure: 85.5 GB on "80 GB").
        extra = gpu_overrides()[0].get(point.gpu, {})  # a GPU of the inference table only: its row gives it
        memory_gb = float(extra["memory_gb"]) if extra.get("memory_gb") else get_gpu(point.gpu).memory_gb
        tokens = point.input_tokens + point.output_tokens
        notes.append(does_not_fit_text(tp=point.tp, memory_gb=memory_gb, tokens=tokens))
    served = serving_gpu(point.gpu)
    domain = served.scale_up_gpus
    if point.tp > domain:
        # estimator.inference.data._collective_path: a group past the scale-up domain runs every collective at the
        # scale-out network's bandwidth and latency.
        notes.append(
            f"tp {point.tp} spans {math.ceil(point.tp / domain)} {served.scale_up_name}s of {domain} GPUs: its "
            "collectives run over the scale-out network"
        )
    assumed = _assumed_note(point.model)
    if assumed:
        notes.append(assumed)
    if fits:
        notes.extend(_basis_notes(point, served=served, kv_requests=kv_requests, engine_cap=engine_cap))
    return "; ".join(notes)


def _basis_notes(point: ServingPoint, *, served: ServingGpu, kv_requests: float, engine_cap: float) -> list[str]:
    """What a prediction rests on beyond the row: a KV cache of few requests, the engine picked for it, what the
    calibration has no rows of, a PCIe group, a mixture of experts."""
    stack = serving_stack(point.stack or default_serving_engine(point.gpu))
    capacity = kv_capacity_warning(
        requests=kv_requests, concurrency=point.concurrency, engine_cap=engine_cap, stack=stack
    )
    coverage = serving_coverage(gpu=point.gpu, precision=point.precision, engine=engine_of_stack(stack.name))
    optional = (
        capacity,
        None if point.stack else default_engine_note(point.gpu),
        *uncalibrated_serving_warnings(coverage),
        pcie_group_note(served, point.tp),
        moe_note(point.model),
    )
    return [n.rstrip(".") for n in optional if n]


def _assumed_note(model: ServedModel) -> str:
    """What the row's model took that the row did not give (estimator.catalog's ``assumed``), with the shape it was
    served as where that was derived: an outsider's params_b 46.7 row ran as a dense 68 x 7168 model with 8 KV heads
    and its note was empty."""
    if not model.assumed:
        return ""
    listed = "; ".join(model.assumed)
    if model.name:
        return f"assumed {listed}"
    shape = f"{model.layers} layers x {model.hidden} hidden, {model.heads} heads, {model.kv_heads} KV heads"
    return f"assumed {shape}: {listed}"


def _check_fits_model(
    *,
    model: ServedModel,
    context: tuple[int, str],
    numbers: Mapping[str, float | None],
    bad: list[RowError],
    row: int,
    attention_dp: bool = False,
) -> None:
    """Tensor parallelism splits the attention heads across GPUs, so tp must divide them (the engines refuse other
    degrees; attention data parallelism keeps them whole on each GPU); a request cannot be longer than the model's
    context (estimator.catalog.served_context)."""
    tp = int(numbers["tp"] or 1)
    if model.heads % tp and not attention_dp:
        bad.append(RowError(row, "tp", f"must divide the model's {model.heads} attention heads; got {tp}"))
    problem = context_problem(
        model=model.name,
        max_context=context[0],
        source=context[1],
        input_tokens=numbers["input_tokens"] or 0,
        output_tokens=numbers["output_tokens"] or 0,
    )
    if problem is not None:
        bad.append(RowError(row, *problem))


def read_points_csv(text: str) -> tuple[list[str], list[dict[str, str]], list[ServingPoint]]:
    """(header, rows as read, validated points); RunValidationError listing every bad row and column."""
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    rows = [{(k or "").strip(): (v or "") for k, v in r.items()} for r in reader]
    bad: list[RowError] = []
    if not header:
        raise RunValidationError([RowError(0, "header", "the CSV is empty")])
    known = (*REQUIRED, *GEOMETRY, HEAD_DIM, "model", "params_b", "stack", "attention_dp")
    for column in header:
        spelled = column.strip().lower().replace("-", "_").replace(" ", "_")
        if column not in known and spelled in known:
            # An extra column is kept and ignored: a known one spelled otherwise would be silently ignored too (a
            # hostile probe: "Attention_DP" predicted the tensor-parallel layout without a word).
            bad.append(RowError(0, column, f"write it {spelled} (column names are lower case with underscores)"))
    if "model" not in header and "params_b" not in header:
        bad.append(RowError(0, "model", "the header needs model or params_b"))
    for column in REQUIRED:
        if column not in header:
            bad.append(RowError(0, column, "missing column"))
    if bad:
        raise RunValidationError(bad)
    if not rows:
        raise RunValidationError([RowError(0, "header", "no data rows")])
    points = [_point(r, i, bad) for i, r in enumerate(rows, start=1)]
    if bad:
        raise RunValidationError(bad)
    return header, rows, [p for p in points if p is not None]


def _cell(value: float) -> str:
    return "" if not math.isfinite(value) else f"{value:.6g}"


# Seconds of work per chunk of rows when progress is reported: an operator sees the count move about this often
# (a serving lead's probe: 6,048 rows ran over 10 minutes without a word, at 2.5 s a row at high concurrency).
PROGRESS_CHUNK_S: Final = 10.0
# A chunk at most doubles on the last one's pace, so one fast chunk of light rows does not put hours of heavy rows
# behind a single report.
PROGRESS_CHUNK_GROWTH: Final = 2


def _estimate_in_chunks(
    points: Sequence[ServingPoint], *, calibration: InferenceCalibration, progress: Callable[[int, int], None]
) -> PointEstimate:
    """estimate_points over consecutive chunks sized to take about PROGRESS_CHUNK_S each (from one row, on the last
    chunk's pace: a row's cost grows with its concurrency), calling ``progress(rows done, total)`` after each. Rows
    are independent cases, so the answer is one pass's."""
    parts: list[PointEstimate] = []
    done, size = 0, 1
    while done < len(points):
        started = time.monotonic()
        chunk = points[done : done + size]
        parts.append(estimate_points(chunk, calibration=calibration))
        done += len(chunk)
        progress(done, len(points))
        pace = (time.monotonic() - started) / len(chunk)
        size = max(1, min(size * PROGRESS_CHUNK_GROWTH, int(PROGRESS_CHUNK_S / pace) if pace > 0 else len(points)))
    return PointEstimate(**{f.name: np.concatenate([getattr(p, f.name) for p in parts]) for f in fields(PointEstimate)})


def estimate_points_csv(
    text: str,
    *,
    calibration: InferenceCalibration | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> str:
    """The input CSV with the prediction columns added (empty cells where the model does not fit memory, which
    fits_memory and prediction_note say). ``progress``: called with (rows done, rows) as chunks of rows finish
    (_estimate_in_chunks); without it the rows run in one pass."""
    header, rows, points = read_points_csv(text)
    if progress is None:
        est = estimate_points(points, calibration=calibration)
    else:
        est = _estimate_in_chunks(points, calibration=calibration or default_calibration(), progress=progress)
    columns = [*header, *(c for c in (*OUTPUT_COLUMNS, FITS_COLUMN, NOTE_COLUMN) if c not in header)]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n", extrasaction="ignore")
    writer.writeheader()
    values = (
        est.output_tokens_per_s,
        est.ttft_s,
        est.tpot_s,
        est.max_concurrency,
        est.ttft_p95_s,
        est.tpot_p95_s,
    )
    for i, row in enumerate(rows):
        # A deployment that does not hold the model and one request's KV cache serves nothing: empty, not 0.
        fits = est.max_concurrency[i] >= 1
        added = {c: _cell(float(v[i]) if fits else math.inf) for c, v in zip(OUTPUT_COLUMNS, values, strict=True)}
        added["max_concurrency"] = str(max(int(est.max_concurrency[i]), 0))
        added[FITS_COLUMN] = "true" if fits else "false"
        added[NOTE_COLUMN] = _note(
            points[i],
            fits=fits,
            kv_requests=float(est.kv_requests[i]),
            engine_cap=float(est.engine_max_batch[i]),
        )
        writer.writerow({**row, **added})
    return out.getvalue()
