"""The Advice documents (training and inference) as typed models: the ONE definition of their shape.

``advisor/schemas/advice.schema.json`` and ``advice-inference.schema.json`` are generated from these
(``manage.py generate_schemas``; a test fails when the committed files differ) and the OpenAPI components
of ``/api/v1/advice`` are the same schemas. Every object is closed (``extra="forbid"``): a key the pipeline
adds without adding it here fails the schema tests, so the documentation cannot drift again.

The pipeline still builds plain dicts (``to_dict()``); these models describe and validate them. Fields
marked "issue 15" are produced by the comparison/no-fit work and are optional until it lands.
Money is USD, times are in the unit named, fractions are 0..1 unless said otherwise; a number that cannot
be computed is null (never NaN), and a warning says why.
"""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from advisor.scenario_model import Selective, Strategy
from advisor.schema_gen import DRAFT_2020_12, SCHEMA_BASE_URI, NoFieldTitles, schema_text

Market = Literal["on_demand", "spot", "reserved_1y", "reserved_3y"]
Fraction = Annotated[float, Field(ge=0, le=1)]
NonNegative = Annotated[float, Field(ge=0)]
# Timestamps and dates stay ISO 8601 strings in the documents (their bytes are hashed into proposals), typed by their
# JSON Schema format so a generated client parses them as the offers API's own date-times (an integrator's probe:
# AdviceOffer.observed_at was a plain string beside Offer.observed_at's date-time).
IsoDateTime = Annotated[str, Field(json_schema_extra={"format": "date-time"})]
IsoDate = Annotated[str, Field(json_schema_extra={"format": "date"})]
# The normalized Scenario: its schema is the Scenario document's, referenced rather than copied (the marker
# becomes a $ref in advice_json_schema: pydantic cannot hold a reference to a schema outside its own $defs).
_SCENARIO_MARKER = "x-scenario-document"
NormalizedScenario = Annotated[dict[str, Any], WithJsonSchema({_SCENARIO_MARKER: True})]


PRICES_AS_OF: Final[str] = (
    "YYYY-MM-DD: the oldest observation date among the offers the Advice quotes (an offer quoted at several sizes "
    "counts once). Undated offers are counted and named in price_freshness (undated_offers, undated) and a warning; "
    "when none is dated, the snapshot's compile date (an upper bound: those prices are no newer); with a manual "
    "rent.usd_per_gpu_hour, the day of the advice; null when no offer is quoted."
)


