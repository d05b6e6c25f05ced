"""Model catalog: published architectures of named models, parameter counts from geometry, and a derivation of a
geometry from a parameter count alone.

Shared by training and inference. Data: ``estimator/data/models.csv`` (one row per catalog id, each with the
config.json / paper it comes from). Pure functions; no Django.

Parameter count of a decoder (what ``ModelGeometry.params`` computes; embeddings counted once when tied):

* attention per layer, grouped-query (``gqa``): ``h x heads x d`` (Q) + ``2 h x kv_heads x d`` (K, V) +
  ``heads x d x h`` (output), ``d`` the head dimension;
* multi-head latent attention (``mla``, DeepSeek-V2/V3): ``h q_r + q_r heads (d + r) + h (kv_r + r) +
  kv_r heads (d + d_v) + heads d_v h`` with ``q_r``, ``kv_r`` the LoRA ranks and ``r`` the RoPE head dimension;
* MLP: 3 matrices of ``h x ffn`` when gated (SwiGLU), 2 when plain (GELU); a mixture-of-experts layer holds
  ``experts + shared_experts`` such MLPs plus an ``h x experts`` router and runs ``active_experts + shared`` of them
  per token; the first ``dense_layers`` layers keep a dense MLP;
* embeddings ``vocab x h`` in, and the same out unless tied.

Layer norms and biases (< 0.01 % of the parameters) are left out. On every catalog row the computed total is within
1.5 % of the published count (tests/estimator/test_catalog.py checks it).
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import cache, lru_cache
from importlib import resources
from typing import Final, TypedDict

DATA_FILE: Final[str] = "data/models.csv"
# DESIGN.md: geometry implying a parameter count more than 15% from params_b is refused.
GEOMETRY_TOLERANCE: Final[float] = 0.15
# How much nearer params_b another reading of a given geometry must come than the assumed one to replace it (a
# rounding margin: the catalog's counts are within 1.5% of the published ones).
READING_SLACK: Final[float] = 0.015
# How far a size label sits from the count it names (Mistral 7B v0.3: 7.25B; Llama 3.2 3B: 3.21B): within it the
# assumed reading of a given geometry stands.
LABEL_ROUNDING: Final[float] = 0.05
# Fallback shape rules, from the catalog's own dense grouped-query models (Llama 3 paper Table 3): head dimension
# 128, 8 KV heads, FFN 3.5 x hidden rounded to 256, the Llama 3 vocabulary. Anchors (params_b, hidden) give the
# width for a size: hidden grows as params^0.32 between Llama 3.1 8B, 70B and 405B.
DEFAULT_HEAD_DIM: Final[int] = 128
DEFAULT_KV_HEADS: Final[int] = 8
DEFAULT_FFN_PER_HIDDEN: Final[float] = 3.5
FFN_STEP: Final[int] = 256
# Dense MLP widths published for the catalog's models run from 2.7 (Llama 2 7B, gated) to 4 (GPT-3, plain) x hidden;
# a derived dense FFN stays within 2-8 x hidden so layers/hidden that cannot reach params_b are refused, not stretched.
DENSE_FFN_RATIO: Final[tuple[float, float]] = (2.0, 8.0)
HIDDEN_STEP: Final[int] = 1024  # 8 heads of 128, so 8 KV heads divide the heads
DEFAULT_VOCAB: Final[int] = 128256
# GPT-3 Small (125M: hidden 768, Brown et al. 2020 Table 2.1) anchors the curve below 8B: extrapolating the Llama 3
# slope down made 0.5B 2048 wide, whose embeddings alone outweighed it (1 layer, 0.58B implied).
WIDTH_ANCHORS: Final[tuple[tuple[float, int], ...]] = ((0.125, 768), (8.03, 4096), (70.6, 8192), (405.9, 16384))
# A derived small model's embeddings take at most a third of it (Qwen2.5-0.5B 28%, GPT-2 124M 31%): tied, as small
# published models tie them (Llama 3.2 1B/3B, Qwen2.5 0.5B-3B, GPT-2), and below ~0.3B a smaller vocabulary
# (GPT-2's 50,257 at 125M) in steps of VOCAB_STEP.
EMBEDDING_SHARE_MAX: Final[float] = 1.0 / 3.0
# (smallest width, rounding step): whole groups of 8 heads from 2048 up; below, 2 heads (an even head count) and,
# under 512, one (a 1024 step made 1.5B 2048 wide and 0.7B 1024 wide, 37 layers).
SMALL_WIDTH_STEPS: Final[tuple[tuple[float, int], ...]] = ((2 * HIDDEN_STEP, HIDDEN_STEP), (512, 256), (0, 128))
VOCAB_STEP: Final[int] = 256
# The geometry fields a model may be given by besides params_b (a Scenario's workload.model, a serving point's
# columns): every path reads the same list.
GEOMETRY_FIELDS: Final[tuple[str, ...]] = (
    "layers",
    "hidden",
    "heads",
    "kv_heads",
    "ffn_hidden",
    "vocab",
    "experts",
    "active_experts",
)
ATTENTION_KINDS: Final[tuple[str, ...]] = ("gqa", "mla")
MLP_KINDS: Final[Mapping[str, int]] = {"gated": 3, "plain": 2}  # weight matrices per MLP


DENSE_ASSUMED: Final[str] = (
    "dense (no experts: a mixture of experts needs a catalog name, "
    "or experts and active_experts with layers and hidden)"
)


class CatalogError(ValueError):
    """An unknown model id or an invalid geometry; ``field`` names the offending field."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


