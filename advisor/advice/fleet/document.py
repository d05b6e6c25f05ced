"""The Fleet Plan input of DESIGN.md: parse, validate, fill defaults.

``name``, ``gpu``, ``network``, ``rent`` and ``buy`` are validated by the Scenario's own parser
(``advisor.scenario.parse_scenario``: same defaults, same manual quotes, same messages); so is each
job's ``workload``. Errors come back as the Scenario's :class:`ScenarioError`, every one with a JSON
pointer into the fleet document, so the CLI and the API report them exactly as they report a
Scenario's. Unknown fields are errors.

Job fields: ``name``, ``gpus`` (whole nodes above one node, as a Scenario's cluster sizes), either
``hours`` (wall-clock hours of one run, at most a year) or ``workload`` (a Scenario workload: run
hours from the advice pipeline at that size; an inference workload serves all year: its advice's base all year
and its peak hours daily, or ``gpus`` given all year), ``runs_per_year``
(default 1), ``months`` (1-12, when runs start; default: spread evenly), ``max_wait_days`` (default
0), ``interruptible`` (default false). ``usage``: ``{"csv": "timestamp,gpus_busy[,gpus_pending]...",
"growth": 1.0}``. ``owned_gpus``: the candidate owned sizes to compare (whole nodes; default: every
whole node from 0 to the peak).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

import numpy as np

from advisor.advice.fleet.demand import HOURS, Usage, hourly_usage
from advisor.advice.fleet.models import (
    MAX_GROWTH,
    MAX_JOB_NAME,
    MAX_JOBS,
    MAX_OWNED_SIZES,
    MAX_RUNS_PER_JOB,
    MAX_WAIT_DAYS,
    FleetJob,
    FleetPlanInput,
    FleetUsage,
)
from advisor.advice.ownership import purchase_unit_gpus
from advisor.economics import SECONDS_PER_HOUR
from advisor.runs_csv import csv_error_detail
from advisor.scenario import MAX_GPUS, Scenario, ScenarioError, ownership_defaults, parse_scenario, pointer
from advisor.scenario_model import NAME_TEXT
from core.textcheck import name_problem, nfc, shown
from estimator import bounds
from estimator.runs import repeated_names
from estimator.specs import UnknownGpuError, get_gpu
from pricing.models import Market

# The fields and caps are the typed Fleet Plan's (advisor.advice.fleet.models, from which its JSON Schema is
# generated); this module adds the defaults and the cross-field rules.
FLEET_FIELDS: Final[tuple[str, ...]] = tuple(FleetPlanInput.model_fields)
JOB_FIELDS: Final[tuple[str, ...]] = tuple(FleetJob.model_fields)
USAGE_FIELDS: Final[tuple[str, ...]] = tuple(FleetUsage.model_fields)
MAX_RUNS: Final[int] = 100_000  # all jobs together: bounds the placement loop
MAX_USAGE_ROWS: Final[int] = 600_000  # over a year of minute samples
# Usage is resampled to hourly means over its whole span (demand.hourly_usage), so the work grows with the span,
# not the rows: two rows a millennium apart would be 87 million hours. One hour per row the CSV may hold keeps
# the resampling within what the largest allowed CSV costs (600,000 hours is 68 years).
MAX_USAGE_SPAN_HOURS: Final[int] = MAX_USAGE_ROWS
# Usage is resampled to hourly means: samples covering less than an hour make no hour of demand (3 samples over
# 2 seconds became "1 observed hours", repeated into a year of 2.97 million GPU-hours).
MIN_USAGE_SPAN_HOURS: Final[float] = 1.0
DEFAULT_NAME: Final[str] = "Untitled fleet"
# The Scenario needs a workload to validate the shared sections; the fleet's rent/buy sections and the
# tier prices do not depend on it. A small model that fits one GPU of any catalog type.
PROBE_WORKLOAD: Final[Mapping[str, Any]] = {"kind": "training", "model": {"params_b": 0.125}, "tokens": 1e9}


@dataclass(frozen=True)
class JobSpec:
    name: str
    gpus: int | None  # None: an inference job sized by the inference path
    hours: float | None
    scenario: Scenario | None  # the job's workload as a Scenario (cluster_sizes = [gpus]) when given
    runs_per_year: int
    months: tuple[int, ...]
    max_wait_days: float
    interruptible: bool

    def to_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "name": self.name,
            "gpus": self.gpus,
            "runs_per_year": self.runs_per_year,
            "months": list(self.months) or None,
            "max_wait_days": self.max_wait_days,
            "interruptible": self.interruptible,
        }
        if self.scenario is not None:
            workload = self.scenario.to_dict()["workload"]
            # The job's runs_per_year is the run count (above); the Scenario's default of 4 is not used, and a workload
            # that gives one is refused, so the echo would neither post back nor say what the plan used.
            workload.pop("runs_per_year", None)
            doc["workload"] = workload
        else:
            doc["hours"] = self.hours
        return doc


@dataclass(frozen=True)
class UsageSpec:
    csv: str
    growth: float
    usage: Usage
    rows: int
    has_pending: bool
    pending_mean: float | None


@dataclass(frozen=True)
class FleetInput:
    """A validated Fleet Plan input; ``base`` holds its gpu, network, rent and buy as a Scenario."""

    name: str
    base: Scenario
    jobs: tuple[JobSpec, ...]
    usage: UsageSpec | None
    owned_gpus: tuple[int, ...] | None

    def to_dict(self) -> dict[str, Any]:
        """The normalized Fleet Plan input (defaults filled in)."""
        scenario = self.base.to_dict()
        return {
            "name": self.name,
            "gpu": scenario["gpu"],
            "network": scenario["network"],
            "rent": scenario["rent"],
            "buy": scenario["buy"],
            "jobs": [j.to_dict() for j in self.jobs],
            "usage": None if self.usage is None else {"csv": self.usage.csv, "growth": self.usage.growth},
            "owned_gpus": None if self.owned_gpus is None else list(self.owned_gpus),
        }


def _got(value: Any) -> str:
    """A refused value as the JSON the client sent (null, true, "text"), not as Python writes it (None, True)."""
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 80 else text[:77] + "..."


def _given(value: dict[str, Any]) -> dict[str, Any]:
    """An object's fields without those given as null: null means the documented default, as leaving the field out
    does (FleetPlanInput's schema says so, and a client generated from it sends `"hours": null` for an unset field)."""
    return {key: item for key, item in value.items() if item is not None}


class _Errors:
    def __init__(self) -> None:
        self.errors: list[dict[str, str]] = []

    def fail(self, where: str, message: str) -> None:
        self.errors.append({"pointer": where, "message": message})

    def integer(self, value: Any, where: str, low: int, high: int, what: str = "") -> int | None:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
            or value != int(value)
        ):
            self.fail(where, f"must be an integer from {low} to {high}{what}; got {_got(value)}")
            return None
        if not low <= value <= high:
            self.fail(where, f"must be an integer from {low} to {high}{what}; got {_got(value)}")
            return None
        return int(value)

    def number(self, value: Any, where: str, low: float, high: float, what: str = "") -> float | None:
        ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
        if ok and (value < low or value > high):
            ok = False
        if not ok:
            self.fail(where, f"must be a number at least {low:g} and at most {high:g}{what}; got {_got(value)}")
            return None
        return float(value)


