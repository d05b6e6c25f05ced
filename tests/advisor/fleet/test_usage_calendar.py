"""Measured usage on the calendar: a capacity planner's probe found a usage CSV's dates ignored (hours counted from
the first sample, laid from 1 January) while jobs are placed by calendar month."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import numpy as np
import pytest

from advisor.advice.fleet.demand import HOURS, MONTH_START_HOUR, Job
from advisor.advice.fleet.document import read_usage
from advisor.advice.fleet.plan import plan_fleet
from tests.advisor.fleet.figures import PROBE_NODE


def hourly_csv(start: str, hours: int, gpus: Callable[[dt.datetime], float]) -> str:
    t = dt.datetime.fromisoformat(start)
    rows = [f"{(t + dt.timedelta(hours=h)).isoformat()},{gpus(t + dt.timedelta(hours=h))}" for h in range(hours)]
    return "\n".join(["timestamp,gpus_busy", *rows]) + "\n"


def second_half(x: dt.datetime) -> float:
    return 64.0 if x.month >= 7 else 0.0


def test_a_july_start_export_lands_in_july() -> None:
    january = read_usage(text=hourly_csv("2023-01-01T00:00", 8760, second_half))
    july = read_usage(text=hourly_csv("2023-07-01T00:00", 8760, second_half))
    july_hour = int(MONTH_START_HOUR[6])
    assert july.hourly[:july_hour] == pytest.approx(np.zeros(july_hour))
    assert july.hourly[july_hour:] == pytest.approx(np.full(HOURS - july_hour, 64.0))
    assert july.hourly == pytest.approx(january.hourly)
    # With a January-June job of 64 GPUs: 64 busy all year, own 64 ($1,058,577), not own 0 at $1,681,920.
    doc = plan_fleet(jobs=[Job("H1 program", 64, 4344, months=(1,))], usage=july, prices=PROBE_NODE).to_dict()
    assert doc["demand"]["peak_gpus"] == 64
    assert doc["recommendation"]["owned_gpus"] == 64
    assert doc["recommendation"]["usd_per_year"] == pytest.approx(8 * 118_383.24 + 0.1989 * 64 * 8760)
    assert any("calendar" in w and "1 July" in w for w in doc["warnings"])


def test_a_leap_year_drops_29_february_not_its_first_day_and_says_so() -> None:
    usage = read_usage(text=hourly_csv("2024-01-01T00:00", 8784, lambda x: 64.0 if x.timetuple().tm_yday == 1 else 8))
    assert usage.hourly[:24] == pytest.approx(np.full(24, 64.0))
    assert usage.hourly[24:] == pytest.approx(np.full(HOURS - 24, 8.0))
    doc = plan_fleet(jobs=[], usage=usage, prices=PROBE_NODE).to_dict()
    assert doc["demand"]["peak_gpus"] == 64
    assert any("24 hours of 29 February" in w for w in doc["warnings"]), doc["warnings"]


def test_a_two_year_export_keeps_the_latest_year_and_says_what_it_dropped() -> None:
    usage = read_usage(text=hourly_csv("2023-01-01T00:00", 8760 + 8784, lambda x: 40.0 if x.year == 2023 else 80.0))
    assert usage.hourly == pytest.approx(np.full(HOURS, 80.0))
    doc = plan_fleet(jobs=[], usage=usage, prices=PROBE_NODE).to_dict()
    # 2023's 8,760 hours, and 28 February 2024's 24, which 29 February 2024 (laid on 28 February) replaces.
    assert any("8,784 older observed hours" in w for w in doc["warnings"]), doc["warnings"]


def test_a_short_series_is_repeated_evenly_on_the_calendar() -> None:
    # 715 hours (a month of Helios "up" hours): 8,760 = 12 x 715 + 180; np.resize counted the first 180 hours 13
    # times, the rest 12, so a ramp's yearly mean came out 351.5 instead of 357.
    usage = read_usage(text=hourly_csv("2020-05-01T00:00", 715, lambda x: float(x.timetuple().tm_yday - 122)))
    ramp = read_usage(text="timestamp,gpus_busy\n" + "".join(f"{h * 3600},{h}\n" for h in range(715)))
    assert ramp.hourly.mean() == pytest.approx(357.0, rel=2e-3)
    times = np.bincount(ramp.hourly.astype(int), minlength=715)
    assert set(times.tolist()) == {12, 13}
    # Observed hours stay on their calendar hours (1 May onwards), the copies around them.
    may = int(MONTH_START_HOUR[4])
    assert usage.hourly[may : may + 715] == pytest.approx(np.arange(715) // 24)
    doc = plan_fleet(jobs=[], usage=usage, prices=PROBE_NODE).to_dict()
    assert any("repeated 12 to 13 times" in w for w in doc["warnings"]), doc["warnings"]


def test_a_local_time_file_repeating_an_hour_at_the_clock_change_gets_a_hint() -> None:
    """A capacity planner's probe: a local-time export repeating 01:00 when the clocks go back was refused with
    "must be later than the row before" and no word on why; with UTC offsets it reads."""
    from advisor.advice.fleet.document import parse_usage_csv

    local = "timestamp,gpus_busy\n2024-10-27T00:00,8\n2024-10-27T01:00,8\n2024-10-27T01:00,8\n2024-10-27T02:00,8\n"
    with pytest.raises(ValueError, match=r"row 3, column timestamp: must be later than the row before; .*UTC offset"):
        parse_usage_csv(local)
    offsets = (
        "timestamp,gpus_busy\n2024-10-27T00:00+02:00,8\n2024-10-27T01:00+02:00,8\n2024-10-27T01:00+01:00,8\n"
        "2024-10-27T02:00+01:00,8\n"
    )
    assert parse_usage_csv(offsets)[1].tolist() == [8, 8, 8, 8]
    with pytest.raises(ValueError) as caught:
        parse_usage_csv("timestamp,gpus_busy\n100,8\n100,8\n")
    assert "UTC offset" not in str(caught.value)


def test_29_february_is_laid_on_28_february_not_thrown_away() -> None:
    """A hostile-input review: samples all on 29 February planned "own 0 GPUs, $0 a year" (every hour left out, the
    year all zeros, "from 1 January"); a 2-day export with 64 GPUs on 29 February and 8 on 1 March planned a peak of
    8."""
    only = read_usage(text=hourly_csv("2024-02-29T00:00", 24, lambda x: 64.0))
    feb28 = int(MONTH_START_HOUR[1]) + 27 * 24
    assert only.start_hour == feb28
    assert only.hourly == pytest.approx(np.full(HOURS, 64.0))
    doc = plan_fleet(jobs=[], usage=only, prices=PROBE_NODE).to_dict()
    assert doc["demand"]["peak_gpus"] == 64
    assert doc["recommendation"]["owned_gpus"] == 64
    assert any("24 hours of 29 February laid on 28 February" in w and "28 February 00:00" in w for w in doc["warnings"])
    two = read_usage(text=hourly_csv("2024-02-29T00:00", 48, lambda x: 64.0 if x.day == 29 else 8.0))
    assert two.hourly[feb28 : feb28 + 24] == pytest.approx(np.full(24, 64.0))
    assert two.hourly[feb28 + 24 : feb28 + 48] == pytest.approx(np.full(24, 8.0))
    assert plan_fleet(jobs=[], usage=two, prices=PROBE_NODE).to_dict()["demand"]["peak_gpus"] == 64
    # Both days observed: the year has one of them; the later (29 February) is kept and 28 February's hours are
    # counted as left out, not lost silently.
    both = read_usage(text=hourly_csv("2024-02-28T00:00", 48, lambda x: 64.0 if x.day == 29 else 8.0))
    assert both.hourly[feb28 : feb28 + 24] == pytest.approx(np.full(24, 64.0))
    assert (both.leap_day_hours, both.older_hours) == (24, 24)