@dataclass(frozen=True, slots=True)
class ModelGeometry:
    """Architecture of a decoder-only transformer (dense or mixture-of-experts). Sizes in elements; params_b and
    active_params_b in billions as published (or as given by the user); ``assumed`` lists what was not given."""

    id: str
    params_b: float
    active_params_b: float
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn_hidden: int
    mlp: str = "gated"
    vocab: int = DEFAULT_VOCAB
    tied: bool = False
    experts: int = 0
    active_experts: int = 0
    shared_experts: int = 0
    moe_ffn_hidden: int = 0
    dense_layers: int = 0
    attention: str = "gqa"
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    rope_head_dim: int = 0
    v_head_dim: int = 0
    max_context: int = 0
    source: str = ""
    assumed: tuple[str, ...] = ()

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    def token_ffn_hidden(self) -> int:
        """The MLP width whose activations one token stores in a layer: each of its active (and shared) experts'
        (a token routed to 2 of 8 Mixtral experts keeps both experts' activations), the dense width otherwise."""
        if not self.is_moe:
            return self.ffn_hidden
        return (self.moe_ffn_hidden or self.ffn_hidden) * (self.active_experts + self.shared_experts)

    def attention_params_per_layer(self) -> float:
        h, n, d = self.hidden, self.heads, self.head_dim
        if self.attention == "mla":
            r, dv = self.rope_head_dim, self.v_head_dim or d
            q = h * self.q_lora_rank + self.q_lora_rank * n * (d + r) if self.q_lora_rank else h * n * (d + r)
            kv = h * (self.kv_lora_rank + r) + self.kv_lora_rank * n * (d + dv)
            return float(q + kv + n * dv * h)
        return float(h * n * d + 2 * h * self.kv_heads * d + n * d * h)

    def _mlp(self, width: int) -> float:
        return float(MLP_KINDS[self.mlp] * self.hidden * width)

    def _layer_counts(self) -> tuple[int, int]:
        """(dense-MLP layers, MoE layers)."""
        if not self.is_moe:
            return self.layers, 0
        return self.dense_layers, self.layers - self.dense_layers

    def _embedding_params(self) -> float:
        return float(self.vocab * self.hidden * (1 if self.tied else 2))

    def _params_through(self, experts: int) -> float:
        """Attention, dense MLPs, ``experts`` routed experts (+ shared ones and the router) per MoE layer, and
        the embeddings [parameters]."""
        dense, moe = self._layer_counts()
        expert = self._mlp(self.moe_ffn_hidden or self.ffn_hidden)
        moe_layer = (experts + self.shared_experts) * expert + self.hidden * self.experts
        return (
            self.layers * self.attention_params_per_layer()
            + dense * self._mlp(self.ffn_hidden)
            + moe * moe_layer
            + self._embedding_params()
        )

    def params(self) -> float:
        """Total parameters implied by the geometry [parameters, not billions]."""
        return self._params_through(self.experts)

    def active_params(self) -> float:
        """Parameters one token passes through (all of them for a dense model) [parameters]."""
        return self._params_through(self.active_experts)

    def expert_params(self) -> float:
        """Parameters of all routed experts (what expert parallelism spreads over GPUs) [parameters]."""
        _, moe = self._layer_counts()
        return moe * self.experts * self._mlp(self.moe_ffn_hidden or self.ffn_hidden)

    def kv_elements_per_token(self) -> float:
        """KV-cache elements one token keeps over all layers: K and V of every KV head (GQA), or the compressed
        latent plus the RoPE key (MLA)."""
        if self.attention == "mla":
            return float(self.layers * (self.kv_lora_rank + self.rope_head_dim))
        return float(self.layers * 2 * self.kv_heads * self.head_dim)

    def attention_width(self) -> int:
        """Width of the attention core, heads x (qk + v head dims) / 2: its causal forward is 2 x layers x seq x
        this FLOPs per token, and Q, K, V and the output store it (training, estimator.workload.TrainingJob). The
        hidden size for multi-head and grouped-query attention; DeepSeek-V3's latent attention: 128 x (192 + 128) / 2
        = 20,480 beside a hidden size of 7168."""
        d_qk = self.head_dim + (self.rope_head_dim if self.attention == "mla" else 0)
        return self.heads * (d_qk + (self.v_head_dim or self.head_dim)) // 2

    def attention_flops_per_token_per_context(self) -> float:
        """FLOPs of QK^T and AV per generated token per token of context (2 x 2 x heads x head_dim per layer)."""
        d_qk = self.head_dim + (self.rope_head_dim if self.attention == "mla" else 0)
        d_v = self.v_head_dim or self.head_dim
        return float(2 * self.layers * self.heads * (d_qk + d_v))

    def decode_attention_flops_per_context(self) -> float:
        """FLOPs per generated token per cached token in decode. Multi-head latent attention decodes with the
        up-projections absorbed into the query and output (DeepSeek-V2 paper section 2.1.3; FlashMLA and
        TensorRT-LLM's MLA decode kernels attend over the compressed latent, never decompressing the cache): every
        head scores the latent plus its RoPE part and sums the latent, 2 x heads x (2 kv_lora_rank + rope_head_dim)
        per layer, ~3.4x the decompressed form for DeepSeek-V3. Other attention: as prefill."""
        if self.attention != "mla":
            return self.attention_flops_per_token_per_context()
        return float(2 * self.layers * self.heads * (2 * self.kv_lora_rank + self.rope_head_dim))