def _known(e: _Errors, value: Any, where: str, allowed: tuple[str, ...]) -> dict[str, Any] | None:
    if not isinstance(value, dict):
        e.fail(where, f"must be an object with fields {', '.join(allowed)}; got {_got(value)}")
        return None
    for key in value:
        if key not in allowed:
            e.fail(pointer(*where.split("/")[1:], str(key)), f"unknown field; allowed here: {', '.join(allowed)}")
    return value


def _probe(document: dict[str, Any]) -> dict[str, Any]:
    workload = dict(PROBE_WORKLOAD)
    try:
        spec = get_gpu(document["gpu"]) if isinstance(document.get("gpu"), str) else None
    except UnknownGpuError:
        spec = None
    if spec is not None and "bf16" not in spec.peak_tflops:
        workload["precision"] = next(iter(spec.peak_tflops))
    return workload


def _moved(errors: list[dict[str, str]], prefix: str) -> list[dict[str, str]]:
    """A job's Scenario errors, re-pointed into the fleet document (its workload, its gpus)."""
    out = []
    for e in errors:
        p = e["pointer"]
        if p.startswith("/workload"):
            out.append({"pointer": prefix + p, "message": e["message"]})
        elif p.startswith("/cluster_sizes"):
            out.append({"pointer": prefix + "/gpus", "message": e["message"]})
    return out


