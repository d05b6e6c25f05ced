"""The pure fleet core: the issue's "Done when" figures, placement rules, invariants and usage resampling."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from advisor.advice.fleet.demand import HOURS, MONTH_START_HOUR, Job, hourly_usage, run_starts, schedule_runs
from advisor.advice.fleet.placement import place
from advisor.advice.fleet.plan import TierPrices, plan_fleet
from tests.advisor.fleet.figures import PROBE_NODE

# $2.50 per GPU-hour; a $438,000 8-GPU node kept 5 years, no other cost: $87,600 a node-year, u* = 0.5.
NODE_YEAR = 438_000 / 5
PRICES = TierPrices(
    gpus_per_node=8,
    owned_one_node_usd_per_year=NODE_YEAR,
    owned_per_node_usd_per_year=NODE_YEAR,
    owned_base_usd_per_year=0.0,
    on_demand_usd_per_gpu_hour=2.50,
)
BASE_AND_WEEK = [Job("base", 32, 8760), Job("big week", 256, 168)]
JUNE_WAIT_16 = [Job("jan", 48, 4000, months=(1,)), Job("june", 32, 4000, months=(6,), max_wait_hours=16 * 24)]


def test_break_even_is_one_half() -> None:
    assert PRICES.break_even_utilization() == pytest.approx(0.5)


def test_base_plus_one_big_week_owns_the_base() -> None:
    plan = plan_fleet(jobs=BASE_AND_WEEK, prices=PRICES)
    doc = plan.to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 32
    assert rec["usd_per_year"] == pytest.approx(457_920)
    assert rec["all_rent_usd_per_year"] == pytest.approx(808_320)
    assert rec["saving_vs_all_rent_usd"] == pytest.approx(808_320 - 457_920)
    assert doc["demand"]["peak_gpus"] == 288
    assert doc["demand"]["gpu_hours_per_year"] == pytest.approx(32 * 8760 + 256 * 168)
    # Owning 24 cannot hold the 32-GPU base: it is rented whole and the 24 owned GPUs idle.
    option_24 = next(o for o in doc["options"] if o["owned_gpus"] == 24)
    assert option_24["usd_per_year"] == pytest.approx(1_071_120)
    assert option_24["owned_utilization"] == 0
    assert {j["name"]: (j["owned_runs"], j["rented_runs"]) for j in doc["jobs"]} == {
        "base": (1, 0),
        "big week": (0, 1),
    }


def test_four_short_big_runs_own_nothing() -> None:
    doc = plan_fleet(jobs=[Job("pretrain", 128, 500, runs_per_year=4)], prices=PRICES).to_dict()
    assert doc["recommendation"]["owned_gpus"] == 0
    assert doc["recommendation"]["usd_per_year"] == pytest.approx(640_000)
    assert doc["recommendation"]["tiers"] == [
        {"tier": "on_demand", "gpus": 128, "usd_per_year": pytest.approx(640_000)}
    ]


def test_ten_long_runs_own_the_cluster() -> None:
    doc = plan_fleet(jobs=[Job("pretrain", 64, 700, runs_per_year=10)], prices=PRICES).to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 64
    assert rec["usd_per_year"] == pytest.approx(700_800)
    assert rec["all_rent_usd_per_year"] == pytest.approx(1_120_000)
    assert rec["owned_utilization"] == pytest.approx(7000 / 8760)


def test_two_overlapping_runs_own_nothing_unless_june_may_wait() -> None:
    no_wait = [Job("jan", 48, 4000, months=(1,)), Job("june", 32, 4000, months=(6,))]
    doc = plan_fleet(jobs=no_wait, prices=PRICES).to_dict()
    assert doc["recommendation"]["owned_gpus"] == 0
    assert doc["recommendation"]["usd_per_year"] == pytest.approx(800_000)
    # The load-duration answer owns 32 (demand >= 32 for 7,624 h); the 48-GPU run cannot use them.
    assert doc["recommendation"]["load_duration_answer"]["owned_gpus"] == 32
    assert any("48-GPU run of 'jan' cannot use 32 owned GPUs" in r for r in doc["recommendation"]["reasons"])

    plan = plan_fleet(jobs=JUNE_WAIT_16, prices=PRICES)
    doc = plan.to_dict()
    assert doc["recommendation"]["owned_gpus"] == 48
    assert doc["recommendation"]["usd_per_year"] == pytest.approx(525_600)
    june = next(j for j in doc["jobs"] if j["name"] == "june")
    # June starts at hour 3,624 and waits for the January run to end at hour 4,000.
    assert june["runs"] == [{"requested_start_hour": 3624, "start_hour": 4000, "wait_hours": 376, "placed": "owned"}]
    assert any("wait" in r and "376 hours" in r for r in doc["recommendation"]["reasons"])


def test_15_days_of_waiting_is_not_enough() -> None:
    jobs = [JUNE_WAIT_16[0], Job("june", 32, 4000, months=(6,), max_wait_hours=15 * 24)]
    assert plan_fleet(jobs=jobs, prices=PRICES).to_dict()["recommendation"]["owned_gpus"] == 0


@pytest.mark.parametrize(
    "jobs",
    [BASE_AND_WEEK, JUNE_WAIT_16, [Job("evals", 16, 6, runs_per_year=300, interruptible=True), *BASE_AND_WEEK]],
)
def test_invariants(jobs: list[Job]) -> None:
    prices = TierPrices(
        **{**PRICES.__dict__, "spot_usd_per_gpu_hour": 1.0, "reserved_usd_per_gpu_hour": {"reserved_1y": 1.6}},
    )
    doc = plan_fleet(jobs=jobs, prices=prices).to_dict()
    rec = doc["recommendation"]
    costs = [o["usd_per_year"] for o in doc["options"]]
    assert rec["usd_per_year"] == min(costs)
    assert sum(t["usd_per_year"] for t in rec["tiers"]) == pytest.approx(rec["usd_per_year"])
    for option in doc["options"]:
        assert sum(t["usd_per_year"] for t in option["by_tier"].values()) == pytest.approx(option["usd_per_year"])
    assert doc["options"][0]["owned_gpus"] == 0
    assert doc["options"][0]["usd_per_year"] == rec["all_rent_usd_per_year"]
    assert [o["owned_gpus"] for o in doc["options"]] == sorted({o["owned_gpus"] for o in doc["options"]})
    assert all(o["owned_gpus"] % 8 == 0 for o in doc["options"])


def test_commitment_covers_the_steady_rented_base_and_spot_takes_interruptible_runs() -> None:
    # Renting only (owning is dear): a 1-year commitment at 60% of on demand is worth it for the 32-GPU base,
    # not for the week; the interruptible evals go to spot.
    dear = TierPrices(
        **{
            **PRICES.__dict__,
            "owned_one_node_usd_per_year": 1e9,
            "owned_per_node_usd_per_year": 1e9,
            "spot_usd_per_gpu_hour": 1.0,
            "reserved_usd_per_gpu_hour": {"reserved_1y": 1.5, "reserved_3y": 1.8},
            "spot_interruptions_per_node_hour": 0.2 / 730,
            "spot_checkpoint_s": 120,
            "spot_restart_s": 1800,
        }
    )
    jobs = [*BASE_AND_WEEK, Job("evals", 16, 6, runs_per_year=300, interruptible=True)]
    doc = plan_fleet(jobs=jobs, prices=dear).to_dict()
    tiers = {t["tier"]: t for t in doc["recommendation"]["tiers"]}
    assert doc["recommendation"]["owned_gpus"] == 0
    assert tiers["reserved_1y"]["gpus"] == 32
    assert tiers["reserved_1y"]["usd_per_year"] == pytest.approx(32 * 8760 * 1.5)
    assert tiers["on_demand"]["usd_per_year"] == pytest.approx(256 * 168 * 2.5)
    evals = next(j for j in doc["jobs"] if j["name"] == "evals")
    assert evals["spot_runs"] == 300
    assert tiers["spot"]["usd_per_year"] > 300 * 16 * 6 * 1.0  # spot runs take longer (Young/Daly loss)
    assert "reserved_3y" not in tiers


def test_runs_are_never_split_and_owned_capacity_is_never_exceeded() -> None:
    rng = np.random.default_rng(7)
    jobs = [
        Job(
            f"j{k}",
            int(rng.choice([8, 16, 32, 64])),
            float(rng.integers(5, 900)),
            int(rng.integers(1, 6)),
            max_wait_hours=int(rng.integers(0, 200)),
        )
        for k in range(40)
    ]
    runs = schedule_runs(jobs)
    sizes = np.arange(0, 257, 8)
    placed = place(runs=runs, owned_gpus=sizes)
    assert (placed.owned_busy <= sizes[:, None]).all()
    # Busy owned GPU-hours on the grid equal the whole runs placed (ceil of their hours), nothing partial.
    on_grid = placed.on_owned.astype(float) @ (runs.slots * runs.gpus)
    assert placed.owned_busy.sum(axis=1) == pytest.approx(on_grid)
    assert (placed.wait_hours <= runs.max_wait[None, :]).all()
    # More owned GPUs never place fewer GPU-hours.
    assert (np.diff(placed.owned_gpu_hours) >= -1e-6).all()


def test_run_starts_in_months_or_spread_evenly() -> None:
    assert run_starts(Job("a", 8, 10, runs_per_year=2, months=(3, 9))).tolist() == [
        MONTH_START_HOUR[2],
        MONTH_START_HOUR[8],
    ]
    assert run_starts(Job("b", 8, 10, runs_per_year=4)).tolist() == [0, 2190, 4380, 6570]
    assert MONTH_START_HOUR[5] == 3624  # 1 June in a 365-day year


def test_usage_any_interval_resampled_and_repeated_to_a_year() -> None:
    # 15-minute samples over two days: 10 GPUs for the first half of every hour, 30 for the second.
    t = np.arange(0, 48, 0.25)
    gpus = np.where((t % 1) < 0.5, 10.0, 30.0)
    usage = hourly_usage(hours=t, gpus=gpus, growth=1.5)
    assert usage.hourly.shape == (HOURS,)
    assert usage.hourly == pytest.approx(np.full(HOURS, 30.0))  # mean 20, x1.5
    assert usage.repeated and usage.observed_hours == 48


def test_usage_gap_is_missing_not_zero() -> None:
    t = np.concatenate([np.arange(0, 10), np.arange(30, 40)]).astype(float)
    usage = hourly_usage(hours=t, gpus=np.full(t.size, 5.0))
    assert usage.missing_hours == 20
    assert usage.hourly.min() == pytest.approx(5.0)


def test_usage_is_divisible_demand_on_owned_gpus() -> None:
    usage = hourly_usage(hours=np.arange(0.0, 24.0), gpus=np.where(np.arange(24) < 12, 40.0, 8.0))
    doc = plan_fleet(jobs=[], usage=usage, prices=PRICES).to_dict()
    # 40 GPUs half the time, 8 the other half: the level exceeded > u* = 0.5 is 8, simulation agrees.
    assert doc["recommendation"]["owned_gpus"] == 8
    assert doc["recommendation"]["load_duration_answer"]["owned_gpus"] == 8
    expected = NODE_YEAR + 32 * 4380 * 2.5
    assert doc["recommendation"]["usd_per_year"] == pytest.approx(expected)
    assert any("divisible" in w for w in doc["warnings"])


def test_two_hundred_jobs_plan_whole() -> None:
    # Speed is measured in bench/fleet.py (a ratio to one advise() call), not timed here.
    rng = np.random.default_rng(1)
    jobs = [
        Job(
            f"j{k}",
            int(rng.choice([8, 16, 32, 64, 128])),
            float(rng.integers(4, 800)),
            int(rng.integers(1, 13)),
            max_wait_hours=int(rng.integers(0, 72)),
            interruptible=bool(rng.random() < 0.3),
        )
        for k in range(200)
    ]
    doc = plan_fleet(jobs=jobs, prices=PRICES).to_dict()
    assert len(doc["jobs"]) == 200
    assert all(j["owned_runs"] + j["rented_runs"] == j["runs_per_year"] for j in doc["jobs"])
    recommendation = doc["recommendation"]
    assert sum(t["usd_per_year"] for t in recommendation["tiers"]) == pytest.approx(recommendation["usd_per_year"])
    assert recommendation["usd_per_year"] == pytest.approx(min(o["usd_per_year"] for o in doc["options"]))


def test_cost_spread_follows_the_price_alternatives() -> None:
    from advisor.advice.fleet.plan import cost_spread

    plan = plan_fleet(jobs=BASE_AND_WEEK, prices=PRICES)
    # One price: no spread at all; the quantiles are the plan's own figures.
    fixed = cost_spread(
        options=[plan.options], hours_factors=[1.0], price_factors={}, throughput_log_errors=np.zeros(500), seed=1
    )
    assert fixed["usd_per_year"] == pytest.approx([457_920] * 3)
    assert fixed["owned_gpus"] == [32, 32, 32]
    # On-demand alternatives up to 3x the cheapest: renting the week costs more in the upper draws.
    spread = cost_spread(
        options=[plan.options],
        hours_factors=[1.0],
        price_factors={"on_demand": [1.0, 1.5, 3.0]},
        throughput_log_errors=np.zeros(3000),
        seed=1,
    )
    low, mid, high = spread["usd_per_year"]
    assert low == pytest.approx(457_920)
    assert low < mid < high
    assert spread["owned_gpus"][0] == 32


def test_duration_curve_is_a_step_function_of_sorted_demand() -> None:
    doc = plan_fleet(jobs=[Job("jan", 48, 4000, months=(1,)), Job("june", 32, 4000, months=(6,))], prices=PRICES)
    curve = doc.to_dict()["demand"]["duration_curve"]
    # 80 GPUs for 376 h (overlap), then 48 until 4,000 h, 32 until 7,624 h, 0 for the rest of the year.
    assert curve == [[0, 80], [376, 80], [376, 48], [4000, 48], [4000, 32], [7624, 32], [7624, 0], [8760, 0]]


def test_coarse_to_fine_search_prices_each_size_as_a_direct_simulation_would() -> None:
    """More candidates than MAX_CANDIDATES: sizes searched every few nodes, then node by node around the cheapest;
    the merged options equal one simulation of exactly those sizes (each size's cost depends on its own year only)."""
    prices = TierPrices(
        gpus_per_node=8,
        owned_one_node_usd_per_year=NODE_YEAR,
        owned_per_node_usd_per_year=NODE_YEAR,
        owned_base_usd_per_year=0.0,
        on_demand_usd_per_gpu_hour=2.50,
        spot_usd_per_gpu_hour=1.0,
        reserved_usd_per_gpu_hour={"reserved_1y": 1.6},
    )
    jobs = [
        Job("base", 200, 8760),
        Job("fine-tunes", 64, 300, runs_per_year=12, max_wait_hours=48),
        Job("evals", 16, 6, runs_per_year=300, interruptible=True),
        Job("pretrain", 1024, 700, months=(3,)),
    ]
    searched = plan_fleet(jobs=jobs, prices=prices)
    sizes = searched.options.owned_gpus
    assert np.unique(np.diff(sizes)).size > 1  # coarse stride and node-by-node steps both present
    direct = plan_fleet(jobs=jobs, prices=prices, owned_gpus=sizes.tolist())
    assert np.array_equal(direct.options.owned_gpus, sizes)
    assert np.allclose(direct.options.usd_per_year, searched.options.usd_per_year)
    for tier in searched.options.tier_usd:
        assert np.allclose(direct.options.tier_usd[tier], searched.options.tier_usd[tier])
        assert np.allclose(direct.options.tier_gpus[tier], searched.options.tier_gpus[tier])
    assert np.array_equal(direct.placement.on_owned, searched.placement.on_owned)
    assert np.array_equal(direct.options.spot_runs, searched.options.spot_runs)
    assert searched.recommended == direct.recommended


def test_a_huge_peak_is_searched_in_a_few_hundred_sizes_ending_node_by_node_at_the_cheapest() -> None:
    """A hostile probe: the node-by-node window around the coarse cheapest was one coarse stride wide, and the stride
    grows with the peak (7,768 sizes simulated for a 5.9M-GPU peak, minutes). Each finer level now searches within
    one step of the level before, FINE_STEPS times finer, so the sizes grow with the log of the peak."""
    from advisor.advice.fleet import plan as fleet_plan

    jobs = [Job("base", 4000, 8760), *(Job(f"burst {k}", 65536, 1) for k in range(10))]  # a 659,360-GPU peak
    plan = plan_fleet(jobs=jobs, prices=PRICES)
    sizes = plan.options.owned_gpus
    assert plan.peak_gpus == 659_360
    assert sizes.size <= 3 * fleet_plan.MAX_CANDIDATES  # 1,454 before
    searched_sizes = fleet_plan.searched_sizes
    assert sizes.size <= searched_sizes(peak_gpus=plan.peak_gpus, gpn=8) <= 3 * fleet_plan.MAX_CANDIDATES
    best = int(sizes[plan.recommended])
    assert best == 4000  # the steady base, busy all year
    assert {best - 8, best + 8} <= set(sizes.tolist())  # the last level is node by node
    assert "searched every 859 nodes, then every 18 nodes, then node by node" in " ".join(plan.warnings)
    # Any peak: at most a few hundred sizes (10,000 jobs of 65,536 GPUs at once).
    assert searched_sizes(peak_gpus=655_360_000, gpn=8) <= 5 * fleet_plan.MAX_CANDIDATES
    for peak in (8, 800, 8_000, 40_000, 400_000):
        simulated = plan_fleet(jobs=[Job("once", peak, 1)], prices=PRICES).options.owned_gpus.size
        assert simulated <= searched_sizes(peak_gpus=peak, gpn=8)


def test_each_node_is_weighed_at_what_it_adds_to_the_owned_cost() -> None:
    # A regression probe: the second node was weighed at the per-node cost, though going from one node to a cluster
    # also adds its fabric and base: base + 2 x per node - one node.
    prices = TierPrices(
        gpus_per_node=8,
        owned_one_node_usd_per_year=100_000.0,
        owned_per_node_usd_per_year=120_000.0,
        owned_base_usd_per_year=20_000.0,
        on_demand_usd_per_gpu_hour=3.0,
    )
    assert prices.node_usd_per_year(1) == 100_000
    assert prices.node_usd_per_year(2) == 20_000 + 2 * 120_000 - 100_000
    assert prices.node_usd_per_year(3) == 120_000
    assert prices.break_even_utilization() == pytest.approx(120_000 / 8 / (8760 * 3.0))


@pytest.mark.parametrize(
    ("csv_text", "seconds"),
    [
        ("timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T00:00:01Z,1000\n2025-01-01T00:00:02Z,8\n", 3),
        ("timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T00:20:00Z,8\n", 2400),
    ],
)
def test_usage_covering_less_than_an_hour_is_refused_with_its_real_span(csv_text: str, seconds: int) -> None:
    # Samples over 2 seconds were "1 observed hours, repeated to fill the year, 1 hours missing (gaps)": 336 GPUs
    # to own at $6.9M a year.
    from advisor.advice.fleet.document import parse_usage_csv

    with pytest.raises(ValueError, match=rf"at least 1 hour .* got {seconds:,} seconds"):
        parse_usage_csv(csv_text)


def test_usage_covering_an_hour_is_planned_and_its_span_stated() -> None:
    from advisor.advice.fleet.document import parse_usage_csv

    hours, busy, _ = parse_usage_csv("timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T00:30:00Z,8\n")
    assert list(hours) == [0.0, 0.5] and list(busy) == [8.0, 8.0]


def test_the_load_duration_answer_against_a_reserved_term_counts_a_fixed_base_once() -> None:
    # A reviewer: with a reserved term as the only price and a staff base on the lone node, the lone node's u*
    # against the term is infinite, every running sum of share - u* was -inf and the answer "own 0": $1,662,879
    # reserved a year where owning the 10 busy nodes costs $500,400.
    prices = TierPrices(
        gpus_per_node=8,
        owned_one_node_usd_per_year=35_040 + 150_000,
        owned_per_node_usd_per_year=35_040,
        owned_base_usd_per_year=150_000,
        reserved_usd_per_gpu_hour={"reserved_1y": 2.37283},
    )
    rec = plan_fleet(jobs=[Job("base", 80, 8760)], prices=prices).to_dict()["recommendation"]
    assert rec["load_duration_answer"]["owned_gpus"] == 80 == rec["owned_gpus"]
    assert rec["load_duration_answer"]["usd_per_year"] == pytest.approx(150_000 + 10 * 35_040)


USAGE_TEXT = "timestamp,gpus_busy\n2025-01-01T00:00:00Z,8\n2025-01-01T01:00:00Z,10\n2025-01-01T02:00:00Z,9\n"


def test_a_usage_csv_with_a_byte_order_mark_reads_as_without_one() -> None:
    # Excel's "CSV UTF-8": refused "header must have timestamp,gpus_busy[,gpus_pending]; missing timestamp".
    from advisor.advice.fleet.document import parse_usage_csv

    with_bom = parse_usage_csv("\ufeff" + USAGE_TEXT)
    plain = parse_usage_csv(USAGE_TEXT)
    assert [list(part) for part in with_bom[:2]] == [list(part) for part in plain[:2]]


def test_an_unclosed_quote_in_a_usage_csv_says_so_at_its_row() -> None:
    # It read to the end of the file as one timestamp: "row 3, column timestamp: must be ISO 8601 ...; got
    # '2020-05-01T02:00:00,527.72,0\n2020-05-01T'... (22,525 characters)".
    from advisor.advice.fleet.document import parse_usage_csv

    lines = USAGE_TEXT.splitlines()
    lines[3] = '"' + lines[3]
    with pytest.raises(ValueError, match=r'^row 3: unterminated quoted cell \(a " opens a cell that never closes\)$'):
        parse_usage_csv("\n".join([*lines, "2025-01-01T03:00:00Z,9", "2025-01-01T04:00:00Z,9"]) + "\n")


SHORT_THEN_LONG = [Job("short 4-GPU job", 4, 1000), Job("long training", 8, 8000, months=(2,))]
ADD_MIX = [
    Job("j0", 8, 2000, runs_per_year=12),
    Job("j1", 8, 2000, runs_per_year=50, months=(2, 11)),
    Job("j2", 2, 24, runs_per_year=12),
    Job("j3", 16, 6, runs_per_year=12),
]


def test_a_small_early_run_does_not_keep_a_larger_later_one_off_the_owned_node() -> None:
    # First come, first fit put the short job on the node and rented the 8,000-hour run: own 0 at $204,000.
    doc = plan_fleet(jobs=SHORT_THEN_LONG, prices=PROBE_NODE).to_dict()
    rec = doc["recommendation"]
    assert rec["owned_gpus"] == 8
    assert rec["usd_per_year"] == pytest.approx(118_383.24 + 0.1989 * 64_000 + 3.0 * 4_000)  # $143,113
    assert {j["name"]: j["owned_runs"] for j in doc["jobs"]} == {"short 4-GPU job": 0, "long training": 1}


@pytest.mark.parametrize(
    ("jobs", "extra", "price"),
    [(SHORT_THEN_LONG, Job("extra 8-GPU job", 8, 600), 3.0), (ADD_MIX, Job("j9", 4, 200, runs_per_year=2), 4.0)],
)
def test_more_demand_never_lowers_the_cost(jobs: list[Job], extra: Job, price: float) -> None:
    prices = replace(PROBE_NODE, on_demand_usd_per_gpu_hour=price)
    before = plan_fleet(jobs=jobs, prices=prices).to_dict()["recommendation"]["usd_per_year"]
    after = plan_fleet(jobs=[*jobs, extra], prices=prices).to_dict()["recommendation"]["usd_per_year"]
    assert after >= before


def test_the_plan_document_holds_no_nan_or_infinity() -> None:
    """A hostile probe's 1e-320-year term made costs NaN (inf - inf), which only inf was nulled for: the JSON renderer
    raised (a 500) and the fleet page printed "$nan". Every non-finite float, in lists and tuples too, is null."""
    import json

    from advisor.advice.fleet.service import _finite

    doc = {"a": float("nan"), "b": [float("inf"), 1.5], "c": (float("-inf"), float("nan")), "d": {"e": float("nan")}}
    assert json.loads(json.dumps(_finite(doc), allow_nan=False)) == {
        "a": None,
        "b": [None, 1.5],
        "c": [None, None],
        "d": {"e": None},
    }