def _int(row: Mapping[str, str], key: str) -> int:
    value = row.get(key, "").strip()
    return int(value) if value else 0


def _row_to_geometry(row: Mapping[str, str]) -> ModelGeometry:
    return ModelGeometry(
        id=row["id"],
        params_b=float(row["params_b"]),
        active_params_b=float(row["active_params_b"]),
        layers=_int(row, "layers"),
        hidden=_int(row, "hidden"),
        heads=_int(row, "heads"),
        kv_heads=_int(row, "kv_heads"),
        head_dim=_int(row, "head_dim"),
        ffn_hidden=_int(row, "ffn_hidden"),
        mlp=row["mlp"],
        vocab=_int(row, "vocab"),
        tied=row["tied"].strip().lower() == "true",
        experts=_int(row, "experts"),
        active_experts=_int(row, "active_experts"),
        shared_experts=_int(row, "shared_experts"),
        moe_ffn_hidden=_int(row, "moe_ffn_hidden"),
        dense_layers=_int(row, "dense_layers"),
        attention=row["attention"],
        q_lora_rank=_int(row, "q_lora_rank"),
        kv_lora_rank=_int(row, "kv_lora_rank"),
        rope_head_dim=_int(row, "rope_head_dim"),
        v_head_dim=_int(row, "v_head_dim"),
        max_context=_int(row, "max_context"),
        source=row["source"],
    )


@cache
def catalog() -> dict[str, ModelGeometry]:
    """Every catalog model by id (estimator/data/models.csv)."""
    text = resources.files("estimator").joinpath(DATA_FILE).read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    return {row["id"]: _row_to_geometry(row) for row in csv.DictReader(io.StringIO(body))}


def model_ids() -> tuple[str, ...]:
    return tuple(catalog())


def get_model(model_id: str) -> ModelGeometry:
    """The catalog entry ``model_id`` (case-insensitive); CatalogError naming ``name`` and the known ids otherwise."""
    key = str(model_id).strip().lower()
    models = catalog()
    if key not in models:
        raise CatalogError("name", f"unknown model {model_id!r}; known: {', '.join(models)}")
    return models[key]


def _implied_range(readings: ModelGeometry | Sequence[ModelGeometry]) -> tuple[float, float]:
    """The fewest and most parameters [count] of one geometry or of several readings of it."""
    counts = [readings.params()] if isinstance(readings, ModelGeometry) else [g.params() for g in readings]
    return min(counts), max(counts)


def geometry_deviation(geometry: ModelGeometry | Sequence[ModelGeometry], *, params_b: float) -> float:
    """Relative distance between the parameters the geometry implies and ``params_b``: |implied / given - 1|.

    Several readings of one geometry (a profiled-run row gives layers/hidden/heads/ffn_hidden/vocab but not whether
    the MLP is gated, how many KV heads or whether embeddings are tied) imply a range of counts: the distance is to
    the nearest count in it, 0 inside."""
    low, high = _implied_range(geometry)
    given = params_b * 1e9
    if given < low:
        return low / given - 1.0
    return max(0.0, 1.0 - high / given) if given > high else 0.0


def _divisors(n: int) -> tuple[int, ...]:
    return tuple(k for k in range(1, n + 1) if n % k == 0)


def geometry_readings(geometry: ModelGeometry, *, kv_heads_given: bool) -> tuple[ModelGeometry, ...]:
    """Every way real dense models build the sizes a geometry gives (layers, hidden, heads, ffn_hidden, vocab), the
    geometry's own reading first: a gated 3-matrix (SwiGLU) or plain 2-matrix (GELU) MLP, tied or untied embeddings
    and, unless kv_heads was given, any KV-head count that divides heads (multi-query to multi-head attention). A
    Scenario says neither gated or plain nor tied; a profiled-run row does not say its KV heads either."""
    gqa = geometry.attention == "gqa" and not kv_heads_given
    kv_options = (geometry.kv_heads, *(k for k in _divisors(geometry.heads) if gqa and k != geometry.kv_heads))
    mlps = (geometry.mlp, *(kind for kind in MLP_KINDS if kind != geometry.mlp))
    return tuple(
        replace(geometry, mlp=mlp, kv_heads=kv_heads, tied=tied)
        for mlp in mlps
        for kv_heads in kv_options
        for tied in (geometry.tied, not geometry.tied)
    )


