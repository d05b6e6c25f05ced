"""The fleet plan: candidate owned sizes, tier costs, the load-duration and the simulated answers.

Tiers (money in USD per year, as in the Advice):

- ``owned``: whole nodes; the yearly fixed cost of ownership (the advice's ``buy.fixed_usd_per_year``)
  whether busy or not, plus the energy of each busy GPU-hour.
- ``reserved_1y`` / ``reserved_3y``: commitments paid every hour of the year whether used or not.
  Only the cheaper of the two per GPU-hour is ever worth committing (both are paid all year). Each line
  commits at its own instances' term where cheaper than the node's (``TierPrices.commitment``), else at
  the node's; the level of each term is chosen, in whole instances, on what its lines leave to rent after
  the owned GPUs, hour by hour, against the price those hours are billed at by the hour (the
  cost-minimising level, none among them: a term never costs more than renting by the hour).
- ``on_demand``: billed per used GPU-hour.
- ``spot``: interruptible runs only, when cheaper than on demand after the Young/Daly loss the
  advice models (``advisor.economics.spot_lost_fraction``: a run of n nodes takes ``1/(1-lost)``
  longer).

Two answers: the load-duration answer owns the whole-node count that costs least for the demand taken as divisible
(LOAD_DURATION_METHOD): a bound that treats demand as divisible and ignores
waiting. The simulated answer places whole runs (``advisor.advice.fleet.placement``) for every candidate size and takes
the cheapest.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np
from numpy.typing import NDArray

from advisor import economics as ec
from advisor.advice.fleet.demand import (
    HOURS,
    Job,
    Runs,
    Usage,
    gpu_hours_above,
    load_duration,
    occupancy,
    requested_demand,
    schedule_runs,
    wait_hours,
)
from advisor.advice.fleet.placement import Placement, place, rented_series
from advisor.formatting import count, percent

LOAD_DURATION_METHOD: Final[str] = (
    "own the whole-node count that costs least, demand filling the nodes from the bottom: each node at what it adds "
    "to the fixed cost (a lone node, the step to a cluster, then one node) plus energy for its busy hours, the rest "
    "rented on demand by the GPU-hour, or reserved all year up to the peak where the only price is a term (u* = A / "
    "(N x 8760 x (r - v)) of a node is where owning it breaks even); with nothing to rent by the hour, the peak of "
    "the runs that cannot rent (divisible demand, no waiting)"
)
TIERS: Final[tuple[str, ...]] = ("owned", "reserved_1y", "reserved_3y", "on_demand", "spot")
RESERVED: Final[tuple[str, ...]] = ("reserved_1y", "reserved_3y")
# More candidate owned sizes than this are searched coarse to fine: first an even stride of whole
# nodes (zero, the peak and the load-duration answer always in), then within one stride of the cheapest
# at a step of at most 1/FINE_STEPS of that stride, again around the cheapest so far, down to every
# whole node. Each level simulates at most 2 x FINE_STEPS - 1 sizes and the levels grow with the log of
# the peak, so the sizes simulated stay a few hundred for any peak (``searched_sizes``); a coarse stride
# of at most FINE_STEPS nodes is refined node by node at once. The simulation holds one year of hours per
# candidate, so this bounds the work.
MAX_CANDIDATES: Final[int] = 96
FINE_STEPS: Final[int] = MAX_CANDIDATES // 2
# Points of the load-duration curve in the document (the curve is exact; this only thins the output).
CURVE_POINTS: Final[int] = 200
# Runs listed per job in jobs[].runs (the counts owned_runs / rented_runs always cover every run).
RUNS_LISTED: Final[int] = 400
# Jobs named in the warning that jobs without months start together (the rest counted).
MAX_NAMED_JOBS: Final[int] = 5
# Mean idle owned GPUs below which the reasons say other jobs keep them busy (half a GPU: "0 idle" reads as none).
IDLE_WORDS_FLOOR_GPUS: Final[float] = 0.5


def rent_units(*, gpus: Any, unit_gpus: Any, gpus_per_node: int) -> NDArray[np.int64]:
    """GPUs one rented instance must hold for each line or run: its ``unit_gpus`` (a service's replica), else its
    GPUs up to a node (a run wider than a node rents whole nodes)."""
    unit = np.asarray(unit_gpus, dtype=np.int64)
    return np.where(unit > 0, unit, np.minimum(np.asarray(gpus, dtype=np.int64), gpus_per_node))


@dataclass(frozen=True)
class TierPrices:
    """What each tier costs, from the advice pipeline (``advisor.advice.fleet.pricing``) or given directly."""

    gpus_per_node: int
    owned_one_node_usd_per_year: float  # fixed yearly cost of one node
    owned_per_node_usd_per_year: float  # each node of a multi-node cluster (fabric included)
    owned_base_usd_per_year: float  # what a multi-node cluster pays besides its nodes (staff)
    owned_variable_usd_per_gpu_hour: float = 0.0  # energy of a busy GPU-hour over idle
    on_demand_usd_per_gpu_hour: float | None = None
    spot_usd_per_gpu_hour: float | None = None
    reserved_usd_per_gpu_hour: Mapping[str, float] = field(default_factory=dict)  # paid every hour
    spot_interruptions_per_node_hour: float = 0.0
    spot_checkpoint_s: float = 0.0
    spot_restart_s: float = 0.0
    # GPUs bought at once, the owned "node" of the fields above (0: a node): a whole NVL72 rack of GB200 trays
    # (ownership.purchase_unit_gpus). Renting stays by gpus_per_node.
    owned_unit_gpus: int = 0
    # Whether a multi-node owned cluster carries the scale-out fabric (cash_flow.carries_fabric: the work crosses
    # nodes), as the owned_* costs were priced.
    owned_fabric: bool = True
    # Per rent unit (GPUs one instance must hold together: ``rent_units``), per market: the cheapest offer able to
    # hold them, per used GPU-hour, levelized as the node's price is (floating markets; terms as quoted). A unit
    # without an entry, or whose offer costs more per GPU-hour than the node's, rents at the node's price (runs
    # smaller than a node share rented nodes, the pooled convention); the probe "pages" F7: a one-GPU replica's
    # hours were priced at the 8-GPU node's $2.95 where its advice rents a one-GPU instance at $1.85.
    line_usd_per_gpu_hour: Mapping[int, Mapping[str, float]] = field(default_factory=dict)

    def line_price(self, market: str, unit: int) -> float | None:
        """What a GPU-hour of a line of ``unit`` costs on a floating ``market``: its own offer where cheaper than the
        node's, else the node's; None where the market has no node price (the market is not priced)."""
        node = self.on_demand_usd_per_gpu_hour if market == "on_demand" else self.spot_usd_per_gpu_hour
        if node is None:
            return None
        own = self.line_usd_per_gpu_hour.get(unit, {}).get(market)
        return node if own is None else min(node, own)

    def commitment(self, unit: int) -> tuple[str, float, int] | None:
        """What a line of ``unit`` commits to (tier, price per GPU-hour, GPUs one commitment holds): the cheapest
        term of its own reserved offers where cheaper than the node's (its instances, ``unit`` GPUs each), else the
        node's cheapest term (whole nodes, shared as rented nodes are); None where no term is priced. The probe
        "finance" F1: a 4-GPU line was committed at the 8-GPU node's term although a 4-GPU instance's is cheaper."""
        own = self.line_usd_per_gpu_hour.get(unit, {})
        terms = [(t, float(own[t])) for t in RESERVED if t in own]
        node = self.cheapest_reserved()
        best = min(terms, key=lambda term: term[1], default=None)
        if best is not None and unit != self.gpus_per_node and (node is None or best[1] < node[1]):
            return best[0], best[1], unit
        return None if node is None else (node[0], node[1], self.gpus_per_node)

    def run_prices(self, market: str, runs: Runs) -> NDArray[np.float64] | None:
        """``line_price`` of each run (None: the market has no price)."""
        if self.line_price(market, self.gpus_per_node) is None:
            return None
        units, which = np.unique(
            rent_units(gpus=runs.gpus, unit_gpus=runs.unit_gpus, gpus_per_node=self.gpus_per_node), return_inverse=True
        )
        per_unit = np.array([self.line_price(market, u) for u in units.tolist()], dtype=float)
        return np.asarray(per_unit[which] if units.size else np.zeros(0), dtype=float)

    @property
    def owned_unit(self) -> int:
        """GPUs of one owned unit: what owned sizes step by and the owned_* costs are per."""
        return self.owned_unit_gpus or self.gpus_per_node

    def owned_fixed_usd_per_year(self, gpus: Any) -> NDArray[np.float64]:
        nodes = np.ceil(np.asarray(gpus, dtype=float) / self.owned_unit - 1e-9)
        with np.errstate(invalid="ignore"):  # no hardware quote: infinite costs, and inf x 0 nodes is taken as 0 below
            multi = self.owned_base_usd_per_year + self.owned_per_node_usd_per_year * nodes
        return np.where(nodes <= 0, 0.0, np.where(nodes == 1, self.owned_one_node_usd_per_year, multi))

    def floating(self) -> tuple[str, float] | None:
        """The tier whole runs rent from when nothing is committed: on demand, else the cheapest commitment."""
        if self.on_demand_usd_per_gpu_hour is not None:
            return "on_demand", self.on_demand_usd_per_gpu_hour
        return self.cheapest_reserved()

    def cheapest_reserved(self) -> tuple[str, float] | None:
        if not self.reserved_usd_per_gpu_hour:
            return None
        tier = min(self.reserved_usd_per_gpu_hour, key=lambda k: self.reserved_usd_per_gpu_hour[k])
        return tier, float(self.reserved_usd_per_gpu_hour[tier])

    def node_usd_per_year(self, nth: int) -> float:
        """What owning the ``nth`` node (1, 2, ...) adds to the yearly fixed cost: a lone node's cost, then the step
        to a multi-node cluster (its fabric and base besides the second node: base + 2 per node - one node), then
        one node's (a regression probe: the second node was weighed at the per-node cost alone)."""
        before, after = self.owned_fixed_usd_per_year(np.array([nth - 1, nth]) * self.owned_unit)
        return float(after - before) if math.isfinite(after) else math.inf

    def break_even_utilization(self, *, nth_node: int = 3) -> float:
        """u* of the GPUs of the ``nth_node`` owned node (default: a node added to a multi-node cluster, fabric
        included) against the floating price; the plan reports its recommended fleet's last node (``marginal_node``)."""
        floating = self.floating()
        if floating is None:
            return math.inf
        per_gpu = self.node_usd_per_year(nth_node) / self.owned_unit
        return float(
            ec.break_even_for_market(
                yearly_fixed_usd=per_gpu,
                gpus=1,
                price_usd_per_gpu_hour=floating[1],
                variable_usd_per_gpu_hour=self.owned_variable_usd_per_gpu_hour,
                committed=floating[0] in RESERVED,  # no on-demand price: a term billed every hour
            )
        )


@dataclass(frozen=True)
class Options:
    """One column per candidate owned size."""

    owned_gpus: NDArray[np.int64]
    usd_per_year: NDArray[np.float64]
    tier_usd: dict[str, NDArray[np.float64]]
    tier_gpus: dict[str, NDArray[np.float64]]
    tier_gpu_hours: dict[str, NDArray[np.float64]]
    owned_utilization: NDArray[np.float64]
    rented_gpu_hours: NDArray[np.float64]
    spot_runs: NDArray[np.bool_]  # (S, R)

    def merged(self, other: Options) -> Options:
        """These options and another's over different sizes, as one (sizes ascending, as ``Placement.merged``)."""
        order = np.argsort(np.concatenate([self.owned_gpus, other.owned_gpus]), kind="stable")

        def join(a: NDArray[Any], b: NDArray[Any]) -> NDArray[Any]:
            return np.concatenate([a, b])[order]

        return Options(
            owned_gpus=join(self.owned_gpus, other.owned_gpus),
            usd_per_year=join(self.usd_per_year, other.usd_per_year),
            tier_usd={t: join(v, other.tier_usd[t]) for t, v in self.tier_usd.items()},
            tier_gpus={t: join(v, other.tier_gpus[t]) for t, v in self.tier_gpus.items()},
            tier_gpu_hours={t: join(v, other.tier_gpu_hours[t]) for t, v in self.tier_gpu_hours.items()},
            owned_utilization=join(self.owned_utilization, other.owned_utilization),
            rented_gpu_hours=join(self.rented_gpu_hours, other.rented_gpu_hours),
            spot_runs=join(self.spot_runs, other.spot_runs),
        )

    def only(self, owned_gpus: Sequence[int]) -> Options:
        """These options restricted to the given owned sizes (all of which must be among them)."""
        pick = np.searchsorted(self.owned_gpus, np.asarray(owned_gpus))
        if not np.array_equal(self.owned_gpus[pick], np.asarray(owned_gpus)):
            raise KeyError("owned sizes not simulated")
        return Options(
            owned_gpus=self.owned_gpus[pick],
            usd_per_year=self.usd_per_year[pick],
            tier_usd={t: v[pick] for t, v in self.tier_usd.items()},
            tier_gpus={t: v[pick] for t, v in self.tier_gpus.items()},
            tier_gpu_hours={t: v[pick] for t, v in self.tier_gpu_hours.items()},
            owned_utilization=self.owned_utilization[pick],
            rented_gpu_hours=self.rented_gpu_hours[pick],
            spot_runs=self.spot_runs[pick],
        )


@dataclass(frozen=True)
class FleetPlan:
    """The plan; ``to_dict()`` is the Fleet Plan output of DESIGN.md (without the pipeline's metadata)."""

    jobs: tuple[Job, ...]
    runs: Runs
    usage: Usage | None
    prices: TierPrices
    demand: NDArray[np.float64]  # mean GPUs wanted in each hour (partial hours by their share)
    placement: Placement
    options: Options
    recommended: int  # index into options
    load_duration_gpus: int
    break_even_utilization: float
    reasons: tuple[str, ...]
    warnings: tuple[str, ...]
    peak_gpus: float = 0.0  # the most GPUs wanted at once (whole hours: what capacity must hold)

    def option(self, owned_gpus: int) -> int:
        hits = np.flatnonzero(self.options.owned_gpus == owned_gpus)
        if not hits.size:
            raise KeyError(owned_gpus)
        return int(hits[0])

    @property
    def peak_option(self) -> int:
        """The option that owns the peak demand in whole nodes (always a candidate), not the largest candidate: a
        given owned_gpus above the peak was reported as "owning the peak" (an outsider's probe)."""
        return self.option(whole_nodes(self.peak_gpus, self.prices.owned_unit))

    def to_dict(self) -> dict[str, Any]:
        return _document(self)


# --- the plan ----------------------------------------------------------------------------------


def whole_nodes(gpus: float, gpn: int) -> int:
    """``gpus`` rounded up to whole nodes of ``gpn`` GPUs."""
    return math.ceil(gpus / gpn - 1e-9) * gpn


def marginal_node(owned_gpus: int, gpn: int) -> int:
    """Which node (1, 2, ...) is the last of ``owned_gpus``: the one whose u* the plan reports (the first when none)."""
    return max(1, whole_nodes(owned_gpus, gpn) // gpn)


def _coarse_stride(nodes: int) -> int:
    """Nodes between coarse candidates when the search is not given sizes: 1 up to MAX_CANDIDATES sizes."""
    return max(1, math.ceil((nodes + 1) / MAX_CANDIDATES))


def _refine_steps(stride: int) -> list[int]:
    """The step (nodes) of each refinement level after a coarse search at ``stride``: each searches within one
    step of the level before on either side of the cheapest, FINE_STEPS times finer, down to every node."""
    steps = []
    while stride > 1:
        stride = math.ceil(stride / FINE_STEPS)
        steps.append(stride)
    return steps


def searched_sizes(*, peak_gpus: float, gpn: int, given: Sequence[int] | None = None) -> int:
    """At most how many owned sizes ``plan_fleet`` simulates for a peak of ``peak_gpus`` (the coarse grid, zero,
    the peak, the load-duration answer, and every refinement level; or the given sizes with those three): the
    plan's work is this many simulated years (a hostile probe: the node-by-node window around the cheapest grew
    with the peak, 7,768 sizes for a 5.9M-GPU peak)."""
    if given:
        return len(set(given)) + 3
    peak = whole_nodes(peak_gpus, gpn)
    stride = _coarse_stride(peak // gpn)
    sizes = len(range(0, peak + 1, stride * gpn)) + 2
    for step in _refine_steps(stride):
        sizes += 2 * ((stride - 1) // step) + 1
        stride = step
    return sizes


# Weights of ``PlanWork.steps``, measured (CPU time of fleet_plan per size simulated): an hour a run holds is one
# step; an hour it may wait is 8 (a run that finds the owned GPUs busy scans its whole wait for the sizes it waits
# at and places each distinct delay on its own); a run is 100 besides its hours (one pass of the placement loop per
# search level, a few numpy calls each). One step is then at most about 20 ns.
WAIT_STEPS: Final[int] = 8
RUN_STEPS: Final[int] = 100


@dataclass(frozen=True)
class PlanWork:
    """What simulating a plan costs, counted before any of it: each candidate owned size places every run over the
    hours it holds and may wait, holds the year, and prices a commitment at each whole node up to the peak."""

    sizes: int  # owned sizes simulated at most (``searched_sizes``)
    runs: int
    run_hours: int  # whole hours the runs hold
    wait_hours: int  # hours they may wait for owned GPUs (never past the year)
    peak_nodes: int  # whole nodes at the peak

    @property
    def steps(self) -> int:
        per_size = self.run_hours + WAIT_STEPS * self.wait_hours + RUN_STEPS * self.runs + HOURS + self.peak_nodes
        return self.sizes * per_size


def plan_work(*, runs: Runs, peak_gpus: float, gpn: int, given: Sequence[int] | None = None) -> PlanWork:
    """The work of ``plan_fleet`` for these runs and peak (GPUs at once), counted before any of it."""
    return PlanWork(
        sizes=searched_sizes(peak_gpus=peak_gpus, gpn=gpn, given=given),
        runs=len(runs),
        run_hours=int(runs.slots.sum()),
        wait_hours=int(wait_hours(runs).sum()),
        peak_nodes=whole_nodes(peak_gpus, gpn) // gpn,
    )


def _candidates(
    *, peak_gpus: float, gpn: int, given: Sequence[int] | None, keep: Sequence[int]
) -> tuple[NDArray[np.int64], int]:
    """(candidate owned sizes, stride in nodes of the coarse search: 1 when every whole node is in)."""
    peak = whole_nodes(peak_gpus, gpn)
    stride = 1
    if given:
        sizes = set(given)
    else:
        stride = _coarse_stride(peak // gpn)
        sizes = set(range(0, peak + 1, stride * gpn))
    return np.array(sorted(sizes | {0, peak, *keep}), dtype=np.int64), stride


def _search(
    *, runs: Runs, usage: NDArray[np.float64] | None, prices: TierPrices, sizes: NDArray[np.int64], stride: int
) -> tuple[Placement, Options]:
    """Simulate the candidates; with a coarse stride, then around the cheapest so far at each finer step
    (``_refine_steps``) down to every whole node."""
    placement = place(runs=runs, owned_gpus=sizes, usage=usage)
    options = _price_options(runs=runs, placement=placement, prices=prices)
    gpn, top = prices.owned_unit, int(sizes[-1])
    for step in _refine_steps(stride):
        best = int(options.owned_gpus[int(np.argmin(options.usd_per_year))])
        reach = (stride - 1) // step
        near = best + gpn * step * np.arange(-reach, reach + 1, dtype=np.int64)
        near = near[(near > 0) & (near < top) & ~np.isin(near, options.owned_gpus)]
        stride = step
        if near.size:  # each size is priced on its own placement: only the new ones need pricing
            fine = place(runs=runs, owned_gpus=near, usage=usage)
            placement = placement.merged(fine)
            options = options.merged(_price_options(runs=runs, placement=fine, prices=prices))
    return placement, options


def node_busy_shares(demand: NDArray[np.float64], gpn: int) -> NDArray[np.float64]:
    """Busy share of the year of each owned node when demand fills them from the bottom: node k holds GPUs
    (k - 1) x gpn to k x gpn, busy sum_h clip(d_h - (k - 1) gpn, 0, gpn) / (gpn x 8760)."""
    top = math.ceil(float(demand.max(initial=0.0)) / gpn - 1e-9)
    lower = np.arange(top, dtype=float) * gpn
    return (gpu_hours_above(demand, lower) - gpu_hours_above(demand, lower + gpn)) / (gpn * HOURS)


def _load_duration_level(
    demand: NDArray[np.float64],
    *,
    gpn: int,
    prices: TierPrices,
    firm_peak: float,
    spot: tuple[NDArray[np.float64], float] | None = None,
) -> int:
    """The whole-node count that costs least for divisible demand with no waiting: owned GPUs' fixed cost (a lone
    node, the step to a cluster, then one node: TierPrices.owned_fixed_usd_per_year) and energy for the hours they
    are busy, plus the rest rented: by the GPU-hour on demand, or reserved for the whole year up to the peak where
    the only price is a term. Outsiders' probes: counting only hours a node is full owned nothing for a node busy 88%
    of the year against u* = 36%; stopping at the first node not worth owning alone owned nothing where a lone node
    carries a fixed base (staff) that three nodes share ($176,873 a year against $126,513 owning 20 GPUs), on demand
    and against a reserved term alike. With nothing to rent by the hour but spot, the peak of the runs that cannot
    use spot (``firm_peak``) must be owned. ``spot``: (the demand of runs that rent on spot, hour by hour; what a spot
    GPU-hour of that demand costs, after the interruption loss): owned GPUs carry the other demand first, and what is
    left of the spot demand rents at spot (a capacity planner's probe: priced at on demand, every interruptible mix
    owned 16 GPUs where spot at $1.25 is cheaper than an owned GPU at about $2.32 per busy GPU-hour)."""
    floating = prices.floating()
    if floating is None:
        return whole_nodes(firm_peak, gpn)
    market, price = floating
    peak = float(demand.max(initial=0.0))
    # Every whole node from none to the peak's, as one array (a hostile probe's 196,608 one-GPU nodes took 8 s in a
    # loop over nodes).
    owned = np.arange(0, whole_nodes(peak, gpn) + 1, gpn, dtype=float)
    rented_hours = gpu_hours_above(demand, owned)
    owned_hours = float(demand.sum()) - rented_hours
    # A term is billed every hour: it must hold the peak above what is owned.
    spot_rent = np.zeros_like(owned)
    if spot is not None and float(spot[0].max(initial=0.0)) > 0:
        firm = demand - spot[0]
        firm_rented = gpu_hours_above(firm, owned)
        spot_rent = spot[1] * (rented_hours - firm_rented)  # spot demand above what the firm demand leaves owned
        rented_hours, peak = firm_rented, float(firm.max(initial=0.0))
    rent = price * HOURS * np.maximum(peak - owned, 0.0) if market in RESERVED else price * rented_hours
    rent = rent + spot_rent
    cost = prices.owned_fixed_usd_per_year(owned) + prices.owned_variable_usd_per_gpu_hour * owned_hours + rent
    return int(owned[int(np.argmin(cost))])  # the fewest nodes among equal costs


def _commit_level(
    pool: NDArray[np.float64], used: NDArray[np.float64], *, step: int, reserved: float, floating: float | None
) -> float:
    """Commitment in whole instances of ``step`` GPUs minimising commitment + the cost of ``pool`` (GPUs rented per
    hour) left uncommitted at ``floating``, the price those hours are billed at (no commitment is always among the
    levels, so a term never costs more than renting by the hour)."""
    top = float(pool.max(initial=0.0))
    if top <= 0:
        return 0.0
    if floating is None:  # nothing to rent by the hour: commit to the peak
        return math.ceil(top / step - 1e-9) * step
    levels = np.arange(0, math.ceil(top / step - 1e-9) + 1) * step
    cost = levels * HOURS * reserved + floating * gpu_hours_above(pool, levels.astype(float), weights=used)
    return float(levels[int(np.argmin(cost))])


def spot_choice(*, runs: Runs, prices: TierPrices) -> tuple[NDArray[np.bool_], NDArray[np.float64]]:
    """(runs that rent on spot when rented: interruptible and cheaper there after the Young/Daly loss, each run's
    wall-clock hours on spot)."""
    lost = ec.spot_lost_fraction(
        nodes=np.ceil(runs.gpus / prices.gpus_per_node),
        interruptions_per_node_hour=prices.spot_interruptions_per_node_hour,
        checkpoint_s=prices.spot_checkpoint_s,
        restart_s=prices.spot_restart_s,
    )
    spot_hours = np.asarray(ec.spot_wall_hours(run_hours=runs.hours, lost_fraction=lost), dtype=float)
    spot_price = prices.run_prices("spot", runs)
    floating = prices.floating()
    on_demand = prices.run_prices("on_demand", runs)
    pool_price = on_demand if on_demand is not None else (floating[1] if floating else math.inf)
    to_spot = (
        runs.interruptible & np.isfinite(spot_hours) & (spot_price * spot_hours < pool_price * runs.hours)
        if spot_price is not None
        else np.zeros(len(runs), dtype=bool)
    )
    return to_spot, spot_hours


@dataclass(frozen=True)
class _Pool:
    """Runs rented by the hour together (S sizes): the GPUs held each hour, the share of them used, their exact
    GPU-hours and what those cost at each run's line price (measured usage at the node's)."""

    held: NDArray[np.float64]  # (S, 8760)
    share: NDArray[np.float64]  # (S, 8760)
    gpu_hours: NDArray[np.float64]  # (S,)
    usd: NDArray[np.float64]  # (S,) at on demand (0 where it has no price)

    def billed(self, node: float) -> NDArray[np.float64]:
        """What a GPU-hour of the pool is billed at by the hour: its mean line price (the node's where empty)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.gpu_hours > 0, self.usd / self.gpu_hours, node)


def _pool(
    *,
    runs: Runs,
    rented: NDArray[np.bool_],
    run_on_demand: NDArray[np.float64] | None,
    usage: NDArray[np.float64] | None,
    node_on_demand: float,
) -> _Pool:
    """The pool of the ``rented`` runs (S, R), with rented measured ``usage`` (S, 8760) at the node's price."""
    # A commitment holds GPUs at once (the whole-hour pool); what it covers is the share of each hour they are used
    # (a second outsider's probe: sized on hourly means, 8 committed GPUs "covered" a 16-GPU half-hour job).
    held = rented_series(runs=runs, rented=rented)
    used = rented_series(runs=runs, rented=rented, used=True)
    gpu_hours = rented.astype(float) @ (runs.hours * runs.gpus)
    usd = rented.astype(float) @ (runs.hours * runs.gpus * (0.0 if run_on_demand is None else run_on_demand))
    if usage is not None:
        held += usage
        used += usage
        gpu_hours += usage.sum(axis=1)
        usd += usage.sum(axis=1) * node_on_demand
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(held > 0, used / held, 0.0)
    return _Pool(held=held, share=share, gpu_hours=gpu_hours, usd=usd)


def _commit_levels(
    pool: _Pool, *, step: int, term: tuple[str, float, int] | None, on_demand: float | None
) -> NDArray[np.float64]:
    """GPUs committed at each size (``_commit_level``), weighed against what the pool's hours left are billed at:
    its mean line price (the probe "finance" F1: weighed against the 8-GPU node's $2.036 while they were billed at
    the 4-GPU line's $1.418, 8 GPUs reserved made renting everything $95,562 against $83,719 on demand alone)."""
    if term is None:
        return np.zeros(pool.gpu_hours.size)
    billed = pool.billed(on_demand or 0.0)
    return np.array(
        [
            _commit_level(p, u, step=step, reserved=term[1], floating=None if on_demand is None else float(b))
            for p, u, b in zip(pool.held, pool.share, billed, strict=True)
        ]
    )


def _price_options(*, runs: Runs, placement: Placement, prices: TierPrices) -> Options:
    gpn = prices.gpus_per_node
    sizes = placement.owned_gpus
    n_sizes = sizes.size
    on_demand = prices.on_demand_usd_per_gpu_hour
    # Each run's GPU-hours at its line's price (TierPrices.line_price); measured usage at the node's.
    run_on_demand = prices.run_prices("on_demand", runs)
    run_spot = prices.run_prices("spot", runs)
    to_spot, spot_hours = spot_choice(runs=runs, prices=prices)
    rented = ~placement.on_owned
    spot_runs = rented & to_spot[None, :]
    pool_runs = rented & ~to_spot[None, :]
    spot_slots = np.ceil(np.where(np.isfinite(spot_hours), spot_hours, 0.0) - 1e-9).astype(np.int64).clip(1, HOURS)
    spot_series = rented_series(runs=runs, rented=spot_runs, slots=spot_slots)
    spot_gpu_hours = spot_runs.astype(float) @ np.where(to_spot, spot_hours * runs.gpus, 0.0)
    spot_usd = spot_runs.astype(float) @ np.where(
        to_spot, spot_hours * runs.gpus * (run_spot if run_spot is not None else 0.0), 0.0
    )

    tier_usd = {t: np.zeros(n_sizes) for t in TIERS}
    tier_gpus = {t: np.zeros(n_sizes) for t in TIERS}
    tier_hours = {t: np.zeros(n_sizes) for t in TIERS}
    tier_usd["owned"] = (
        prices.owned_fixed_usd_per_year(sizes) + prices.owned_variable_usd_per_gpu_hour * placement.owned_gpu_hours
    )
    tier_gpus["owned"] = sizes.astype(float)
    tier_hours["owned"] = placement.owned_gpu_hours
    # Each run commits at its line's term (TierPrices.commitment), in whole instances of what that term holds: the
    # rented runs of one term are a pool committed on its own, measured usage with the node's.
    units = rent_units(gpus=runs.gpus, unit_gpus=runs.unit_gpus, gpus_per_node=gpn).tolist()
    step_of = {u: (prices.commitment(u) or ("", 0.0, gpn))[2] for u in set(units)}
    steps = np.array([step_of[u] for u in units], dtype=np.int64)
    on_demand_gpus = np.zeros((n_sizes, HOURS))
    pool_exact = np.zeros(n_sizes)
    for step in sorted({gpn, *step_of.values()}):
        pool = _pool(
            runs=runs,
            rented=pool_runs & (steps == step)[None, :],
            run_on_demand=run_on_demand,
            usage=placement.usage_rented if step == gpn else None,
            node_on_demand=on_demand or 0.0,
        )
        term = prices.commitment(step)
        levels = _commit_levels(pool, step=step, term=term, on_demand=on_demand)
        covered = (np.minimum(pool.held, levels[:, None]) * pool.share).sum(axis=1)
        if term is not None:
            tier_usd[term[0]] += levels * HOURS * term[1]
            tier_gpus[term[0]] += levels
            tier_hours[term[0]] += covered
        left = np.maximum(pool.gpu_hours - covered, 0.0)
        # A commitment covers a share of every rented hour: what is left is paid at the pool's mean line price.
        tier_usd["on_demand"] += (
            left * pool.billed(on_demand) if on_demand is not None else np.where(left > 1e-9, math.inf, 0.0)
        )
        tier_hours["on_demand"] += left
        pool_exact += pool.gpu_hours
        on_demand_gpus += np.maximum(pool.held - levels[:, None], 0.0)
    tier_gpus["on_demand"] = on_demand_gpus.max(axis=1, initial=0.0)
    tier_usd["spot"] = spot_usd
    tier_gpus["spot"] = spot_series.max(axis=1, initial=0.0)
    tier_hours["spot"] = spot_gpu_hours
    total = sum(tier_usd.values())
    with np.errstate(divide="ignore", invalid="ignore"):
        utilization = np.where(sizes > 0, placement.owned_gpu_hours / (sizes * HOURS), 0.0)
    return Options(
        owned_gpus=sizes,
        usd_per_year=np.asarray(total, dtype=float),
        tier_usd=tier_usd,
        tier_gpus=tier_gpus,
        tier_gpu_hours=tier_hours,
        owned_utilization=utilization,
        rented_gpu_hours=pool_exact + spot_gpu_hours,
        spot_runs=spot_runs,
    )


def plan_fleet(
    *,
    jobs: Sequence[Job],
    prices: TierPrices,
    usage: Usage | None = None,
    owned_gpus: Sequence[int] | None = None,
) -> FleetPlan:
    """Plan the fleet for a year of ``jobs`` (and/or measured ``usage``) at ``prices``."""
    jobs = tuple(jobs)
    runs = schedule_runs(jobs)
    hourly = usage.hourly if usage is not None else None
    demand = requested_demand(runs, hourly)
    peak = float(requested_demand(runs, hourly, whole_hours=True).max(initial=0.0))
    gpn = prices.owned_unit  # owned sizes step by what is bought at once
    # Runs that cannot rent: all without spot, or those that may not use it (a hostile probe: without a spot price
    # the interruptible ones cannot rent either).
    firm_runs = ~runs.interruptible if prices.spot_usd_per_gpu_hour is not None else np.ones(len(runs), dtype=bool)
    firm = occupancy(
        start=runs.start[firm_runs], slots=runs.slots[firm_runs], gpus=runs.gpus[firm_runs].astype(float)
    ) + (0.0 if hourly is None else hourly)
    ld = _load_duration_level(
        demand,
        gpn=gpn,
        prices=_pooled_line_prices(runs, hourly, prices),
        firm_peak=float(np.max(firm, initial=0.0)),
        spot=_spot_demand(runs, prices),
    )
    sizes, stride = _candidates(peak_gpus=peak, gpn=gpn, given=owned_gpus, keep=(ld,))
    placement, options = _search(runs=runs, usage=hourly, prices=prices, sizes=sizes, stride=stride)
    best = int(np.argmin(options.usd_per_year))
    # u* of what is recommended: its last node (a lone node has no fabric; a probe's own 8 reported a third node's
    # u* 1.179, "owning costs more than renting it all year", beside a $2,170 saving, where its own is 0.983).
    u_star = prices.break_even_utilization(nth_node=marginal_node(int(options.owned_gpus[best]), gpn))
    warnings = _warnings(jobs=jobs, usage=usage, prices=prices, stride=stride)
    plan = FleetPlan(
        jobs=jobs,
        runs=runs,
        usage=usage,
        prices=prices,
        demand=demand,
        placement=placement,
        options=options,
        recommended=best,
        load_duration_gpus=ld,
        break_even_utilization=u_star,
        reasons=(),
        warnings=tuple(warnings),
        peak_gpus=peak,
    )
    return replace(plan, reasons=tuple(_reasons(plan)))


def _pooled_line_prices(runs: Runs, usage: NDArray[np.float64] | None, prices: TierPrices) -> TierPrices:
    """The prices divisible demand (the load-duration answer) rents at: on demand, the GPU-hour-weighted mean of the
    runs' line prices (``TierPrices.line_price``) and measured usage's node price, as the simulation bills them."""
    run_on_demand = prices.run_prices("on_demand", runs)
    if run_on_demand is None or not prices.line_usd_per_gpu_hour:
        return prices
    gpu_hours = runs.hours * runs.gpus
    usage_hours = 0.0 if usage is None else float(usage.sum())
    total = float(gpu_hours.sum()) + usage_hours
    if total <= 0:
        return prices
    node = prices.on_demand_usd_per_gpu_hour or 0.0
    mean = (float(run_on_demand @ gpu_hours) + usage_hours * node) / total
    return replace(prices, on_demand_usd_per_gpu_hour=mean)


def _spot_demand(runs: Runs, prices: TierPrices) -> tuple[NDArray[np.float64], float] | None:
    """(Mean GPUs wanted each hour by the runs that rent on spot, the cost of one of their GPU-hours on spot: the spot
    price times their wall-clock hours there over their run hours), or None when no run rents on spot."""
    to_spot, spot_hours = spot_choice(runs=runs, prices=prices)
    if not to_spot.any() or prices.spot_usd_per_gpu_hour is None:
        return None
    series = occupancy(
        start=runs.start[to_spot],
        slots=runs.slots[to_spot],
        gpus=runs.gpus[to_spot].astype(float),
        hours=runs.hours[to_spot],
    )
    gpu_hours = runs.hours[to_spot] * runs.gpus[to_spot]
    run_spot = prices.run_prices("spot", runs)
    assert run_spot is not None
    # Per GPU-hour of that demand: each run's line price, stretched by its interruption loss.
    return series, float(np.sum(spot_hours[to_spot] * runs.gpus[to_spot] * run_spot[to_spot]) / np.sum(gpu_hours))


def _warnings(*, jobs: tuple[Job, ...], usage: Usage | None, prices: TierPrices, stride: int) -> list[str]:
    out: list[str] = []
    if usage is not None:
        out.append(
            "Measured usage is divisible demand (any GPU-hour may run on any free GPU): "
            f"{count(usage.observed_hours, 'observed hour')} (samples covering {count(usage.span_hours, 'hour')})"
            + _usage_calendar(usage)
            + (f", {count(usage.missing_hours, 'hour')} missing (gaps) left out" if usage.missing_hours else "")
            + (f", scaled by growth {usage.growth:g}" if usage.growth != 1 else "")
            + "."
        )
    if prices.floating() is None and prices.spot_usd_per_gpu_hour is None:
        out.append("No rental price: renting is not priced (give /rent/usd_per_gpu_hour).")
    if prices.on_demand_usd_per_gpu_hour is None and prices.floating() is not None:
        out.append("No on-demand price: rented runs are covered by a reserved commitment at the peak.")
    if stride > 1:
        finer = "".join(f"every {step} nodes, then " for step in _refine_steps(stride)[:-1])
        out.append(
            f"Many candidate sizes: owned sizes were searched every {stride} nodes, then {finer}node by node around "
            "the cheapest."
        )
    if any(j.interruptible for j in jobs) and prices.spot_usd_per_gpu_hour is None:
        out.append("Interruptible jobs, but no spot price: they rent like the others.")
    # A service's peak-hours lines start with its day on purpose (``fleet.pricing``): not jobs left unplaced.
    unplaced = [j.name for j in jobs if not j.months and not j.part]
    if len(unplaced) > 1:
        # An outsider's probe: four 64-GPU jobs without months peaked at 256 GPUs and owned none ($1,510,400 a year);
        # placed in four months, 64 owned at $1,292,581. The alignment is the documented default; it must be said.
        named = ", ".join(unplaced[:MAX_NAMED_JOBS]) + (", ..." if len(unplaced) > MAX_NAMED_JOBS else "")
        out.append(
            f"{len(unplaced)} jobs give no months ({named}): each one's runs are spread evenly over the year from "
            "1 January 00:00, so their first runs start together and the peak counts them at once; give months to "
            "place them."
        )
    return out


def _usage_calendar(usage: Usage) -> str:
    """How the measured hours were laid on the plan's calendar year: what was left out, filled or repeated."""
    start = dt.datetime(2001, 1, 1, tzinfo=dt.UTC) + dt.timedelta(hours=usage.start_hour)  # any 365-day year
    out = f", laid on the calendar by their UTC timestamps (from {start.day} {start:%B} {start:%H}:00 UTC)"
    if usage.leap_day_hours:
        out += (
            f"; {count(usage.leap_day_hours, 'hour')} of 29 February laid on 28 February (the plan year has 365 "
            "days; where both days were observed, 29 February is the later and is kept)"
        )
    if usage.older_hours:
        out += (
            f"; {count(usage.older_hours, 'older observed hour')} left out (a later observation fell on the same "
            "calendar hour: a later year, or 29 February on 28 February; the latest is kept)"
        )
    if usage.week_filled_hours:
        out += (
            f"; {count(usage.week_filled_hours, 'hour')} not observed took the same hour of the week from the nearest "
            "observed week"
        )
    low, high = usage.copies
    if high > 1:
        times = f"{low} to {high} times" if high > low else f"{low} times"
        out += (
            f"; the observed hours repeated {times} to fill the year, in time order from the last observed hour "
            "(the last, part copy takes hours spread evenly over the series)"
        )
    return out


# --- uncertainty -------------------------------------------------------------------------------


def cost_spread(
    *,
    options: Sequence[Options],
    hours_factors: Sequence[float],
    price_factors: Mapping[str, Sequence[float]],
    throughput_log_errors: NDArray[np.float64],
    seed: int,
    quantiles: Sequence[float] = (0.1, 0.5, 0.9),
) -> dict[str, Any]:
    """Quantiles of the yearly cost and of the cheapest owned size under the advice's spread.

    Draw i takes the throughput error ``throughput_log_errors[i]`` (log measured / predicted tokens/s, drawn by the
    caller from the predictions' band; predicted run hours scale by its inverse) and, per rented tier, a price drawn
    uniformly from that tier's alternatives (factors of the cheapest). ``options[k]`` is the year simulated with
    predicted run hours times ``hours_factors[k]`` (same candidate sizes); a draw uses the nearest one. Prices move
    the tier costs linearly; placements and commitment levels stay as simulated (a bound on re-optimising)."""
    rng = np.random.default_rng(seed)
    z = np.asarray(throughput_log_errors, dtype=np.float64)
    samples = z.size
    grid = np.log(np.asarray(hours_factors, dtype=float))
    pick = np.argmin(np.abs(-z[:, None] - grid[None, :]), axis=1)
    factors = {}
    for tier in TIERS[1:]:
        alts = np.asarray(price_factors.get(tier) or [1.0], dtype=float)
        factors[tier] = alts[rng.integers(0, alts.size, size=samples)]
    n_sizes = options[0].owned_gpus.size
    cost = np.empty((samples, n_sizes))
    for k, opt in enumerate(options):
        rows = pick == k
        if not rows.any():
            continue
        total = np.broadcast_to(opt.tier_usd["owned"], (int(rows.sum()), n_sizes)).copy()
        for tier in TIERS[1:]:
            total += factors[tier][rows, None] * opt.tier_usd[tier][None, :]
        cost[rows] = total
    best = np.argmin(cost, axis=1)
    cheapest = cost[np.arange(samples), best]
    owned = options[0].owned_gpus[best]
    q = list(quantiles)
    return {
        "samples": samples,
        "seed": seed,
        "quantiles": q,
        "usd_per_year": [float(v) for v in np.quantile(cheapest, q)],
        "owned_gpus": [float(v) for v in np.quantile(owned, q)],
        "hours_factors": [float(f) for f in hours_factors],
        "method": "per draw: a throughput error from the predictions' P10-P90 band scales predicted run hours "
        "(nearest simulated year), each rented tier's price uniform over its cheapest offers; the cheapest owned "
        "size of each draw and its yearly cost",
    }


# --- reasons -----------------------------------------------------------------------------------


def _money(x: float) -> str:
    return f"${x:,.0f}" if math.isfinite(x) else "not priced"


def _pct(x: float) -> str:
    """A share of the year (formatting.percent: 0.997 is 99.7%, not 100%); "never" where there is none."""
    return percent(x) if math.isfinite(x) else "never"


def _runs_word(n: int) -> str:
    return "1 run" if n == 1 else f"{n} runs"


def _job_groups(plan: FleetPlan) -> list[list[int]]:
    """The plan's jobs as the reasons name them: each alone, except the lines of one job (``Job.part``: a service's
    peak hours), which are said once, their runs counted together (not one sentence per line)."""
    groups: dict[object, list[int]] = {}
    for j, job in enumerate(plan.jobs):
        groups.setdefault(job.label if job.part else j, []).append(j)
    return list(groups.values())


def _groups_with(plan: FleetPlan, runs: np.ndarray) -> tuple[list[list[int]], int]:
    """The first MAX_NAMED_JOBS job groups (``_job_groups``) that own any of ``runs`` (a mask over the plan's runs),
    and how many more do: the reasons name a few jobs and count the rest (a hostile probe, F3: a clause per job made
    one reason of 10,229 characters for 300 jobs, printed by the page and the PDF)."""
    touched = set(np.unique(plan.runs.job[runs]).tolist())
    groups = [members for members in _job_groups(plan) if touched.intersection(members)]
    return groups[:MAX_NAMED_JOBS], max(0, len(groups) - MAX_NAMED_JOBS)


def _why_rented(plan: FleetPlan, i: int) -> list[str]:
    """Per job (the first MAX_NAMED_JOBS), why its runs were rented at option i (too big for the owned GPUs, or
    found them busy)."""
    owned = int(plan.options.owned_gpus[i])
    runs = plan.runs
    rented = ~plan.placement.on_owned[i]
    out: list[str] = []
    if owned == 0:
        return out
    named, more = _groups_with(plan, rented)
    for members in named:
        job = plan.jobs[members[0]]
        lines = [j for j in members if (rented & (runs.job == j)).any()]
        big = [plan.jobs[j].gpus for j in lines if plan.jobs[j].gpus > owned]
        if big:
            many = len(big) > 1 or job.runs_per_year > 1
            too_big = rented & np.isin(runs.job, [j for j in lines if plan.jobs[j].gpus > owned])
            out.append(
                f"the {max(big)}-GPU run{'s' if many else ''} of '{job.label}' cannot use {owned} "
                f"owned GPUs (a run is never split between owned and rented GPUs), "
                + owned_idle_words(plan, i, too_big)
            )
        n = int(np.count_nonzero(rented & np.isin(runs.job, [j for j in lines if plan.jobs[j].gpus <= owned])))
        if n:
            waits = "may not wait" if job.max_wait_hours == 0 else f"may wait only {job.max_wait_hours / 24:g} days"
            out.append(f"{_runs_word(n)} of '{job.label}' found the {owned} owned GPUs busy and {waits}, so rented")
    if more:
        out.append(f"runs of {more:,} more jobs are rented too")
    return out


def owned_idle_words(plan: FleetPlan, i: int, chosen: NDArray[np.bool_]) -> str:
    """What the owned GPUs of option i do while the ``chosen`` runs (rented) run: idle only where the placement has
    them idle (a finance review: "so 24 owned GPUs idle while it runs" where other jobs kept all 24 busy all year)."""
    owned = int(plan.options.owned_gpus[i])
    starts = np.minimum(plan.runs.start[chosen], HOURS)
    ends = np.minimum(plan.runs.start[chosen] + plan.runs.slots[chosen], HOURS)  # cut at the year's end
    edges = np.zeros(HOURS + 1)
    np.add.at(edges, starts, 1.0)
    np.add.at(edges, ends, -1.0)
    running = np.cumsum(edges)[:HOURS] > 0
    if not running.any():
        return "so rented"
    idle = float(np.mean(np.maximum(owned - plan.placement.owned_busy[i][running], 0.0)))
    if idle < IDLE_WORDS_FLOOR_GPUS:
        return "while other jobs keep the owned GPUs busy"
    share = "all" if idle > owned - IDLE_WORDS_FLOOR_GPUS else "on average"
    return f"so {share} {idle:,.0f} of the {owned} owned GPUs idle while it runs"


def _waited(plan: FleetPlan, i: int) -> list[str]:
    out = []
    waited = plan.placement.on_owned[i] & (plan.placement.wait_hours[i] > 0)
    named, more = _groups_with(plan, waited)
    for members in named:
        mine = waited & np.isin(plan.runs.job, members)
        longest = int(plan.placement.wait_hours[i][mine].max())
        out.append(
            f"{_runs_word(int(mine.sum()))} of '{plan.jobs[members[0]].label}' wait{'s' if mine.sum() == 1 else ''}"
            f" up to {longest:,} hours ({longest / 24:.1f} days) for owned GPUs instead of renting"
        )
    if more:
        out.append(f"runs of {more:,} more jobs wait for owned GPUs too")
    return out


def _reasons(plan: FleetPlan) -> list[str]:
    o, p = plan.options, plan.prices
    i, u = plan.recommended, plan.break_even_utilization
    owned = int(o.owned_gpus[i])
    floating = p.floating()
    reasons = []
    if floating is not None and math.isfinite(u):
        nth = marginal_node(owned, p.owned_unit)
        per_gpu = p.node_usd_per_year(nth) / p.owned_unit
        # GB200 is bought in whole NVL72 racks: its owned unit is a rack, not a node (a finance probe read "node").
        unit = "node" if p.owned_unit == p.gpus_per_node else f"{p.owned_unit}-GPU rack"
        node = (
            (f"the one {unit} owned" if owned else f"a lone owned {unit}") + " (no fabric)"
            if nth == 1
            else f"the last of {nth} owned {unit}s ({owned:,} GPUs; what it adds"
            + (", fabric included)" if p.owned_fabric else ", no fabric: no run crosses servers)")
        )
        pays = (
            f"which pays off against {floating[0].replace('_', ' ')} at ${floating[1]:,.2f} per GPU-hour when it is "
            f"busy more than {u * HOURS:,.0f} hours a year"
            if u <= 1
            else f"more than renting it all year at {floating[0].replace('_', ' ')} ${floating[1]:,.2f} per GPU-hour"
        )
        if floating[0] in RESERVED and u == 0:
            pays = (
                f"less than the {floating[0].replace('_', ' ')} term at ${floating[1]:,.2f} per GPU-hour, billed "
                "every hour: owning is cheaper at any utilization"
            )
        reasons.append(
            f"Break-even utilization u* = {_pct(u)}: a GPU of {node} costs {_money(per_gpu)} a year, {pays}."
        )
    ld = plan.load_duration_gpus
    ld_i = plan.option(ld)
    if floating is not None:
        shares = node_busy_shares(plan.demand, p.owned_unit)
        last = f"the last busy {_pct(float(shares[ld // p.owned_unit - 1]))} of the year; " if ld else ""
        rule = (
            f"the whole-node count that costs least for that demand ({last}each node at what it adds to the cost, so "
            "a fixed base counts once)"
        )
    else:  # the load-duration answer is the peak of what cannot rent (a hostile probe: the shares were read here)
        rule = "the peak of the runs that cannot rent: nothing rents by the hour but spot, for interruptible runs"
    cost = o.usd_per_year[ld_i]
    reasons.append(
        f"Load-duration answer: own {ld} GPUs, {rule}; it treats demand as divisible and ignores waiting; "
        + (f"simulated it costs {_money(cost)} a year." if math.isfinite(cost) else "simulated it is not priced.")
    )
    tiers = ", ".join(
        f"{t.replace('_', ' ')} {o.tier_gpus[t][i]:,.0f} GPUs {_money(o.tier_usd[t][i])}"
        for t in TIERS
        if o.tier_usd[t][i] > 0 or (t == "owned" and owned)
    )
    reasons.append(
        f"Simulated answer (whole runs, waiting): own {owned} GPUs"
        + (f", busy {_pct(o.owned_utilization[i])} of the year" if owned else "")
        + f"; {_money(o.usd_per_year[i])} a year ({tiers or 'nothing to run'})."
    )
    if owned != ld:
        why = _why_rented(plan, ld_i) + (_waited(plan, i) if owned > ld else [])
        if ld and math.isfinite(u) and o.owned_utilization[ld_i] < u:
            why.append(
                f"simulated, {ld} owned GPUs are busy only {_pct(o.owned_utilization[ld_i])} of the year, below u*"
            )
        reasons.append(
            f"The answers differ ({owned} against {ld} owned GPUs): "
            + ("; ".join(why) or "whole runs pack differently")
            + "."
        )
    else:
        waited = _waited(plan, i)
        reasons.append("Both answers agree." + (f" {'; '.join(waited).capitalize()}." if waited else ""))
    all_rent, peak_i = float(o.usd_per_year[0]), plan.peak_option
    against_rent = (
        f"Against renting everything ({_money(all_rent)}) this saves {_money(all_rent - o.usd_per_year[i])}"
        if math.isfinite(all_rent)
        else "Renting everything is not priced (no on-demand or reserved price for the runs that cannot use spot)"
    )
    reasons.append(
        f"{against_rent}; against owning the peak of {int(o.owned_gpus[peak_i])} GPUs "
        f"({_money(o.usd_per_year[peak_i])}) it saves {_money(o.usd_per_year[peak_i] - o.usd_per_year[i])}."
    )
    return reasons


# --- the document ------------------------------------------------------------------------------


def _num(x: float) -> float | None:
    return float(x) if math.isfinite(float(x)) else None


def _tiers(plan: FleetPlan, i: int) -> dict[str, dict[str, float | None]]:
    o = plan.options
    return {
        t: {
            "gpus": _num(o.tier_gpus[t][i]),
            "gpu_hours": _num(o.tier_gpu_hours[t][i]),
            "usd_per_year": _num(o.tier_usd[t][i]),
        }
        for t in TIERS
    }


def _jobs(plan: FleetPlan, i: int) -> list[dict[str, Any]]:
    runs, owned = plan.runs, plan.placement.on_owned[i]
    spot = plan.options.spot_runs[i]
    placed = np.where(owned, "owned", np.where(spot, "spot", "rented")).tolist()
    starts, waits = runs.start.tolist(), plan.placement.wait_hours[i].tolist()
    order = np.lexsort((runs.start, runs.job))  # by job, then start
    bounds = np.searchsorted(runs.job[order], np.arange(len(plan.jobs) + 1))
    out = []
    for j, job in enumerate(plan.jobs):
        mine = order[bounds[j] : bounds[j + 1]]
        out.append(
            {
                "name": job.label,
                "gpus": job.gpus,
                "run_hours": job.run_hours,
                "runs_per_year": job.runs_per_year,
                "owned_runs": int(np.count_nonzero(owned[mine])),
                "rented_runs": int(np.count_nonzero(~owned[mine])),
                "spot_runs": int(np.count_nonzero(spot[mine])),
                "calibration": None if job.calibration is None else dict(job.calibration),
                "runs": [
                    {
                        "requested_start_hour": starts[r],
                        "start_hour": (starts[r] + waits[r]) % HOURS,
                        "wait_hours": waits[r],
                        "placed": placed[r],
                    }
                    for r in mine[:RUNS_LISTED].tolist()
                ],
            }
        )
    return out


def _curve(demand: NDArray[np.float64], gpn: int) -> list[list[float]]:
    top = math.ceil(float(demand.max(initial=0.0)) / gpn - 1e-9) * gpn
    levels = np.arange(0, top + 1, gpn, dtype=float)
    if levels.size > CURVE_POINTS:
        levels = np.unique(np.linspace(0, top, CURVE_POINTS).round())
    return [[float(g), float(h)] for g, h in zip(levels, load_duration(demand, levels), strict=True)]


def _duration_curve(demand: NDArray[np.float64]) -> list[list[float]]:
    """The load-duration curve as drawn: demand sorted from highest, [hour rank, GPUs] at every step's
    two ends (a step function), or CURVE_POINTS evenly spaced ranks when demand takes many values."""
    d = np.sort(demand)[::-1]
    change = np.flatnonzero(np.diff(d)) + 1
    if change.size + 1 > CURVE_POINTS:
        ranks = np.unique(np.linspace(0, d.size - 1, 2 * CURVE_POINTS).round().astype(int))
        return [[float(r), float(d[r])] for r in ranks] + [[float(d.size), float(d[-1])]]
    starts, ends = np.concatenate([[0], change]), np.concatenate([change, [d.size]])
    return [[float(x), float(d[a])] for a, b in zip(starts, ends, strict=True) for x in (a, b)]


def _document(plan: FleetPlan) -> dict[str, Any]:
    o, i = plan.options, plan.recommended
    runs = plan.runs
    usage_hours = float(plan.usage.hourly.sum()) if plan.usage is not None else 0.0
    peak_i = plan.peak_option
    ld_i = plan.option(plan.load_duration_gpus)
    tiers = [
        {"tier": t, "gpus": _num(o.tier_gpus[t][i]), "usd_per_year": _num(o.tier_usd[t][i])}
        for t in TIERS
        if o.tier_usd[t][i] > 0 or o.tier_gpus[t][i] > 0
    ]
    return {
        "demand": {
            "peak_gpus": plan.peak_gpus,
            "mean_gpus": float(plan.demand.mean()),
            "gpu_hours_per_year": float(np.sum(runs.hours * runs.gpus)) + usage_hours,
            "load_duration": _curve(plan.demand, plan.prices.gpus_per_node),
            "duration_curve": _duration_curve(plan.demand),
        },
        "options": [
            {
                "owned_gpus": int(o.owned_gpus[k]),
                "owned_utilization": float(o.owned_utilization[k]),
                "rented_gpu_hours": float(o.rented_gpu_hours[k]),
                "usd_per_year": _num(o.usd_per_year[k]),
                "by_tier": _tiers(plan, k),
            }
            for k in range(len(o.owned_gpus))
        ],
        "recommendation": {
            "owned_gpus": int(o.owned_gpus[i]),
            "usd_per_year": _num(o.usd_per_year[i]),
            "owned_utilization": float(o.owned_utilization[i]),
            "tiers": tiers,
            "saving_vs_all_rent_usd": _num(o.usd_per_year[0] - o.usd_per_year[i]),
            "saving_vs_own_peak_usd": _num(o.usd_per_year[peak_i] - o.usd_per_year[i]),
            "all_rent_usd_per_year": _num(o.usd_per_year[0]),
            "own_peak_usd_per_year": _num(o.usd_per_year[peak_i]),
            "break_even_utilization": _num(plan.break_even_utilization),
            "load_duration_answer": {
                "owned_gpus": plan.load_duration_gpus,
                "usd_per_year": _num(o.usd_per_year[ld_i]),
                "method": LOAD_DURATION_METHOD,
            },
            "simulated_answer": {
                "owned_gpus": int(o.owned_gpus[i]),
                "usd_per_year": _num(o.usd_per_year[i]),
                "method": "whole runs placed on owned GPUs when free (or within max_wait_days), else rented",
            },
            "reasons": list(plan.reasons),
        },
        "jobs": _jobs(plan, i),
        "warnings": list(plan.warnings),
    }
