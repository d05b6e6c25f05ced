"""The planner form: flat, labelled fields with units that translate to and from the Scenario JSON.

Django validates types and ranges here (the message lands next to the field and the typed value
stays); the Scenario validator (advisor.scenario) has the last word, and its JSON pointers are
mapped back onto these fields by :func:`field_for_pointer`.
"""

from __future__ import annotations

import copy
import math
import re
from decimal import Decimal
from typing import Any, Final

from django import forms
from django.core.exceptions import ValidationError

from advisor import scenario_model
from advisor.scenario_model import Rule, rule
from core.ids import parse_id
from core.textcheck import shown
from estimator.catalog import catalog as model_catalog
from estimator.runs import plain_number
from estimator.specs import all_gpus
from estimator.workload import CHECKPOINTING as CHECKPOINTING_VALUES
from pricing.models import MARKET_PHRASES, Market


def _choices(pointer: str, labels: dict[str, str], kind: str = "training") -> list[tuple[str, str]]:
    """The model's allowed values at ``pointer`` (in its order; /workload fields of ``kind``), each with its label
    here."""
    r = rule(pointer, kind)
    values = (r.items or r).choices
    return [(value, labels.get(value, value)) for value in values]


# Choices are the Scenario model's (advisor.scenario_model); only their labels are the form's.
GPU_CHOICES = _choices("/gpu", {spec.id: f"{spec.name} ({spec.id})" for spec in all_gpus()})
MODEL_LABELS = {m.id: f"{m.id} ({m.params_b:g}B{', MoE' if m.is_moe else ''})" for m in model_catalog().values()}
MODEL_CHOICES = [("", "by size (below)"), *_choices("/workload/model/name", MODEL_LABELS)]
PRECISIONS = _choices("/workload/precision", {})
STRATEGIES = _choices(
    "/workload/parallelism/strategy",
    {
        "auto": "auto: fastest feasible layout per size",
        "ddp": "DDP (full replicas)",
        "zero1": "ZeRO-1",
        "zero2": "ZeRO-2",
        "zero3": "ZeRO-3",
        "fsdp": "FSDP (= ZeRO-3)",
        "hsdp": "HSDP (sharded over the fewest whole nodes that hold the states, replicated across the rest)",
    },
)
# Empty: the GPU's default engine (advisor.scenario.default_serving_engine), cited as a default in the Advice.
SERVING_ENGINES = [
    ("", "default: TensorRT-LLM on NVIDIA GPUs, vLLM on others"),
    *_choices(
        "/workload/serving_engine",
        {"trtllm": "TensorRT-LLM (NVIDIA GPUs)", "nim": "NVIDIA NIM (NVIDIA GPUs)", "vllm": "vLLM", "sglang": "SGLang"},
        kind="inference",
    ),
]
# activation_checkpointing is true, false or "selective" (the model's union); the form sends them as text, the
# estimator's CHECKPOINTING.
CHECKPOINTING = [
    ("", "auto"),
    *((value, {"false": "off", "true": "full"}.get(value, value)) for value in CHECKPOINTING_VALUES),
]
MARKETS = _choices("/rent/markets", dict(MARKET_PHRASES))