def _extreme_readings(geometry: ModelGeometry, *, kv_heads_given: bool) -> tuple[ModelGeometry, ModelGeometry]:
    """The fewest-parameter and the most-parameter of ``geometry_readings`` (plain MLP, one KV head, tied; gated
    MLP, every head a KV head, untied): the counts the geometry can imply lie between them."""
    low_kv, high_kv = (1, geometry.heads) if geometry.attention == "gqa" and not kv_heads_given else (0, 0)
    return (
        replace(geometry, mlp="plain", kv_heads=low_kv or geometry.kv_heads, tied=True),
        replace(geometry, mlp="gated", kv_heads=high_kv or geometry.kv_heads, tied=False),
    )


@lru_cache(maxsize=1024)  # bounded: a profiled-run upload may bring thousands of sizes
def _derivation_slack(params_b: float) -> float:
    """How far every reading of params_b's own derivation sits from params_b: 0 from about 1B up, where a tiny
    model's embeddings and whole layers can put it past the tolerance."""
    derived = derive_geometry(params_b=params_b)
    return geometry_deviation(_extreme_readings(derived, kv_heads_given=False), params_b=params_b)


def check_geometry(
    geometry: ModelGeometry,
    *,
    params_b: float,
    kv_heads_given: bool,
    tolerance: float = GEOMETRY_TOLERANCE,
    what: str = "layers/hidden/heads",
    ffn_fitted: bool = False,
) -> None:
    """The one rule of Scenarios, inference points and profiled-run rows (DESIGN.md: geometry implying a size more
    than 15% from params_b is refused): CatalogError naming ``model`` when params_b is more than ``tolerance`` from
    every count the geometry's ``geometry_readings`` imply, widened by how far params_b's own derivation sits (a
    tiny model's: a geometry derived from params_b contradicts nothing). An outsider's probe: MPT-13B (40 x 5120, a
    plain 4 x hidden MLP, multi-head attention, tied embeddings; 12.854B) was refused by a Scenario as 15.6B, read
    only as gated with 8 KV heads, while the profiled-run CSV took the same row.

    ``ffn_fitted``: the MLP width was derived from params_b (``derive_geometry``), so the message states the range
    over every width that derivation may reach, not only the one it reached for this params_b."""
    extremes = _extreme_readings(geometry, kv_heads_given=kv_heads_given)
    tolerance += _derivation_slack(float(params_b))
    off = geometry_deviation(extremes, params_b=params_b)
    if off > tolerance:
        raise CatalogError(
            "model",
            f"{what} imply {_stated_range(extremes, ffn_fitted=ffn_fitted)} parameters, {off:.0%} away from params_b "
            f"{params_b:g}B (at most {tolerance:.0%} allowed); fix the geometry or leave it out to derive it",
        )


def _stated_range(extremes: tuple[ModelGeometry, ModelGeometry], *, ffn_fitted: bool) -> str:
    """The counts a refused geometry implies, as its message states them. With the MLP width derived from params_b
    the width was clamped for this params_b (13B on 80 x 8192: 2 x hidden, 33.4B to 55.8B) while another params_b
    gets another width and is accepted (70.6B, llama-3.1-70b's own shape): an outsider's probe read "33.4B to 55.8B"
    as excluding 70.6B. So the range runs from the fewest-parameter reading at the narrowest width the derivation
    may choose to the most-parameter one at the widest; the deviation itself is unchanged (a refused params_b lies
    beyond the clamp, where the clamped and the stated range share the end it is measured from)."""
    low_reading, high_reading = extremes
    if ffn_fitted:
        narrowest, widest = _ffn_bounds(low_reading)
        low_reading = replace(low_reading, ffn_hidden=narrowest)
        if not math.isfinite(widest):
            return f"at least {low_reading.params() / 1e9:.1f}B"
        high_reading = replace(high_reading, ffn_hidden=int(widest))
    low, high = (count / 1e9 for count in _implied_range((low_reading, high_reading)))
    return f"{low:.1f}B" if f"{low:.1f}" == f"{high:.1f}" else f"{low:.1f}B to {high:.1f}B"


def _reading_text(g: ModelGeometry) -> str:
    if g.kv_heads == g.heads:
        attention = "multi-head attention"
    elif g.kv_heads == 1:
        attention = "multi-query attention"
    else:
        attention = f"grouped-query attention with {g.kv_heads} KV heads"
    mlp = "gated 3-matrix MLP" if g.mlp == "gated" else "plain 2-matrix MLP"
    return f"{mlp}, {attention}, {'tied' if g.tied else 'untied'} embeddings"


