"""The Scenario JSON of DESIGN.md as a typed model: the ONE definition of its fields, bounds and choices.

Generated from it: ``advisor/schemas/scenario.schema.json`` (``manage.py generate_schemas``; a test fails when the
committed file differs), the OpenAPI components of the Scenario (advisor/api/schema.py) and the planner form's
limits (advisor/web/forms.py). ``advisor.scenario.parse_scenario`` reads every bound, choice and field list it
checks from here through :func:`rule`, and keeps what a schema cannot say: the defaults (with their sources,
advisor/scenario.py ``DEFAULTS``), the normalization (provider slugs lower-cased, duplicates dropped, 8.0 read as 8)
and the cross-field rules (named in the schema's description).

One rule for values, the schema's, held by all three (the schema, this model, the parser): a choice is one of the
listed strings exactly (no other case, no surrounding spaces: the server stores a document as given and returns it,
so a value it accepted outside the enum would break a generated client on the way back); an integer is what JSON
Schema calls one, so 8.0 is the integer 8 (JSON has one number type; JavaScript and schemathesis send 8.0).

This describes the document as given: every field but ``workload.kind``, ``workload.model`` (a catalog name or
``params_b``), ``workload.tokens`` (training) and ``gpu`` may be null or left out, meaning its documented default.
Every object is closed (``extra="forbid"``): the parser refuses unknown fields, so the schema says so.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema, model_validator

from advisor.limits import MAX_CLUSTER_SIZES, MAX_COMPARE_GPUS, MAX_MARKETS, MAX_PROVIDERS
from advisor.schema_gen import DRAFT_2020_12, SCHEMA_BASE_URI, NoFieldTitles, schema_text
from core.textcheck import NAME_PATTERN
from estimator import bounds
from estimator.catalog import model_ids
from estimator.specs import GPU_IDS, PRECISIONS
from estimator.workload import STACKS, STRATEGIES, stack_meanings
from pricing.models import Market

# The smallest model the estimator is meant for (estimator.bounds: one definition, shared with profiled-run rows).
MIN_PARAMS_B: Final[float] = bounds.MIN_PARAMS_B
MAX_PARAMS_B: Final[float] = bounds.MAX_PARAMS_B
MAX_GPUS: Final[int] = bounds.MAX_GPUS
MAX_DIMENSION: Final[int] = bounds.MAX_GEOMETRY  # model geometry, sequence length, batch, tokens per request
# An owned cluster busy about an hour a year (0.01%: 53 minutes): the cost of a busy GPU-hour divides by the
# utilization, and a vanishing one (5e-324) left the costs per run and per busy GPU-hour null, not finite.
MIN_UTILIZATION: Final[float] = 1e-4
KINDS: Final[tuple[str, ...]] = ("training", "inference")
LAYOUT_STRATEGIES: Final[tuple[str, ...]] = ("auto", *STRATEGIES)
# The serving engines a deployment can be sized for: the user-facing rows of
# estimator/data/inference/serving_stacks.csv (its other rows, trtllm_v0.9 and trtllm_bench, are the engines of
# published benchmark tables the calibration was fitted on, not engines one deploys). Which GPUs each runs on:
# advisor.scenario ENGINE_VENDORS.
SERVING_ENGINES: Final[tuple[str, ...]] = ("trtllm", "nim", "vllm", "sglang")
# Provider slugs; the parser lower-cases them before matching (a provider's id is case-insensitive).
PROVIDER_SLUG: Final[str] = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$"
SCENARIO_SCHEMA_FILE: Final[str] = "scenario.schema.json"
# Free text holds no NUL (the API refuses it in any string before anything is stored: PostgreSQL text cannot hold
# it). Unpaired surrogates are refused too, but a pattern cannot say so: ECMA-262 patterns without the u flag see
# UTF-16 code units, where every character above U+FFFF is a surrogate pair.
NO_NUL: Final[str] = r"^[^\x00]*$"
# A name (of a scenario, fleet, job, calibration or token) is one line: no control character or line break
# (core.textcheck.clean_name refuses the same, from the same character class; an XLSX cell cannot hold most of them).
NAME_TEXT: Final[str] = NAME_PATTERN

GpuId = Literal[GPU_IDS]  # type: ignore[valid-type]
MODEL_IDS: Final[tuple[str, ...]] = tuple(model_ids())
MARKET_IDS: Final[tuple[str, ...]] = tuple(Market.values)
CatalogModel = Literal[MODEL_IDS]  # type: ignore[valid-type]
Precision = Literal[PRECISIONS]  # type: ignore[valid-type]
Strategy = Literal[LAYOUT_STRATEGIES]  # type: ignore[valid-type]
Stack = Literal[STACKS]  # type: ignore[valid-type]
STACK_DESCRIPTION: Final[str] = (
    "training stack as in the profiled-run CSV, each label the runs it was fitted on ("
    + stack_meanings()
    + "; a current Megatron-Core run with Transformer Engine is closest to nemo); null = unknown"
)
ServingEngine = Literal[SERVING_ENGINES]  # type: ignore[valid-type]
MarketId = Literal[MARKET_IDS]  # type: ignore[valid-type]
# A one-value string enum rather than `const`: openapi-python-client turns a const inside a union into a check
# that refuses the other branches (true/false), an enum into an attempt that falls through to them.
Selective = Annotated[Literal["selective"], WithJsonSchema({"type": "string", "enum": ["selective"]})]


def _integral(value: Any) -> Any:
    """8.0 as the integer 8, as JSON Schema's `integer` takes it (the strict model would refuse the float)."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


