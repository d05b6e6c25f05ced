"""The Fleet Plan documents of DESIGN.md as typed models: the input (``plan_fleet FLEET.json``,
``POST /api/v1/fleet-plans``, saved fleets) and the plan it returns. The ONE definition of their fields and caps.

Generated from them: ``advisor/schemas/fleet.schema.json`` and ``fleet-plan.schema.json`` (``manage.py
generate_schemas``; a test fails when the committed files differ) and the OpenAPI components. The parser
(``advisor.advice.fleet.document``) reads its field lists and caps from here; ``name``, ``gpu``, ``network``, ``rent``,
``buy`` and a job's ``workload`` are the Scenario's own parts (advisor.scenario_model). Every object is closed.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import ConfigDict, Field

from advisor.advice.fleet.demand import HOURS
from advisor.advice.models import CalibrationSummary, HardwareQuote, IsoDate, IsoDateTime, Offer, PriceFreshness
from advisor.scenario_model import (
    INTEGRAL,
    MAX_GPUS,
    NAME_TEXT,
    Buy,
    Closed,
    DocumentName,
    GpuId,
    Network,
    Rent,
    Workload,
)
from advisor.schema_gen import DRAFT_2020_12, SCHEMA_BASE_URI, NoFieldTitles, schema_text
from estimator import bounds

MAX_JOBS: Final[int] = 10_000
MAX_JOB_NAME: Final[int] = 200
MAX_RUNS_PER_JOB: Final[int] = int(HOURS)  # one an hour
MAX_OWNED_SIZES: Final[int] = 512
MAX_WAIT_DAYS: Final[float] = 365.0
MAX_GROWTH: Final[float] = 100.0
FLEET_SCHEMA_FILE: Final[str] = "fleet.schema.json"
FLEET_PLAN_SCHEMA_FILE: Final[str] = "fleet-plan.schema.json"

Tier = Literal["owned", "reserved_1y", "reserved_3y", "on_demand", "spot"]
Number = float | None  # a cost that cannot be computed (a tier with no price) is null


# --- the input ------------------------------------------------------------------------------------------


class FleetJob(Closed):
    """One job of the year's mix: ``gpus`` and either ``hours`` or a Scenario ``workload``."""

    name: Annotated[str, Field(min_length=1, max_length=MAX_JOB_NAME, pattern=NAME_TEXT)] | None = Field(
        default=None, description='default "job N"'
    )
    gpus: Annotated[int, Field(ge=1, le=MAX_GPUS), INTEGRAL] | None = Field(
        default=None,
        description="GPUs of one run (whole nodes above one node); an inference workload may leave it out (sized) "
        "or give replicas of the TP its advice deploys, which need not fill whole nodes",
    )
    hours: Annotated[float, Field(ge=bounds.MIN_JOB_HOURS, le=HOURS)] | None = Field(
        default=None, description="wall-clock hours of one run (a run fits in a year); or give workload"
    )
    workload: Workload | None = Field(
        default=None,
        description="a Scenario workload (runs_per_year on the job, not here): run hours from the advice pipeline",
    )
    runs_per_year: Annotated[int, Field(ge=1, le=MAX_RUNS_PER_JOB), INTEGRAL] | None = Field(
        default=None, description="default 1"
    )
    months: Annotated[list[Annotated[int, Field(ge=1, le=12), INTEGRAL]], Field(min_length=1)] | None = Field(
        default=None, description="months (1-12) the runs start in; default: spread evenly over the year"
    )
    max_wait_days: Annotated[float, Field(ge=0, le=MAX_WAIT_DAYS)] | None = Field(
        default=None, description="how long a run may wait for owned capacity before it is rented; default 0"
    )
    interruptible: bool | None = Field(default=None, description="may use spot; default false")