def consistent_reading(
    geometry: ModelGeometry,
    *,
    params_b: float,
    kv_heads_given: bool,
    tolerance: float = GEOMETRY_TOLERANCE,
    ffn_fitted: bool = False,
) -> ModelGeometry:
    """``geometry`` checked against params_b (``check_geometry``, CatalogError when refused) and read the way that
    agrees with it: the geometry itself when it implies params_b within the tolerance, else its reading nearest
    params_b (MPT-13B as a plain-MLP, multi-head, tied model: 12.84B), said in ``assumed``."""
    check_geometry(
        geometry, params_b=params_b, kv_heads_given=kv_heads_given, tolerance=tolerance, ffn_fitted=ffn_fitted
    )
    given = params_b * 1e9

    def distance(g: ModelGeometry) -> float:
        return abs(g.params() / given - 1.0)

    readings = geometry_readings(geometry, kv_heads_given=kv_heads_given)
    if distance(geometry) <= tolerance:
        # Inside the tolerance a size label's rounding (Mistral 7B v0.3 holds 7.25B) must not pick the attention: the
        # assumed reading stands within LABEL_ROUNDING, and past it only multi-head attention may replace it, the one
        # layout params_b tells apart (an outsider's probe: Llama 2 7B given as 32 x 4096 with 32 heads and no
        # kv_heads was read with 8 KV heads, 5.93B, and priced 10% short; a second: letting every reading compete
        # read Mistral 7B v0.3 as multi-query, its KV cache 8x too small, 14 L40S instead of 33).
        if distance(geometry) <= LABEL_ROUNDING:
            return geometry
        readings = tuple(
            g for g in readings if g.kv_heads == g.heads and g.mlp == geometry.mlp and g.tied == geometry.tied
        )
        readings = (geometry, *readings)
    best = min(readings, key=distance)
    if best == geometry or distance(geometry) <= distance(best) + READING_SLACK:
        return geometry
    stale: tuple[str, ...] = ("grouped-query attention with",) if best.kv_heads != geometry.kv_heads else ()
    if best.tied != geometry.tied:
        stale += ("a small model's tied embeddings",)
    notes = [note for note in geometry.assumed if not note.startswith(stale)]
    notes.append(
        f"read as a {_reading_text(best)} (not given): of the ways to build the given sizes, the nearest params_b "
        f"({best.params() / 1e9:.3g}B; a {_reading_text(geometry)} would be {geometry.params() / 1e9:.3g}B)"
    )
    return replace(best, assumed=tuple(notes))


def work_params_b(geometry: ModelGeometry, *, geometry_given: bool) -> tuple[float, str | None]:
    """(billions of parameters the matmuls run through and the weights hold, a note when that is not params_b).

    A dense geometry the user gave is the model: its count (read as ``consistent_reading`` reads it, nearest
    params_b) is the work, whatever the label says (an outsider's probe: a 40 x 5120 gated model with 8 KV heads,
    labelled 13B, holds 11.34B; FLOPs on the label made its run 12% longer). A catalog model's params_b is its
    published count, and a geometry derived from params_b adds nothing to it: the label stays. Mixtures of experts
    keep their own accounting (active parameters)."""
    if not geometry_given or geometry.experts:
        return geometry.params_b, None
    held = geometry.params() / 1e9
    if f"{held:.3g}" == f"{geometry.params_b:.3g}":
        return held, None
    hint = ""
    if (
        held < geometry.params_b
        and geometry.attention == "gqa"
        and geometry.head_dim * geometry.heads == geometry.hidden
    ):
        # An outsider's probe: Qwen3-32B's sizes hold 30.5B at hidden / heads = 80-wide heads; its config sets 128
        # (32.76B), and the geometry, not the label, was the one short.
        # A Scenario takes no head_dim (its geometry fields are fixed); the catalog's models carry theirs, and
        # estimate_inference reads an optional head_dim column: point at what each caller can give.
        hint = (
            f"; if the model's heads are wider than hidden / heads = {geometry.head_dim}, name it from the catalog "
            "(workload.model.name) or give estimate_inference's head_dim column"
        )
    return held, (
        f"FLOPs and weights from the geometry's {held:.3g}B parameters, not params_b {geometry.params_b:g}B "
        f"(the sizes given hold that many{hint})"
    )


def _width_for(params_b: float) -> int:
    """Hidden size for a dense model of ``params_b``: log-log interpolation through WIDTH_ANCHORS (extrapolated
    at both ends), rounded to SMALL_WIDTH_STEPS' step for its width (at least one head of DEFAULT_HEAD_DIM)."""
    logs = [(math.log(p), math.log(h)) for p, h in WIDTH_ANCHORS]
    x = math.log(params_b)
    upper = next((i for i in range(1, len(logs) - 1) if x < logs[i][0]), len(logs) - 1)
    (x0, y0), (x1, y1) = logs[upper - 1], logs[upper]
    width = math.exp(y0 + (y1 - y0) * (x - x0) / (x1 - x0))
    step = next(s for w, s in SMALL_WIDTH_STEPS if width >= w)
    return max(DEFAULT_HEAD_DIM, round(width / step) * step)