# Form field -> JSON pointer in the Scenario document. One table, used both ways.
POINTERS: dict[str, str] = {
    "name": "/name",
    "model_name": "/workload/model/name",
    "params_b": "/workload/model/params_b",
    "layers": "/workload/model/layers",
    "hidden": "/workload/model/hidden",
    "heads": "/workload/model/heads",
    "kv_heads": "/workload/model/kv_heads",
    "seq_len": "/workload/model/seq_len",
    "tokens_b": "/workload/tokens",
    "global_batch": "/workload/global_batch",
    "precision": "/workload/precision",
    "strategy": "/workload/parallelism/strategy",
    "tp": "/workload/parallelism/tp",
    "pp": "/workload/parallelism/pp",
    "micro_batch": "/workload/parallelism/micro_batch",
    "activation_checkpointing": "/workload/parallelism/activation_checkpointing",
    "runs_per_year": "/workload/runs_per_year",
    "gpu": "/gpu",
    "cluster_sizes": "/cluster_sizes",
    "gpus_per_node": "/network/gpus_per_node",
    "inter_node_gbps": "/network/inter_node_gbps",
    "providers": "/rent/providers",
    "markets": "/rent/markets",
    "rent_usd_per_gpu_hour": "/rent/usd_per_gpu_hour",
    "capex_usd": "/buy/capex_usd",
    "years": "/buy/years",
    "discount_rate_pct": "/buy/discount_rate",
    "residual_pct": "/buy/residual_fraction",
    "power_usd_per_kwh": "/buy/power_usd_per_kwh",
    "pue": "/buy/pue",
    "colo_usd_per_kw_month": "/buy/colo_usd_per_kw_month",
    "support_pct": "/buy/support_fraction_per_year",
    "staff_usd_per_year": "/buy/staff_usd_per_year",
    "software_usd_per_gpu_year": "/buy/software_usd_per_gpu_year",
    "price_decline_pct": "/rent/price_decline_per_year",
    "utilization_pct": "/utilization",
    "compare_gpus": "/compare_gpus",
    "kind": "/workload/kind",
    "peak_requests_per_s": "/workload/traffic/peak_requests_per_s",
    "mean_requests_per_s": "/workload/traffic/mean_requests_per_s",
    "input_tokens": "/workload/traffic/input_tokens",
    "output_tokens": "/workload/traffic/output_tokens",
    "ttft_p95_s": "/workload/latency/ttft_p95_s",
    "tpot_p95_s": "/workload/latency/tpot_p95_s",
    "serving_engine": "/workload/serving_engine",
}
# Fields that only mean something for one kind of workload; the other kind leaves them out.
TRAINING_ONLY = {
    "tokens_b",
    "global_batch",
    "runs_per_year",
    "strategy",
    "tp",
    "pp",
    "micro_batch",
    "activation_checkpointing",
    "utilization_pct",
    "cluster_sizes",  # inference sizes deployments from the traffic; the Advice warns that it ignored them
}
INFERENCE_ONLY = {
    "peak_requests_per_s",
    "mean_requests_per_s",
    "input_tokens",
    "output_tokens",
    "ttft_p95_s",
    "tpot_p95_s",
    "serving_engine",
}
KIND_LABELS = {"training": "training (a run of N tokens)", "inference": "inference (serving traffic)"}
KINDS = [(kind, KIND_LABELS.get(kind, kind)) for kind in scenario_model.KINDS]
# Fields shown in percent whose JSON value is a fraction; tokens are entered in billions.
PERCENT_FIELDS = {"discount_rate_pct", "residual_pct", "support_pct", "utilization_pct", "price_decline_pct"}
SCALES = {"tokens_b": 1e9} | dict.fromkeys(PERCENT_FIELDS, 0.01)
# A scaled field's unit and its JSON field's unit (singular, plural), in words for a floor's message.
SCALED_UNITS = {"tokens_b": ("billion tokens", "token", "tokens")}

# (key, title, fields always shown, fields under "More options").
SECTIONS: list[tuple[str, str, list[str], list[str]]] = [
    (
        "workload",
        "Workload",
        ["name", "kind", "model_name", "params_b", "tokens_b", "runs_per_year"],
        ["seq_len", "global_batch", "precision", "layers", "hidden", "heads", "kv_heads"],
    ),
    (
        "serving",
        "Serving (inference)",
        ["peak_requests_per_s", "mean_requests_per_s", "input_tokens", "output_tokens"],
        ["ttft_p95_s", "tpot_p95_s", "serving_engine"],
    ),
    (
        "cluster",
        "Cluster",
        ["gpu", "cluster_sizes"],
        [
            "compare_gpus",
            "gpus_per_node",
            "inter_node_gbps",
            "strategy",
            "tp",
            "pp",
            "micro_batch",
            "activation_checkpointing",
        ],
    ),
    ("renting", "Renting", ["markets", "rent_usd_per_gpu_hour"], ["providers", "price_decline_pct"]),
    (
        "owning",
        "Owning",
        ["capex_usd", "years", "power_usd_per_kwh"],
        [
            "discount_rate_pct",
            "residual_pct",
            "pue",
            "colo_usd_per_kw_month",
            "support_pct",
            "staff_usd_per_year",
            "software_usd_per_gpu_year",
        ],
    ),
    ("utilization", "Utilization", ["utilization_pct"], []),
]