def parse_fleet(document: Any, *, defaults: Mapping[str, float] | None = None) -> FleetInput:
    """Validate a Fleet Plan input (decoded JSON). Raises ScenarioError listing every problem by pointer."""
    e = _Errors()
    top = _known(e, document, "", FLEET_FIELDS)
    if top is None:
        raise ScenarioError(e.errors or [{"pointer": "", "message": "must be a Fleet Plan object"}])
    defaults = ownership_defaults() if defaults is None else defaults
    shared: dict[str, Any] = {
        "name": DEFAULT_NAME,
        # An explicit null means the default, as in a job (a reviewer: "name": null read "Untitled scenario").
        **{
            k: top[k]
            for k in ("name", "gpu", "network", "rent", "buy")
            if k in top and not (k == "name" and top[k] is None)
        },
    }
    base: Scenario | None = None
    try:
        base = parse_scenario({**shared, "workload": _probe(top)}, defaults=defaults)
        if "/rent/markets" in base.defaults_used:
            # The probe workload is training, whose default leaves spot out; the fleet keeps the Scenario's own
            # default, every market: only its interruptible jobs run on spot (an outsider's probe: they never did
            # unless the markets were listed, $84,960 instead of $36,229 a year for 300 evals).
            base = replace(base, rent=replace(base.rent, markets=tuple(Market.values)))
    except ScenarioError as error:
        e.errors.extend(x for x in error.errors if not x["pointer"].startswith(("/workload", "/cluster_sizes")))
    jobs = _jobs(e, top.get("jobs"), shared, defaults, base)
    usage = _usage(e, top.get("usage"))
    if not jobs and usage is None and not any(x["pointer"].startswith(("/jobs", "/usage")) for x in e.errors):
        e.fail("/jobs", "required: a non-empty array of jobs, or usage (or both)")
    owned = _owned(e, top.get("owned_gpus"), base)
    if e.errors:
        raise ScenarioError(e.errors)
    assert base is not None
    return FleetInput(name=base.name, base=base, jobs=tuple(jobs), usage=usage, owned_gpus=owned)


def _jobs(
    e: _Errors, value: Any, shared: dict[str, Any], defaults: Mapping[str, float], base: Scenario | None
) -> list[JobSpec]:
    if value is None:
        return []
    if not isinstance(value, list):
        e.fail("/jobs", f"must be an array of jobs; got {_got(value)}")
        return []
    if len(value) > MAX_JOBS:
        e.fail("/jobs", f"at most {MAX_JOBS:,} jobs; got {len(value):,}")
        return []
    out = []
    seen: dict[str, int] = {}
    for i, item in enumerate(value):
        job = _job(e, item, f"/jobs/{i}", i, shared, defaults, base)
        if job is None:
            continue
        # The plan's jobs[], its tables and its workbook tell jobs apart by name (an outsider: two jobs "a").
        key = job.name.strip().casefold()
        if key in seen:
            e.fail(
                f"/jobs/{i}/name",
                f"must differ from /jobs/{seen[key]}/name ({job.name!r}): each job needs its own name",
            )
        seen.setdefault(key, i)
        out.append(job)
    total = sum(j.runs_per_year for j in out)
    if total > MAX_RUNS:
        e.fail("/jobs", f"at most {MAX_RUNS:,} runs a year over all jobs; got {total:,}")
    return out