def _embeddings_for(params_b: float, hidden: int) -> tuple[int, bool]:
    """(vocab, tied) of a derived model whose vocabulary is not given: the Llama 3 vocabulary, tied where untied
    embeddings would take more than EMBEDDING_SHARE_MAX of params_b, and cut to that share where even tied ones
    would."""
    budget = EMBEDDING_SHARE_MAX * params_b * 1e9
    if 2 * DEFAULT_VOCAB * hidden <= budget:
        return DEFAULT_VOCAB, False
    if DEFAULT_VOCAB * hidden <= budget:
        return DEFAULT_VOCAB, True
    return max(VOCAB_STEP, int(budget / hidden) // VOCAB_STEP * VOCAB_STEP), True


def _nearest_dense_shape(params_b: float) -> ModelGeometry | None:
    """The dense grouped-query catalog model nearest in size, if within GEOMETRY_TOLERANCE."""
    candidates = [m for m in catalog().values() if not m.is_moe and m.kv_heads < m.heads and m.attention == "gqa"]
    best = min(candidates, key=lambda m: abs(math.log(m.params_b / params_b)))
    return best if abs(best.params_b / params_b - 1.0) <= GEOMETRY_TOLERANCE else None


class _Dimensions(TypedDict):
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int
    vocab: int
    tied: bool


def ffn_for_hidden(hidden: int) -> int:
    """The MLP width derived for a dense model of ``hidden`` when none is given: DEFAULT_FFN_PER_HIDDEN x hidden in
    steps of FFN_STEP (the one rule of Scenarios, inference points and profiled runs)."""
    return max(FFN_STEP, round(DEFAULT_FFN_PER_HIDDEN * hidden / FFN_STEP) * FFN_STEP)


def _derived_dimensions(given: Mapping[str, int | None], *, layers: int, hidden: int, heads: int) -> list[str]:
    """What a partly given geometry left to the fallback rules among its layers, hidden and heads."""
    notes = []
    if not given.get("layers"):
        notes.append(f"{layers} layers, to make params_b (not given)")
    if not given.get("hidden"):
        notes.append(f"hidden {hidden:,} from the catalog's width-vs-size curve (not given)")
    if not given.get("heads"):
        notes.append(f"{heads} attention heads of {hidden // heads} (not given)")
    return notes


def _complete(
    params_b: float,
    given: Mapping[str, int | None],
    assumed: list[str],
) -> _Dimensions:
    """Fill missing layers/hidden/heads/kv_heads/ffn_hidden/vocab with the fallback rules."""
    hidden = given.get("hidden") or _width_for(params_b)
    heads = given.get("heads") or max(1, hidden // DEFAULT_HEAD_DIM)
    if hidden % heads:
        raise CatalogError("heads", f"must divide hidden ({hidden}); got {heads}")
    kv_heads = given.get("kv_heads") or max(k for k in range(1, min(heads, DEFAULT_KV_HEADS) + 1) if heads % k == 0)
    if heads % kv_heads:
        raise CatalogError("kv_heads", f"must divide heads ({heads}); got {kv_heads}")
    if not given.get("kv_heads"):
        assumed.append(f"grouped-query attention with {kv_heads} KV heads (not given)")
    ffn = given.get("ffn_hidden") or ffn_for_hidden(hidden)
    given_vocab = given.get("vocab")
    vocab, tied = (given_vocab, False) if given_vocab else _embeddings_for(params_b, hidden)
    if tied:
        assumed.append(f"a small model's tied embeddings, vocabulary of {vocab:,} tokens (not given)")
    elif any(given.values()) and not given_vocab:
        # With nothing given the whole shape is one assumption, said once by the caller. An outsider's check: a
        # mixture of experts given by its layers and hidden listed nothing assumed, its vocab and FFN derived.
        assumed.append(f"vocabulary of {vocab:,} tokens (not given)")
    if any(given.values()) and not given.get("ffn_hidden"):
        assumed.append("MLP width derived from params_b (not given)")
    layers = given.get("layers")
    if not layers:
        probe = ModelGeometry(
            "", params_b, params_b, 1, hidden, heads, kv_heads, hidden // heads, ffn, vocab=vocab, tied=tied
        )
        per_layer = probe.params() - probe._embedding_params()
        layers = max(1, round((params_b * 1e9 - probe._embedding_params()) / per_layer))
    if any(given.values()):
        # An outsider's probe: {"params_b": 70, "kv_heads": 64} derived 70 x 8192 with 64 heads and listed none of it.
        assumed.extend(_derived_dimensions(given, layers=layers, hidden=hidden, heads=heads))
    return {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn_hidden": ffn,
        "vocab": vocab,
        "tied": tied,
    }


def derive_geometry(
    *,
    params_b: float,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    ffn_hidden: int | None = None,
    vocab: int | None = None,
    experts: int = 0,
    active_experts: int = 0,
    head_dim: int | None = None,
) -> ModelGeometry:
    """A geometry for ``params_b`` billion parameters, keeping every field given and saying what it assumed.
    ``head_dim``: the width of one attention head where the model sets it (Qwen3, Gemma, Mistral-Nemo); hidden /
    heads when not given.

    With no geometry at all, a dense model takes the shape of the nearest dense grouped-query catalog model when one
    is within 15 % of the size (70 -> Llama 3.1 70B's 80 x 8192, 8 KV heads); otherwise hidden from the catalog's
    width-vs-size curve, 128-wide heads, 8 KV heads, FFN 3.5 x hidden, and the layer count that gives params_b; a
    small model's embeddings tied (and its vocabulary cut) so they take at most a third of it (0.5 -> 15 x 1280).
    A mixture of experts (``experts`` > 0) needs layers and hidden. When layers are given and the FFN is not, the FFN
    (of one expert) is derived so the total matches params_b (a dense FFN within 2-8 x hidden). The result is not
    checked against params_b here (``check_geometry`` does that).
    """
    if not (isinstance(params_b, int | float) and math.isfinite(params_b) and params_b > 0):
        raise CatalogError("params_b", f"must be a positive number, got {params_b!r}")
    if experts < 0 or active_experts < 0 or active_experts > experts or (experts and not active_experts):
        raise CatalogError("active_experts", f"must be between 1 and experts ({experts}); got {active_experts}")
    given = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn_hidden": ffn_hidden,
        "vocab": vocab,
    }
    for name, value in {**given, "head_dim": head_dim}.items():
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value <= 0):
            raise CatalogError(name, f"must be a positive integer, got {value!r}")
    return _derived_geometry(
        params_b=float(params_b),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn_hidden=ffn_hidden,
        vocab=vocab,
        experts=experts,
        active_experts=active_experts,
        head_dim=head_dim,
    )