class FleetUsage(Closed):
    """A measured demand series treated as divisible demand."""

    csv: str = Field(description="timestamp,gpus_busy[,gpus_pending] rows (ISO 8601 or epoch seconds)")
    growth: Annotated[float, Field(ge=bounds.MIN_DEMAND_GROWTH, le=MAX_GROWTH)] | None = Field(
        default=None, description="next year's demand / measured; default 1"
    )


class FleetPlanInput(Closed):
    model_config = ConfigDict(title="FleetPlanInput")

    name: DocumentName | None = None
    gpu: GpuId
    network: Network | None = None
    rent: Rent | None = None
    buy: Buy | None = None
    jobs: Annotated[list[FleetJob], Field(max_length=MAX_JOBS)] | None = None
    usage: FleetUsage | None = None
    owned_gpus: (
        Annotated[
            list[Annotated[int, Field(ge=0, le=MAX_GPUS), INTEGRAL]], Field(min_length=1, max_length=MAX_OWNED_SIZES)
        ]
        | None
    ) = Field(
        default=None, description="candidate owned sizes (whole nodes); default: every whole node from 0 to the peak"
    )


# --- the plan -------------------------------------------------------------------------------------------


class FleetDemand(Closed):
    peak_gpus: float
    mean_gpus: float
    gpu_hours_per_year: float
    load_duration: list[list[float]] = Field(description="[GPUs, hours a year at or above]")
    duration_curve: list[list[float]] = Field(description="[hour rank, GPUs], demand sorted from highest")


class TierUse(Closed):
    gpus: Number
    gpu_hours: Number
    usd_per_year: Number


class FleetOption(Closed):
    owned_gpus: int
    owned_utilization: float
    rented_gpu_hours: float
    usd_per_year: Number
    by_tier: dict[Tier, TierUse]


class TierLine(Closed):
    tier: Tier
    gpus: Number
    usd_per_year: Number


class FleetAnswer(Closed):
    owned_gpus: int
    usd_per_year: Number
    method: str


class FleetRecommendation(Closed):
    owned_gpus: int
    usd_per_year: Number
    owned_utilization: float
    tiers: list[TierLine] = Field(description="adding up to usd_per_year")
    saving_vs_all_rent_usd: Number
    saving_vs_own_peak_usd: Number
    all_rent_usd_per_year: Number
    own_peak_usd_per_year: Number
    break_even_utilization: Number
    load_duration_answer: FleetAnswer
    simulated_answer: FleetAnswer
    reasons: list[str]


class FleetRun(Closed):
    requested_start_hour: int
    start_hour: int
    wait_hours: int
    placed: Literal["owned", "spot", "rented"]


class FleetJobResult(Closed):
    name: str
    gpus: int
    run_hours: float
    runs_per_year: int
    owned_runs: int
    rented_runs: int = Field(description="runs not on owned GPUs, spot runs included")
    spot_runs: int = Field(description="of the rented runs, those on spot")
    calibration: CalibrationSummary | None = Field(
        default=None,
        description="the calibration behind the job's run hours and its held-out error: the block of the job's own "
        "advice (training: the throughput calibration; inference: the serving calibration), the same on every line "
        "of the job; null for a job given as gpus and hours",
    )
    rent_offers: dict[str, Offer] | None = Field(
        default=None,
        description="per market, the offer this line's rented hours are priced at: the cheapest that holds its "
        "instance's GPUs (a service's replica, else its GPUs up to a node) where cheaper per GPU-hour than the "
        "node's offer of tier_prices.offers, else that one",
    )
    runs: list[FleetRun] = Field(description="the first runs of the job as placed")


class FleetUncertainty(Closed):
    samples: int
    seed: int
    quantiles: list[float]
    usd_per_year: list[Number]
    owned_gpus: list[float]
    hours_factors: list[float]
    method: str
    throughput_log_sigma: float
    throughput_p10_multiplier: float | None = Field(
        default=None, description="P10 of measured/predicted tokens/s the throughput draws follow (1 without any)."
    )
    throughput_p90_multiplier: float | None = Field(
        default=None, description="P90 of measured/predicted tokens/s the throughput draws follow (1 without any)."
    )
    price_alternatives: int