class Closed(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# --- shared by training and inference -------------------------------------------------------------


class GpuSummary(Closed):
    """The GPU spec the estimate used (advisor.advice.documents.gpu_document): the figures with their units and the
    published source of the spec row. Documents issued before these fields were added carry only id, name,
    memory_gb, peak_tflops, precision and source."""

    id: str
    name: str
    memory_gb: NonNegative = Field(
        description="Device memory as the datasheet names the part, a binary figure (the H100's 80 is 80 GiB); not "
        "the capacity a job is checked against (memory_capacity_gb)."
    )
    memory_capacity_gb: NonNegative | None = Field(
        default=None,
        description="Device memory the driver reports, GB (1e9 bytes): what each size's memory_per_gpu_gb is checked "
        "against. Absent from documents issued before it was added.",
    )
    peak_tflops: NonNegative | None = Field(description="Dense peak TFLOP/s at the scenario's precision.")
    precision: str | None = None
    memory_bw_gbps: NonNegative | None = Field(default=None, description="HBM bandwidth, GB/s.")
    nvlink_gbps: NonNegative | None = Field(
        default=None,
        description="Per-GPU scale-up bandwidth (NVLink/xGMI, else PCIe x16), GB/s, bidirectional aggregate as "
        "datasheets quote it.",
    )
    gpus_per_node: int | None = Field(default=None, ge=1, description="GPUs in the GPU's typical server.")
    inter_node_gbps: NonNegative | None = Field(
        default=None, description="Scale-out bandwidth of the typical server, Gb/s per node."
    )
    tdp_w: NonNegative | None = Field(default=None, description="Board power per GPU, W.")
    units: dict[str, str] | None = Field(default=None, description="The unit of each figure, by field name.")
    source: str | None = Field(
        default=None, description="The published source the spec row holds (datasheets, benchmark tables, guides)."
    )
    unverified_since: IsoDate | None = Field(
        default=None,
        description="Where the source marks values 'unc': the date the spec table's header gives them ('from memory "
        "/ not re-verified', as of that date); null otherwise. The table records no day each row was read, so no "
        "read date is given.",
    )


class Offer(Closed):
    """One rental offer as the Advice uses it."""

    provider: str
    instance: str | None
    region: str | None
    market: Market
    gpu_count: NonNegative
    usd_per_hour: NonNegative = Field(description="Price of the whole instance per hour.")
    usd_per_gpu_hour: NonNegative
    usd_per_used_gpu_hour: NonNegative = Field(
        description="Price per GPU-hour of the GPUs the job uses (a partly used instance costs in full)."
    )
    observed_at: IsoDateTime | None = Field(description="When the price was observed (ISO 8601); null: undated.")
    source: str
    is_snapshot: bool = Field(description="From the bundled snapshot rather than a live feed.")
    stale: bool
    id: int | None = Field(default=None, description="The offer's id: GET /api/v1/offers/{id}/history.")
    max_gpus: int | None = Field(
        default=None,
        description="The most GPUs the offer can supply at once (instance GPUs x a sourced per-provider cap); "
        "null: unknown (a warning names sizes priced at such offers).",
    )


class BreakEvenAgainst(Closed):
    market: Market | None = Field(
        description="The market of that price (inference: null when the rent's base and burst are on two markets)."
    )
    markets: list[Market] | None = Field(
        default=None,
        description="Inference: the markets of the rent as priced, its base's then its burst's.",
    )
    usd_per_gpu_hour: NonNegative | None = Field(
        description="The rental price break_even_utilization was computed against (training: levelized over the "
        "horizon when rent.price_decline_per_year is set; inference: the rent as priced per busy GPU-hour, "
        "rent.usd_per_month (levelized) over the replicas' GPU-hours a month, base, burst and whole instances "
        "included, so that breaks_even holds exactly where buy.usd_per_month is at most rent.usd_per_month)."
    )


class ClosestDeployment(Closed):
    """The fitting deployment nearest the targets, with the latency it reaches."""

    tp: int
    gpus_per_replica: int
    ttft_s: NonNegative | None
    tpot_s: NonNegative | None
    ttft_target_s: NonNegative
    tpot_target_s: NonNegative
    meets_latency: bool


class RelaxOption(Closed):
    """One change that would meet the targets (or come nearer), with what sizing again reaches."""

    change: str = Field(description="latency_targets, precision, tensor_parallel or gpu.")
    text: str
    meets_latency: bool
    tp: int | None
    ttft_s: NonNegative | None
    tpot_s: NonNegative | None
    ttft_p95_s: NonNegative | None = None
    tpot_p95_s: NonNegative | None = None
    precision: str | None = None
    gpu: str | None = None
    gpus: int | None = Field(
        default=None,
        description="GPUs the advice recommends with this change (null where it does not meet the targets); tp, "
        "ttft_s and tpot_s are then that recommended deployment's, which may be another TP than the first found to "
        "meet the targets.",
    )
    action: Literal["rent", "buy"] | None = Field(
        default=None, description="Whether renting or owning is cheaper with this change (null: not priced)."
    )
    usd_per_month: NonNegative | None = Field(
        default=None, description="The monthly cost of that recommendation (rent or own, the cheaper) [USD/month]."
    )


class ClosestSize(Closed):
    """Training, action none: the candidate size nearest to holding the model, with the memory it needs."""

    gpus: int
    gpu: str
    memory_per_gpu_gb: NonNegative | None
    memory_gb: NonNegative
    fits_memory: bool


class SizeRelaxOption(Closed):
    """Training, action none: more GPUs, or a GPU with more memory, checked by predicting again; where every size
    leaves GPUs idle, the size the job runs on, an open layout or a global batch that splits over the sizes; where
    the size runs but nothing prices it, a rent price or a hardware price to give."""

    change: Literal["cluster_sizes", "gpu", "parallelism", "global_batch", "rent_price", "buy_price"]
    text: str
    fits_memory: bool
    gpu: str
    gpus: int | None
    memory_per_gpu_gb: NonNegative | None


class ModelGeometry(Closed):
    """The model the advice ran: catalog name (or null), the given size, the size its geometry implies."""

    name: str | None
    params_b: NonNegative | None
    implied_params_b: NonNegative | None
    layers: int | None
    hidden: int | None
    heads: int | None
    kv_heads: int | None
    ffn_hidden: int | None
    vocab: int | None
    experts: int | None
    active_experts: int | None
    # Billions a token runs through (a mixture of experts' active ones): what the FLOPs per token and MFU count
    active_params_b: NonNegative | None = None
    assumed: list[str]


class CapacityBand(Closed):
    """Inference: the P10-P90 band of one replica's capacity, from the serving calibration's held-out errors (each
    model's rows of its table predicted by a fit without that model; estimator.inference.capacity_band), and what the
    deployment needs at its ends. At the P10 capacity (1 chance in 10 a replica serves less, where the band covers
    the deployment) the peak needs more GPUs; at the P90 fewer."""

    source: str = Field(description="Which held-out errors the band comes from.")
    covers_deployment: bool = Field(
        description="Whether those held-out errors were measured on this deployment's GPU at its precision (BF16 "
        "read as FP16, the same 2-byte format) and on its serving engine (the serving calibration has rows of both, "
        "as the 'no rows on' and 'no PRECISION rows on' warnings test). False: the band is that of the calibrated "
        "GPUs, precisions and engines, its ends are no P10 and P90 for this deployment (on a published MI300X + vLLM "
        "table every point fell below it) and the advice states no probability with it."
    )
    replica_requests_per_s_p10: NonNegative = Field(description="A replica's capacity at the band's P10 [requests/s].")
    replica_requests_per_s_p90: NonNegative = Field(description="A replica's capacity at the band's P90 [requests/s].")
    gpus_at_p10: int | None = Field(description="GPUs the peak needs were every replica to serve its P10 capacity.")
    gpus_at_p90: int | None = Field(description="GPUs the peak needs were every replica to serve its P90 capacity.")
    usd_per_million_output_tokens_at_p10: NonNegative | None = Field(
        description="The cheaper of renting and owning per million output tokens at the P10 capacity (the same "
        "rent and ownership plans as the size, made for the replicas that capacity needs); null where not priced."
    )
    usd_per_million_output_tokens_at_p90: NonNegative | None = Field(
        description="Likewise at the P90 capacity; null where not priced."
    )


class LatencyBand(Closed):
    """Inference: what the recommended GPU count becomes within the serving model's latency error. The p95 TTFT and
    TPOT the sizing meets come from a queueing model; against published latency it was never fitted on (the
    calibration's latency_check) the real latency ran ``*_ratio_p10`` to ``*_ratio_p90`` times the modelled (P10-P90).
    Were the real latencies at the P10 multiple, the targets would be met as targets divided by it are by the model
    (looser); at the P90, as targets divided by it (tighter). Each end is sized again by the estimator at the
    recommended TP."""

    source: str = Field(description="Which published latency check the ratios come from.")
    ttft_ratio_p10: NonNegative = Field(description="P10 of measured / modelled mean TTFT (the check's).")
    ttft_ratio_p90: NonNegative = Field(description="P90 of measured / modelled mean TTFT.")
    tpot_ratio_p10: NonNegative = Field(description="P10 of measured / modelled TPOT.")
    tpot_ratio_p90: NonNegative = Field(description="P90 of measured / modelled TPOT.")
    covers_deployment: bool = Field(
        description="Whether the check measured this GPU at this precision on this serving engine (it names its GPUs, "
        "precisions and engines); false: the band is borrowed from other deployments and may be wider here."
    )
    gpus_if_latency_lower: int | None = Field(
        description="GPUs the peak needs at this TP were the real p95 latencies the P10 multiple of the modelled "
        "(sized at targets / ratio_p10); null where that still meets no target."
    )
    gpus_if_latency_higher: int | None = Field(
        description="GPUs the peak needs at this TP were the real p95 latencies the P90 multiple of the modelled "
        "(sized at targets / ratio_p90); null where no deployment at this TP meets them then."
    )
    usd_per_million_output_tokens_if_latency_lower: NonNegative | None = Field(
        description="The cheaper of renting and owning per million output tokens at gpus_if_latency_lower (the same "
        "rent and ownership plans as the size); null where not met or not priced."
    )
    usd_per_million_output_tokens_if_latency_higher: NonNegative | None = Field(
        description="Likewise at gpus_if_latency_higher; null where not met or not priced."
    )


class Recommendation(Closed):
    action: Literal["rent", "buy", "none"] | None = Field(
        description="none when no size fits, no deployment meets the targets or nothing can be priced (null only "
        "in documents issued before 2026-12-05)."
    )
    gpus: int | None
    tp: int | None = Field(
        default=None,
        description="Inference: the tensor-parallel degree of the recommended deployment; it and gpus name one "
        "size (TP 4 x 18 and TP 8 x 9 are both 72 GPUs). Absent in training and in documents issued before 2026-12-06.",
    )
    gpus_owned: int | None = Field(
        default=None,
        description="Inference, action buy: the GPUs bought, whole servers of network.gpus_per_node (gpus is what "
        "the deployment uses; the capex pays for these). Absent otherwise.",
    )
    nodes: int | None = Field(default=None, description="Inference, action buy: the servers bought. Absent otherwise.")
    capacity_band: CapacityBand | None = Field(
        default=None,
        description="Inference: the recommended size's capacity_band. Absent in training, where no deployment is "
        "recommended, and in documents issued before 2026-12-05.",
    )
    latency_band: LatencyBand | None = Field(
        default=None,
        description="Inference: the recommended size's latency_band. Absent in training, where no deployment is "
        "recommended, and in documents issued before 2026-12-06.",
    )
    reasons: list[str]
    none_reason: Literal["no_fit", "not_priced", "runs_unfinished"] | None = Field(
        default=None,
        description="Training, action none: why (no_fit: no candidate size holds the model; not_priced: the chosen "
        "size runs but no option that would finish the year's runs is priced: neither renting nor owning, or owning "
        "cannot finish them alone and renting the rest has no offer or price; runs_unfinished: renting or owning is "
        "priced but no candidate size finishes the year's runs, owned or rented). Null otherwise; absent in "
        "inference and in documents issued before 2026-12-06 04:08 UTC.",
    )
    knee_threshold: NonNegative | None = Field(
        default=None,
        description="Efficiency of a step up on the GPUs it adds, (dtps / tps) / (dgpus / gpus), below which more "
        "GPUs are not worth it.",
    )
    closest: ClosestDeployment | ClosestSize | None = Field(
        default=None,
        description="Action none: the deployment nearest the latency targets (inference), or the size nearest to "
        "holding the model (training).",
    )
    relax: list[RelaxOption] | list[SizeRelaxOption] | None = Field(
        default=None,
        description="Action none: what would meet the targets (inference) or hold the model (training), each "
        "checked by running the estimator again.",
    )


class PriceFreshness(Closed):
    live: bool
    snapshot: bool
    live_offers: int
    snapshot_offers: int
    newest_observed_at: IsoDateTime | None
    newest_live_observed_at: IsoDateTime | None
    snapshot_compiled_on: IsoDate | None
    stale: bool
    stale_after_hours: int
    label: str
    kind: Literal["manual", "live", "snapshot", "mixed", "none"] | None = None
    undated_offers: int | None = Field(default=None, description="Offers used that carry no observation date.")
    undated: list[str] | None = Field(default=None, description="provider/instance/region of the undated offers.")


class HardwareQuote(Closed):
    gpu: str
    gpus_per_server: int
    name: str | None = None
    usd: NonNegative | None
    quoted_on: IsoDate | None
    source: str
    power_kw: NonNegative | None
    idle_power_kw: NonNegative | None = None
    networking_usd_per_node: NonNegative | None = Field(
        default=None, description="Network fabric per node, added to capex when the cluster spans nodes."
    )
    networking_source: str | None = Field(default=None, description="Where the fabric cost per node comes from.")
    scaled_to_gpus_per_node: int | None = None
    idle_assumption: str | None = None
    manual: bool | None = Field(default=None, description="The scenario's own capex_usd, not a catalog quote.")


class CalibrationSummary(Closed):
    name: str
    runs: int
    loo_mape: NonNegative | None = Field(description="Leave-one-out mean absolute percentage error (fraction).")
    baseline_loo_mape: NonNegative | None = None
    source: str | None = None
    stack: str | None = Field(default=None, description="The software stack the prediction is for (null: unknown).")
    held_out: str | None = Field(
        default=None,
        description="The held-out check that applies to this prediction: leave-one-config-family-out when the "
        "calibration has runs of its stack, leave-one-stack-out when the stack is unknown or has none.",
    )
    held_out_median_ape: NonNegative | None = Field(
        default=None, description="Median absolute percentage error of tokens/s in that check (fraction)."
    )
    held_out_mape: NonNegative | None = Field(
        default=None, description="Mean absolute percentage error of tokens/s in that check (fraction)."
    )
    baseline_held_out_median_ape: NonNegative | None = Field(
        default=None, description="The constant-MFU baseline's median error in the same check (fraction)."
    )


GPUS_OF_THE_OUTLOOK = "GPUs of the recommended size (inference: the deployment's at the peak, what renting rents)."
GPUS_OWNED_OF_THE_OUTLOOK = (
    "Inference: the owned GPUs the buy figures are for, whole servers (at least gpus); absent in training, where they "
    "are gpus."
)


TP_OF_THE_OUTLOOK: Final = (
    "Inference: the tensor-parallel degree of the deployment these figures are for (two degrees can need the same "
    "GPUs at different costs); absent in training."
)


class CumulativeCost(Closed):
    gpus: int = Field(description=GPUS_OF_THE_OUTLOOK)
    gpus_owned: int | None = Field(default=None, description=GPUS_OWNED_OF_THE_OUTLOOK)
    tp: int | None = Field(default=None, description=TP_OF_THE_OUTLOOK)
    months: list[int]
    rent_usd: list[float | None]
    buy_usd: list[float | None]
    crossover_month: int | None
    utilization: Fraction | None = None
    rent_market: Market | None = None


class PresentCost(Closed):
    gpus: int = Field(description=GPUS_OF_THE_OUTLOOK)
    gpus_owned: int | None = Field(default=None, description=GPUS_OWNED_OF_THE_OUTLOOK)
    tp: int | None = Field(default=None, description=TP_OF_THE_OUTLOOK)
    discount_rate: float
    years: float
    rent_present_cost_usd: float | None
    buy_present_cost_usd: float | None


class Sensitivity(Closed):
    input: str
    unit: str
    metric: str
    base_input: float | None
    low_input: float | None
    high_input: float | None
    base: float | None
    low: float | None
    high: float | None
    swing: float | None


class Assumption(Closed):
    pointer: str = Field(
        description="JSON pointer of the Scenario field the value stands for; inference also lists what no Scenario "
        "field sets: the serving engine's settings under /serving/ and the 730-hour month under /calendar/."
    )
    value: float | int | str | list[int | str] | dict[str, float | int] | None = Field(
        description="The value used: a number, text, a list, or (a defaulted object such as the traffic) its fields."
    )
    unit: str
    source: str | None
    as_of: str | None = None


class Alternative(Closed):
    """Training, with ``compare_gpus``: one GPU at its recommended size."""

    gpu: str
    gpus: int | None
    run_hours: NonNegative | None
    rent_usd_per_run: NonNegative | None
    rent_market: Market | None = None
    buy_usd_per_run: NonNegative | None
    buy_overflow_usd_per_run: NonNegative | None = Field(
        default=None,
        description="Where one owned cluster of that size cannot finish the year's runs: owning it and renting the "
        "rest (that size's buy.overflow.usd_per_run), the own option the row is ranked by; buy_usd_per_run is then "
        "the owned runs' alone. Null otherwise; absent in documents issued before 2026-12-06 04:06 UTC.",
    )
    break_even_utilization: NonNegative | None
    fits_memory: bool
    not_compared: str | None = Field(default=None, description="Why this GPU could not be planned, when it could not.")
    pricing_note: str | None = Field(
        default=None,
        description="Another GPU than the scenario's, when the scenario gives manual quotes: it is priced at its own "
        "catalog offers and hardware quote, not at those quotes (they are for the scenario's GPU).",
    )
    warnings: list[str] = Field(
        default_factory=list,
        description="That GPU's own plan's warnings the Advice does not give already (a calibration borrowed from "
        "another GPU family, an MFU cap, idle GPUs); empty for the scenario's GPU, whose warnings are the Advice's. "
        "Absent in documents issued before 2026-12-08.",
    )
    offer: Offer | None = Field(
        default=None,
        description="The rental offer rent_usd_per_run is priced at (that GPU's recommended size's rent.offer); null "
        "where it is not priced at an offer. Absent in documents issued before 2026-12-09.",
    )
    hardware_quote: HardwareQuote | None = Field(
        default=None,
        description="The server quote buy_usd_per_run is priced at (that GPU's plan's hardware_quote); null where "
        "none is quoted. Absent in documents issued before 2026-12-09.",
    )
    cheapest: bool = Field(
        default=False,
        description="Whether this is the cheapest compared GPU: the lowest of renting and owning per run, counting "
        "only the options that finish the year's runs (owned, one cluster within the year, or with the rest rented "
        "where buy_overflow_usd_per_run prices it; rented, each run within a year); the first of equals. Absent in "
        "documents issued before 2026-12-05.",
    )


class InferenceAlternative(Closed):
    """Inference, with ``compare_gpus``: one GPU at its recommended deployment."""

    gpu: str
    gpus: int | None
    tp: int | None = Field(default=None, description="The tensor-parallel degree of that deployment.")
    rent_usd_per_month: NonNegative | None
    buy_usd_per_month: NonNegative | None
    usd_per_million_output_tokens: NonNegative | None
    meets_latency: bool
    fits_memory: bool
    not_compared: str | None = Field(
        default=None,
        description="Why this GPU could not be planned, when it could not: the scenario cannot run on it, or no "
        "deployment on it fits and meets the latency targets (the first of its reasons).",
    )
    pricing_note: str | None = Field(
        default=None,
        description="How the rent is priced where a figure alone would mislead: renting whole instances that hold more "
        "GPUs than the deployment uses (the instances, and the GPUs billed at the peak); and for another GPU than the "
        "scenario's, when the scenario gives manual quotes: it is priced at its own catalog offers and hardware quote, "
        "not at those quotes (they are for the scenario's GPU). Several are joined with '; '.",
    )
    cheapest: bool = Field(
        default=False,
        description="Whether this is the cheapest compared GPU: the lowest of renting and owning per month; the first "
        "of equals. Absent in documents issued before 2026-12-05.",
    )


# --- training --------------------------------------------------------------------------------------


class Layout(Closed):
    """The parallel layout chosen at this size, in the types ``workload.parallelism`` takes."""

    strategy: Strategy | None
    tp: int | None
    pp: int | None
    cp: int | None
    micro_batch: int | None
    activation_checkpointing: bool | Selective | None
    virtual_pipeline: int | None = Field(
        default=None,
        description="Virtual pipeline stages per GPU of the interleaved schedule the prediction assumes (1 = plain "
        "1F1B); as given in workload.parallelism, else chosen by the search where the stack offers the schedule.",
    )


class MarketCost(Closed):
    offer: Offer
    usd_per_busy_gpu_hour: NonNegative | None
    wall_hours: NonNegative | None
    usd_per_run: NonNegative | None
    lost_fraction: Fraction | None = Field(default=None, description="Spot: work lost to preemption.")


class TrainingRent(Closed):
    market: Market | None
    offer: Offer | None
    usd_per_run: NonNegative | None
    usd_per_run_p10: NonNegative | None = None
    usd_per_run_p50: NonNegative | None = None
    usd_per_run_p90: NonNegative | None = None
    by_market: dict[Market, MarketCost | None]


class TrainingOverflow(Closed):
    """The own option where one owned cluster cannot finish the year's runs: it does the runs it can, the rest are
    rented (economics.own_with_overflow)."""

    owned_runs: NonNegative = Field(
        description="Runs a year the owned cluster finishes: 8760 / run_hours (fractional: runs_per_year is a rate)."
    )
    rented_runs: NonNegative = Field(description="The rest of runs_per_year, rented.")
    rented_usd_per_run: NonNegative = Field(description="What each rented run costs: rent.usd_per_run of this size.")
    usd_per_year: NonNegative = Field(
        description="Owning the cluster busy all year (fixed_usd_per_year + its busy energy) plus the rented runs."
    )
    usd_per_run: NonNegative = Field(
        description="usd_per_year over runs_per_year: the own option's cost per run the recommendation compares."
    )
    usd_per_run_p10: NonNegative | None = Field(
        default=None,
        description="P10 of usd_per_run over the run time's draws, the owned and the rented runs moving together "
        "(buy.usd_per_run_p10 is the owned runs' alone). Absent in documents issued before 2026-12-06 04:06 UTC.",
    )
    usd_per_run_p50: NonNegative | None = Field(default=None, description="P50, as usd_per_run_p10.")
    usd_per_run_p90: NonNegative | None = Field(default=None, description="P90, as usd_per_run_p10.")


class TrainingBuy(Closed):
    capex_usd: NonNegative | None
    usd_per_year: NonNegative | None = Field(
        description="Yearly cost of owning this size at the planned utilization [USD/year]: fixed_usd_per_year plus "
        "the energy of the busy GPU-hours (variable_usd_per_busy_gpu_hour x utilization x gpus x 8760), as in an "
        "inference Advice. In documents issued before 2026-12-06 (without fixed_usd_per_year) it was the fixed part "
        "A alone."
    )
    fixed_usd_per_year: NonNegative | None = Field(
        default=None,
        description="A: the yearly fixed cost of owning this size [USD/year]: annuity of the capex less the discounted "
        "residual, plus colocation, support, staff, software and idle energy; paid however busy the GPUs are. Absent "
        "in documents issued before 2026-12-06.",
    )
    fixed_usd_per_gpu_year: NonNegative | None = Field(
        default=None,
        description="fixed_usd_per_year per GPU owned [USD/GPU-year]: the owned cost per busy GPU-hour at utilization "
        "u is fixed_usd_per_gpu_year / (8760 u) + variable_usd_per_busy_gpu_hour. Absent in documents issued before "
        "2026-12-05.",
    )
    variable_usd_per_busy_gpu_hour: NonNegative | None = None
    usd_per_gpu_hour_at_utilization: NonNegative | None
    usd_per_run: NonNegative | None
    usd_per_run_p10: NonNegative | None = None
    usd_per_run_p50: NonNegative | None = None
    usd_per_run_p90: NonNegative | None = None
    break_even_against: BreakEvenAgainst | None = None
    break_even_utilization: NonNegative | None = Field(
        description="u* = A / (N * 8760 * (r - v)) against break_even_against, in 0..1. Null when owning does not "
        "break even within the year (u* above 1, or the price does not cover the busy energy v; breaks_even false) "
        "or there is no rental price to compare (break_even_against.usd_per_gpu_hour null)."
    )
    break_even_hours_per_year: NonNegative | None
    break_even_utilization_p10: NonNegative | None = None
    break_even_utilization_p50: NonNegative | None = None
    break_even_utilization_p90: NonNegative | None = None
    breaks_even: bool | None = Field(
        default=None,
        description="utilization >= break_even_utilization: owning at the planned utilization costs no more than "
        "renting at break_even_against's price; false where break_even_utilization is null.",
    )
    break_even_by_market: dict[str, NonNegative | None] | None = Field(
        default=None,
        description="u* against each market's price (keys: markets; a manual quote is on_demand, as in "
        "rent.by_market), in 0..1. Null: owning never "
        "breaks even within the year against that market where it is priced at this size (rent.by_market[market] "
        "not null), else that market has no offer at this size. Against a reserved term (billed every hour): 0 "
        "where owning is cheaper at any utilization, null where it costs more fully busy.",
    )
    utilization: Fraction | None = Field(
        default=None, description="The utilization used: given, or implied by runs_per_year x run_hours / 8760."
    )
    finishes_runs: bool | None = Field(
        default=None,
        description="Whether one owned cluster of this size finishes the runs_per_year the scenario states within the "
        "year (runs_per_year x run_hours <= 8760). False: one cluster cannot do the stated runs, so usd_per_run and "
        "usd_per_gpu_hour_at_utilization are not a cost of them (at the utilization used: implied by the runs, capped "
        "at 1; given, at it) and the recommendation and the cheapest per run skip owning this size. Null where "
        "runs_per_year was left out (its default prices nothing: the utilization is given or defaulted), where the "
        "run time is unknown, or in documents issued before 2026-12-06.",
    )
    runs_per_year_fit: NonNegative | None = Field(
        default=None,
        description="The runs a year one owned cluster of this size can finish: 8760 / run_hours (may be "
        "fractional). Null where the run time is unknown or in documents issued before 2026-12-06.",
    )
    overflow: TrainingOverflow | None = Field(
        default=None,
        description="Where finishes_runs is false and renting is priced: owning this size and renting the runs it "
        "cannot finish, the own option the recommendation and the cheapest per run compare (usd_per_run above is "
        "then the cost of the owned runs alone). Null otherwise, and absent in documents issued before 2026-12-06 "
        "(advice_version below 3).",
    )


# What a predicted run time covers (one wording for the Advice's field, its uncertainty method and the PDF).
RUN_TIME_SCOPE = (
    "Run hours are steady-state training at the predicted throughput: job interruptions, restarts from the last "
    "checkpoint, checkpoint saves and evaluation are not included (Meta reported over 90% effective training time "
    "for Llama 3 405B on 16,384 H100s, with 466 interruptions in 54 days: Dubey et al. 2024, arXiv 2407.21783 "
    "§3.3.4); budget for them beside the figures."
)

# What scaling efficiency is relative to (one wording for the Advice's field, the chart caption, the sizes table and
# the PDF's methods: the caption still said "the smallest size" after the computation moved to the best per-GPU
# throughput, a new user's probe F8).
SCALING_EFFICIENCY_MEANING = "throughput per GPU relative to the size with the best throughput per GPU"


class TrainingSize(Closed):
    gpus: int
    gpus_used: int | None = Field(
        default=None,
        description="GPUs the job runs on: fewer than gpus where no layout of its own is faster, so it runs a smaller "
        "size's job and leaves the rest idle (paid for all the same). Absent in documents issued before 2026-12-08.",
    )
    nodes: int
    layout: Layout
    fits_memory: bool
    memory_per_gpu_gb: NonNegative | None
    step_time_s: NonNegative | None
    tokens_per_s: NonNegative | None
    mfu: Fraction | None
    scaling_efficiency: NonNegative | None = Field(
        description=f"Scaling efficiency: {SCALING_EFFICIENCY_MEANING}, among the sizes that fit (1 there, below 1 "
        "elsewhere; before 2026-12-06 relative to the smallest fitting size and capped at 1, which read 1 at every "
        "size when the smallest took a slower layout, e.g. full recomputation forced by memory). Not the step "
        "from the previous size: the knee judges each step by what its added GPUs deliver, "
        "(dtps / tps) / (dgpus / gpus), and the recommendation's reasons give that figure."
    )
    run_hours: NonNegative | None = Field(description=RUN_TIME_SCOPE)
    run_hours_p10: NonNegative | None = None
    run_hours_p50: NonNegative | None = None
    run_hours_p90: NonNegative | None = None
    rent: TrainingRent
    buy: TrainingBuy


class TrainingUncertainty(Closed):
    samples: int
    quantiles: list[Fraction]
    seed: int
    throughput_log_sigma: NonNegative | None
    throughput_p10_multiplier: NonNegative | None = Field(
        default=None,
        description="P10 of measured/predicted tokens/s the throughput draws follow (the prediction's band).",
    )
    throughput_p90_multiplier: NonNegative | None = Field(
        default=None,
        description="P90 of measured/predicted tokens/s the throughput draws follow (the prediction's band).",
    )
    price_alternatives: int
    method: str


class TrainingAdvice(Closed):
    """Output of advise() for ``workload.kind == "training"`` (POST /api/v1/advice, ``manage.py advise``)."""

    model_config = ConfigDict(title="TrainingAdvice")

    advice_version: Literal[1, 2, 3] = Field(
        description="The document's version (advice.documents.ADVICE_VERSION): 3 from 2026-12-06 (training sizes' "
        "buy.overflow), 2 before it (training sizes' buy.finishes_runs and buy.runs_per_year_fit), 1 in documents "
        "issued before those, which lack them."
    )
    kind: Literal["training"]
    generated_at: IsoDateTime
    scenario: NormalizedScenario
    gpu: GpuSummary
    sizes: list[TrainingSize]
    recommendation: Recommendation
    prices_as_of: IsoDate | None = Field(description=PRICES_AS_OF)
    price_freshness: PriceFreshness
    hardware_quote: HardwareQuote | None
    calibration: CalibrationSummary
    warnings: list[str]
    cumulative_cost: CumulativeCost | None
    npv: PresentCost | None = None
    sensitivity: list[Sensitivity]
    uncertainty: TrainingUncertainty
    assumptions: list[Assumption] = Field(default_factory=list)
    alternatives: list[Alternative] | None = Field(default=None, description="With compare_gpus: one row per GPU.")
    model: ModelGeometry | None = None


# --- inference -------------------------------------------------------------------------------------


class InferenceModel(Closed):
    name: str | None = None
    params_b: NonNegative
    implied_params_b: NonNegative | None = None
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn_hidden: int | None = None
    vocab: int | None = None
    experts: int | None = None
    active_experts: int | None = None
    active_params_b: NonNegative | None = None
    assumed: list[str] = Field(default_factory=list)


class TrafficProfile(Closed):
    shape: str
    served_mean_requests_per_s: NonNegative
    output_tokens_per_month: NonNegative


class InferenceRent(Closed):
    """Renting in whole instances (a replica of tp GPUs cannot rent part of an instance): an instance of gpu_count GPUs
    holds floor(gpu_count / tp) replicas, and a replica of more GPUs than one instance (tp beyond a node) rents
    tp / gpu_count whole instances of a node or more each, where gpu_count divides tp. usd_per_month_today =
    (base_instances x base_offer.usd_per_hour + burst_instances_mean x burst_offer.usd_per_hour) x 730; usd_per_month
    levelizes it. In the offers, gpu_count and usd_per_hour are one instance's as rented (a manual quote, per
    GPU-hour, is rented one replica of tp GPUs at a time: gpu_count tp, usd_per_hour the quote x tp), and
    usd_per_used_gpu_hour is what a GPU-hour the replicas use costs there: the instances billed over the replicas'
    GPU-hours they serve."""

    offer: Offer | None = Field(
        description="One offer of the plan, not its price: burst_offer where the plan has one, else "
        "base_offer. Where both exist most of the rent may be the base's, on "
        "another market and provider; the plan's price is usd_per_month, and each part's price is base_offer's and "
        "burst_offer's usd_per_gpu_hour."
    )
    usd_per_month: NonNegative | None = Field(
        description="The rent a month the decision compares [USD/month]: usd_per_month_today with its on-demand and "
        "spot parts levelized over buy.years at buy.discount_rate under rent.price_decline_per_year (the constant "
        "price with the same present value, as training's costs per run; a reserved term's part as quoted); equal "
        "to usd_per_month_today without a decline."
    )
    usd_per_month_today: NonNegative | None = Field(
        default=None,
        description="The bill a month at today's prices: (base_instances x base_offer.usd_per_hour + "
        "burst_instances_mean x burst_offer.usd_per_hour) x 730 [USD/month]; cumulative_cost pays it the first year.",
    )
    usd_per_million_output_tokens: NonNegative | None = Field(
        default=None, description="usd_per_month over the output tokens served a month [USD per million tokens]."
    )
    base_replicas: int | None = Field(
        default=None, description="Replicas the base instances hold (at most the peak's), billed all month."
    )
    base_market: Market | None = None
    base_instances: int | None = Field(default=None, description="Instances of base_offer billed all month.")
    base_offer: Offer | None = None
    burst_replicas_mean: NonNegative | None = Field(
        default=None, description="Replicas needed above the base, on burst instances, time-averaged over the day."
    )
    burst_market: Market | None = None
    burst_instances_mean: NonNegative | None = Field(
        default=None, description="Instances of burst_offer rented while needed, time-averaged over the day."
    )
    burst_offer: Offer | None = None
    by_market: dict[Market, Offer | None] | None = Field(
        default=None,
        description="Per market, its cheapest offer for renting the whole deployment on that market alone, in whole "
        "instances (billed while needed; a reserved term all month for the peak's instances).",
    )


class InferenceBuy(Closed):
    gpus_owned: int | None = None
    nodes: int | None = None
    capex_usd: NonNegative | None = None
    fabric: str | None = Field(
        default=None,
        description="Whether capex_usd includes the scale-out fabric and why (advisor.cash_flow.carries_fabric, the "
        "rule the fleet plan prices by): only where a replica spans servers. Absent in documents issued before "
        "2026-12-06.",
    )
    usd_per_year: NonNegative | None = Field(
        default=None,
        description="Yearly cost of owning the peak deployment [USD/year]: fixed_usd_per_year plus the energy of the "
        "busy GPU-hours the traffic needs (variable_usd_per_busy_gpu_hour x utilization x gpus_owned x 8760).",
    )
    usd_per_month: NonNegative | None = Field(description="usd_per_year / 12 [USD/month].")
    fixed_usd_per_year: NonNegative | None = Field(
        default=None,
        description="A: annuity of the capex less the discounted residual, plus colocation, support, staff, software "
        "and idle energy [USD/year]; paid however busy the GPUs are.",
    )
    fixed_usd_per_gpu_year: NonNegative | None = Field(
        default=None,
        description="fixed_usd_per_year per GPU owned [USD/GPU-year]: the owned cost per busy GPU-hour at "
        "utilization u is fixed_usd_per_gpu_year / (8760 u) + variable_usd_per_busy_gpu_hour. Absent in documents "
        "issued before 2026-12-05.",
    )
    variable_usd_per_busy_gpu_hour: NonNegative | None = Field(
        default=None, description="v: energy of one busy GPU-hour above idle, PUE included [USD/GPU-hour]."
    )
    utilization: Fraction | None = Field(
        default=None, description="Share of the owned GPUs' hours the traffic keeps busy (the replicas it needs x tp)."
    )
    usd_per_gpu_hour_at_utilization: NonNegative | None = None
    usd_per_million_output_tokens: NonNegative | None = None
    break_even_against: BreakEvenAgainst | None = None
    break_even_utilization: NonNegative | None = Field(
        description="u* = A / (N * 8760 * (r - v)) (DESIGN.md) in 0..1, with A = fixed_usd_per_year, N = gpus_owned, "
        "v = variable_usd_per_busy_gpu_hour and r = break_even_against.usd_per_gpu_hour, the rent as priced per busy "
        "GPU-hour; null when u* is above 1 or r does not exceed v, or renting is not priced."
    )
    break_even_hours_per_year: NonNegative | None = None
    break_even_utilization_with_committed_base: NonNegative | None = Field(
        default=None,
        description="Break-even utilization were the rent's base (billed every hour used or not) a committed cost C "
        "a year and only its burst priced per busy GPU-hour r': max(0, (A - C) / (N * 8760 * (r' - v))), and "
        "without a burst 0 where owning fully busy costs no more than the base (owning is cheaper at any "
        "utilization; economics.break_even_with_committed_rent). Not break_even_utilization; null when above 1 or "
        "never. Absent in documents issued before 2026-12-06.",
    )
    breaks_even: bool | None = Field(
        default=None,
        description="Owning costs no more than the rent as priced (buy.usd_per_month <= rent.usd_per_month): "
        "utilization >= break_even_utilization wherever that is a break-even.",
    )
    break_even_by_market: dict[str, NonNegative | None] | None = Field(
        default=None,
        description="u* against each market's price (keys: markets; a manual quote is on_demand); null: never.",
    )


class MemoryBudgetPerGpu(Closed):
    """What one GPU of a serving replica holds [GB, 1e9 bytes], each part from the serving model
    (estimator.inference.sizing.MemoryBudget): the parts add up to memory_per_gpu_gb, what fits_memory was checked
    on."""

    capacity_gb: NonNegative = Field(
        description="The memory it is held against: the driver's figure, the gpu block's memory_capacity_gb (85.9 "
        "for an 80 GB part, 80 GiB)."
    )
    weights_gb: NonNegative = Field(description="Weights this GPU holds (weights_gb_per_gpu).")
    activations_gb: NonNegative = Field(description="Activation buffers of one engine step of max_num_tokens.")
    runtime_gb: NonNegative = Field(
        description="The serving engine's runtime reserve (CUDA context, workspaces, graphs, sampler; the "
        "scenario's serving engine, serving_stacks.csv)."
    )
    kv_cache_gb: NonNegative = Field(
        description="KV cache the engine gives this GPU (its fraction of the memory, serving_stacks.csv "
        "kv_fraction); 0 where the weights leave none."
    )


class InferenceSize(Closed):
    gpus: int | None
    nodes: int | None = None
    tp: int
    replicas: int | None
    replicas_mean: int | None = None
    fits_memory: bool | None = None
    meets_latency: bool
    weights_gb_per_gpu: NonNegative | None = None
    memory_per_gpu_gb: NonNegative | None = Field(
        default=None,
        description="Memory the deployment holds per GPU [GB]: memory_budget_per_gpu's weights, activations, runtime "
        "and KV cache together, at most its capacity_gb (the gpu block's memory_capacity_gb) where fits_memory. "
        "Null in documents issued before 2026-12-06.",
    )
    memory_budget_per_gpu: MemoryBudgetPerGpu | None = Field(
        default=None, description="What memory_per_gpu_gb is made of. Absent in documents issued before 2026-12-06."
    )
    batch: int | None = Field(
        default=None,
        description="Mean requests in flight per replica at its sized capacity (replica_requests_per_s, the highest "
        "rate that meets the latency targets; Little's law, Poisson arrivals: an open loop, not estimate_inference's "
        "closed-loop concurrency of clients started together). batch_at_peak: at the peak traffic.",
    )
    max_batch: int | None = Field(default=None, description="Requests one replica can hold at once (KV cache, cap).")
    ttft_s: NonNegative | None = Field(
        default=None,
        description="p95 TTFT [s] at the replica's sized capacity, requests arriving at random (Poisson) at that rate.",
    )
    tpot_s: NonNegative | None = Field(
        default=None,
        description="p95 TPOT [s] at the replica's sized capacity, requests arriving at random (Poisson) at that rate.",
    )
    batch_at_peak: NonNegative | None = Field(
        default=None,
        description="Mean requests in flight per replica when the peak traffic is spread over the replicas "
        "(peak_requests_per_s / replicas each; Little's law); null where the deployment does not serve the targets.",
    )
    ttft_s_at_peak: NonNegative | None = Field(default=None, description="p95 TTFT [s] at that share of the peak.")
    tpot_s_at_peak: NonNegative | None = Field(default=None, description="p95 TPOT [s] at that share of the peak.")
    replica_output_tokens_per_s: NonNegative | None = None
    replica_requests_per_s: NonNegative | None = None
    requests_per_s_per_gpu: NonNegative | None = Field(
        default=None,
        description="The sized capacity per GPU at the request shape: replica_requests_per_s / tp (issue 20: req/s "
        "per GPU at the shape the advice states).",
    )
    output_tokens_per_s: NonNegative | None
    rent: InferenceRent
    buy: InferenceBuy
    usd_per_million_output_tokens: NonNegative | None
    capacity_band: CapacityBand | None = Field(
        default=None,
        description="The P10-P90 band of a replica's capacity and the GPUs and cost per million output tokens at its "
        "ends; null where the size does not meet the targets or the calibration keeps no held-out errors. Absent in "
        "documents issued before 2026-12-05.",
    )
    latency_band: LatencyBand | None = Field(
        default=None,
        description="The GPUs and cost per million output tokens within the serving model's latency error, on the "
        "recommended size only (the same as recommendation.latency_band); null on every other size, in a compared "
        "GPU's advice and where the calibration carries no latency check. Absent in documents issued before "
        "2026-12-06.",
    )


class LatencyCheck(Closed):
    """The serving model against published latency it was never fitted on (estimator.inference.checks)."""

    points: int
    ttft_within: Fraction
    ttft_share_within: Fraction = Field(description="Share of points whose mean TTFT is within ttft_within.")
    ttft_median_ape: NonNegative
    tpot_within: Fraction
    tpot_share_within: Fraction = Field(description="Share of points whose TPOT is within tpot_within.")
    tpot_median_ape: NonNegative
    ttft_ratio_p10: NonNegative | None = Field(
        default=None, description="P10 of measured / modelled mean TTFT over the points (absent in older checks)."
    )
    ttft_ratio_p90: NonNegative | None = Field(default=None, description="P90 of measured / modelled mean TTFT.")
    tpot_ratio_p10: NonNegative | None = Field(default=None, description="P10 of measured / modelled TPOT.")
    tpot_ratio_p90: NonNegative | None = Field(default=None, description="P90 of measured / modelled TPOT.")
    gpus: list[str] | None = Field(default=None, description="GPU ids the measurements ran on.")
    precisions: list[str] | None = Field(default=None, description="Weight precisions the measurements ran at.")
    engines: list[str] | None = Field(default=None, description="Serving engines the measurements ran on.")
    source: str


class InferenceUncertainty(Closed):
    method: str
    loo_mape: NonNegative | None = None
    latency_check: LatencyCheck | None = None


class InferenceAdvice(Closed):
    """Output of advise() for ``workload.kind == "inference"``: sizes are deployments (tp x replicas)."""

    model_config = ConfigDict(title="InferenceAdvice")

    advice_version: Literal[1, 2, 3] = Field(
        description="The document's version (advice.documents.ADVICE_VERSION): 3 from 2026-12-06 (training sizes' "
        "buy.overflow), 2 before it (training sizes' buy.finishes_runs and buy.runs_per_year_fit), 1 in documents "
        "issued before those, which lack them."
    )
    kind: Literal["inference"]
    generated_at: IsoDateTime
    scenario: NormalizedScenario
    gpu: GpuSummary
    model: InferenceModel
    traffic_profile: TrafficProfile
    sizes: list[InferenceSize]
    recommendation: Recommendation
    prices_as_of: IsoDate | None = Field(description=PRICES_AS_OF)
    price_freshness: PriceFreshness
    hardware_quote: HardwareQuote | None
    calibration: CalibrationSummary
    warnings: list[str]
    cumulative_cost: CumulativeCost | None
    npv: PresentCost | None = None
    sensitivity: list[Sensitivity]
    uncertainty: InferenceUncertainty
    assumptions: list[Assumption] = Field(default_factory=list)
    alternatives: list[InferenceAlternative] | None = Field(
        default=None, description="With compare_gpus: one row per GPU."
    )


ADVICE_MODELS: dict[str, type[Closed]] = {"training": TrainingAdvice, "inference": InferenceAdvice}


_DESCRIPTIONS = {
    "training": "Output of advisor.advice.advise(...).to_dict(), `manage.py advise` and POST /api/v1/advice for a "
    "training Scenario (DESIGN.md).",
    "inference": "Output of advisor.advice.advise(...).to_dict(), `manage.py advise` and POST /api/v1/advice for "
    "an inference Scenario (DESIGN.md).",
}
_UNITS = (
    "Generated from advisor/advice/models.py (manage.py generate_schemas); do not edit. Money in USD, times in the "
    "unit named, fractions 0..1 unless said otherwise; a number that cannot be computed is null, never NaN, and a "
    "warning says why. Every object is closed."
)
ADVICE_SCHEMA_FILES = {"training": "advice.schema.json", "inference": "advice-inference.schema.json"}


def _with_scenario_ref(node: Any, scenario_ref: str) -> Any:
    if isinstance(node, list):
        return [_with_scenario_ref(item, scenario_ref) for item in node]
    if not isinstance(node, dict):
        return node
    if node.get(_SCENARIO_MARKER):
        return {"$ref": scenario_ref}
    return {key: _with_scenario_ref(value, scenario_ref) for key, value in node.items()}


def advice_json_schema(
    kind: str, *, ref_template: str = "#/$defs/{model}", scenario_ref: str = "scenario.schema.json"
) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of one Advice kind, generated from its model; `ref_template` and
    `scenario_ref` place it elsewhere (the OpenAPI document keeps every model under #/components/schemas)."""
    schema = _with_scenario_ref(
        ADVICE_MODELS[kind].model_json_schema(
            mode="validation", ref_template=ref_template, schema_generator=NoFieldTitles
        ),
        scenario_ref,
    )
    return {
        "$schema": DRAFT_2020_12,
        "$id": SCHEMA_BASE_URI + ADVICE_SCHEMA_FILES[kind],
        **schema,
        "description": f"{_DESCRIPTIONS[kind]} {_UNITS}",
    }


def generated_schema_files() -> dict[str, str]:
    """file name in advisor/schemas/ -> its text, exactly as committed."""
    return {ADVICE_SCHEMA_FILES[kind]: schema_text(advice_json_schema(kind)) for kind in ADVICE_MODELS}