# Derivations kept: a profiled-run upload of 20,000 rows asked for one 10 times per row while reading it, and again
# to size its layout search (an outsider's probe: 17 s before its 413); a size repeats, its derivation does not.
# Bounded: an upload may bring thousands of sizes (MAX_UPLOAD_ROWS), and a row's own repeats come one after another.
DERIVATIONS_KEPT: Final[int] = 4096


@lru_cache(maxsize=DERIVATIONS_KEPT)
def _derived_geometry(
    *,
    params_b: float,
    layers: int | None,
    hidden: int | None,
    heads: int | None,
    kv_heads: int | None,
    ffn_hidden: int | None,
    vocab: int | None,
    experts: int,
    active_experts: int,
    head_dim: int | None,
) -> ModelGeometry:
    """derive_geometry's answer for arguments it checked (ModelGeometry is frozen: one answer serves every caller)."""
    given = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn_hidden": ffn_hidden,
        "vocab": vocab,
    }
    assumed: list[str] = []
    if not experts and not (layers and hidden):
        # An outsider's probe: {"params_b": 46.7} was a dense 68 x 7168 (6 x 46.7 FLOPs per token, Mixtral's 6 x 12.9)
        # and nothing said a dense model was assumed.
        assumed.append(DENSE_ASSUMED)
    if not any(given.values()) and not experts:
        shape = _nearest_dense_shape(float(params_b))
        if shape is not None:
            assumed.append(
                f"shape of {shape.id} (nearest catalog size; grouped-query attention, {shape.kv_heads} KV heads)"
            )
            return replace(
                shape,
                id="",
                params_b=float(params_b),
                active_params_b=float(params_b),
                source="",
                max_context=0,
                assumed=tuple(assumed),
            )
        assumed.append("shape from the catalog's width-vs-size curve")
    if experts and not (layers and hidden):
        raise CatalogError("layers", "a mixture-of-experts model needs layers and hidden (or a catalog name)")
    dims = _complete(float(params_b), given, assumed)
    geometry = ModelGeometry(
        id="",
        params_b=float(params_b),
        active_params_b=float(params_b),
        head_dim=head_dim or dims["hidden"] // dims["heads"],
        experts=experts,
        active_experts=active_experts,
        assumed=(),
        **dims,
    )
    if experts or layers:
        # Layers given (or a MoE): the MLP width is what is left of params_b, so the given size holds.
        geometry = _fit_expert_width(
            geometry,
            params_b=float(params_b),
            keep_ffn=not _ffn_fitted(layers=layers, experts=experts, ffn_hidden=ffn_hidden),
        )
    active = geometry.active_params() / 1e9
    return replace(geometry, active_params_b=active if experts else float(params_b), assumed=tuple(assumed))


def _fit_expert_width(geometry: ModelGeometry, *, params_b: float, keep_ffn: bool) -> ModelGeometry:
    """A geometry whose (expert) FFN width makes the total params_b (unless the FFN was given); at least FFN_STEP,
    so a geometry too big for params_b stays too big and check_geometry refuses it."""
    if keep_ffn:
        return geometry
    fixed = replace(geometry, ffn_hidden=0).params()
    per_unit = replace(geometry, ffn_hidden=1).params() - fixed
    width = round((params_b * 1e9 - fixed) / per_unit / FFN_STEP) * FFN_STEP
    low, high = _ffn_bounds(geometry)
    return replace(geometry, ffn_hidden=int(min(max(width, low), high)))


def _ffn_bounds(geometry: ModelGeometry) -> tuple[int, float]:
    """The narrowest and widest MLP width ``_fit_expert_width`` may derive: at least FFN_STEP, and a dense one
    within DENSE_FFN_RATIO x hidden (a mixture of experts' has no upper bound)."""
    if geometry.is_moe:
        return FFN_STEP, math.inf
    low, high = (int(ratio * geometry.hidden) for ratio in DENSE_FFN_RATIO)
    return max(low, FFN_STEP), high


def _ffn_fitted(*, layers: int | None, experts: int | None, ffn_hidden: int | None) -> bool:
    """Whether ``derive_geometry`` fits the (expert) MLP width to params_b: layers given (or a mixture of experts)
    and no ffn_hidden."""
    return bool(experts or layers) and ffn_hidden is None