# After the bounds in Annotated, so that it runs first and the bounds stay in the JSON Schema.
INTEGRAL: Final = BeforeValidator(_integral)
Dimension = Annotated[int, Field(ge=1, le=MAX_DIMENSION), INTEGRAL]
Experts = Annotated[int, Field(ge=0, le=MAX_DIMENSION), INTEGRAL]
Gpus = Annotated[int, Field(ge=1, le=MAX_GPUS), INTEGRAL]
Fraction = Annotated[float, Field(ge=0, le=1)]
# A saved document's name (scenarios and fleets: their `name` column holds 200 characters).
DocumentName = Annotated[str, Field(max_length=200, pattern=NAME_TEXT)]


class Closed(BaseModel):
    # Strict: JSON types as the schema says them (the string "false" is not a boolean, "7" not a number).
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class WorkloadModel(Closed):
    """A catalog name, or params_b with optional geometry. Cross-field rules (estimator.catalog), each a 400 naming
    the field: geometry implying a size more than 15% from params_b is refused (/workload/model); beside a name,
    geometry must be the catalog's and params_b within 15% of its count; heads divide hidden, kv_heads divide heads,
    1 <= active_experts <= experts, and experts need layers and hidden."""

    # "Without params_b, a name": if/then rather than anyOf of two partial objects, which client generators turn
    # into two classes holding only `name` or only `params_b` (the geometry left untyped).
    model_config = ConfigDict(
        json_schema_extra={
            "if": {"properties": {"params_b": {"type": "null"}}},
            "then": {"required": ["name"], "properties": {"name": {"type": "string"}}},
        }
    )

    params_b: Annotated[float, Field(ge=MIN_PARAMS_B, le=MAX_PARAMS_B)] | None = Field(
        default=None, description="billions of parameters (total, experts included)"
    )
    name: CatalogModel | None = Field(
        default=None,
        description="a bundled catalog model (estimator/data/models.csv); its geometry and params_b are the catalog's",
    )
    seq_len: Dimension | None = Field(default=None, description="tokens per sequence")
    layers: Dimension | None = None
    hidden: Dimension | None = None
    heads: Dimension | None = None
    kv_heads: Dimension | None = None
    ffn_hidden: Dimension | None = None
    vocab: Dimension | None = None
    experts: Experts | None = None
    active_experts: Experts | None = None

    @model_validator(mode="after")
    def _named_or_sized(self) -> WorkloadModel:
        if self.name is None and self.params_b is None:
            raise ValueError("a catalog name or params_b is required")
        return self


class Parallelism(Closed):
    """The parallel layout; what is left out is chosen per cluster size (an Advice size's layout fits here)."""

    strategy: Strategy | None = None
    tp: Gpus | None = None
    pp: Gpus | None = None
    cp: Gpus | None = None
    micro_batch: Gpus | None = Field(default=None, description="sequences per GPU per step; at most global_batch")
    activation_checkpointing: bool | Selective | None = None
    virtual_pipeline: Gpus | None = Field(
        default=None,
        description="virtual pipeline stages per GPU of the interleaved schedule (1 = plain 1F1B); null = chosen per "
        "cluster size where the stack offers the schedule",
    )


class Traffic(Closed):
    peak_requests_per_s: Annotated[float, Field(ge=bounds.MIN_REQUESTS_PER_S, le=1e7)] | None = None
    mean_requests_per_s: Annotated[float, Field(ge=bounds.MIN_REQUESTS_PER_S, le=1e7)] | None = Field(
        default=None, description="at most peak_requests_per_s"
    )
    input_tokens: Dimension | None = None
    output_tokens: Dimension | None = None


class Latency(Closed):
    ttft_p95_s: Annotated[float, Field(ge=bounds.MIN_LATENCY_S, le=3600)] | None = None
    tpot_p95_s: Annotated[float, Field(ge=bounds.MIN_LATENCY_S, le=3600)] | None = None