def _job(
    e: _Errors,
    item: Any,
    where: str,
    i: int,
    shared: dict[str, Any],
    defaults: Mapping[str, float],
    base: Scenario | None,
) -> JobSpec | None:
    known = _known(e, item, where, JOB_FIELDS)
    if known is None:
        return None
    j = _given(known)
    before = len(e.errors)
    name = j.get("name", f"job {i + 1}")
    name = nfc(name) if isinstance(name, str) else name  # stored and compared in NFC, as saved items' names are
    # The one name rule (core.textcheck), whose words name the refused character; a blank job name is allowed.
    problem = name_problem(name) if isinstance(name, str) and name.strip() else None
    if not isinstance(name, str) or not 0 < len(name) <= MAX_JOB_NAME or not re.fullmatch(NAME_TEXT, name) or problem:
        e.fail(
            f"{where}/name",
            problem
            or f"must be a string of 1 to {MAX_JOB_NAME} characters without NUL or control characters; "
            f"got {_got(name)}",
        )
    workload = j.get("workload")
    inference = isinstance(workload, dict) and workload.get("kind") == "inference"
    gpus = None
    if j.get("gpus") is not None or not inference:
        gpus = e.integer(
            j.get("gpus"),
            f"{where}/gpus",
            1,
            MAX_GPUS,
            f" (GPUs of one run; more than {MAX_GPUS:,} is more than any rentable capacity the advisor prices)",
        )
    gpn = base.network.gpus_per_node if base is not None else None
    # An inference job's GPUs are replicas of its deployment's TP GPUs, which need not fill whole servers (its advice
    # recommends e.g. TP 4 x 7 replicas = 28 GPUs): the TP is its advice's, checked when the job is resolved
    # (``fleet.pricing.resolve_job``). A training run spans whole nodes.
    if gpus is not None and gpn and gpus > gpn and gpus % gpn and not inference:
        e.fail(f"{where}/gpus", f"more GPUs than one node ({gpn} per node) must be whole nodes; got {gpus}")
    if "hours" in j and "workload" in j:
        e.fail(where, "give either hours (wall-clock hours of one run) or workload (a Scenario workload), not both")
    elif "hours" not in j and "workload" not in j:
        e.fail(where, "required: hours (wall-clock hours of one run) or workload (a Scenario workload); neither given")
    hours = None
    if "hours" in j:
        hours = e.number(j["hours"], f"{where}/hours", bounds.MIN_JOB_HOURS, HOURS, " (a run must fit in a year)")
    runs = e.integer(j.get("runs_per_year", 1), f"{where}/runs_per_year", 1, MAX_RUNS_PER_JOB)
    months = _months(e, j.get("months"), f"{where}/months", runs)
    wait = e.number(j.get("max_wait_days", 0), f"{where}/max_wait_days", 0, MAX_WAIT_DAYS)
    interruptible = j.get("interruptible", False)
    if not isinstance(interruptible, bool):
        e.fail(f"{where}/interruptible", f"must be true or false; got {_got(interruptible)}")
    if isinstance(workload, dict) and workload.get("runs_per_year") is not None:
        e.fail(f"{where}/workload/runs_per_year", "give runs_per_year on the job, not in its workload")
    if inference and (j.get("runs_per_year", 1) != 1 or months):
        e.fail(f"{where}/runs_per_year", "an inference job serves all year: one run, no months")
    scenario = None
    if "workload" in j and base is not None:
        # cluster_sizes do not apply to inference (its traffic sizes it): an inference job's GPUs are checked
        # against its advice's TP instead of the Scenario's whole-node rule.
        sizes = [gpus] if gpus is not None and not inference else []
        try:
            scenario = parse_scenario({**shared, "workload": workload, "cluster_sizes": sizes}, defaults=defaults)
        except ScenarioError as error:
            e.errors.extend(_moved(error.errors, where))
    if len(e.errors) > before:
        return None
    return JobSpec(
        name=str(name),
        gpus=gpus,
        hours=hours,
        scenario=scenario,
        runs_per_year=int(runs or 1),
        months=months,
        max_wait_days=float(wait or 0.0),
        interruptible=bool(interruptible),
    )


