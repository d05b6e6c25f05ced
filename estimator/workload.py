"""What is being run (a training job) and where (a cluster of one GPU type).

Layout fields left as ``None`` mean "search it": the estimator picks the fastest feasible value per
cluster size (``estimator.layout``). Architecture fields left as ``None`` are derived from ``params_b``
by :func:`derive_architecture` (the model catalog's derivation).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass, field
from functools import cache
from typing import Final

from estimator.catalog import DEFAULT_HEAD_DIM, architecture_dict, derive_geometry, ffn_for_hidden
from estimator.specs import DATA_DIR, PRECISIONS, GpuSpec

STRATEGIES: Final[tuple[str, ...]] = ("ddp", "zero1", "zero2", "zero3", "fsdp", "hsdp")
CHECKPOINTING: Final[tuple[str, ...]] = ("false", "selective", "true")
# Software stacks (DESIGN.md, profiled-run CSV `stack`); None / empty = unknown, predicted with the stacks' prior mean.
STACKS: Final[tuple[str, ...]] = ("megatron-lm", "nemo", "llm-foundry", "deepspeed", "maxtext", "torchtitan", "other")
# The row of estimator/data/stacks.csv that describes a stack left empty.
UNKNOWN_STACK_ROW: Final[str] = "unknown"
# Labels that pool several different software stacks under one fitted multiplier (stacks.csv: "other" = a stack not
# documented here, e.g. LLaMA-65B's own code and Paxml): for its uncertainty, a run so labelled is a stack the
# calibration has not seen.
POOLED_STACKS: Final[frozenset[str]] = frozenset({"other"})


@dataclass(frozen=True, slots=True)
class StackProperties:
    """What a software stack's documentation says about it (estimator/data/stacks.csv, sources per row).

    attention_vs_fa2: prior centre of its attention kernel's throughput relative to FlashAttention-2 on the same GPU;
    attention_log_width: that prior's width (log); tp_comm_overlap: 1 = tensor-parallel collectives overlapped with
    GEMMs, 0 = on the critical path, 0.5 = undocumented; fsdp_prefetch: 1 = ZeRO-3/FSDP collectives prefetched per
    layer behind compute (only a micro-batch's first all-gather and last reduce-scatter exposed), 0 = not, 0.5 =
    undocumented; interleaved_pipeline: whether the stack offers the interleaved (virtual-stage) pipeline schedule,
    so a pipelined run with no published virtual stages searches them; attention_scores_stored: whether its attention
    kernel keeps the s x s scores for the backward (unfused attention: 5 a s / h bytes per s.b.h of a layer);
    sequence_parallel: whether its layer norms and dropouts run sequence-parallel under tensor parallelism."""

    stack: str
    attention_kernel: str
    attention_vs_fa2: float
    attention_log_width: float
    tp_comm_overlap: float
    fsdp_prefetch: float
    interleaved_pipeline: bool
    attention_scores_stored: bool
    sequence_parallel: bool
    source: str


@cache
def stack_properties() -> dict[str, StackProperties]:
    """Every stack of STACKS and the ``unknown`` row, read once from estimator/data/stacks.csv."""
    text = (DATA_DIR / "stacks.csv").read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    table = {
        row["stack"]: StackProperties(
            stack=row["stack"],
            attention_kernel=row["attention_kernel"],
            attention_vs_fa2=float(row["attention_vs_fa2"]),
            attention_log_width=float(row["attention_log_width"]),
            tp_comm_overlap=float(row["tp_comm_overlap"]),
            fsdp_prefetch=float(row["fsdp_prefetch"]),
            interleaved_pipeline=row["interleaved_pipeline"] == "1",
            attention_scores_stored=row["attention_scores_stored"] == "1",
            sequence_parallel=row["sequence_parallel"] == "1",
            source=row["source"],
        )
        for row in csv.DictReader(io.StringIO(body))
    }
    missing = (set(STACKS) | {UNKNOWN_STACK_ROW}) - set(table)
    if missing:
        raise ValueError(f"estimator/data/stacks.csv lacks rows for {', '.join(sorted(missing))}")
    return table


def stack_meanings() -> str:
    """What each stack label stands for, from estimator/data/stacks.csv (one line for API and CSV descriptions): a
    label is the runs it was fitted on, so 'megatron-lm' is the 2021 paper's stack (unfused softmax attention, no
    sequence parallelism), and a memory probe found current Megatron-Core runs given it refused on 80 GB."""
    table = stack_properties()
    return "; ".join(
        f"{name}: {table[name].attention_kernel or 'attention not documented'}, "
        f"{'sequence parallel' if table[name].sequence_parallel else 'no sequence parallelism'}"
        for name in STACKS
    )


# The hidden size in heads of this width where a profiled run gives hidden but not heads (the catalog's head size).
HEAD_DIM: Final[int] = DEFAULT_HEAD_DIM


class WorkloadError(ValueError):
    """An invalid workload or cluster field; ``field`` names it, the message says what is allowed."""

    def __init__(self, field_name: str, message: str) -> None:
        self.field = field_name
        super().__init__(f"{field_name}: {message}")


def _positive_int(name: str, value: object, *, optional: bool = False) -> int | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise WorkloadError(name, f"must be a positive integer, got {value!r}")
    if value != int(value) or value < 1:
        raise WorkloadError(name, f"must be a positive integer, got {value!r}")
    return int(value)


def _positive_float(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value <= 0:
        raise WorkloadError(name, f"must be a positive number, got {value!r}")
    return float(value)


def normalize_checkpointing(value: object) -> str | None:
    """``True``/``False``/``"selective"`` (or their string forms) -> ``"true"``/``"false"``/``"selective"``."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    text = str(value).strip().lower()
    if text in CHECKPOINTING:
        return text
    raise WorkloadError("activation_checkpointing", f"must be one of true, false, selective; got {value!r}")