class TrainingWorkload(Closed):
    kind: Literal["training"]
    model: WorkloadModel
    precision: Precision | None = Field(default=None, description="supported by the GPU (its peak_tflops)")
    stack: Stack | None = Field(default=None, description=STACK_DESCRIPTION)
    tokens: Annotated[float, Field(ge=bounds.MIN_RUN_TOKENS, le=1e16)] = Field(description="tokens one run processes")
    global_batch: Dimension | None = Field(default=None, description="sequences per optimizer step")
    parallelism: Parallelism | None = None
    runs_per_year: Annotated[float, Field(ge=bounds.MIN_RUNS_PER_YEAR, le=100_000)] | None = None


class InferenceWorkload(Closed):
    kind: Literal["inference"]
    model: WorkloadModel
    precision: Precision | None = Field(default=None, description="supported by the GPU (its peak_tflops)")
    stack: Stack | None = Field(default=None, description=STACK_DESCRIPTION)
    serving_engine: ServingEngine | None = Field(
        default=None,
        description="the engine the deployments are sized for (its memory and batching settings: "
        "estimator/data/inference/serving_stacks.csv); trtllm and nim run on NVIDIA GPUs only; null = trtllm on "
        "NVIDIA GPUs, vllm on others",
    )
    traffic: Traffic | None = None
    latency: Latency | None = None


Workload = Annotated[TrainingWorkload | InferenceWorkload, Field(discriminator="kind")]
WORKLOADS: Final[dict[str, type[Closed]]] = {"training": TrainingWorkload, "inference": InferenceWorkload}


class Network(Closed):
    gpus_per_node: Annotated[int, Field(ge=1, le=bounds.MAX_GPUS_PER_NODE), INTEGRAL] | None = Field(
        default=None, description="GPUs in one server (NVLink domain); null = the GPU's typical server"
    )
    inter_node_gbps: Annotated[float, Field(ge=bounds.MIN_INTER_NODE_GBPS, le=bounds.MAX_INTER_NODE_GBPS)] | None = (
        Field(default=None, description="scale-out bandwidth of one node, Gb/s; null = the GPU's typical server")
    )


class Spot(Closed):
    interruptions_per_node_hour: Annotated[float, Field(ge=0, le=10)] | None = None
    checkpoint_s: Annotated[float, Field(ge=0, le=86_400)] | None = None
    restart_s: Annotated[float, Field(ge=0, le=86_400)] | None = None


class Rent(Closed):
    providers: Annotated[list[Annotated[str, Field(pattern=PROVIDER_SLUG)]], Field(max_length=MAX_PROVIDERS)] | None = (
        Field(default=None, description="provider slugs to restrict offers to; [] = all; unknown slugs are refused")
    )
    markets: Annotated[list[MarketId], Field(min_length=1, max_length=MAX_MARKETS)] | None = None
    usd_per_gpu_hour: Annotated[float, Field(ge=bounds.MIN_USD_PER_GPU_HOUR, le=10_000)] | None = Field(
        default=None, description="a manual quote per GPU-hour; null = the price catalog"
    )
    price_decline_per_year: Annotated[float, Field(ge=0, le=0.9)] | None = None
    spot: Spot | None = None


class Buy(Closed):
    server: Annotated[str, Field(max_length=120, pattern=NO_NUL)] | None = Field(
        default=None,
        description="a hardware quote name for the GPU (GET /api/v1/hardware-quotes; another is refused when "
        "the advice is computed); "
        "null = the newest catalog quote for the GPU",
    )
    capex_usd: Annotated[float, Field(ge=bounds.MIN_CAPEX_USD, le=1e10)] | None = Field(
        default=None, description="all-in purchase price of ONE node; null = the hardware quote"
    )
    years: Annotated[float, Field(ge=bounds.MIN_OWNERSHIP_YEARS, le=30)] | None = None
    discount_rate: Fraction | None = None
    residual_fraction: Fraction | None = None
    power_usd_per_kwh: Annotated[float, Field(ge=0, le=10)] | None = None
    pue: Annotated[float, Field(ge=1, le=5)] | None = None
    colo_usd_per_kw_month: Annotated[float, Field(ge=0, le=100_000)] | None = None
    support_fraction_per_year: Fraction | None = None
    staff_usd_per_year: Annotated[float, Field(ge=0, le=1e9)] | None = None
    software_usd_per_gpu_year: Annotated[float, Field(ge=0, le=1e6)] | None = None


class Scenario(Closed):
    model_config = ConfigDict(title="Scenario")

    name: DocumentName | None = None
    workload: Workload
    gpu: GpuId
    compare_gpus: Annotated[list[GpuId], Field(max_length=MAX_COMPARE_GPUS)] | None = Field(
        default=None, description="GPU ids compared at their best size (Advice alternatives)"
    )
    cluster_sizes: Annotated[list[Gpus], Field(max_length=MAX_CLUSTER_SIZES)] | None = Field(
        default=None, description="candidate GPU counts; above one node, whole nodes"
    )
    network: Network | None = None
    rent: Rent | None = None
    buy: Buy | None = None
    utilization: Annotated[float, Field(ge=MIN_UTILIZATION, le=1)] | None = Field(
        default=None,
        description="fraction of the year the owned cluster is busy (at least 0.0001, about an hour a year); null "
        "with workload.runs_per_year given "
        "(training): implied per size, min(1, runs_per_year x run_hours / 8760)",
    )