# No preset sets a utilization: left empty, it is implied per size by the runs a year, so a preset never prices
# owning as if other work filled the year (70% for one 70B run a year made the amount to approve 11x the run's rent).
PRESETS: dict[str, dict[str, Any]] = {
    "7b-pretrain": {
        "label": "7B pretraining, 1T tokens",
        "scenario": {
            "name": "7B pretraining",
            "workload": {
                "kind": "training",
                "model": {"params_b": 7, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
                "tokens": 1.0e12,
                "global_batch": 1024,
                "precision": "bf16",
                "runs_per_year": 4,
            },
            "gpu": "h100-sxm",
            "cluster_sizes": [8, 16, 32, 64, 128],
        },
    },
    "70b-pretrain": {
        "label": "70B pretraining, 2T tokens",
        "scenario": {
            "name": "70B pretraining",
            "workload": {
                "kind": "training",
                "model": {"params_b": 70, "layers": 80, "hidden": 8192, "heads": 64, "seq_len": 4096},
                "tokens": 2.0e12,
                "global_batch": 1024,
                "precision": "bf16",
                "runs_per_year": 1,
            },
            "gpu": "h100-sxm",
            "cluster_sizes": [64, 128, 256, 512, 1024],
        },
    },
    "8b-finetune": {
        "label": "8B fine-tune, 2B tokens",
        "scenario": {
            "name": "8B fine-tune",
            "workload": {
                "kind": "training",
                "model": {"params_b": 8, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 8192},
                "tokens": 2.0e9,
                "global_batch": 64,
                "precision": "bf16",
                "runs_per_year": 24,
            },
            "gpu": "h100-sxm",
            "cluster_sizes": [1, 2, 4, 8, 16],
        },
    },
    "8b-serving": {
        "label": "8B chat serving, 50 req/s peak",
        "scenario": {
            "name": "8B chat serving",
            "workload": {
                "kind": "inference",
                "model": {"params_b": 8, "layers": 32, "hidden": 4096, "heads": 32, "seq_len": 4096},
                "precision": "bf16",
                "traffic": {
                    "peak_requests_per_s": 50,
                    "mean_requests_per_s": 20,
                    "input_tokens": 1000,
                    "output_tokens": 200,
                },
                "latency": {"ttft_p95_s": 1.0, "tpot_p95_s": 0.05},
            },
            "gpu": "h100-sxm",
        },
    },
}
DEFAULT_PRESET = "7b-pretrain"

# The form's own defaults for the fields every preset shares (DESIGN.md's documented defaults).
BASE_INITIAL: dict[str, Any] = {
    "precision": "bf16",
    "strategy": "auto",
    "activation_checkpointing": "",
    "runs_per_year": 4,
    "cluster_sizes": "8, 16, 32, 64, 128",
    # Training leaves spot out unless asked (every interruption restarts the whole job); utilization left empty
    # is implied per size by the runs a year.
    "markets": [m for m in Market.values if m != Market.SPOT.value],
    "staff_usd_per_year": 0,
    "kind": "training",
}
# Prefilled fields whose prefill is the Scenario's own default for the workload kind (advisor.scenario.DEFAULTS;
# training's markets leave spot out as the Scenario does). Left as prefilled they are not sent, so the Advice cites
# the default and its source, as the API's does for the same scenario, rather than "your input"; the numbers are the
# same. runs_per_year and cluster_sizes are always sent: left out, utilization would no longer be implied by the runs
# and the sizes would be the Scenario's.
SENT_WHEN_CHANGED = ("precision", "strategy", "markets", "staff_usd_per_year")
# Ownership fields left empty take the pricing catalog's defaults; the form shows them as placeholders.
CATALOG_FIELDS = {
    "years": "years",
    "discount_rate_pct": "discount_rate",
    "residual_pct": "residual_fraction",
    "power_usd_per_kwh": "power_usd_per_kwh",
    "pue": "pue",
    "colo_usd_per_kw_month": "colo_usd_per_kw_month",
    "support_pct": "support_fraction_per_year",
}

# Sizes are separated by a comma (spaces around it allowed) or by spaces alone.
_SIZES_SEPARATOR = re.compile(r"\s*,\s*|\s+")


def field_rule(name: str) -> Rule:
    """The Scenario model's rule for the form field ``name`` (the JSON field it edits)."""
    return rule(POINTERS[name], "inference" if name in INFERENCE_ONLY else "training")


def _in_form_units(name: str, bound: float) -> float:
    """A JSON bound in the form's units (percent, billions of tokens), without float noise (0.9 / 0.01); a whole
    bound is an int, so that Django's range messages print it as the field shows it ('at least 1', not '1.0')."""
    value = float(f"{bound / SCALES.get(name, 1):.12g}")
    return int(value) if value.is_integer() else value


def _bound_text(bound: float) -> str:
    """A bound as the field shows it: 10000000 rather than 1e+07, 0.000000001 rather than 1e-09."""
    return str(int(bound)) if float(bound).is_integer() else f"{Decimal(repr(float(bound))):f}"


def _floor_message(name: str, bound: float, *, exclusive: bool) -> str:
    """The message of a field's floor (estimator.bounds, in the JSON's units): in the form's units in plain digits,
    and where the form scales the JSON's unit, in that unit too ("at least 1 token"). A new user's probe: Training
    tokens = 0 answered "greater than or equal to 1e-09", the one-token floor in billions."""
    relation = "greater than" if exclusive else "greater than or equal to"
    message = f"Ensure this value is {relation} {_bound_text(_in_form_units(name, bound))}"
    units = SCALED_UNITS.get(name)
    if units is None:
        return f"{message}."
    scaled, one, many = units
    own = f"{_bound_text(bound)} {one if bound == 1 else many}"
    return f"{message} {scaled}: {'more than' if exclusive else 'at least'} {own}."


class _Above:
    """An exclusive minimum (Django's min_value is inclusive)."""

    def __init__(self, bound: float, message: str) -> None:
        self.bound = bound
        self.message = message

    def __call__(self, value: float) -> None:
        if value is not None and value <= self.bound:
            raise ValidationError(self.message, code="min_value")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Above) and other.bound == self.bound


