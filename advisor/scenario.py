"""The Scenario JSON of DESIGN.md: parse, validate, fill defaults, normalize.

``parse_scenario(document)`` returns a frozen :class:`Scenario` whose ``to_dict()`` is the
normalized document with every default filled in, or raises :class:`ScenarioError` carrying every
problem found as ``{"pointer": "/workload/model/params_b", "message": "..."}`` (RFC 6901 JSON
pointers; the message says what is allowed). Unknown fields are errors, never ignored.

Defaults (units; source). Ownership costs come from ``pricing.selectors.ownership_defaults()``
(the shipped table ``pricing/data/ownership_defaults.csv``, each row with its source and date):
``buy.years``, ``buy.discount_rate``, ``buy.residual_fraction``, ``buy.power_usd_per_kwh``,
``buy.pue``, ``buy.colo_usd_per_kw_month``, ``buy.support_fraction_per_year``. The rest:
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final

from advisor.economics import HOURS_PER_MONTH
from advisor.scenario_model import (
    KINDS,
    LAYOUT_STRATEGIES,
    MAX_GPUS,
    MIN_PARAMS_B,
    SERVING_ENGINES,
    STACKS,
    Rule,
    rule,
)
from core.textcheck import CONTROL_CHARACTER_DETAIL, NAME_PATTERN, name_problem, nfc
from estimator.catalog import (
    GEOMETRY_FIELDS,
    CatalogError,
    ModelGeometry,
    architecture_dict,
    context_problem,
    derive_geometry,
    resolve_model,
    served_context,
    work_params_b,
)
from estimator.inference.engines import (
    DEFAULT_SERVING_ENGINE,
    OTHER_VENDOR_SERVING_ENGINE,
    default_serving_engine,
    serving_engine_problem,
)
from estimator.specs import GpuSpec, UnknownGpuError, get_gpu
from estimator.workload import virtual_stage_problem
from pricing.models import Market

# Re-exported: the bounds and choices are defined once, in advisor.scenario_model (the typed Scenario).
__all__ = ["KINDS", "LAYOUT_STRATEGIES", "MAX_GPUS", "MIN_PARAMS_B", "SERVING_ENGINES", "STACKS"]


@dataclass(frozen=True)
class Default:
    value: Any
    unit: str
    source: str
    as_of: str | None = None  # the date the source states, or the day it was read where it states none (ISO 8601)


# Every default that does not come from the ownership-defaults table, with its unit and source.
DEFAULTS: Final[Mapping[str, Default]] = {
    "/name": Default("Untitled scenario", "text", "placeholder"),
    "/workload/model/seq_len": Default(
        4096, "tokens", "Llama 2 context length (Touvron et al. 2023); DESIGN.md example"
    ),
    "/workload/model/layers": Default(
        None, "count", "the catalog entry /workload/model/name, else derived from params_b: estimator.catalog"
    ),
    "/workload/stack": Default(None, "training stack", "DESIGN.md profiled-run CSV: empty = unknown"),
    "/workload/global_batch": Default(
        1024, "sequences", "DESIGN.md example; Llama 2 trained with 4M-token batches = 1024 x 4096"
    ),
    "/workload/precision": Default("bf16", "precision", "DESIGN.md example; the usual mixed precision since A100"),
    "/workload/parallelism/strategy": Default("auto", "strategy", "DESIGN.md: searched per cluster size"),
    "/workload/runs_per_year": Default(4, "runs/year", "DESIGN.md example"),
    "/compare_gpus": Default([], "GPU ids", "no comparison unless asked"),
    "/workload/traffic": Default(
        {"peak_requests_per_s": 50, "mean_requests_per_s": 20, "input_tokens": 1000, "output_tokens": 200},
        "requests/s, tokens",
        "DESIGN.md inference example",
    ),
    "/workload/latency": Default({"ttft_p95_s": 1.0, "tpot_p95_s": 0.05}, "s", "DESIGN.md inference example"),
    "/cluster_sizes": Default(
        "powers of two 1..512 that are at most one node or whole nodes",
        "GPUs",
        "DESIGN.md: a single-GPU baseline, then 2, 4, 8... shows where the curve flattens",
    ),
    "/network/gpus_per_node": Default(None, "GPUs", "the GPU's typical server (estimator.specs, gpus.csv)"),
    "/network/inter_node_gbps": Default(None, "Gb/s per node", "the GPU's typical server (estimator.specs, gpus.csv)"),
    "/rent/providers": Default([], "provider slugs", "DESIGN.md: [] means all"),
    "/rent/markets": Default(
        list(Market.values),
        "markets",
        "DESIGN.md: all markets; training leaves spot out unless listed (every interruption restarts the whole "
        "synchronous job, cost-model.md 4.4)",
    ),
    "/rent/usd_per_gpu_hour": Default(None, "USD/GPU-hour", "DESIGN.md: null = use the price catalog"),
    "/rent/price_decline_per_year": Default(
        0.0,
        "fraction/year",
        "no decline assumed unless given; cost-model.md 4.5 recommends modelling one (H100 ~$8/h in 2023, ~$2 by 2025)",
    ),
    "/rent/spot/interruptions_per_node_hour": Default(
        0.2 / HOURS_PER_MONTH,
        "interruptions per node-hour",
        "AWS Spot Instance Advisor top bucket '>20%' interruptions per month (cost-model.md 4.4), 730 h/month; "
        "read 2026-12-05 (the source states no date)",
        "2026-12-05",
    ),
    "/rent/spot/checkpoint_s": Default(
        120,
        "s",
        "cost-model.md 4.4 Young/Daly example (120 s checkpoint write); read 2026-12-05 (the source states no date)",
        "2026-12-05",
    ),
    "/rent/spot/restart_s": Default(
        1800,
        "s",
        "cost-model.md 4.4: measured 28-58 min capacity waits for constrained GPU families (lower end); read "
        "2026-12-05 (the source states no date)",
        "2026-12-05",
    ),
    "/buy/server": Default(None, "hardware quote name", "null = the newest catalog quote for the GPU"),
    "/buy/capex_usd": Default(None, "USD per node", "DESIGN.md: null = the hardware quote"),
    "/buy/staff_usd_per_year": Default(
        0,
        "USD/year",
        "DESIGN.md example (staff shared with existing operations); read 2026-12-05 (the source states no date)",
        "2026-12-05",
    ),
    "/buy/software_usd_per_gpu_year": Default(
        0,
        "USD/GPU-year",
        "open-source stack; NVIDIA AI Enterprise would be $4,500/GPU/yr (Jensen Huang, NVIDIA Q3 FY24 earnings call, "
        "2023-11-21; cost-model.md 1.2)",
        "2023-11-21",
    ),
    "/utilization": Default(
        0.6,
        "fraction of the year busy",
        "DESIGN.md example; for training with /workload/runs_per_year given it is implied per size instead: "
        "min(1, runs_per_year x run_hours / 8760) (null in the normalized scenario)",
    ),
}

OWNERSHIP_KEYS: Final[tuple[str, ...]] = (
    "years",
    "discount_rate",
    "residual_fraction",
    "power_usd_per_kwh",
    "pue",
    "colo_usd_per_kw_month",
    "support_fraction_per_year",
)
MARKETS: Final[tuple[str, ...]] = tuple(Market.values)
DEFAULT_MAX_DEFAULT_SIZE: Final[int] = 512

# Which engines run on which GPUs, and the default engine: estimator.inference.engines (one rule with
# estimate_inference).

__doc__ = (
    (__doc__ or "")
    + "\n".join(f"- ``{pointer}``: {d.value!r} ({d.unit}; {d.source})" for pointer, d in DEFAULTS.items())
    + f"\n- ``/workload/serving_engine`` (inference): {DEFAULT_SERVING_ENGINE!r} on the GPUs it runs on, else "
    f"{OTHER_VENDOR_SERVING_ENGINE!r} (estimator.inference.engines ENGINE_VENDORS); the Advice's /serving/engine "
    "assumption says which and why."
)


class ScenarioError(ValueError):
    """Invalid scenario. ``errors`` is a list of ``{"pointer": ..., "message": ...}``."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['pointer'] or '/'}: {e['message']}" for e in errors))

    @property
    def messages(self) -> str:
        """The messages alone, joined: what a page shows under its own heading."""
        return "; ".join(e["message"] for e in self.errors)