def normalize_stack(value: object) -> str | None:
    """A stack name as the CSV writes it (lower case), or None for empty/unknown; WorkloadError otherwise."""
    if value is None:
        return None
    text = str(value).strip().lower()
    if not text or text == "unknown":
        return None
    if text in STACKS:
        return text
    raise WorkloadError("stack", f"must be one of {', '.join(STACKS)} or empty (unknown); got {value!r}")


def virtual_stage_problem(*, virtual: int, pp: int | None, layers: int, stack: str | None = None) -> str | None:
    """Why ``virtual`` stages per GPU cannot interleave a pipeline of ``pp`` stages (None: searched) over ``layers``
    layers in ``stack`` (None: unknown), or None: interleaving splits pipeline stages, so it needs pp > 1 and at
    least one layer per virtual stage (Megatron-LM refuses both), and a stack that offers the schedule
    (estimator/data/stacks.csv interleaved_pipeline). A stage may hold one layer fewer than an even share (Llama 3
    405B: 126 layers on 16 stages), so the bound is the rounded-up share; with pp searched, it needs
    ``virtual`` <= ceil(layers / 2). The one rule for profiled-run rows and Scenarios."""
    if virtual <= 1:
        return None
    props = stack_properties().get(stack) if stack else None
    if props is not None and not props.interleaved_pipeline:
        return (
            f"{virtual}: the {stack} stack has no interleaved pipeline schedule (stacks.csv); give 1, or leave it out"
        )
    if pp == 1:
        return f"{virtual} needs pp > 1 (interleaving splits pipeline stages; pp is 1): give 1, or leave it out"
    stages = 2 if pp is None else pp
    per_stage = -(-layers // stages)
    if virtual > per_stage:
        where = f"on pp = {pp} stages" if pp is not None else "on the fewest pipeline stages that interleave (2)"
        return (
            f"{virtual} is more than one virtual stage per layer: {layers} layers {where} hold at most {per_stage} each"
        )
    return None


def derive_architecture(params_b: float) -> dict[str, int]:
    """layers, hidden, heads, ffn_hidden, vocab for a dense decoder of ``params_b`` billion parameters: the model
    catalog's derivation (estimator.catalog.derive_geometry), the one a Scenario takes, so ``estimate`` and ``advise``
    run one shape (an outsider's probe: this was a GPT-3 rule of its own, 70.6 -> 71 x 9216 with FFN 4 x hidden and
    a 32,000 vocabulary where advise ran Llama 3.1 70B's 80 x 8192; 0.5B on 8 H100s 776,895 against 1,159,373
    tokens/s)."""
    return architecture_dict(derive_geometry(params_b=params_b))


@dataclass(frozen=True, slots=True)
class TrainingJob:
    """A transformer training job, dense or mixture-of-experts.

    params_b: parameters [billions], every expert included (what memory, gradients and optimizer states hold);
    active_params_b: the parameters one token runs through [billions] (a mixture of experts' active experts; None =
    dense: all of them), what the FLOPs per token and MFU count; seq_len [tokens]; global_batch and micro_batch
    [sequences];
    precision: fp32, tf32, bf16, fp16 or fp8 (mixed precision with fp32 optimizer states except fp32/tf32);
    layers/hidden/heads/ffn_hidden/vocab: architecture, derived from params_b when None;
    strategy (ddp, zero1, zero2, zero3, fsdp = zero3, hsdp), tp, pp, cp, micro_batch and
    activation_checkpointing ("true", "false", "selective"; booleans accepted): None means "search it";
    stack: the software stack (one of STACKS), None = unknown (the stacks' prior mean, a wider interval).
    """

    params_b: float
    seq_len: int
    global_batch: int
    precision: str = "bf16"
    layers: int | None = None
    hidden: int | None = None
    heads: int | None = None
    ffn_hidden: int | None = None
    vocab: int | None = None
    strategy: str | None = None
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    micro_batch: int | None = None
    activation_checkpointing: str | bool | None = None
    stack: str | None = None
    # Virtual pipeline stages per GPU (1 = plain 1F1B); None = searched where the stack offers the interleaved schedule
    virtual_pipeline: int | None = None
    active_params_b: float | None = None
    # Width of the attention core [elements]: its causal forward is 2 x layers x seq_len x attention_width FLOPs per
    # token and Q, K, V and the attention output store that width; heads x (qk + v head dims) / 2
    # (estimator.catalog.ModelGeometry.attention_width). None = hidden, as in multi-head attention. DeepSeek-V3's
    # latent attention is 20,480 wide beside a hidden size of 7168.
    attention_width: int | None = None
    # Key/value heads of grouped-query attention (None = not known: heads alone bound tensor parallelism). Megatron-Core
    # splits the KV groups over the tensor-parallel ranks (megatron/core/transformer/attention.py:
    # divide(num_query_groups, world_size) asserts divisibility), so tp must divide them.
    kv_heads: int | None = None

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "params_b", _positive_float("params_b", self.params_b))
        if self.active_params_b is not None:
            active = _positive_float("active_params_b", self.active_params_b)
            if active > self.params_b:
                raise WorkloadError("active_params_b", f"must not exceed params_b ({self.params_b}); got {active}")
            put(self, "active_params_b", active)
        put(self, "seq_len", _positive_int("seq_len", self.seq_len))
        put(self, "global_batch", _positive_int("global_batch", self.global_batch))
        precision = str(self.precision).strip().lower()
        if precision not in PRECISIONS:
            raise WorkloadError("precision", f"must be one of {', '.join(PRECISIONS)}; got {self.precision!r}")
        put(self, "precision", precision)
        derived = derive_architecture(self.params_b)
        if self.hidden is not None and self.ffn_hidden is None:
            # The ffn follows the given hidden size (the catalog's rule), not the one params_b would imply.
            derived["ffn_hidden"] = ffn_for_hidden(int(_positive_int("hidden", self.hidden) or 0))
        for name in ("layers", "hidden", "heads", "ffn_hidden", "vocab"):
            value = _positive_int(name, getattr(self, name), optional=True)
            put(self, name, derived[name] if value is None else value)
        width = _positive_int("attention_width", self.attention_width, optional=True)
        put(self, "attention_width", self.hidden if width is None else width)
        if self.hidden % self.heads:  # type: ignore[operator]
            raise WorkloadError("heads", f"must divide hidden ({self.hidden}); got {self.heads}")
        if self.strategy is not None:
            strategy = str(self.strategy).strip().lower()
            if strategy not in STRATEGIES:
                raise WorkloadError("strategy", f"must be one of {', '.join(STRATEGIES)}; got {self.strategy!r}")
            put(self, "strategy", strategy)
        for name in ("tp", "pp", "cp", "micro_batch", "virtual_pipeline"):
            put(self, name, _positive_int(name, getattr(self, name), optional=True))
        if self.micro_batch is not None and self.micro_batch > self.global_batch:
            raise WorkloadError("micro_batch", f"must not exceed global_batch ({self.global_batch})")
        if self.tp is not None and self.heads % self.tp:  # type: ignore[operator]
            raise WorkloadError("tp", f"must divide heads ({self.heads}); got {self.tp}")
        self._check_kv_heads()
        put(self, "activation_checkpointing", normalize_checkpointing(self.activation_checkpointing))
        put(self, "stack", normalize_stack(self.stack))

    def _check_kv_heads(self) -> None:
        kv = _positive_int("kv_heads", self.kv_heads, optional=True)
        object.__setattr__(self, "kv_heads", kv)
        if kv is None:
            return
        if self.heads % kv:  # type: ignore[operator]
            raise WorkloadError("kv_heads", f"must divide heads ({self.heads}); got {kv}")
        if self.tp is not None and kv % self.tp:
            raise WorkloadError(
                "tp",
                f"must divide kv_heads ({kv}): Megatron-Core splits the key/value heads over the tensor-parallel "
                f"ranks; got {self.tp}",
            )

    @property
    def params(self) -> float:
        """Parameters [count]."""
        return self.params_b * 1e9

    @property
    def active_params(self) -> float:
        """Parameters one token runs through [count]: all of them in a dense model."""
        return (self.params_b if self.active_params_b is None else self.active_params_b) * 1e9


@dataclass(frozen=True, slots=True)
class Cluster:
    """GPUs of one type; gpus_per_node and inter_node_gbps [Gb/s per node] default to the GPU's typical server."""

    gpu: GpuSpec
    gpus_per_node: int | None = field(default=None)
    inter_node_gbps: float | None = field(default=None)

    def __post_init__(self) -> None:
        if not isinstance(self.gpu, GpuSpec):
            raise WorkloadError("gpu", f"must be a GpuSpec, got {type(self.gpu).__name__}")
        put = object.__setattr__
        gpn = self.gpu.gpus_per_node if self.gpus_per_node is None else self.gpus_per_node
        put(self, "gpus_per_node", _positive_int("gpus_per_node", gpn))
        bw = self.gpu.inter_node_gbps if self.inter_node_gbps is None else self.inter_node_gbps
        put(self, "inter_node_gbps", _positive_float("inter_node_gbps", bw))