class _PlainNumberMixin:
    """A number field that reads only what the API and the profiled-run CSV read (estimator.runs.plain_number: ASCII
    digits, point, exponent, sign): Django's float() and int() also take '7_0' (70) and other scripts' digits
    (U+0667, U+FF17), so the form stored numbers that the API and the CSV refuse (an outsider's probe)."""

    def to_python(self, value: Any) -> Any:
        if isinstance(value, str) and value.strip() and plain_number(value) is None:
            raise ValidationError(
                "Enter a number. Numbers are read in ASCII digits (0-9, with an optional sign, point and exponent, "
                f"e.g. 70 or 1.5e3); got {shown(value)}.",
                code="invalid",
            )
        return super().to_python(value)  # type: ignore[misc]


class _PlainIntegerField(_PlainNumberMixin, forms.IntegerField):
    pass


class _RangedFloatField(_PlainNumberMixin, forms.FloatField):
    """A FloatField that answers a number beyond a float ('9' x 400, -1e400) with its range: Django's own reads it
    as infinity and says 'Enter a number.' of a number."""

    def validate(self, value: Any) -> None:
        if isinstance(value, float) and math.isinf(value):
            low = f"from {_bound_text(self.min_value)} " if self.min_value is not None else ""
            high = f"to {_bound_text(self.max_value)}" if self.max_value is not None else "that is finite"
            size = "large" if value > 0 else "small"
            raise ValidationError(f"Enter a number {low}{high}: this one is too {size}.", code="max_value")
        super().validate(value)


def _bounded(name: str, label: str, *, help_text: str) -> forms.Field:
    """A number field whose type (integer or not) and bounds are the Scenario model's for the JSON field it
    edits, in the form's units: the HTML min/max/step and the server-side check come from the same rule."""
    r = field_rule(name)
    kwargs: dict[str, Any] = {"label": label, "help_text": help_text, "required": False}
    if r.maximum is not None:
        kwargs["max_value"] = _in_form_units(name, r.maximum)
    if r.minimum is not None and not r.exclusive_minimum:
        kwargs["min_value"] = _in_form_units(name, r.minimum)
        kwargs["error_messages"] = {"min_value": _floor_message(name, r.minimum, exclusive=False)}
    field: forms.Field = (_PlainIntegerField if r.integer else _RangedFloatField)(**kwargs)
    if r.minimum is not None and r.exclusive_minimum:
        low = _in_form_units(name, r.minimum)
        field.validators.append(_Above(low, _floor_message(name, r.minimum, exclusive=True)))
        # The browser's min is inclusive: it lets the bound through and the server names it.
        field.widget.attrs.update({"min": low, "data-exclusive-min": "true"})
    return field


class _ShownChoiceMixin:
    """A choice field whose 'not one of the available choices' error quotes the value cut to a readable length
    (a 100,000-character gpu value was echoed whole on the page)."""

    error_messages: dict[str, Any]

    def validate(self, value: Any) -> None:
        try:
            super().validate(value)  # type: ignore[misc]
        except ValidationError as error:
            if error.code != "invalid_choice" or not isinstance(error.params, dict):
                raise
            shown_value = shown(str(error.params.get("value", "")))
            raise ValidationError(
                self.error_messages["invalid_choice"], code="invalid_choice", params={"value": shown_value}
            ) from None


class ShownChoiceField(_ShownChoiceMixin, forms.ChoiceField):
    pass


class ShownMultipleChoiceField(_ShownChoiceMixin, forms.MultipleChoiceField):
    pass


