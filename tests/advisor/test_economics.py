"""Economics: the classic example, hand-computed cases (arithmetic shown) and properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from advisor import economics as ec

NO_RUNNING_COSTS = {
    "contracted_kw": 0.0,
    "colo_usd_per_kw_month": 0.0,
    "support_fraction_per_year": 0.0,
    "staff_usd_per_year": 0.0,
    "software_usd_per_year": 0.0,
    "idle_kw": 0.0,
    "pue": 1.0,
    "power_usd_per_kwh": 0.0,
}


def fixed(**overrides: float) -> float:
    args = {"years": 5, "discount_rate": 0.0, "residual_fraction": 0.0, **NO_RUNNING_COSTS, **overrides}
    return float(ec.yearly_fixed_cost_usd(**args))


def test_classic_four_gpu_node_breaks_even_at_6000_hours_a_year() -> None:
    # $120,000 over 5 years, no discounting/residual/running costs: A = 120,000 / 5 = 24,000 $/yr.
    a = fixed(capex_usd=120_000)
    assert a == pytest.approx(24_000)
    # $4/hour for the node = $1/GPU-hour; u* = 24,000 / (4 x 8760 x 1) = 0.6849; x 8760 = 6,000 h.
    u = ec.break_even_utilization(yearly_fixed_usd=a, gpus=4, rent_usd_per_gpu_hour=1.0, variable_usd_per_gpu_hour=0.0)
    assert float(u) == pytest.approx(24_000 / 35_040)
    assert round(float(u), 3) == 0.685
    hours = ec.break_even_hours_per_year(
        yearly_fixed_usd=a, gpus=4, rent_usd_per_gpu_hour=1.0, variable_usd_per_gpu_hour=0.0
    )
    assert float(hours) == pytest.approx(6_000)
    # At the break-even utilization the owned GPU-hour costs exactly the rental price.
    owned = ec.owned_usd_per_gpu_hour(yearly_fixed_usd=a, gpus=4, utilization=u, variable_usd_per_gpu_hour=0.0)
    assert float(owned) == pytest.approx(1.0)


def test_discounting_turns_capex_into_an_annuity() -> None:
    # CRF(10%, 5y) = 0.1 / (1 - 1.1^-5) = 0.1 / (1 - 0.620921) = 0.263797; x 100,000 = 26,379.75 $/yr.
    assert fixed(capex_usd=100_000, discount_rate=0.1) == pytest.approx(26_379.748, abs=0.01)
    # The annuity's present value over the same 5 years is the capex back.
    crf = ec.capital_recovery_factor(discount_rate=0.1, years=5)
    assert float(ec.present_cost_usd(usd_per_year=26_379.748, discount_rate=0.1, years=5)) == pytest.approx(
        26_379.748 / float(crf)
    )
    assert 26_379.748 / float(crf) == pytest.approx(100_000, abs=0.01)


def test_residual_value_is_subtracted_discounted() -> None:
    # No discounting: (100,000 - 20% x 100,000) / 5 = 80,000 / 5 = 16,000 $/yr.
    assert fixed(capex_usd=100_000, residual_fraction=0.2) == pytest.approx(16_000)
    # At 10%: (100,000 - 20,000 x 1.1^-5) x CRF = (100,000 - 12,418.43) x 0.2637975 = 23,103.80 $/yr.
    assert fixed(capex_usd=100_000, residual_fraction=0.2, discount_rate=0.1) == pytest.approx(23_103.80, abs=0.01)


def test_power_pue_colocation_and_support_by_hand() -> None:
    # 8-GPU node, $200,000, 4 years, no discounting: capital 200,000 / 4 = 50,000.
    # Colocation on contracted 10 kW at $200/kW-month: 10 x 200 x 12 = 24,000.
    # Support 10% of capex: 20,000. Staff 30,000. Software 8 x 4,500 = 36,000.
    # Idle draw 0.1 kW/GPU x 8 = 0.8 kW, x PUE 1.5 x 8760 h x $0.10 = 1,051.20.
    a = fixed(
        capex_usd=200_000,
        years=4,
        contracted_kw=10,
        colo_usd_per_kw_month=200,
        support_fraction_per_year=0.1,
        staff_usd_per_year=30_000,
        software_usd_per_year=36_000,
        idle_kw=0.8,
        pue=1.5,
        power_usd_per_kwh=0.10,
    )
    assert a == pytest.approx(50_000 + 24_000 + 20_000 + 30_000 + 36_000 + 1_051.20)  # = 161,051.20
    # A busy GPU-hour adds (0.7 - 0.1) kW x 1.5 x $0.10 = $0.09.
    v = float(ec.variable_usd_per_gpu_hour(load_kw_per_gpu=0.7, idle_kw_per_gpu=0.1, pue=1.5, power_usd_per_kwh=0.10))
    assert v == pytest.approx(0.09)
    # Against $3/GPU-hour: u* = 161,051.20 / (8 x 8760 x (3 - 0.09)) = 161,051.20 / 203,932.8 = 0.789727.
    u = float(
        ec.break_even_utilization(yearly_fixed_usd=a, gpus=8, rent_usd_per_gpu_hour=3.0, variable_usd_per_gpu_hour=v)
    )
    assert u == pytest.approx(0.789727, abs=1e-6)
    # At 50% utilization an owned GPU-hour costs 161,051.20 / (8 x 8760 x 0.5) + 0.09 = 4.596210 + 0.09.
    owned = float(ec.owned_usd_per_gpu_hour(yearly_fixed_usd=a, gpus=8, utilization=0.5, variable_usd_per_gpu_hour=v))
    assert owned == pytest.approx(4.686210, abs=1e-6)
    # The running part alone (no capital): 24,000 + 20,000 + 30,000 + 36,000 + 1,051.20.
    running = ec.yearly_running_cost_usd(
        capex_usd=200_000,
        contracted_kw=10,
        colo_usd_per_kw_month=200,
        support_fraction_per_year=0.1,
        staff_usd_per_year=30_000,
        software_usd_per_year=36_000,
        idle_kw=0.8,
        pue=1.5,
        power_usd_per_kwh=0.10,
    )
    assert float(running) == pytest.approx(111_051.20)


def test_rental_at_or_below_variable_cost_never_breaks_even() -> None:
    u = ec.break_even_utilization(
        yearly_fixed_usd=np.array([1000.0, 1000.0]),
        gpus=8,
        rent_usd_per_gpu_hour=[0.05, 0.09],
        variable_usd_per_gpu_hour=0.09,
    )
    assert np.isinf(u).all()


def test_vectorized_over_sizes_and_utilizations() -> None:
    # Two node counts (A scales with nodes) x three utilizations in one call.
    a = np.array([[24_000.0], [48_000.0]])
    gpus = np.array([[4.0], [8.0]])
    owned = ec.owned_usd_per_gpu_hour(
        yearly_fixed_usd=a, gpus=gpus, utilization=[0.25, 0.5, 1.0], variable_usd_per_gpu_hour=0
    )
    # 24,000 / (4 x 8760 x 0.25) = 2.7397; halves as utilization doubles; same per GPU for 2 nodes.
    assert owned.shape == (2, 3)
    np.testing.assert_allclose(owned[0], [2.739726, 1.369863, 0.684932], atol=1e-6)
    np.testing.assert_allclose(owned[0], owned[1])
    assert np.isinf(ec.owned_usd_per_gpu_hour(yearly_fixed_usd=1, gpus=1, utilization=0, variable_usd_per_gpu_hour=0))


def test_reserved_term_is_paid_whether_used_or_not() -> None:
    # $2/GPU-hour reserved, used 40% of the time: 2 / 0.4 = $5 per busy GPU-hour.
    assert float(ec.committed_usd_per_busy_gpu_hour(usd_per_gpu_hour=2.0, utilization=0.4)) == pytest.approx(5.0)


def test_break_even_against_a_term_is_decided_by_the_hourly_prices() -> None:
    # 8 GPUs, $70,080 a year fixed = $1.00 per GPU-hour of the year, $0.20 energy per busy GPU-hour: fully busy $1.20.
    args = {"yearly_fixed_usd": 70_080.0, "gpus": 8, "variable_usd_per_gpu_hour": 0.2}
    got = ec.break_even_against_term(term_usd_per_gpu_hour=np.array([1.5, 1.2, 1.1, 0.9, np.inf]), **args)
    # Cheaper at any utilization against $1.50 and $1.20; at $1.10 only below (1.10 - 1.00) / 0.20 = 50% busy, so
    # not at full use; never against $0.90; no offer, nothing to break even against.
    assert got.tolist() == [0.0, 0.0, np.inf, np.inf, np.inf]
    # No offer in a market (an infinite price): no break-even on either rule, not 0% (a regression probe).
    assert float(ec.break_even_utilization(rent_usd_per_gpu_hour=np.inf, **args)) == np.inf
    # The on-demand formula (billed only while busy) would have said 1.00 / (1.50 - 0.20) = 77%.
    assert float(ec.break_even_utilization(rent_usd_per_gpu_hour=1.5, **args)) == pytest.approx(1 / 1.3)


def test_spot_young_daly_by_hand() -> None:
    # 4 nodes at 0.01 interruptions per node-hour: job MTBF M = 1 / 0.04 = 25 h.
    # C = 360 s = 0.1 h: T = sqrt(2 x 0.1 x 25) = sqrt(5) = 2.23607 h.
    # Lost = C/T + (T/2 + R)/M with R = 720 s = 0.2 h: 0.044721 + (1.118034 + 0.2) / 25 = 0.044721 + 0.052721.
    lost = float(ec.spot_lost_fraction(nodes=4, interruptions_per_node_hour=0.01, checkpoint_s=360, restart_s=720))
    assert lost == pytest.approx(0.0974427, abs=1e-6)
    # A 100-hour run takes 100 / (1 - 0.0974427) = 110.796 wall hours on spot.
    assert float(ec.spot_wall_hours(run_hours=100, lost_fraction=lost)) == pytest.approx(110.796, abs=1e-3)
    # More nodes, more interruptions, more loss; no interruptions, no loss.
    more = float(ec.spot_lost_fraction(nodes=16, interruptions_per_node_hour=0.01, checkpoint_s=360, restart_s=720))
    assert more > lost
    assert float(ec.spot_lost_fraction(nodes=4, interruptions_per_node_hour=0, checkpoint_s=360, restart_s=720)) == 0
    # Hopeless: interruptions faster than restarts -> everything lost, infinite wall time, no NaN.
    hopeless = ec.spot_lost_fraction(nodes=1000, interruptions_per_node_hour=1, checkpoint_s=360, restart_s=720)
    assert float(hopeless) == 1.0
    assert np.isinf(ec.spot_wall_hours(run_hours=10, lost_fraction=hopeless))


def test_rental_price_decline_levelized_by_hand() -> None:
    # No discounting, 2 years, price halves after year 1: (1 + 0.5) / 2 = 0.75 of today's price.
    lev = ec.levelized_rent_usd_per_gpu_hour(usd_per_gpu_hour=4.0, decline_per_year=0.5, discount_rate=0.0, years=2)
    assert float(lev) == pytest.approx(3.0)
    # No decline: today's price whatever the discounting.
    flat = ec.levelized_rent_usd_per_gpu_hour(usd_per_gpu_hour=4.0, decline_per_year=0.0, discount_rate=0.08, years=5)
    assert float(flat) == pytest.approx(4.0)
    # Discounting weights the early (dearer) year more: (1/1.1 + 0.5/1.21) / (1/1.1 + 1/1.21) = 1.32231/1.73554.
    disc = ec.levelized_rent_usd_per_gpu_hour(usd_per_gpu_hour=1.0, decline_per_year=0.5, discount_rate=0.1, years=2)
    assert float(disc) == pytest.approx(1.322314 / 1.735537, abs=1e-6)


def test_cumulative_cost_and_crossover_month_by_hand() -> None:
    # Rent $10,000/month; own $50,000 up front + $5,000/month: 10,000 m >= 50,000 + 5,000 m at m = 10.
    rent, own = ec.cumulative_cost_by_month(
        months=24,
        rent_usd_per_month=10_000,
        rent_decline_per_year=0.0,
        capex_usd=50_000,
        own_usd_per_month=5_000,
        residual_usd=0,
    )
    assert rent[:3].tolist() == [0, 10_000, 20_000]
    assert own[:3].tolist() == [50_000, 55_000, 60_000]
    assert ec.crossover_month(rent_cumulative_usd=rent, own_cumulative_usd=own) == 10
    # Cheap renting never crosses within the horizon.
    rent2, own2 = ec.cumulative_cost_by_month(
        months=24,
        rent_usd_per_month=1_000,
        rent_decline_per_year=0.0,
        capex_usd=50_000,
        own_usd_per_month=500,
        residual_usd=0,
    )
    assert ec.crossover_month(rent_cumulative_usd=rent2, own_cumulative_usd=own2) is None
    # A residual value comes back at the sale (last month): 50,000 + 24 x 500 - 10,000.
    _, own3 = ec.cumulative_cost_by_month(
        months=24,
        rent_usd_per_month=1_000,
        rent_decline_per_year=0.0,
        capex_usd=50_000,
        own_usd_per_month=500,
        residual_usd=10_000,
    )
    assert own3[-1] == pytest.approx(52_000)
    # Month 13 pays the price after one year of 20% decline: 10,000 x 0.8.
    rent4, _ = ec.cumulative_cost_by_month(
        months=13,
        rent_usd_per_month=10_000,
        rent_decline_per_year=0.2,
        capex_usd=0,
        own_usd_per_month=0,
        residual_usd=0,
    )
    assert rent4[13] - rent4[12] == pytest.approx(8_000)


def test_npv_present_costs_by_hand() -> None:
    # 10% over 5 years, no decline: rent 26,379.75/yr has present cost 100,000 (annuity factor 3.790787).
    rent, own = ec.npv_rent_and_own_usd(
        rent_usd_per_year=26_379.748,
        rent_decline_per_year=0.0,
        capex_usd=100_000,
        own_running_usd_per_year=0.0,
        residual_usd=0.0,
        discount_rate=0.1,
        years=5,
    )
    assert float(rent) == pytest.approx(100_000, abs=0.01)
    assert float(own) == pytest.approx(100_000)
    # Owning: 100,000 + 10,000 x 3.790787 - 20,000 x 0.620921 = 100,000 + 37,907.87 - 12,418.43.
    _, own2 = ec.npv_rent_and_own_usd(
        rent_usd_per_year=0.0,
        rent_decline_per_year=0.0,
        capex_usd=100_000,
        own_running_usd_per_year=10_000,
        residual_usd=20_000,
        discount_rate=0.1,
        years=5,
    )
    assert float(own2) == pytest.approx(125_489.44, abs=0.01)
    # Consistent with the yearly fixed cost A: its present value over the horizon is the same cost.
    a = fixed(capex_usd=100_000, residual_fraction=0.2, discount_rate=0.1, staff_usd_per_year=10_000)
    assert float(ec.present_cost_usd(usd_per_year=a, discount_rate=0.1, years=5)) == pytest.approx(
        float(own2), abs=0.01
    )


prices = st.floats(min_value=0.01, max_value=1_000, allow_nan=False)
fixed_costs = st.floats(min_value=0, max_value=1e9, allow_nan=False)


@given(a=fixed_costs, gpus=st.integers(1, 100_000), r=prices, bump=st.floats(1e-3, 100), v=st.floats(0, 5))
def test_break_even_falls_as_rental_price_rises(a: float, gpus: int, r: float, bump: float, v: float) -> None:
    low = float(
        ec.break_even_utilization(yearly_fixed_usd=a, gpus=gpus, rent_usd_per_gpu_hour=r, variable_usd_per_gpu_hour=v)
    )
    high = float(
        ec.break_even_utilization(
            yearly_fixed_usd=a, gpus=gpus, rent_usd_per_gpu_hour=r + bump, variable_usd_per_gpu_hour=v
        )
    )
    assert high <= low
    assert not math.isnan(high) and high >= 0


@given(
    capex=st.floats(0, 1e9),
    years=st.floats(0.5, 30),
    rate=st.floats(0, 1),
    residual=st.floats(0, 1),
    gpus=st.integers(1, 100_000),
    hours=st.floats(0, 1e7),
    u=st.floats(1e-6, 1),
    kwh=st.floats(0, 2),
    pue=st.floats(1, 3),
)
def test_cost_per_run_is_never_negative(
    capex: float, years: float, rate: float, residual: float, gpus: int, hours: float, u: float, kwh: float, pue: float
) -> None:
    a = ec.yearly_fixed_cost_usd(
        capex_usd=capex,
        years=years,
        discount_rate=rate,
        residual_fraction=residual,
        contracted_kw=10,
        colo_usd_per_kw_month=150,
        support_fraction_per_year=0.1,
        staff_usd_per_year=0,
        software_usd_per_year=0,
        idle_kw=1,
        pue=pue,
        power_usd_per_kwh=kwh,
    )
    assert float(a) >= 0
    v = ec.variable_usd_per_gpu_hour(load_kw_per_gpu=0.7, idle_kw_per_gpu=0.1, pue=pue, power_usd_per_kwh=kwh)
    owned = ec.owned_usd_per_gpu_hour(yearly_fixed_usd=a, gpus=gpus, utilization=u, variable_usd_per_gpu_hour=v)
    cost = float(ec.usd_per_run(gpus=gpus, run_hours=hours, usd_per_gpu_hour=owned))
    assert not math.isnan(cost) and cost >= 0


def test_break_even_with_a_committed_rent_is_designs_formula_without_one_and_the_term_rule_without_a_burst():
    design = ec.break_even_utilization(
        yearly_fixed_usd=24000, gpus=4, rent_usd_per_gpu_hour=1.0, variable_usd_per_gpu_hour=0.0
    )
    assert float(design) == pytest.approx(0.685, abs=1e-3)
    none_committed = ec.break_even_with_committed_rent(
        yearly_fixed_usd=24000,
        gpus=4,
        committed_usd_per_year=0.0,
        rent_usd_per_gpu_hour=1.0,
        variable_usd_per_gpu_hour=0,
    )
    assert float(none_committed) == pytest.approx(float(design))
    for term in (0.5, 1.0, 2.0):  # A / (N 8760) + v = 0.785: owning is cheaper at any utilization from there
        assert float(
            ec.break_even_against_term(
                yearly_fixed_usd=24000, gpus=4, term_usd_per_gpu_hour=term, variable_usd_per_gpu_hour=0.1
            )
        ) == (0.0 if term >= 24000 / (4 * 8760) + 0.1 else math.inf)
    # A base billed all year beside a burst: only the burst scales with the busy hours.
    mixed = ec.break_even_with_committed_rent(
        yearly_fixed_usd=24000,
        gpus=4,
        committed_usd_per_year=6000,
        rent_usd_per_gpu_hour=1.0,
        variable_usd_per_gpu_hour=0,
    )
    assert float(mixed) == pytest.approx(18000 / (4 * 8760))


def test_run_hours_and_busy_share_are_the_one_rule() -> None:
    # 1e12 tokens at 1e5 tokens/s: 1e7 s = 2,777.8 h; four such runs a year keep one cluster busy 4 x 2,777.8 / 8,760.
    # Steps of 1e6 tokens divide 1e12 exactly: no step rounds up.
    hours = float(ec.run_hours(tokens=1e12, tokens_per_s=1e5, tokens_per_step=1e6))
    assert hours == pytest.approx(1e7 / 3600)
    assert float(ec.busy_share(runs_per_year=4, run_hours=hours)) == pytest.approx(4 * hours / 8760)
    assert float(ec.busy_share(runs_per_year=4, run_hours=3000.0)) > 1  # unclamped; implied_utilization clamps
    assert math.isinf(float(ec.run_hours(tokens=1e12, tokens_per_s=0.0, tokens_per_step=1e6)))
    # A run is whole steps: 1.5 steps' tokens take 2 steps, 1 token takes one.
    assert float(ec.run_hours(tokens=1.5e6, tokens_per_s=1e5, tokens_per_step=1e6)) == pytest.approx(20 / 3600)
    assert float(ec.run_hours(tokens=1, tokens_per_s=1e5, tokens_per_step=1e6)) == pytest.approx(10 / 3600)
    from advisor.advice.costs import implied_utilization

    assert implied_utilization(runs_per_year=4, run_hours=[3000.0, np.nan, 100.0]).tolist() == pytest.approx(
        [1.0, 0.0, 400 / 8760]
    )


def test_owned_cost_curve_reads_the_stated_terms_and_old_documents_alike() -> None:
    # c(u) = F / u + v with F = A / (N 8760): the stated terms, and each read-back of a document without them.
    a, n, v, u, r = 1_200_000.0, 64, 0.2, 0.7, 3.0
    c0 = float(ec.owned_usd_per_gpu_hour(yearly_fixed_usd=a, gpus=n, utilization=u, variable_usd_per_gpu_hour=v))
    u_star = float(
        ec.break_even_utilization(yearly_fixed_usd=a, gpus=n, rent_usd_per_gpu_hour=r, variable_usd_per_gpu_hour=v)
    )
    expected = (a / n / 8760, v)
    stated = ec.owned_cost_curve(
        utilization=u,
        usd_per_gpu_hour_at_utilization=c0,
        fixed_usd_per_gpu_year=a / n,
        variable_usd_per_busy_gpu_hour=v,
    )
    for curve in (
        stated,
        ec.owned_cost_curve(utilization=u, usd_per_gpu_hour_at_utilization=c0, variable_usd_per_busy_gpu_hour=v),
        ec.owned_cost_curve(
            utilization=u, usd_per_gpu_hour_at_utilization=c0, break_even_utilization=u_star, rent_usd_per_gpu_hour=r
        ),
        ec.owned_cost_curve(utilization=u, usd_per_gpu_hour_at_utilization=c0, yearly_fixed_usd=a, gpus=n),
    ):
        assert curve == pytest.approx(expected)
    assert ec.owned_cost_curve(utilization=u, usd_per_gpu_hour_at_utilization=None, fixed_usd_per_gpu_year=1.0) is None


def test_the_owned_cost_a_year_is_the_fixed_cost_plus_the_busy_hours_energy():
    # 7B example at 128 GPUs (a finance probe): A $2,381,487.80, v $0.1989, 60% busy -> $2,515,301.7 a year.
    got = ec.owned_usd_per_year(
        yearly_fixed_usd=2_381_487.80, variable_usd_per_gpu_hour=0.1989, busy_gpu_hours_per_year=128 * 8760 * 0.6
    )
    assert float(got) == pytest.approx(2_381_487.80 + 0.1989 * 128 * 8760 * 0.6)
    assert float(got) == pytest.approx(2_515_301.7, abs=1.0)


def test_a_reserved_term_bills_the_whole_terms_the_runs_need() -> None:
    # An outsider's probe (F1): 4 runs of 4,492 h capped the busy share at 1, so only run hours were billed; a
    # 1-year term holds 1 such run, so 4 runs need 4 side-by-side terms billed all year: 4 x 4,492 / (4 x 8,760).
    hours = np.array([4492.2, 2259.2, 1142.7, 571.7, 10_000.0])
    u = ec.term_utilization(runs_per_year=4, run_hours=hours)
    terms = np.array([4, 2, 1, 1, 8])  # a run of 10,000 h holds a cluster 2 whole years: 4 runs, 8 cluster-years
    assert u == pytest.approx(4 * hours / (terms * 8760))
    # Fewer than one run a year: a term bought for the run alone (1,000 h of a 1-year term), not one held all year.
    assert float(ec.term_utilization(runs_per_year=0.5, run_hours=1000.0)) == pytest.approx(1000 / 8760)
    # Exactly two runs a cluster-year fit in one term (no float slop pushing it to two).
    assert float(ec.term_utilization(runs_per_year=2, run_hours=4380.0)) == pytest.approx(1.0)
    # Unknown run time: 0, as implied_utilization (nothing divides by it unnoticed).
    assert float(ec.term_utilization(runs_per_year=4, run_hours=np.inf)) == 0.0


def test_side_by_side_clusters_hold_the_whole_runs_each_fits() -> None:
    # 4 runs of 2,259 h: a cluster-year holds 3, so 2 clusters (not 4, one a run); 4,492 h: 1 each, 4 clusters.
    hours = np.array([4492.2, 2259.2, 1142.7, 10_000.0])
    clusters = ec.side_by_side_clusters(runs_per_year=4, run_hours=hours)
    assert clusters.tolist() == [4, 2, 1, 8]
    u = ec.term_utilization(runs_per_year=4, run_hours=hours)
    assert u == pytest.approx(4 * hours / (clusters * 8760))


@pytest.mark.parametrize(
    ("runs_per_year", "term_years", "terms_per_run"), [(0.5, 1, 1), (0.25, 1, 1), (0.1, 1, 1), (0.5, 3, 2 / 3)]
)
def test_a_run_below_one_a_year_buys_the_terms_it_needs_or_holds_them_if_cheaper(
    runs_per_year: float, term_years: float, terms_per_run: float
) -> None:
    # An outsider's probe (review2 F1): 16 A100-80GB, a run of 4,282 h, reserved_1y at $2.175171 (aws p4de
    # snapshot). At 0.5 runs a year the term was held all year, billing 2 one-year terms a run ($609,744), at 0.1 ten
    # ($3,048,719), and the advice said buy; one 1-year term bought for the run costs $304,872. A 3-year term costs
    # less held continuously at 0.5 runs a year (2 years of it a run) than bought for one run (3 years).
    hours, price, gpus = 4282.0, 2.175171, 16
    u = float(ec.term_utilization(runs_per_year=runs_per_year, run_hours=hours, term_years=term_years))
    per_run = gpus * hours * float(ec.committed_usd_per_busy_gpu_hour(usd_per_gpu_hour=price, utilization=u))
    assert per_run == pytest.approx(terms_per_run * term_years * gpus * 8760 * price)
    if term_years == 1:
        assert per_run == pytest.approx(304_872, abs=1)


def test_own_with_overflow_rents_the_runs_one_cluster_cannot_finish() -> None:
    """Finance probe F2, by hand: 2 GPUs, runs of 2,920 h (3 a year fit), 5 runs a year, A = $10,000, v = $0.5,
    rent $6,000 a run: owning does 3 runs (busy 2 x 8,760 h, energy $8,760), renting 2 ($12,000): $30,760 a year,
    $6,152 a run. Where the runs fit, nothing is rented and the cost is A + v x the runs' busy hours."""
    owned, rented, per_year, per_run = ec.own_with_overflow(
        runs_per_year=np.array([5.0, 2.0, 5.0]),
        run_hours=np.array([2920.0, 2920.0, 0.0]),
        gpus=2,
        yearly_fixed_usd=10_000.0,
        variable_usd_per_gpu_hour=0.5,
        rent_usd_per_run=6_000.0,
    )
    assert owned[:2] == pytest.approx([3.0, 2.0]) and rented[:2] == pytest.approx([2.0, 0.0])
    assert per_year[:2] == pytest.approx([30_760.0, 10_000.0 + 0.5 * 2 * 2 * 2920.0])
    assert per_run[0] == pytest.approx(6_152.0)
    assert math.isnan(owned[2]) and math.isnan(per_year[2])  # no run time: not priced