def _months(e: _Errors, raw: Any, where: str, runs: int | None) -> tuple[int, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not raw:
        e.fail(where, f"must be a non-empty array of months 1-12; got {_got(raw)}")
        return ()
    got = [e.integer(m, f"{where}/{k}", 1, 12) for k, m in enumerate(raw)]
    if runs is not None and len(raw) > runs:
        e.fail(where, f"more start months ({len(raw)}) than runs_per_year ({runs})")
    # A month given twice is that month with more runs, spread over it (demand.run_starts counts runs by month).
    return tuple(m for m in got if m is not None)


def _owned(e: _Errors, value: Any, base: Scenario | None) -> tuple[int, ...] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not value or len(value) > MAX_OWNED_SIZES:
        e.fail("/owned_gpus", f"must be an array of 1 to {MAX_OWNED_SIZES} owned sizes (GPUs); got {_got(value)}")
        return None
    gpn = base.network.gpus_per_node if base is not None else 1
    unit = purchase_unit_gpus(base.gpu, gpn) if base is not None else 1  # a whole NVL72 rack where GB200
    out = []
    for k, v in enumerate(value):
        n = e.integer(v, f"/owned_gpus/{k}", 0, MAX_GPUS)
        if n is not None and n % unit:
            what = f"whole nodes ({gpn} GPUs per node)" if unit == gpn else f"whole {unit}-GPU racks (bought whole)"
            e.fail(f"/owned_gpus/{k}", f"must be {what}; got {n}")
        elif n is not None:
            out.append(n)
    return tuple(sorted(set(out)))


# Epoch seconds a usage row may give: the dates ISO 8601 can write (years 1 to 9999), as a number.
EPOCH_RANGE: Final[tuple[float, float]] = (
    dt.datetime(1, 1, 1, tzinfo=dt.UTC).timestamp(),
    dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=dt.UTC).timestamp(),
)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


# All-digit timestamps shorter than this that are also a date (ISO 8601 basic format, 20240101) are ambiguous.
MIN_EPOCH_DIGITS: Final[int] = 9


class AmbiguousTimestampError(ValueError):
    """An all-digit timestamp that reads both as a YYYYMMDD date and as epoch seconds (the message says both)."""


def _ambiguous(text: str) -> str | None:
    """Why an all-digit timestamp of fewer than MIN_EPOCH_DIGITS digits that is also a date is refused, or None. A
    hostile-input review: 20240101 was read as 20,240,101 epoch seconds, and 25 years of daily rows became 66 hours
    from 20 August 1970."""
    if not (text.isascii() and text.isdigit() and len(text) < MIN_EPOCH_DIGITS):
        return None
    try:
        day = dt.date.fromisoformat(text)
    except ValueError:
        return None
    epoch = dt.datetime.fromtimestamp(int(text), tz=dt.UTC)
    return (
        f"{text} reads two ways: as the date {day.isoformat()} (ISO 8601 basic format) or as {int(text):,} epoch "
        f"seconds ({epoch:%Y-%m-%dT%H:%M:%SZ}); write dates as YYYY-MM-DD ({day.isoformat()}) or times as 10-digit "
        "epoch seconds"
    )