class PlannerForm(forms.Form):
    name = forms.CharField(
        label="Scenario name",
        max_length=rule("/name").max_length,
        required=False,
        help_text="Shown on saved scenarios and the PDF cover.",
    )
    model_name = ShownChoiceField(
        label="Model",
        choices=MODEL_CHOICES,
        required=False,
        help_text="A published model (its geometry from the catalog), or empty to give the size.",
    )
    params_b = _bounded(
        "params_b",
        "Model size (billions of parameters)",
        help_text="Total parameters, e.g. 7 for a 7B model; the geometry is derived when the size changes.",
    )
    kind = ShownChoiceField(
        label="Workload kind", choices=KINDS, help_text="Training runs a job to completion; inference serves requests."
    )
    tokens_b = _bounded(
        "tokens_b", "Training tokens (billions)", help_text="Tokens processed by one run: 1000 = 1T tokens."
    )
    seq_len = _bounded("seq_len", "Sequence length (tokens)", help_text="Tokens per training sequence.")
    global_batch = _bounded(
        "global_batch", "Global batch (sequences)", help_text="Sequences per optimizer step across all GPUs."
    )
    precision = ShownChoiceField(label="Precision", choices=PRECISIONS, help_text="Arithmetic of the matmuls.")
    runs_per_year = _bounded(
        "runs_per_year", "Runs per year", help_text="How often this job runs; it sets how busy an owned cluster is."
    )
    layers = _bounded("layers", "Layers", help_text="Optional: derived from the model size when empty.")
    hidden = _bounded("hidden", "Hidden size", help_text="Optional: model width.")
    heads = _bounded("heads", "Attention heads", help_text="Optional.")
    kv_heads = _bounded(
        "kv_heads",
        "KV heads",
        help_text="Optional: key/value heads, which divide the heads: as many as the heads for multi-head attention, "
        "1 for multi-query. Empty = the published model's, else grouped-query attention with at most 8.",
    )

    serving_engine = ShownChoiceField(
        label="Serving engine",
        choices=SERVING_ENGINES,
        required=False,
        help_text="Whose memory and batching settings size the deployments; TensorRT-LLM and NIM run on NVIDIA GPUs "
        "only.",
    )

    gpu = ShownChoiceField(label="GPU", choices=GPU_CHOICES, help_text="GPU model to rent or buy.")
    cluster_sizes = forms.CharField(
        label="Cluster sizes (GPUs)",
        max_length=200,
        # Checked in clean(): training needs them; inference sizes its deployments from the traffic and ignores them
        # (an outsider's probe: a serving plan was refused with "This field is required").
        required=False,
        help_text="Candidate sizes to compare, separated by commas, e.g. 8, 16, 32.",
    )
    gpus_per_node = _bounded(
        "gpus_per_node",
        "GPUs per node",
        help_text="GPUs in one server (NVLink domain); empty = the GPU's typical server.",
    )
    inter_node_gbps = _bounded(
        "inter_node_gbps",
        "Scale-out bandwidth per node (Gb/s)",
        help_text="Network between nodes: 8 x 400 Gb/s InfiniBand = 3200; empty = the typical server.",
    )
    strategy = ShownChoiceField(label="Sharding strategy", choices=STRATEGIES, help_text="auto picks per size.")
    tp = _bounded("tp", "Tensor parallel (GPUs)", help_text="Optional: empty = chosen per size.")
    pp = _bounded("pp", "Pipeline stages", help_text="Optional: empty = chosen per size.")
    micro_batch = _bounded("micro_batch", "Micro-batch (sequences)", help_text="Optional: per GPU per step.")
    activation_checkpointing = ShownChoiceField(
        label="Activation checkpointing", choices=CHECKPOINTING, required=False, help_text="Trades compute for memory."
    )

    markets = ShownMultipleChoiceField(
        label="Rental markets",
        choices=MARKETS,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Which prices to consider; none checked = all.",
    )
    providers = forms.CharField(
        label="Providers", required=False, max_length=300, help_text="Comma-separated ids (e.g. aws, gcp); empty = all."
    )
    rent_usd_per_gpu_hour = _bounded(
        "rent_usd_per_gpu_hour",
        "Your rental quote (USD per GPU-hour)",
        help_text="Optional: a negotiated price that overrides the catalog.",
    )
    price_decline_pct = _bounded(
        "price_decline_pct",
        "Rental price decline (% per year)",
        help_text="Expected yearly fall of rental prices over the horizon; empty = none.",
    )

    capex_usd = _bounded(
        "capex_usd",
        "Purchase price of one node (USD)",
        help_text="Optional: all-in quote for one server of 'GPUs per node' GPUs; empty = catalog quote.",
    )
    years = _bounded("years", "Service life (years)", help_text="Depreciation horizon.")
    discount_rate_pct = _bounded("discount_rate_pct", "Discount rate (% per year)", help_text="Cost of capital.")
    residual_pct = _bounded("residual_pct", "Residual value (% of capex)", help_text="Resale value at the end of life.")
    power_usd_per_kwh = _bounded("power_usd_per_kwh", "Electricity (USD per kWh)", help_text="Price of energy.")
    pue = _bounded("pue", "PUE", help_text="Facility overhead: 1.3 = 30% extra energy for cooling.")
    colo_usd_per_kw_month = _bounded(
        "colo_usd_per_kw_month",
        "Colocation (USD per kW-month)",
        help_text="Rack space and power capacity, billed on contracted kW.",
    )
    support_pct = _bounded("support_pct", "Support (% of capex per year)", help_text="Vendor support and spares.")
    staff_usd_per_year = _bounded(
        "staff_usd_per_year", "Staff (USD per year)", help_text="Operations people for the cluster."
    )
    software_usd_per_gpu_year = _bounded(
        "software_usd_per_gpu_year",
        "Software (USD per GPU-year)",
        help_text="Licences, e.g. an enterprise AI stack; empty = none.",
    )

    peak_requests_per_s = _bounded(
        "peak_requests_per_s",
        "Peak traffic (requests per second)",
        help_text="Inference: the busiest moment of the day.",
    )
    mean_requests_per_s = _bounded(
        "mean_requests_per_s", "Mean traffic (requests per second)", help_text="Inference: the average over a day."
    )
    input_tokens = _bounded("input_tokens", "Prompt length (tokens)", help_text="Inference: input tokens per request.")
    output_tokens = _bounded(
        "output_tokens", "Answer length (tokens)", help_text="Inference: output tokens per request."
    )
    ttft_p95_s = _bounded("ttft_p95_s", "Time to first token, p95 (seconds)", help_text="Inference latency target.")
    tpot_p95_s = _bounded("tpot_p95_s", "Time per output token, p95 (seconds)", help_text="Inference latency target.")

    utilization_pct = _bounded(
        "utilization_pct",
        "Utilization (% of the year busy)",
        help_text="Share of the year the owned cluster does useful work; empty = implied by the runs a year.",
    )
    compare_gpus = ShownMultipleChoiceField(
        label="Compare with GPUs",
        choices=GPU_CHOICES,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Other GPU types to price at their own best size beside this plan.",
    )

    def __init__(
        self,
        *args: Any,
        ownership_defaults: dict[str, float] | None = None,
        editing: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """``editing``: the saved Scenario document the submitted form edits, whose given values stay given."""
        super().__init__(*args, **kwargs)
        if self.is_bound and not self.initial:
            # The defaults the page prefills for the submitted kind: changed_data then tells a value the user chose
            # from a default left as prefilled (SENT_WHEN_CHANGED).
            self.initial = default_initial(str(self.data.get(self.add_prefix("kind")) or "training"))
        self.editing = editing or {}
        for name, key in CATALOG_FIELDS.items():
            if ownership_defaults and key in ownership_defaults:
                value = ownership_defaults[key] / SCALES.get(name, 1)
                self.fields[name].widget.attrs["placeholder"] = f"{value:g}"
                self.fields[name].help_text += f" Empty = catalog default {value:g}."
        for name, field in self.fields.items():
            field.widget.attrs.setdefault("aria-describedby", f"help-{name} error-{name}")
            if isinstance(field, forms.FloatField):
                field.widget.attrs.setdefault("step", "any")

    def clean_cluster_sizes(self) -> list[int]:
        raw = self.cleaned_data["cluster_sizes"]
        if not (raw or "").strip():
            return []  # clean() asks for them where the workload is training
        # Each size is read as an id is (core.ids: ASCII digits), not by int(), which takes '1_6' and U+FF18.
        parsed = [parse_id(part) for part in _SIZES_SEPARATOR.split(raw.strip())]
        if any(size is None for size in parsed):
            raise forms.ValidationError(
                "Enter whole numbers of GPUs in ASCII digits (0-9) separated by commas, e.g. 8, 16, 32; "
                f"got {shown(raw)}."
            )
        sizes = sorted({size for size in parsed if size is not None})
        r = rule("/cluster_sizes")
        assert r.items is not None and r.items.minimum is not None and r.items.maximum is not None
        if not sizes or sizes[0] < r.items.minimum:
            raise forms.ValidationError(f"Every size needs at least {r.items.minimum:g} GPU.")
        if len(sizes) > (r.max_items or 0):
            raise forms.ValidationError(f"At most {r.max_items} sizes at once.")
        if sizes[-1] > r.items.maximum:
            raise forms.ValidationError(f"At most {r.items.maximum:,.0f} GPUs.")
        return sizes

    def clean_providers(self) -> list[str]:
        raw = self.cleaned_data.get("providers") or ""
        return [part.strip().lower() for part in raw.split(",") if part.strip()]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if (
            data.get("kind", "training") == "training"
            and data.get("tokens_b") is None
            and "tokens_b" not in self.errors
        ):
            self.add_error("tokens_b", "Training needs the tokens one run processes.")
        if data.get("kind", "training") == "training" and data.get("cluster_sizes") == []:
            self.add_error("cluster_sizes", "Training compares cluster sizes: give them, e.g. 8, 16, 32.")
        if not data.get("model_name") and data.get("params_b") is None and "params_b" not in self.errors:
            self.add_error("params_b", "Give the model size, or choose a published model.")
        return data

    def to_scenario(self) -> dict[str, Any]:
        """The Scenario JSON of the cleaned data; empty optional fields are left out (defaults apply)."""
        data = self.cleaned_data
        kind = data.get("kind") or "training"
        skip = INFERENCE_ONLY if kind == "training" else TRAINING_ONLY
        left_as_prefilled = {
            name
            for name in SENT_WHEN_CHANGED
            if name not in self.changed_data and _get(self.editing, POINTERS[name]) is None
        }
        document: dict[str, Any] = {"workload": {"kind": kind}}
        for name, pointer in POINTERS.items():
            if name in skip or name in left_as_prefilled:
                continue
            value: Any = data.get(name)
            if value is None or value == "" or value == []:
                if name != "markets":
                    continue
                value = [choice for choice, _ in MARKETS]
            if name in SCALES:
                value = value * SCALES[name]
            if name == "activation_checkpointing":
                value = {"true": True, "false": False}.get(value, value)
            if isinstance(value, float) and value.is_integer() and name not in SCALES:
                value = int(value)
            _set(document, pointer, value)
        if not document.get("name"):
            document["name"] = "Untitled scenario"
        return document


PIPELINE_STAGES: Final[str] = "/workload/parallelism/pp"


def merge_into(existing: dict[str, Any], edited: dict[str, Any]) -> dict[str, Any]:
    """``edited`` (what the form holds) laid over ``existing`` (a saved scenario), keeping the fields the
    planner does not show (spot settings, a named server, ffn_hidden...) so that editing loses nothing.

    Every field the form manages comes from ``edited``; one the user emptied falls back to its default."""
    merged = copy.deepcopy(existing)
    size_of = ("/workload/model/params_b", "/workload/model/name")
    if any(_get(existing, p) != _get(edited, p) for p in size_of):
        # A new size or model: geometry the form does not show belonged to the old one (issue 15: a 70B plan
        # computed with 7B geometry), so the new one is derived instead.
        for key in ("ffn_hidden", "vocab", "kv_heads", "experts", "active_experts"):
            _delete(merged, f"/workload/model/{key}")
    if _get(existing, PIPELINE_STAGES) != _get(edited, PIPELINE_STAGES):
        # Virtual stages the form does not show belonged to the old pipeline (an outsider's probe: a saved NeMo plan
        # with 12 virtual stages, edited to pp 1, answered a 400 on a field the page has no way to change).
        _delete(merged, "/workload/parallelism/virtual_pipeline")
    for pointer in POINTERS.values():
        _delete(merged, pointer)
    for pointer in POINTERS.values():
        value = _get(edited, pointer)
        if value is not None:
            _set(merged, pointer, value)
    workload = merged.setdefault("workload", {})
    workload["kind"] = kind = edited.get("workload", {}).get("kind", "training")
    # A workload switched to the other kind drops what only the old kind meant.
    other = ("traffic", "latency") if kind == "training" else ("tokens", "global_batch", "parallelism", "runs_per_year")
    for key in other:
        workload.pop(key, None)
    for key in ("traffic", "latency", "parallelism"):
        if workload.get(key) == {}:
            workload.pop(key)
    return merged


def _delete(document: dict[str, Any], pointer: str) -> None:
    keys = pointer.strip("/").split("/")
    target: Any = document
    for key in keys[:-1]:
        target = target.get(key) if isinstance(target, dict) else None
        if target is None:
            return
    if isinstance(target, dict):
        target.pop(keys[-1], None)


def _set(document: dict[str, Any], pointer: str, value: Any) -> None:
    keys = pointer.strip("/").split("/")
    target = document
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    target[keys[-1]] = value


def _get(document: dict[str, Any], pointer: str) -> Any:
    value: Any = document
    for key in pointer.strip("/").split("/"):
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return value


def initial_from_scenario(document: dict[str, Any]) -> dict[str, Any]:
    """Form initial values for a Scenario JSON (a preset, a saved scenario or an Advice's normalized one)."""
    initial = dict(BASE_INITIAL)
    for name, pointer in POINTERS.items():
        value = _get(document, pointer)
        if value is None:
            continue
        if name in SCALES:
            value = round(value / SCALES[name], 6)
            if float(value).is_integer():
                value = int(value)
        elif name == "cluster_sizes":
            value = ", ".join(str(v) for v in value)
        elif name == "providers":
            value = ", ".join(value)
        elif name == "activation_checkpointing":
            value = {True: "true", False: "false"}.get(value, value)
        initial[name] = value
    if _get(document, "/workload/kind") == "inference" and _get(document, "/rent/markets") is None:
        # The Scenario's default markets, spot included (a serving burst may run on spot): the training form's
        # no-spot default made the planner's 8B serving preset rent dearer than the same example via the API.
        initial["markets"] = list(Market.values)
    return initial


def default_initial(kind: str) -> dict[str, Any]:
    """What the form prefills for a workload of ``kind`` with nothing given."""
    return initial_from_scenario({"workload": {"kind": kind}})


def preset_initial(key: str) -> dict[str, Any]:
    preset = PRESETS.get(key) or PRESETS[DEFAULT_PRESET]
    return initial_from_scenario(copy.deepcopy(preset["scenario"]))


def field_for_pointer(pointer: str) -> str | None:
    """The form field that edits the JSON value at ``pointer`` (or one of its parents), if any; an error on the
    whole model (geometry contradicting the size) lands on the size."""
    if pointer == "/workload/model":
        return "params_b"
    candidates = sorted(POINTERS.items(), key=lambda item: -len(item[1]))
    for name, field_pointer in candidates:
        if pointer == field_pointer or pointer.startswith(field_pointer + "/"):
            return name
    return None


def _json_names() -> dict[str, str]:
    """Each way a validator message names a JSON value, to the form field that edits it: the whole pointer, and the
    last key where it is an identifier (has an underscore: 'tokens' or 'precision' may be plain prose) naming one
    field only. The one mapping from POINTERS; longest first so a pointer wins over its last key."""
    keys: dict[str, list[str]] = {}
    for name, pointer in POINTERS.items():
        keys.setdefault(pointer.rsplit("/", 1)[-1], []).append(name)
    names = {pointer: name for name, pointer in POINTERS.items()}
    names.update({key: found[0] for key, found in keys.items() if "_" in key and len(found) == 1})
    return dict(sorted(names.items(), key=lambda item: -len(item[0])))


JSON_NAMES = _json_names()
_JSON_NAME = re.compile(r"(?<![\w/])(" + "|".join(re.escape(key) for key in JSON_NAMES) + r")(?![\w/])")


def _sibling_names(pointer: str) -> dict[str, str]:
    """The fields beside the one at ``pointer`` in its JSON object, by their key: 'heads' beside kv_heads."""
    if pointer not in POINTERS.values():
        return {}
    parent = pointer.rsplit("/", 1)[0]
    return {p.rsplit("/", 1)[1]: name for name, p in POINTERS.items() if p != pointer and p.rsplit("/", 1)[0] == parent}


def in_form_words(message: str, form: forms.Form, *, pointer: str = "") -> str:
    """A Scenario validator's message in the form's words: each JSON key or pointer it names (another field of a
    cross-field rule, 'must not exceed peak_requests_per_s (10)') becomes that field's label, quoted. A plain key
    ('heads') is a field only beside the one the message is about (``pointer``) and followed by its value in
    brackets: kv_heads 'must divide heads (40)'."""

    def quoted(name: str, text: str) -> str:
        field = form.fields.get(name)
        return f"“{field.label}”" if field is not None and field.label else text

    message = _JSON_NAME.sub(lambda match: quoted(JSON_NAMES[match.group(1)], match.group(1)), message)
    siblings = _sibling_names(pointer)
    if not siblings:
        return message
    plain = re.compile(r"(?<![\w/“])(" + "|".join(re.escape(key) for key in siblings) + r")(?= \()")
    return plain.sub(lambda match: quoted(siblings[match.group(1)], match.group(1)), message)


def _only(name: str) -> str:
    return "training" if name in TRAINING_ONLY else "inference" if name in INFERENCE_ONLY else ""


def sections(form: PlannerForm) -> list[dict[str, Any]]:
    """Bound fields grouped for the template, in display order; "More options" opens when one has an error.

    Each field says which workload kind it belongs to (``only``) so the page can hide the other kind's."""
    grouped = []
    for key, title, main, more in SECTIONS:
        names = [*main, *more]
        kinds = {_only(name) for name in names}
        grouped.append(
            {
                "key": key,
                "title": title,
                "only": kinds.pop() if len(kinds) == 1 else "",
                "fields": [{"field": form[name], "only": _only(name)} for name in main],
                "more": [{"field": form[name], "only": _only(name)} for name in more],
                "more_open": any(form[name].errors for name in more),
            }
        )
    return grouped


def current_kind(form: PlannerForm) -> str:
    value = form["kind"].value()
    return value if value in {"training", "inference"} else "training"