def pointer(*parts: str | int) -> str:
    """RFC 6901 JSON pointer from path parts."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class _Checker:
    """Collects errors while reading a JSON document."""

    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []
        self.kind = "training"  # which workload's rules /workload/... fields follow

    def rule(self, where: str) -> Rule:
        return rule(where, self.kind)

    def fields(self, value: Any, where: str) -> dict[str, Any]:
        """``value`` as the object at ``where``, its allowed fields from the model."""
        return self.obj(value, where, self.rule(where).fields)

    def bounded(self, value: Any, where: str, rule_at: str | None = None) -> float | int | None:
        """A number within the model's bounds for ``rule_at`` (default: ``where``; array items as ``.../-``)."""
        r = self.rule(rule_at or where)
        assert r.minimum is not None and r.maximum is not None, rule_at or where
        return self.number(
            value,
            where,
            minimum=r.minimum,
            maximum=r.maximum,
            exclusive_minimum=r.exclusive_minimum,
            integer=r.integer,
        )

    def chosen(self, value: Any, where: str, rule_at: str | None = None) -> str | None:
        return self.choice(value, where, self.rule(rule_at or where).choices)

    def fail(self, where: str, message: str) -> None:
        self.errors.append({"pointer": where, "message": message})

    def obj(self, value: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            self.fail(where, f"must be an object with fields {', '.join(allowed)}; got {_kind(value)}")
            return {}
        for key in value:
            if key not in allowed:
                self.fail(f"{where}/{_escape(str(key))}", f"unknown field; allowed here: {', '.join(allowed)}")
        return value

    def number(
        self,
        value: Any,
        where: str,
        *,
        minimum: float,
        maximum: float,
        exclusive_minimum: bool = False,
        integer: bool = False,
    ) -> float | int | None:
        low = "greater than" if exclusive_minimum else "at least"
        what = "an integer" if integer else "a number"
        allowed = f"must be {what} {low} {_fmt(minimum)} and at most {_fmt(maximum)}"
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(where, f"{allowed}; got {_kind(value)}")
            return None
        try:
            number = float(value)
        except OverflowError:
            self.fail(where, f"{allowed}; got a number too large")
            return None
        if not math.isfinite(number):
            self.fail(where, f"{allowed}; got {value!r}")
            return None
        if integer and number != int(number):
            self.fail(where, f"{allowed}; got {value!r}")
            return None
        too_low = number <= minimum if exclusive_minimum else number < minimum
        if too_low or number > maximum:
            self.fail(where, f"{allowed}; got {value!r}")
            return None
        return int(number) if integer else number

    def choice(self, value: Any, where: str, allowed: tuple[str, ...]) -> str | None:
        # Exactly as listed, as the schema's enum says: a document is stored as given and returned as saved.
        if isinstance(value, str) and value in allowed:
            return value
        self.fail(where, f"must be one of {', '.join(allowed)}; got {value!r}{_case_hint(value, allowed)}")
        return None

    def text(self, value: Any, where: str) -> str | None:
        """Free text within the model's length and pattern (no NUL; a name no control character either) for
        ``where``."""
        r = self.rule(where)
        assert r.max_length is not None and r.pattern is not None, where
        if isinstance(value, str) and r.pattern == NAME_PATTERN:
            value = nfc(value)  # stored and compared in NFC, as saved items' names are
        if not isinstance(value, str) or len(value) > r.max_length:
            self.fail(where, f"must be a string of at most {r.max_length} characters; got {_kind(value)}")
            return None
        # A name (not blank: a blank one takes the saved item's) is held to the one name rule, whose words
        # (core.textcheck) name what is refused; its pattern says only the part a JSON Schema can.
        problem = name_problem(value) if r.pattern == NAME_PATTERN and value.strip() else None
        if problem is not None or not re.fullmatch(r.pattern, value):
            self.fail(
                where, "must not contain NUL characters" if "\x00" in value else problem or CONTROL_CHARACTER_DETAIL
            )
            return None
        return value

    def optional(self, source: dict[str, Any], key: str, where: str, read: Callable[[Any, str], Any]) -> Any:
        value = source.get(key)
        return None if value is None else read(value, f"{where}/{key}")


def _or(value: Any, default: Any) -> Any:
    return default if value is None else value


def _escape(key: str) -> str:
    return key.replace("~", "~0").replace("/", "~1")


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int | float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    return {"list": "an array", "dict": "an object"}.get(type(value).__name__, type(value).__name__)


def _kind_or_count(value: Any) -> str:
    """For an array-size refusal: how many items an array has ("got 17", not "got an array"), else its kind."""
    return str(len(value)) if isinstance(value, list) else _kind(value)


def _case_hint(value: Any, allowed: tuple[str, ...]) -> str:
    """``" (did you mean 'id'?)"`` where ``value`` is an allowed id in another case or with spaces around it, else
    "". Choices are taken exactly as the schema's enum lists them (CSV cells are read case-insensitively): an
    outsider's probe got only the list of ids for "Llama-3.1-70B"."""
    if not isinstance(value, str):
        return ""
    key = value.strip().lower()
    match = next((a for a in allowed if a.lower() == key), None)
    return f" (did you mean {match!r}? ids are exact, as listed)" if match else ""


def _fmt(x: float) -> str:
    return f"{x:g}" if abs(x) < 1e6 else f"{x:.0e}"


# --- the normalized scenario -------------------------------------------------------------------


@dataclass(frozen=True)
class Model:
    """``params_b`` is the catalog's count for a named model; ``implied_params_b`` what the geometry adds up to;
    ``assumed`` what was derived rather than given (both reported in the Advice, not part of the Scenario JSON);
    ``max_context`` the context inference requests must fit (not part of the JSON either)."""

    params_b: float
    layers: int
    hidden: int
    heads: int
    ffn_hidden: int
    vocab: int
    seq_len: int
    name: str | None = None
    kv_heads: int | None = None
    experts: int = 0
    active_experts: int = 0
    implied_params_b: float = field(default=0.0, compare=False)
    # Billions of parameters the work (FLOPs, weight memory) is counted on: params_b, or a dense geometry's own count
    # when the user gave the geometry (estimator.catalog.work_params_b)
    work_params_b: float = field(default=0.0, compare=False)
    # Billions of parameters one token runs through (a mixture of experts' active ones; params_b for a dense model)
    active_params_b: float = field(default=0.0, compare=False)
    # The MLP width a token's activations take (its active experts' together; ffn_hidden for a dense model)
    token_ffn_hidden: int = field(default=0, compare=False)
    # The attention core's width (estimator.catalog.ModelGeometry.attention_width; hidden but for latent attention)
    attention_width: int = field(default=0, compare=False)
    assumed: tuple[str, ...] = field(default=(), compare=False)
    # The context requests must fit: the catalog's published one, else its longest (estimator.catalog.served_context)
    max_context: int = field(default=0, compare=False)


@dataclass(frozen=True)
class Parallelism:
    strategy: str
    tp: int | None
    pp: int | None
    cp: int | None
    micro_batch: int | None
    activation_checkpointing: bool | str | None
    virtual_pipeline: int | None = None


@dataclass(frozen=True)
class Traffic:
    peak_requests_per_s: float
    mean_requests_per_s: float
    input_tokens: int
    output_tokens: int


@dataclass(frozen=True)
class Latency:
    ttft_p95_s: float
    tpot_p95_s: float


@dataclass(frozen=True)
class Workload:
    kind: str
    model: Model
    precision: str
    stack: str | None = None
    serving_engine: str | None = None  # inference: the engine the deployments are sized for (never None there)
    # training
    tokens: float | None = None
    global_batch: int | None = None
    parallelism: Parallelism | None = None
    runs_per_year: float | None = None
    # inference
    traffic: Traffic | None = None
    latency: Latency | None = None


@dataclass(frozen=True)
class Network:
    gpus_per_node: int
    inter_node_gbps: float


@dataclass(frozen=True)
class Spot:
    interruptions_per_node_hour: float
    checkpoint_s: float
    restart_s: float


@dataclass(frozen=True)
class Rent:
    providers: tuple[str, ...]
    markets: tuple[str, ...]
    usd_per_gpu_hour: float | None
    price_decline_per_year: float
    spot: Spot

    @property
    def priced_markets(self) -> tuple[str, ...]:
        """The markets the advice prices: ``markets``, and on_demand where a manual quote is given (a manual quote is
        priced as on-demand, billed while used: with markets lacking it the quote was dropped silently and the advice
        said renting was not priced). ``markets`` stays as given: the echo and other GPUs, priced at their catalog,
        keep the user's (a hostile probe: a reserved-only plan's compare rows were priced on demand)."""
        if self.usd_per_gpu_hour is not None and Market.ON_DEMAND.value not in self.markets:
            return (*self.markets, Market.ON_DEMAND.value)
        return self.markets


@dataclass(frozen=True)
class Buy:
    server: str | None
    capex_usd: float | None
    years: float
    discount_rate: float
    residual_fraction: float
    power_usd_per_kwh: float
    pue: float
    colo_usd_per_kw_month: float
    support_fraction_per_year: float
    staff_usd_per_year: float
    software_usd_per_gpu_year: float


@dataclass(frozen=True)
class Scenario:
    """A validated scenario with every default filled in (see the module docstring)."""

    name: str
    workload: Workload
    gpu: str
    cluster_sizes: tuple[int, ...]
    network: Network
    rent: Rent
    buy: Buy
    utilization: float | None  # None: implied per size by runs_per_year (training)
    compare_gpus: tuple[str, ...] = ()
    defaults_used: tuple[str, ...] = field(default=(), compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The normalized Scenario JSON (lists, not tuples; inference/training-only fields omitted)."""
        doc = _lists(asdict(self))
        doc.pop("defaults_used")
        workload = doc["workload"]
        for key in (
            "implied_params_b",
            "work_params_b",
            "active_params_b",
            "token_ffn_hidden",
            "attention_width",
            "assumed",
            "max_context",
        ):
            workload["model"].pop(key)
        unused = ("traffic", "latency", "serving_engine") if self.workload.kind == "training" else _TRAINING_ONLY
        for key in unused:
            workload.pop(key)
        if self.workload.kind == "inference":
            doc["utilization"] = None  # the traffic sets how busy owned GPUs are, per deployment
        return doc


_TRAINING_ONLY: Final[tuple[str, ...]] = ("tokens", "global_batch", "parallelism", "runs_per_year")
# Defaults an inference Advice does not use (its assumptions leave them out): deployments are sized from the traffic,
# owned GPUs are as busy as the traffic keeps them, and requests carry their own lengths.
TRAINING_ONLY_DEFAULTS: Final[tuple[str, ...]] = ("/cluster_sizes", "/utilization", "/workload/model/seq_len")


def default_inter_node_gbps(spec: GpuSpec, gpus_per_node: int) -> float:
    """The default scale-out bandwidth of a node of ``gpus_per_node`` GPUs: the typical server's per GPU, times the
    node (a probe: a 72-GPU GB200 rack kept the 4-GPU tray's 1,600 Gb/s, an H100 on 4-GPU nodes the 8-GPU server's
    3,200)."""
    return spec.inter_node_gbps / spec.gpus_per_node * gpus_per_node


def scenario_for_gpu(s: Scenario, gpu: str) -> Scenario:
    """The same scenario on another GPU (``compare_gpus``): network and cluster sizes that were defaulted follow
    that GPU's server, and the serving engine is :func:`serving_engine_on` that GPU; ScenarioError when the scenario
    cannot run on it (a precision it lacks)."""
    doc = s.to_dict()
    doc.update(gpu=gpu, compare_gpus=[])
    engine = s.workload.serving_engine
    if engine is not None and serving_engine_problem(engine, gpu) is not None:
        doc["workload"]["serving_engine"] = None  # that GPU's default (serving_engine_on)
    for key in ("gpus_per_node", "inter_node_gbps"):
        if f"/network/{key}" in s.defaults_used:
            doc["network"][key] = None
    if "/cluster_sizes" in s.defaults_used:
        doc["cluster_sizes"] = None
    return parse_scenario(doc, defaults={k: float(getattr(s.buy, k)) for k in OWNERSHIP_KEYS})


def catalog_prices_for_other_gpus(s: Scenario) -> tuple[Scenario, str | None]:
    """The scenario without its manual quotes, and a note naming them, for pricing another GPU.

    DESIGN.md: ``rent.usd_per_gpu_hour`` and ``buy.capex_usd`` (one node of this GPU) are negotiated prices for the
    scenario's GPU, and ``buy.server`` names one of its servers; another GPU is priced at its own catalog offers and
    quote (an outsider's probe: a B200 $4.00/GPU-hour quote applied to MI300X made owning it look cheaper, where its
    catalog offers say renting is)."""
    quoted = []
    if s.rent.usd_per_gpu_hour is not None:
        quoted.append(f"rent ${s.rent.usd_per_gpu_hour:,.2f}/GPU-hour")
    if s.buy.capex_usd is not None:
        quoted.append(f"capex ${s.buy.capex_usd:,.0f} per node")
    if s.buy.server is not None:
        quoted.append(f"server {s.buy.server!r}")
    if not quoted:
        return s, None
    plain = replace(
        s,
        rent=replace(s.rent, usd_per_gpu_hour=None),
        buy=replace(s.buy, capex_usd=None, server=None),
    )
    return plain, f"priced at its catalog offers and quote: the manual quotes ({', '.join(quoted)}) are for {s.gpu}"


def _lists(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_lists(v) for v in value]
    return value


# --- parsing -----------------------------------------------------------------------------------


def _known_providers_only(c: _Checker, where: str, given: list[Any], slugs: list[str]) -> None:
    """An unknown provider would silently price nothing and flip the advice to "buy": refuse it by name."""
    if not slugs:
        return
    from pricing.selectors import known_provider_slugs, unknown_provider_slugs

    unknown = set(unknown_provider_slugs(slugs=slugs))
    if not unknown:
        return
    known = ", ".join(sorted(known_provider_slugs()))
    for i, p in enumerate(given):
        slug = p.lower() if isinstance(p, str) else None
        if slug in unknown:
            c.fail(f"{where}/providers/{i}", f"unknown provider {p!r}; known providers: {known}")


def ownership_defaults() -> dict[str, float]:
    """Ownership-cost defaults (years, discount rate, ...) from the pricing catalog, by key."""
    from pricing.selectors import ownership_defaults as catalog_defaults

    return {key: float(row["value"]) for key, row in catalog_defaults().items()}


def _default(where: str) -> Any:
    value = DEFAULTS[where].value
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def default_cluster_sizes(*, gpus_per_node: int) -> tuple[int, ...]:
    """Powers of two up to 512 GPUs that fit in one node or fill whole nodes."""
    sizes, size = [], 1
    while size <= DEFAULT_MAX_DEFAULT_SIZE:
        if size <= gpus_per_node or size % gpus_per_node == 0:
            sizes.append(size)
        size *= 2
    if gpus_per_node not in sizes and gpus_per_node <= DEFAULT_MAX_DEFAULT_SIZE:
        sizes.append(gpus_per_node)
    return tuple(sorted(sizes))


def parse_scenario(document: Any, *, defaults: Mapping[str, float] | None = None) -> Scenario:
    """Validate ``document`` (the Scenario JSON, already decoded) and fill every default.

    ``defaults``: the ownership-cost defaults by key; read from the pricing catalog when omitted.
    Raises ScenarioError listing every problem with its JSON pointer."""
    c = _Checker()
    used: list[str] = []
    top = c.fields(document, "")
    if document is None or not isinstance(document, dict):
        if document is None:
            c.fail("", "must be a Scenario object; got null")
        raise ScenarioError(c.errors)

    def get(source: dict[str, Any], key: str, where: str) -> Any:
        if source.get(key) is None:
            used.append(f"{where}/{key}")
            return _default(f"{where}/{key}")
        return source[key]

    name = c.text(get(top, "name", ""), "/name")

    # GPU first: network defaults depend on it.
    gpu_id: str | None = None
    spec = None
    gpu_ids = c.rule("/gpu").choices
    if "gpu" not in top or top["gpu"] is None:
        c.fail("/gpu", f"required; one of {', '.join(gpu_ids)}")
    else:
        try:
            spec = get_gpu(top["gpu"]) if top["gpu"] in gpu_ids else None
        except UnknownGpuError:
            spec = None
        if spec is None:
            c.fail("/gpu", f"must be one of {', '.join(gpu_ids)}; got {top['gpu']!r}{_case_hint(top['gpu'], gpu_ids)}")
        else:
            gpu_id = spec.id

    workload = _workload(c, top.get("workload"), get, spec, used)

    net_in = c.fields(top.get("network"), "/network")
    gpn = c.optional(net_in, "gpus_per_node", "/network", c.bounded)
    bw = c.optional(net_in, "inter_node_gbps", "/network", c.bounded)
    if net_in.get("gpus_per_node") is None:
        used.append("/network/gpus_per_node")
    if net_in.get("inter_node_gbps") is None:
        used.append("/network/inter_node_gbps")
    gpus_per_node = int(gpn if gpn is not None else spec.gpus_per_node if spec else 8)
    inter_node_gbps = float(bw if bw is not None else default_inter_node_gbps(spec, gpus_per_node) if spec else 1)

    sizes = _cluster_sizes(c, top.get("cluster_sizes"), gpus_per_node, used)
    rent = _rent(c, top.get("rent"), get)
    if rent is not None and workload is not None and workload.kind == "training" and "/rent/markets" in used:
        # A synchronous training job restarts whole on every interruption: spot only when asked for.
        rent = replace(rent, markets=tuple(m for m in rent.markets if m != Market.SPOT.value))
    buy = _buy(c, top.get("buy"), get, defaults, used)
    compare = _compare_gpus(c, top.get("compare_gpus"), used)
    utilization = _utilization(c, top, workload, get, used)

    if c.errors:
        raise ScenarioError(c.errors)
    assert gpu_id is not None and workload is not None and rent is not None and buy is not None
    return Scenario(
        name=str(name),
        workload=workload,
        gpu=gpu_id,
        cluster_sizes=sizes,
        network=Network(gpus_per_node=gpus_per_node, inter_node_gbps=inter_node_gbps),
        rent=rent,
        buy=buy,
        utilization=utilization,
        compare_gpus=compare,
        defaults_used=tuple(used),
    )


def serving_engine_on(engine: str | None, gpu: str) -> str:
    """The engine a scenario sized for ``engine`` is sized for on ``gpu`` (a compared or suggested GPU): the same
    engine where it runs, else that GPU's default. A function of the normalized engine alone, so that the normalized
    scenario posted back compares the same."""
    if engine is not None and serving_engine_problem(engine, gpu) is None:
        return engine
    return default_serving_engine(gpu)


def _serving_engine(c: _Checker, w: dict[str, Any], kind: str | None, spec: Any, used: list[str]) -> str | None:
    """/workload/serving_engine: inference only, one of SERVING_ENGINES, running on the GPU; left out, the GPU's
    default (recorded in ``used``)."""
    where = "/workload/serving_engine"
    if kind != "inference":
        if "serving_engine" in w:  # also an unknown field of the training workload: say why instead
            c.errors = [e for e in c.errors if e["pointer"] != where]
            c.fail(
                where,
                "applies to inference scenarios only (workload.kind inference); a training job names its "
                "training stack in /workload/stack",
            )
        return None
    if w.get("serving_engine") is None:
        used.append(where)
        return None if spec is None else default_serving_engine(spec.id)
    engine = c.chosen(w["serving_engine"], where)
    problem = None if engine is None or spec is None else serving_engine_problem(engine, spec.id)
    if problem is not None:
        c.fail(where, f"{problem} (left out: {default_serving_engine(spec.id)})")
        return None
    return engine


def _stack(c: _Checker, value: Any) -> str | None:
    """The stack as listed; the CSV's spellings of an unknown stack ("" and "unknown") are refused pointing at null."""
    if value in ("", "unknown"):
        allowed = ", ".join(c.rule("/workload/stack").choices)
        c.fail(
            "/workload/stack",
            f"an unknown stack is null (or leave the field out), else one of {allowed}; got {value!r}",
        )
        return None
    if isinstance(value, str) and value.strip().lower() in SERVING_ENGINES:
        # An outsider tried "vllm" here: the serving engine has its own field.
        allowed = ", ".join(c.rule("/workload/stack").choices)
        c.fail(
            "/workload/stack",
            f"{value!r} is a serving engine: give it as /workload/serving_engine (inference); /workload/stack is the "
            f"training stack, one of {allowed}",
        )
        return None
    return c.chosen(value, "/workload/stack")


def _workload(c: _Checker, value: Any, get: Callable[..., Any], spec: Any, used: list[str]) -> Workload | None:
    if not isinstance(value, dict):
        c.fail("/workload", f"required: an object with kind and model (and tokens for training); got {_kind(value)}")
        return None
    kind = c.choice(value.get("kind"), "/workload/kind", KINDS)
    c.kind = kind or "training"
    w = c.fields(value, "/workload")
    model = _model(c, w.get("model"), get)
    precision = c.chosen(get(w, "precision", "/workload"), "/workload/precision")
    if precision and spec is not None and precision not in spec.peak_tflops:
        # Left out, the default applies: say so, or the user is told off for a value they never wrote.
        given = "" if w.get("precision") is not None else f"not given, so the default {precision} applies, but "
        c.fail(
            "/workload/precision",
            f"{given}{spec.id} has no {precision} peak; supported: {', '.join(spec.peak_tflops)}",
        )
    stack = None if w.get("stack") is None else _stack(c, w.get("stack"))
    engine = _serving_engine(c, w, kind, spec, used)
    if kind == "inference":
        # Through get(): left out, each is recorded as a default, so its assumption is not read as "your input".
        traffic = _traffic(c, get(w, "traffic", "/workload"), used)
        latency = _latency(c, get(w, "latency", "/workload"), get)
        if model is None or precision is None or traffic is None or latency is None or engine is None:
            return None
        problem = context_problem(
            model=model.name or "the model",
            max_context=model.max_context,
            source=_context_source(model),
            input_tokens=traffic.input_tokens,
            output_tokens=traffic.output_tokens,
        )
        if problem is not None:
            field, why = problem
            c.fail(f"/workload/traffic/{field}", why)
            return None
        return Workload(
            kind=kind,
            model=model,
            precision=precision,
            stack=stack,
            serving_engine=engine,
            traffic=traffic,
            latency=latency,
        )
    if w.get("tokens") is None:
        r = c.rule("/workload/tokens")
        c.fail(
            "/workload/tokens",
            f"required for training: the tokens one run processes, a number >= {_fmt(r.minimum or 0)} and "
            f"<= {_fmt(r.maximum or 0)}",
        )
        tokens = None
    else:
        tokens = c.bounded(w["tokens"], "/workload/tokens")
    global_batch = c.bounded(get(w, "global_batch", "/workload"), "/workload/global_batch")
    runs = c.bounded(get(w, "runs_per_year", "/workload"), "/workload/runs_per_year")
    par = _parallelism(c, w.get("parallelism"), get, global_batch, model, stack)
    if None in (kind, model, precision, tokens, global_batch, runs, par):
        return None
    return Workload(
        kind="training",
        model=model,  # type: ignore[arg-type]
        precision=precision,  # type: ignore[arg-type]
        stack=stack,
        tokens=float(tokens),  # type: ignore[arg-type]
        global_batch=int(global_batch),  # type: ignore[arg-type]
        parallelism=par,
        runs_per_year=float(runs),  # type: ignore[arg-type]
    )


def _model(c: _Checker, value: Any, get: Callable[..., Any]) -> Model | None:
    """A catalog model (``name``) or ``params_b`` with optional geometry, derived where missing by
    estimator.catalog; geometry implying a size more than 15% from params_b is refused naming /workload/model."""
    where = "/workload/model"
    if value is None:
        c.fail(where, "required: an object with a catalog name or params_b (billions of parameters)")
        return None
    m = c.fields(value, where)
    if not isinstance(value, dict):
        return None
    name = m.get("name")
    names = c.rule(f"{where}/name").choices
    if name is not None and name not in names:
        c.fail(f"{where}/name", f"must be one of {', '.join(names)}; got {_kind(name)}{_case_hint(name, names)}")
        return None
    if name is None and m.get("params_b") is None:
        r = c.rule(f"{where}/params_b")
        allowed = f"a number >= {_fmt(r.minimum or 0)} and <= {_fmt(r.maximum or 0)}"
        c.fail(f"{where}/params_b", f"required without a catalog name: billions of parameters, {allowed}")
        return None
    params_b = c.optional(m, "params_b", where, c.bounded)
    seq_len = c.bounded(get(m, "seq_len", where), f"{where}/seq_len")
    given: dict[str, int] = {}
    for key in GEOMETRY_FIELDS:
        v = c.optional(m, key, where, c.bounded)
        if v is not None:
            given[key] = int(v)
    if seq_len is None or (m.get("params_b") is not None and params_b is None):
        return None
    try:
        geometry, geometry_given = _geometry(name, params_b, given)
    except CatalogError as exc:
        c.fail(where if exc.field in ("model", "name") else f"{where}/{exc.field}", str(exc).split(": ", 1)[1])
        return None
    work_b, work_note = work_params_b(geometry, geometry_given=geometry_given)
    return Model(
        params_b=geometry.params_b,
        work_params_b=work_b,
        seq_len=int(seq_len),
        name=geometry.id or None,
        kv_heads=geometry.kv_heads,
        experts=geometry.experts,
        active_experts=geometry.active_experts,
        implied_params_b=round(geometry.params() / 1e9, 3),
        active_params_b=geometry.active_params_b if geometry.experts else geometry.params_b,
        token_ffn_hidden=geometry.token_ffn_hidden(),
        attention_width=geometry.attention_width(),
        assumed=(*geometry.assumed, *([work_note] if work_note else [])),
        max_context=served_context(max_context=geometry.max_context)[0],
        **architecture_dict(geometry),
    )


def _context_source(model: Model) -> str:
    """Where a served model's context comes from, for the error that a request does not fit it."""
    return "" if model.name else served_context(max_context=0)[1]


def _geometry(name: str | None, params_b: float | None, given: Mapping[str, int]) -> tuple[ModelGeometry, bool]:
    """The catalog entry (geometry given beside a name must be the catalog's own) or a checked derivation, and
    whether the geometry is the user's own (neither the catalog's nor derived from params_b)."""
    if name:
        return resolve_model(name=name, params_b=params_b, **dict(given)), False
    assert params_b is not None
    derived = derive_geometry(params_b=float(params_b))
    if all(v == getattr(derived, key) for key, v in given.items()):
        # Nothing given, or the derivation itself (a normalized scenario read back): nothing contradicts params_b;
        # small models' derived shapes can sit past 15% (embeddings), and the implied size is reported.
        return derived, False
    return resolve_model(params_b=float(params_b), **dict(given)), True  # type: ignore[arg-type]


def _parallelism(
    c: _Checker, value: Any, get: Callable[..., Any], global_batch: Any, model: Model | None, stack: str | None
) -> Parallelism | None:
    where = "/workload/parallelism"
    p = c.fields(value, where)
    strategy = c.chosen(get(p, "strategy", where), f"{where}/strategy")
    ints: dict[str, int | None] = {}
    for key in ("tp", "pp", "cp", "micro_batch", "virtual_pipeline"):
        v = c.optional(p, key, where, c.bounded)
        ints[key] = None if v is None else int(v)
    if ints["micro_batch"] and isinstance(global_batch, int) and ints["micro_batch"] > global_batch:
        c.fail(f"{where}/micro_batch", f"must not exceed global_batch ({global_batch}); got {ints['micro_batch']}")
    if ints["tp"] and model is not None and model.heads % ints["tp"]:
        c.fail(f"{where}/tp", f"must divide the attention heads ({model.heads}); got {ints['tp']}")
    elif ints["tp"] and model is not None and model.kv_heads and model.kv_heads % ints["tp"]:
        # The estimator's rule too (TrainingJob): here so that a scenario is refused when saved, not only when advised
        # (a hostile probe saved one through the API that could never be advised).
        c.fail(
            f"{where}/tp",
            f"must divide kv_heads ({model.kv_heads}): Megatron-Core splits the key/value heads over the "
            f"tensor-parallel ranks; got {ints['tp']}",
        )
    if ints["pp"] and model is not None and ints["pp"] > model.layers:
        c.fail(
            f"{where}/pp", f"must not exceed the model's layers ({model.layers}): one stage holds at least one layer"
        )
    elif ints["virtual_pipeline"] and model is not None:
        problem = virtual_stage_problem(
            virtual=ints["virtual_pipeline"], pp=ints["pp"], layers=model.layers, stack=stack
        )
        if problem is not None:
            c.fail(f"{where}/virtual_pipeline", problem)
    ac = p.get("activation_checkpointing")
    if ac is not None and not isinstance(ac, bool) and ac != "selective":
        c.fail(f"{where}/activation_checkpointing", f'must be true, false, "selective" or null; got {ac!r}')
        ac = None
    if strategy is None:
        return None
    return Parallelism(strategy=strategy, activation_checkpointing=ac, **ints)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) and value > 0


def _traffic(c: _Checker, value: Any, used: list[str]) -> Traffic | None:
    where = "/workload/traffic"
    keys = ("peak_requests_per_s", "mean_requests_per_s", "input_tokens", "output_tokens")
    t = c.fields(value, where)
    if isinstance(value, dict) and "/workload/traffic" not in used:
        # A traffic given in part: the fields it leaves out are defaults (or derived), not the user's (a hostile probe:
        # the page labelled a peak derived from the given mean "your input").
        used.extend(f"{where}/{k}" for k in keys if t.get(k) is None)
    base = dict(_default(where))
    # One rate given: the other follows it at the default's mean/peak ratio (a default of its own could contradict
    # the given one: a peak of 5 against the default mean of 20).
    ratio = base["mean_requests_per_s"] / base["peak_requests_per_s"]
    given_peak, given_mean = t.get("peak_requests_per_s"), t.get("mean_requests_per_s")
    if _is_number(given_peak) and given_mean is None:
        base["mean_requests_per_s"] = given_peak * ratio
    elif _is_number(given_mean) and given_peak is None:
        base["peak_requests_per_s"] = given_mean / ratio
        most = c.rule(f"{where}/peak_requests_per_s").maximum
        if most is not None and base["peak_requests_per_s"] > most:
            # The peak the user never typed is out of range: say so at the field they gave (a hostile probe read
            # "peak_requests_per_s ... got 12500000.0" for a scenario that had no peak in it).
            c.fail(
                f"{where}/mean_requests_per_s",
                f"with no peak_requests_per_s given, the peak is taken as mean / {ratio:g} = "
                f"{base['peak_requests_per_s']:g}, above the largest peak allowed ({most:g}); give "
                f"peak_requests_per_s too, or a mean of at most {most * ratio:g}; got {given_mean:g}",
            )
            return None
    rates = {k: c.bounded(_or(t.get(k), base[k]), f"{where}/{k}") for k in keys[:2]}
    tokens = {k: c.bounded(_or(t.get(k), base[k]), f"{where}/{k}") for k in keys[2:]}
    peak, mean = rates["peak_requests_per_s"], rates["mean_requests_per_s"]
    if peak is not None and mean is not None and mean > peak:
        c.fail(f"{where}/mean_requests_per_s", f"must not exceed peak_requests_per_s ({peak:g}); got {mean:g}")
        return None
    if None in rates.values() or None in tokens.values():
        return None
    return Traffic(**rates, **tokens)  # type: ignore[arg-type]


def _latency(c: _Checker, value: Any, get: Callable[..., Any]) -> Latency | None:
    where = "/workload/latency"
    t = c.fields(value, where)
    base = _default(where)
    got = {k: c.bounded(_or(t.get(k), base[k]), f"{where}/{k}") for k in ("ttft_p95_s", "tpot_p95_s")}
    if None in got.values():
        return None
    return Latency(**got)  # type: ignore[arg-type]


def _compare_gpus(c: _Checker, value: Any, used: list[str]) -> tuple[str, ...]:
    where = "/compare_gpus"
    if value is None or value == []:
        used.append(where)
        return ()
    r = c.rule(where)
    assert r.items is not None
    if not isinstance(value, list) or len(value) > (r.max_items or 0):
        c.fail(
            where,
            f"must be an array of at most {r.max_items} GPU ids ({', '.join(r.items.choices)}); "
            f"got {_kind_or_count(value)}",
        )
        return ()
    ids: list[str] = []
    for i, item in enumerate(value):
        gpu = c.choice(item, f"{where}/{i}", r.items.choices)
        if gpu and gpu not in ids:
            ids.append(gpu)
    return tuple(ids)


def _utilization(
    c: _Checker, top: dict[str, Any], workload: Workload | None, get: Callable[..., Any], used: list[str]
) -> float | None:
    """The given utilization; omitted with runs_per_year given (training): None, implied per size by the advice."""
    runs_given = "/workload/runs_per_year" not in used
    if top.get("utilization") is None and workload is not None and workload.kind == "training" and runs_given:
        return None
    u = c.bounded(get(top, "utilization", ""), "/utilization")
    return None if u is None else float(u)


def _cluster_sizes(c: _Checker, value: Any, gpus_per_node: int, used: list[str]) -> tuple[int, ...]:
    where = "/cluster_sizes"
    if value is None or value == []:
        used.append(where)
        return default_cluster_sizes(gpus_per_node=gpus_per_node)
    cap = c.rule(where).max_items
    if not isinstance(value, list):
        c.fail(where, f"must be an array of 1 to {cap} GPU counts; got {_kind(value)}")
        return ()
    if len(value) > (cap or 0):
        c.fail(where, f"at most {cap} sizes; got {len(value)}")
        return ()
    sizes: set[int] = set()
    for i, item in enumerate(value):
        n = c.bounded(item, f"{where}/{i}", f"{where}/-")
        if n is None:
            continue
        if n > gpus_per_node and n % gpus_per_node:
            c.fail(
                f"{where}/{i}",
                f"more GPUs than one node ({gpus_per_node} per node, /network/gpus_per_node) must be whole nodes; "
                f"got {n}",
            )
            continue
        sizes.add(int(n))
    return tuple(sorted(sizes))


def _rent(c: _Checker, value: Any, get: Callable[..., Any]) -> Rent | None:
    where = "/rent"
    r = c.fields(value, where)
    providers = get(r, "providers", where)
    provs: list[str] = []
    max_providers = c.rule(f"{where}/providers").max_items or 0
    slug = c.rule(f"{where}/providers/-").pattern or ""
    if not isinstance(providers, list) or len(providers) > max_providers:
        c.fail(
            f"{where}/providers",
            f"must be an array of at most {max_providers} provider slugs ([] = all); got {_kind_or_count(providers)}",
        )
    else:
        for i, p in enumerate(providers):
            # fullmatch: the schema's `$` (ECMA-262) is the end of the text, Python's `$` also matches before "\n".
            if isinstance(p, str) and re.fullmatch(slug, p):
                if p.lower() not in provs:
                    provs.append(p.lower())
            else:
                c.fail(f"{where}/providers/{i}", f"must be a provider slug such as 'aws' or 'lambda'; got {p!r}")
        _known_providers_only(c, where, providers, provs)
    markets = get(r, "markets", where)
    mkts: list[str] = []
    rm = c.rule(f"{where}/markets")
    assert rm.items is not None
    if not isinstance(markets, list) or len(markets) < (rm.min_items or 0) or len(markets) > (rm.max_items or 0):
        c.fail(
            f"{where}/markets",
            f"must be a non-empty array of at most {rm.max_items} of {', '.join(rm.items.choices)}; "
            f"got {_kind(markets)}",
        )
    else:
        for i, m in enumerate(markets):
            chosen = c.choice(m, f"{where}/markets/{i}", rm.items.choices)
            if chosen and chosen not in mkts:
                mkts.append(chosen)
    price = c.optional(r, "usd_per_gpu_hour", where, c.bounded)
    decline = c.bounded(get(r, "price_decline_per_year", where), f"{where}/price_decline_per_year")
    sw = f"{where}/spot"
    s = c.fields(r.get("spot"), sw)
    rate = c.bounded(get(s, "interruptions_per_node_hour", sw), f"{sw}/interruptions_per_node_hour")
    ckpt = c.bounded(get(s, "checkpoint_s", sw), f"{sw}/checkpoint_s")
    restart = c.bounded(get(s, "restart_s", sw), f"{sw}/restart_s")
    if None in (decline, rate, ckpt, restart):
        return None
    return Rent(
        providers=tuple(dict.fromkeys(provs)),
        markets=tuple(m for m in MARKETS if m in mkts),
        usd_per_gpu_hour=price,
        price_decline_per_year=float(decline),  # type: ignore[arg-type]
        spot=Spot(interruptions_per_node_hour=float(rate), checkpoint_s=float(ckpt), restart_s=float(restart)),  # type: ignore[arg-type]
    )


# The buy fields that are numbers (their bounds in advisor.scenario_model.Buy).
_BUY_NUMBERS: Final[tuple[str, ...]] = ("capex_usd", *OWNERSHIP_KEYS, "staff_usd_per_year", "software_usd_per_gpu_year")


def _buy(
    c: _Checker, value: Any, get: Callable[..., Any], defaults: Mapping[str, float] | None, used: list[str]
) -> Buy | None:
    where = "/buy"
    b = c.fields(value, where)
    catalog: Mapping[str, float] | None = defaults
    out: dict[str, Any] = {}
    for key in _BUY_NUMBERS:
        raw = b.get(key)
        if raw is None and key in OWNERSHIP_KEYS:
            if catalog is None:
                catalog = ownership_defaults()
            if key not in catalog:
                c.fail(f"{where}/{key}", "no default in the ownership-defaults catalog; give a value")
                continue
            raw = catalog[key]
            used.append(f"{where}/{key}")
        elif raw is None:
            raw = get(b, key, where)
            if raw is None:  # a nullable field (capex_usd)
                out[key] = None
                continue
        out[key] = c.bounded(raw, f"{where}/{key}")
    server = c.optional(b, "server", where, c.text)
    if any(out.get(k) is None for k in _BUY_NUMBERS if k != "capex_usd"):
        return None
    return Buy(server=server, **out)