def _timestamp(text: str) -> float:
    """Seconds since the epoch: ISO 8601 (naive = UTC, 'Z' allowed) or a number of epoch seconds. An all-digit value
    that is also a YYYYMMDD date raises AmbiguousTimestampError."""
    text = text.strip()
    if "_" in text:  # Python's float() reads 1_000; no timestamp writes it
        raise ValueError("not a timestamp")
    why = _ambiguous(text)
    if why is not None:
        raise AmbiguousTimestampError(why)
    try:
        seconds = float(text)
    except ValueError:
        stamp = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=dt.UTC)
        seconds = stamp.timestamp()
    # "nan" passed every later check (NaN compares false) into the hourly resampling; "1e300" is no date either. The
    # same range for ISO text, whose offset can carry it past year 1 or 9999 in UTC.
    if not EPOCH_RANGE[0] <= seconds <= EPOCH_RANGE[1]:
        raise ValueError("out of range")
    return seconds


def parse_usage_csv(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(hours from the first sample, GPUs busy, GPUs pending or None) of a usage CSV (``usage_csv_samples``)."""
    hours, busy, pending, _ = usage_csv_samples(text)
    return hours, busy, pending


def usage_csv_samples(text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray | None, float]:
    """(hours from the first sample, GPUs busy, GPUs pending or None, the first sample in hours since
    1970-01-01T00:00Z) of a usage CSV; ValueError names
    the row and column. Lines starting with '#' are comments (attribution); extra columns are ignored. A leading
    byte order mark (Excel's "CSV UTF-8") is dropped, as the files the commands read are decoded utf-8-sig."""
    lines = [
        line for line in text.removeprefix("\ufeff").splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    # Strict: a quote that never closes is an error at its row, not a cell running to the end of the file.
    reader = csv.DictReader(io.StringIO("\n".join(lines)), strict=True)
    row_number = 0  # the last row read: data rows from 1 (the header is not counted), as in the profiled-run CSV
    header_read = False
    try:
        fields = [f.strip() for f in reader.fieldnames or []]
        reader.fieldnames = fields
        header_read = True
        # csv.DictReader keeps the last of a repeated column (a hostile-input review: gpus_busy given twice, 8 then
        # 64, planned a peak of 64); refused as the profiled-run CSV refuses it.
        repeated = [name for name in repeated_names(fields) if name]
        if repeated:
            names = f"column {repeated[0]}" if len(repeated) == 1 else f"columns {', '.join(repeated)}"
            raise ValueError(
                f"header, {names}: column appears more than once in the header (which copy is meant?); give each "
                "column once"
            )
        missing = [c for c in ("timestamp", "gpus_busy") if c not in fields]
        if missing:
            raise ValueError(f"header must have timestamp,gpus_busy[,gpus_pending]; missing {', '.join(missing)}")
        samples = _UsageSamples(pending="gpus_pending" in fields)
        for row_number, row in enumerate(reader, start=1):
            if row_number > MAX_USAGE_ROWS:
                raise ValueError(f"at most {MAX_USAGE_ROWS:,} rows")
            samples.add(row_number, row)
    except csv.Error as error:
        # The reader failed on the record after the last one it returned (a cell past csv.field_size_limit(), a NUL).
        where = f"row {row_number + 1}" if header_read else "header"
        raise ValueError(f"{where}: {csv_error_detail(error)}") from None
    if len(samples.times) < 2:
        raise ValueError("at least two rows of samples are needed")
    t = (np.array(samples.times) - samples.times[0]) / SECONDS_PER_HOUR
    # The last sample holds for one typical interval, as hourly_usage counts it.
    covered = t[-1] + float(np.median(np.diff(t)))
    if covered < MIN_USAGE_SPAN_HOURS:
        raise ValueError(
            f"the samples must cover at least {MIN_USAGE_SPAN_HOURS:g} hour (usage is resampled to hourly means); "
            f"got {covered * SECONDS_PER_HOUR:,.0f} seconds, from the first row to the last plus one interval"
        )
    if t[-1] > MAX_USAGE_SPAN_HOURS:
        raise ValueError(
            f"the samples may span at most {MAX_USAGE_SPAN_HOURS:,} hours (usage is resampled to hourly means "
            f"over its span); got {t[-1]:,.0f} hours from the first row to the last"
        )
    first = samples.times[0] / SECONDS_PER_HOUR
    return t, np.array(samples.busy), (np.array(samples.queued) if samples.pending else None), first


@dataclass
class _UsageSamples:
    """The usage CSV's samples as they are read, each row checked (ValueError naming row and column)."""

    pending: bool
    times: list[float] = field(default_factory=list)
    busy: list[float] = field(default_factory=list)
    queued: list[float] = field(default_factory=list)

    def add(self, row_number: int, row: Mapping[str, str | None]) -> None:
        stamp = row["timestamp"] or ""
        try:
            self.times.append(_timestamp(stamp))
        except AmbiguousTimestampError as error:
            raise ValueError(f"row {row_number}, column timestamp: {error}") from None
        except ValueError:
            raise ValueError(
                f"row {row_number}, column timestamp: must be ISO 8601 or epoch seconds (years 1 to 9999); "
                f"got {shown(stamp)}"
            ) from None
        for column, out in (("gpus_busy", self.busy), *((("gpus_pending", self.queued),) if self.pending else ())):
            cell = row[column] or ""
            try:
                value = float(cell)
            except ValueError:
                value = math.nan
            if not (math.isfinite(value) and 0 <= value <= MAX_GPUS):
                raise ValueError(
                    f"row {row_number}, column {column}: must be a number from 0 to {MAX_GPUS}; got {shown(cell)}"
                )
            out.append(value)
        if len(self.times) > 1 and self.times[-1] <= self.times[-2]:
            # A local-time export repeats an hour when the clocks go back (a planner's probe got no hint why).
            naive = not re.search(r"(Z|[+-]\d\d:?\d\d)$", stamp.strip()) and not _is_number(stamp)
            hint = (
                "; timestamps without a UTC offset are read as UTC, so a local-time export that repeats an hour when "
                "the clocks go back lands here: give each timestamp its offset (e.g. 2024-10-27T01:30+01:00) or "
                "export in UTC"
                if naive
                else ""
            )
            raise ValueError(f"row {row_number}, column timestamp: must be later than the row before{hint}")


def _usage(e: _Errors, value: Any) -> UsageSpec | None:
    if value is None:
        return None
    known = _known(e, value, "/usage", USAGE_FIELDS)
    if known is None:
        return None
    u = _given(known)
    growth = e.number(
        u.get("growth", 1.0), "/usage/growth", bounds.MIN_DEMAND_GROWTH, MAX_GROWTH, " (next year's demand / measured)"
    )
    text = u.get("csv")
    if not isinstance(text, str):
        e.fail("/usage/csv", "required: the usage CSV text (timestamp,gpus_busy[,gpus_pending])")
        return None
    try:
        hours, busy, pending, first = usage_csv_samples(text)
    except ValueError as exc:
        e.fail("/usage/csv", str(exc))
        return None
    if growth is None:
        return None
    return UsageSpec(
        csv=text,
        growth=growth,
        usage=hourly_usage(hours=hours, gpus=busy, growth=growth, first_hour=first),
        rows=int(hours.size),
        has_pending=pending is not None,
        pending_mean=None if pending is None else float(pending.mean()),
    )


def read_usage(*, text: str, growth: float = 1.0) -> Usage:
    """The year of measured demand in a usage CSV (ValueError naming the row and column)."""
    hours, busy, _, first = usage_csv_samples(text)
    return hourly_usage(hours=hours, gpus=busy, growth=growth, first_hour=first)


def with_usage_csv(document: Any, text: str) -> Any:
    """The document with ``usage.csv`` set to ``text`` (the CLI's ``--usage FILE``), keeping its growth."""
    if not isinstance(document, dict):
        return document
    given = document.get("usage")
    usage: dict[str, Any] = given if isinstance(given, dict) else {}
    return {**document, "usage": {**usage, "csv": text}}


def job_scenario(job: JobSpec, gpus: int) -> Scenario:
    """The job's Scenario at ``gpus`` (an inference job sized by the inference path gets its size here)."""
    assert job.scenario is not None
    return replace(job.scenario, cluster_sizes=(gpus,))