class TierPrices(Closed):
    gpus_per_node: int
    owned_usd_per_year_one_node: Number
    owned_usd_per_year_per_node: Number
    owned_usd_per_year_base: Number
    owned_variable_usd_per_gpu_hour: Number
    on_demand_usd_per_gpu_hour: Number
    spot_usd_per_gpu_hour: Number
    reserved_usd_per_gpu_hour: dict[str, Number]
    offers: dict[str, Offer] = Field(description="the offer each rented tier is priced at, by market")
    hardware_quote: HardwareQuote | None
    owned_scale_out_fabric: bool | None = Field(
        default=None,
        description="whether an owned cluster of more than one node buys the quote's scale-out fabric: where the "
        "fleet's work crosses nodes (advisor.cash_flow.carries_fabric, the rule the inference advice prices by)",
    )
    owned_fabric: str | None = Field(default=None, description="the same in words, with why")


class FleetPlan(Closed):
    """Output of ``plan_fleet`` and ``POST /api/v1/fleet-plans``."""

    model_config = ConfigDict(title="FleetPlan")

    fleet_plan_version: Literal[1, 2] = Field(
        description="2: reserved terms are chosen per line (the cheapest instance that holds it) and weighed against "
        "the price its uncommitted hours are billed at; 1: at the node's term against the node's on-demand price"
    )
    generated_at: IsoDateTime
    fleet: FleetPlanInput = Field(description="the Fleet Plan input, normalized (defaults filled in)")
    gpu: str
    demand: FleetDemand
    options: list[FleetOption] = Field(description="one per candidate owned size")
    recommendation: FleetRecommendation
    jobs: list[FleetJobResult]
    uncertainty: FleetUncertainty
    tier_prices: TierPrices
    prices_as_of: IsoDate | None = Field(description="date of the oldest price observation used")
    price_freshness: PriceFreshness | None = Field(
        default=None,
        description="the offers the plan quotes (the tiers' and each job line's rent_offers) as the Advice's "
        "price_freshness counts them: kind, and the undated ones (undated_offers, undated); absent from plans made "
        "before it",
    )
    warnings: list[str]


FLEET_MODELS: Final[dict[str, type[Closed]]] = {FLEET_SCHEMA_FILE: FleetPlanInput, FLEET_PLAN_SCHEMA_FILE: FleetPlan}
_DESCRIPTIONS: Final[dict[str, str]] = {
    FLEET_SCHEMA_FILE: "Input of plan_fleet, POST /api/v1/fleet-plans and saved fleets (DESIGN.md). Null or left out "
    "means the documented default. Cross-field rules (hours or workload, not both; gpus whole nodes, or an "
    "inference job's replicas of its advice's TP; at most as many months as runs; an inference job runs all year; "
    "jobs or usage) are checked by advisor.advice.fleet.document.",
    FLEET_PLAN_SCHEMA_FILE: "Output of plan_fleet and POST /api/v1/fleet-plans (DESIGN.md). Money in USD per year "
    "unless named; a cost that cannot be computed is null.",
}


def fleet_json_schema(name: str, *, ref_template: str = "#/$defs/{model}") -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one Fleet Plan document by its file name."""
    schema = FLEET_MODELS[name].model_json_schema(
        mode="validation", ref_template=ref_template, schema_generator=NoFieldTitles
    )
    return {
        "$schema": DRAFT_2020_12,
        "$id": SCHEMA_BASE_URI + name,
        **schema,
        "description": _DESCRIPTIONS[name] + " Generated from advisor/advice/fleet/models.py "
        "(manage.py generate_schemas); do not edit.",
    }


def generated_schema_files() -> dict[str, str]:
    """file name in advisor/schemas/ -> its text, exactly as committed."""
    return {name: schema_text(fleet_json_schema(name)) for name in FLEET_MODELS}