def resolve_model(
    *,
    name: str | None = None,
    params_b: float | None = None,
    layers: int | None = None,
    hidden: int | None = None,
    heads: int | None = None,
    kv_heads: int | None = None,
    ffn_hidden: int | None = None,
    vocab: int | None = None,
    experts: int | None = None,
    active_experts: int | None = None,
    head_dim: int | None = None,
    tolerance: float = GEOMETRY_TOLERANCE,
) -> ModelGeometry:
    """What ``workload.model`` (and a serving-points row) describes: the catalog entry ``name``, or ``params_b``
    with optional geometry (derived where missing, refused by CatalogError naming ``model`` when it implies a size
    more than ``tolerance`` from params_b). With a name, params_b must agree with the catalog count within the
    tolerance and every geometry field given must be the catalog's own (CatalogError naming that field): the one
    check behind both the API and ``manage.py estimate_inference`` (an outsider's probe: the command silently
    served the catalog's 32-layer llama-3.1-8b for a row that said 80 layers, which the API refused)."""
    given = {
        "layers": layers,
        "hidden": hidden,
        "heads": heads,
        "kv_heads": kv_heads,
        "ffn_hidden": ffn_hidden,
        "vocab": vocab,
        "experts": experts,
        "active_experts": active_experts,
        "head_dim": head_dim,
    }
    if name:
        model = get_model(name)
        if params_b is not None and abs(params_b / model.params_b - 1.0) > tolerance:
            raise CatalogError("model", f"params_b {params_b:g} contradicts {model.id} ({model.params_b:g}B)")
        for key, value in given.items():
            if value is not None and value != getattr(model, key):
                raise CatalogError(key, f"{model.id} has {key} {getattr(model, key)}; got {value} (leave it out)")
        if params_b is not None and f"{params_b:g}" != f"{model.params_b:g}":
            # An outsider's probe: {"name": "llama-3.1-70b", "params_b": 80} silently became 70.6.
            return replace(model, assumed=(f"params_b {params_b:g} replaced by {model.id}'s {model.params_b:g}",))
        return model
    if params_b is None:
        raise CatalogError("params_b", "give a catalog model name or params_b")
    geometry = derive_geometry(
        params_b=params_b,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn_hidden=ffn_hidden,
        vocab=vocab,
        experts=experts or 0,
        active_experts=active_experts or 0,
        head_dim=head_dim,
    )
    return consistent_reading(
        geometry,
        params_b=params_b,
        kv_heads_given=kv_heads is not None,
        tolerance=tolerance,
        ffn_fitted=_ffn_fitted(layers=layers, experts=experts, ffn_hidden=ffn_hidden),
    )


def architecture_dict(geometry: ModelGeometry) -> dict[str, int]:
    """``layers, hidden, heads, ffn_hidden, vocab`` (the keys of estimator.workload.derive_architecture, which is
    ``architecture_dict(derive_geometry(params_b=p))``) of a geometry."""
    return {
        "layers": geometry.layers,
        "hidden": geometry.hidden,
        "heads": geometry.heads,
        "ffn_hidden": geometry.ffn_hidden,
        "vocab": geometry.vocab,
    }


def longest_catalog_context() -> tuple[int, str]:
    """(tokens, model id) of the longest published context in the catalog: the longest request the serving model has
    a published model for, and the context of a served model the catalog does not name (a hostile probe gave seq_len
    10,000,000 and a 10,000,000-token prompt: 11-30 s of serving simulation per request, signed out too)."""
    model = max(catalog().values(), key=lambda m: m.max_context)
    return model.max_context, model.id


def served_context(*, max_context: int) -> tuple[int, str]:
    """(tokens, where they come from) of the context a served model's requests must fit: the catalog's published
    ``max_context``, else (a model the catalog does not name, given by params_b or geometry) the longest context of a
    catalog model. A geometry's ``seq_len`` is its training sequence, not a serving context: refusing a 5,000-token
    prompt for a model given seq_len 4,096 (its default) would refuse what a long-context model serves. The one rule
    for the inference points CSV and Scenarios (API, planner, fleet jobs)."""
    if max_context:
        return max_context, ""
    longest, model = longest_catalog_context()
    return longest, f"a model the catalog does not name: at most the longest context of a catalog model, {model}'s"


def context_problem(
    *, model: str, max_context: int, input_tokens: float, output_tokens: float, source: str = ""
) -> tuple[str, str] | None:
    """(field, why) where a request of ``input_tokens`` + ``output_tokens`` cannot be served by ``model`` (its
    context ``max_context`` from ``served_context``, ``source`` saying where it comes from), or None. The one rule for
    the inference points CSV and Scenarios.

    The field is what has to shrink: ``input_tokens`` when the prompt leaves no room for even one output token,
    else ``output_tokens`` (an outsider's 100-token prompt asking for 10,000,000 tokens was told its input_tokens
    was too long)."""
    tokens = input_tokens + output_tokens
    if not max_context or tokens <= max_context:
        return None
    why = f"input_tokens + output_tokens = {tokens:,.0f} exceeds {model}'s context of {max_context:,} tokens"
    if source:
        why += f" ({source})"
    if input_tokens >= max_context:
        return "input_tokens", why
    return "output_tokens", f"{why} (the prompt leaves {max_context - input_tokens:,.0f} for the answer)"