_DESCRIPTION: Final[str] = (
    "Input of advise(), POST /api/v1/advice and saved scenarios (DESIGN.md). Null means the documented default "
    "(advisor/scenario.py DEFAULTS). Cross-field rules (sizes above one node must be whole nodes, micro_batch <= "
    "global_batch, tp divides heads, mean <= peak requests, precision supported by the GPU, geometry given beside a "
    "catalog name is the catalog's, geometry within 15% of params_b, serving_engine runs on the GPU) and the known "
    "provider slugs (stored data) are checked by advisor.scenario.parse_scenario; buy.server must name a stored "
    "hardware quote for the GPU, checked when the advice is computed. Each is a 400 naming the field. Generated from "
    "advisor/scenario_model.py (manage.py generate_schemas); do not edit."
)


def scenario_json_schema(*, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """The Scenario's JSON Schema (draft 2020-12); `ref_template` places its parts elsewhere (the OpenAPI
    document keeps every part under #/components/schemas)."""
    schema = Scenario.model_json_schema(mode="validation", ref_template=ref_template, schema_generator=NoFieldTitles)
    return {
        "$schema": DRAFT_2020_12,
        "$id": SCHEMA_BASE_URI + SCENARIO_SCHEMA_FILE,
        **schema,
        "title": "GPU Advisor Scenario",
        "description": _DESCRIPTION,
    }


def generated_schema_files() -> dict[str, str]:
    """file name in advisor/schemas/ -> its text, exactly as committed."""
    return {SCENARIO_SCHEMA_FILE: schema_text(scenario_json_schema())}


# --- the rules as the parser and the form read them ---------------------------------------------------------


@dataclass(frozen=True)
class Rule:
    """What one field of the Scenario allows, read from the model's JSON Schema."""

    integer: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: bool = False
    choices: tuple[Any, ...] = ()
    max_length: int | None = None
    min_items: int | None = None
    max_items: int | None = None
    pattern: str | None = None
    fields: tuple[str, ...] = ()
    items: Rule | None = None
    nullable: bool = False


@functools.cache
def _schema() -> dict[str, Any]:
    return scenario_json_schema()


def _resolve(node: dict[str, Any]) -> dict[str, Any]:
    defs = _schema()["$defs"]
    while "$ref" in node:
        node = defs[node["$ref"].rsplit("/", 1)[-1]]
    return node


def _rule(node: dict[str, Any]) -> Rule:
    node = _resolve(node)
    branches = node.get("anyOf") if "properties" not in node else None
    nullable = False
    if branches:
        typed = [_resolve(b) for b in branches if b.get("type") != "null"]
        nullable = len(typed) < len(branches)
        if len(typed) == 1:
            node = typed[0]
    low = node.get("exclusiveMinimum", node.get("minimum"))
    choices = tuple(node.get("enum") or (() if "const" not in node else (node["const"],)))
    return Rule(
        integer=node.get("type") == "integer",
        minimum=low,
        maximum=node.get("maximum"),
        exclusive_minimum="exclusiveMinimum" in node,
        choices=choices,
        max_length=node.get("maxLength"),
        min_items=node.get("minItems"),
        max_items=node.get("maxItems"),
        pattern=node.get("pattern"),
        fields=tuple(node.get("properties", {})),
        items=_rule(node["items"]) if "items" in node else None,
        nullable=nullable,
    )


@functools.cache
def rule(pointer: str, kind: str = "training") -> Rule:
    """The rule of the field at `pointer` (a JSON pointer into a Scenario, "" for the whole document; array
    items as "/cluster_sizes/-"); `kind` chooses the workload the /workload fields belong to."""
    node: dict[str, Any] = _schema()
    for part in [p for p in pointer.split("/")[1:]]:
        node = _resolve(node)
        if "oneOf" in node and "discriminator" in node:  # the workload: the branch of its kind
            node = _resolve(node["discriminator"]["mapping"] and {"$ref": node["discriminator"]["mapping"][kind]})
        if "anyOf" in node and "properties" not in node:
            node = next(_resolve(b) for b in node["anyOf"] if b.get("type") != "null")
        node = node["items"] if part == "-" else node["properties"][part]
    if "oneOf" in _resolve(node):
        node = {"$ref": _resolve(node)["discriminator"]["mapping"][kind]}
    return _rule(node)
