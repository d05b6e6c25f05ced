"""Calibrations in the database: services (write) and selectors (read).

The estimator fits and serialises calibrations (``estimator.calibrate``); this module stores them as
``advisor.models.Calibration`` rows and decides which one a user's predictions use.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
from celery import current_app
from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import IntegrityError, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from advisor.models import ActiveCalibration
from advisor.models import Calibration as CalibrationRow
from core.fields import char_max_length
from core.queueing import QueueUnavailable, enqueue, runs_in_process
from core.textcheck import clean_name
from estimator import calibrate
from estimator.prediction import run_queries
from estimator.runs import ProfiledRun, RowError, RunValidationError, runs_from_records

logger = logging.getLogger(__name__)

NAME_MAX_LENGTH = char_max_length(CalibrationRow, "name")
PENDING, FITTING, READY, FAILED = (str(state) for state in CalibrationRow.State)
FIT_TASK = "advisor.fit_calibration"  # advisor/tasks.py
# A measured run doing more model FLOP/s than its GPUs' dense peak (MFU above 1) is physically impossible: a typo, a
# wrong unit or a mixture-of-experts model counted as dense. Fitted, it would lift the family's MFU cap for every user.
MAX_MEASURED_MFU: Final[float] = 1.0
# tokens_per_s and step_time_s of one row must describe the same run: global_batch x seq_len tokens per step.
MEASURES_AGREE_WITHIN: Final[float] = 0.10


class CalibrationNameError(ValueError):
    """The name is empty, too long, or already used by this owner; ``field`` is "name"."""

    field = "name"


class CalibrationNameTaken(CalibrationNameError):
    """The owner already has a calibration of that name (``taken``) and replacing it was not asked for."""

    def __init__(self, taken: str) -> None:
        super().__init__(f"name: {taken!r} is already used; choose another name")
        self.taken = taken


class CalibrationNotAvailable(LookupError):
    """The calibration is another user's: callers answer 404."""


class CalibrationFitFailed(Exception):
    """An upload fitted in-process (the embedded mode runs the fit task in the request) whose runs could not be
    fitted; ``reason`` says why. Nothing is kept: callers answer 400 on the runs."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"runs: {reason}")
        self.reason = reason


class FitOverBudget(Exception):
    """The upload's fit would run inside the request (the embedded mode) and has more runs than one request may fit;
    nothing is stored. Callers answer 413 naming the limit and its setting."""

    def __init__(self, *, runs: int, limit: int) -> None:
        self.runs, self.limit, self.setting = runs, limit, "CALIBRATION_IN_PROCESS_MAX_RUNS"
        super().__init__(
            f"Fitting {runs:,} runs would run inside this request (no task queue: REDIS_URL is not set); one request "
            f"may fit at most {limit:,} ({self.setting}). Upload fewer runs, or run with Redis and a worker to fit "
            "larger uploads in the background."
        )


class TooManyQueuedFits(Exception):
    """The owner already has CALIBRATION_MAX_QUEUED_FITS fits waiting or running; nothing is stored. Callers answer
    429."""

    retry_after_s: Final[int] = 60

    def __init__(self, *, waiting: int, limit: int) -> None:
        super().__init__(
            f"You have {waiting:,} calibration fit(s) waiting or running; at most {limit:,} at once "
            "(CALIBRATION_MAX_QUEUED_FITS). Upload again when one has finished."
        )


class CalibrationNotReady(ValueError):
    """The calibration is still being fitted, or its fit failed: it cannot be used yet (callers answer 409)."""


# Why a fit is refused when its figures are not numbers (CalibrationFitFailed: a 400 on the runs, or a failed row).
NOT_FINITE_FIT: Final[str] = (
    "the fit's error on these runs is not a finite number (a measured tokens_per_s or step_time_s far outside any "
    "real job's overflowed it); check those columns"
)


def _row_fields(document: dict[str, Any]) -> dict[str, Any]:
    """The row's columns from a fitted document. A fit whose error figure (or any number) is not finite is a failed
    fit, CalibrationFitFailed: a measured 1e-305 tokens/s overflowed the fit, its report held None and storing it was
    float(None), a 500; a NaN would have been stored as an error figure or refused by the JSON column."""
    report = document.get("report") or {}
    loo = report.get("loo_mape")
    # loo_mape is NOT NULL in the model; a fit without held-out figures stores its in-sample error instead.
    error = loo if loo is not None else report.get("in_sample_mape", 0.0)
    if isinstance(error, bool) or not isinstance(error, int | float) or not math.isfinite(error):
        raise CalibrationFitFailed(NOT_FINITE_FIT)
    try:
        json.dumps(document, allow_nan=False)
    except ValueError:
        raise CalibrationFitFailed(NOT_FINITE_FIT) from None
    return {"document": document, "runs": int(report.get("runs", 0)), "loo_mape": float(error)}


def ensure_default_calibration() -> str:
    """Bootstrap loader: store the shipped calibration as the single ``is_default`` row (idempotent)."""
    shipped = calibrate.load_default()
    document = shipped.to_dict()
    current = CalibrationRow.objects.filter(is_default=True).first()
    if current is not None and current.document == document and current.name == shipped.name:
        return f"default calibration {shipped.name!r} already loaded ({current.runs} runs)"
    with transaction.atomic():
        row, created = CalibrationRow.objects.update_or_create(
            is_default=True, defaults={"owner": None, "name": shipped.name, **_row_fields(document)}
        )
    verb = "loaded" if created else "updated"
    how = calibrate.held_out_name(document.get("report") or {})
    return f"default calibration {row.name!r} {verb} ({row.runs} runs, {how} MAPE {row.loo_mape:.1%})"


def _clean_name(name: str) -> str:
    try:
        return clean_name(name, max_length=NAME_MAX_LENGTH)
    except ValueError as error:
        raise CalibrationNameError(f"name: {error}") from None


def _unused_name(*, owner: User | None, name: str, replace: bool) -> str:
    cleaned = _clean_name(name)
    # The shipped default's name means the default everywhere (--calibration, the list): a second calibration of
    # that name was listed beside it and never reached.
    if cleaned.casefold() == calibrate.DEFAULT_NAME.casefold():
        raise CalibrationNameError(
            f"name: {cleaned!r} is reserved for the shipped default calibration; choose another name"
        )
    existing = CalibrationRow.objects.filter(owner=owner, name=cleaned, is_default=False)
    if existing.exists() and not replace:
        raise CalibrationNameTaken(cleaned)
    return cleaned


def _store(*, owner: User | None, name: str, fields: dict[str, Any], replace: bool) -> CalibrationRow:
    """Insert, or with ``replace`` overwrite the owner's calibration of that name (same id: whoever activated it now
    predicts with the new fit), stamping ``updated_at`` so that the list and page say it changed, in one
    transaction."""
    try:
        with transaction.atomic():
            row = CalibrationRow.objects.filter(owner=owner, name=name, is_default=False).first() if replace else None
            if row is not None:
                for key, value in {**fields, "updated_at": timezone.now()}.items():
                    setattr(row, key, value)
                row.save(update_fields=[*fields, "updated_at"])
                return row
            return CalibrationRow.objects.create(owner=owner, name=name, **fields)
    except IntegrityError:  # a concurrent request took the name between the check and the insert
        raise CalibrationNameError(f"name: {name!r} is already used; choose another name") from None


def _fitted_fields(runs: Sequence[ProfiledRun], name: str) -> dict[str, Any]:
    fitted = calibrate.fit(runs, name=name, prior=calibrate.load_default())
    return {**_row_fields(fitted.to_dict()), "state": READY, "error": "", "pending_runs": None}


def _amount(value: float) -> str:
    """A throughput for a message: grouped digits, or 3 significant ones when it is beyond any real job (a step time
    of 1e-300 s printed a 300-digit number)."""
    if not math.isfinite(value):
        return "too many to count"
    return f"{value:,.0f}" if abs(value) < 1e9 else f"{value:.3g}"


def _share_of_peak(value: float) -> str:
    return f"{value:.0%}" if value < 100 else "far above 100%"


def _measures_disagree(run: ProfiledRun) -> RowError | None:
    if run.tokens_per_s is None or run.step_time_s is None:
        return None
    from_step = run.global_batch * run.seq_len / run.step_time_s
    if abs(from_step / run.tokens_per_s - 1.0) <= MEASURES_AGREE_WITHIN:
        return None
    return RowError(
        run.row,
        "step_time_s",
        f"{run.step_time_s:g} s per step of global_batch x seq_len = {run.global_batch * run.seq_len:,} tokens is "
        f"{_amount(from_step)} tokens/s, but tokens_per_s is {_amount(run.tokens_per_s)}; they must agree within "
        f"{MEASURES_AGREE_WITHIN:.0%} (or give only one of them)",
    )


def check_measured_runs(*, runs: Sequence[ProfiledRun]) -> None:
    """RunValidationError naming each run whose measurement cannot be true (``measurement_errors``)."""
    errors = measurement_errors(runs=runs)
    if errors:
        raise RunValidationError(errors)


def with_measurement_errors(error: RunValidationError) -> RunValidationError:
    """``error`` (rows that did not parse) with the ``measurement_errors`` of the rows that did, in row order: one
    answer names every bad row of an upload (an outsider fixed the parse errors, resubmitted, and only then heard of a
    throughput above the GPUs' peak two rows further down)."""
    found = measurement_errors(runs=error.runs)
    if not found:
        return error
    return RunValidationError(sorted([*error.errors, *found], key=lambda e: e.row), runs=error.runs)


def measurement_errors(*, runs: Sequence[ProfiledRun]) -> list[RowError]:
    """Each run whose measurement cannot be true: tokens_per_s and step_time_s that disagree, or a throughput above
    the GPUs' peak (MFU > MAX_MEASURED_MFU), in row order. Runs without a measurement are left to the fit, which
    names them."""
    errors = [error for error in map(_measures_disagree, runs) if error is not None]
    measured = [run for run in runs if run.measured_tokens_per_s is not None]
    if measured:
        tokens = np.array([run.measured_tokens_per_s for run in measured], dtype=np.float64)
        with np.errstate(over="ignore"):  # a step time of 1e-300 s overflows to inf: refused just below
            mfu = calibrate.measured_mfu(run_queries(measured), tokens)
        for run, throughput, value in zip(measured, tokens, mfu, strict=True):
            if value > MAX_MEASURED_MFU:
                column = "tokens_per_s" if run.tokens_per_s is not None else "step_time_s"
                errors.append(
                    RowError(
                        run.row,
                        column,
                        f"{_amount(throughput)} tokens/s on {run.num_gpus} {run.gpu} GPU(s) is "
                        f"{_share_of_peak(value)} of their {run.precision} peak (model FLOPs of a dense "
                        f"{run.params_b:g}B model); "
                        "above 100% is impossible: tokens_per_s is the whole job's tokens per second, step_time_s "
                        "the seconds per optimizer step of global_batch sequences",
                    )
                )
    return sorted(errors, key=lambda e: e.row)


def calibration_create(
    *,
    owner: User | None,
    name: str,
    runs: Sequence[ProfiledRun],
    replace: bool = False,
) -> CalibrationRow:
    """Fit ``runs`` (regularised toward the shipped default, so a few runs adjust rather than overfit) and store it.

    ``owner`` None stores a calibration shared by everyone (the ``calibrate`` command). A name already used by the
    same owner raises CalibrationNameTaken unless ``replace``, which overwrites it in place and dates it
    (``updated_at``). Invalid runs raise estimator's RunValidationError, and
    so do measurements that cannot be true (``check_measured_runs``); a fit with no finite error raises
    CalibrationFitFailed (nothing stored)."""
    check_measured_runs(runs=runs)
    cleaned = _unused_name(owner=owner, name=name, replace=replace)
    return _store(owner=owner, name=cleaned, fields=_fitted_fields(runs, cleaned), replace=replace)


def calibration_submit(*, owner: User, name: str, runs: Sequence[ProfiledRun]) -> CalibrationRow:
    """An upload: up to CALIBRATION_INLINE_MAX_RUNS runs are fitted now (state ready); more are stored with their
    validated runs and fitted by the ``fit_calibration`` task (state pending; in the embedded mode the task runs
    in-process, so the row comes back ready, or CalibrationFitFailed, with nothing stored, when the runs could not be
    fitted). QueueUnavailable (nothing stored) when the queue does not answer; FitOverBudget or TooManyQueuedFits
    (nothing stored) from check_fit_can_be_queued."""
    check_measured_runs(runs=runs)
    if len(runs) <= settings.CALIBRATION_INLINE_MAX_RUNS:
        return calibration_create(owner=owner, name=name, runs=runs)
    check_fit_can_be_queued(owner=owner, runs=len(runs))
    # By name: the task module imports these services, so importing it here would make a cycle.
    fit_calibration = current_app.tasks[FIT_TASK]

    cleaned = _unused_name(owner=owner, name=name, replace=False)
    pending = {
        "document": {},
        "runs": len(runs),
        "loo_mape": None,  # no held-out error until there is a fit
        "state": PENDING,
        "error": "",
        "pending_runs": [dict(run.cells) for run in runs],
    }
    row = _store(owner=owner, name=cleaned, fields=pending, replace=False)
    try:
        result = enqueue(fit_calibration, row.pk, owner=owner)
    except QueueUnavailable:
        row.delete()
        raise
    CalibrationRow.objects.filter(pk=row.pk, state__in=[PENDING, FITTING]).update(task_id=result.id)
    row.refresh_from_db()
    if row.state == FAILED:  # fitted in-process (the embedded mode) and the runs could not be fitted
        row.delete()
        raise CalibrationFitFailed(row.error)
    return row


def check_fit_can_be_queued(*, owner: User, runs: int) -> None:
    """Refuse a queued fit that would run inside the request over CALIBRATION_IN_PROCESS_MAX_RUNS runs
    (FitOverBudget), or one more fit for an owner who has CALIBRATION_MAX_QUEUED_FITS waiting or running
    (TooManyQueuedFits)."""
    limit = settings.CALIBRATION_IN_PROCESS_MAX_RUNS
    if runs_in_process() and runs > limit:
        raise FitOverBudget(runs=runs, limit=limit)
    waiting = CalibrationRow.objects.filter(owner=owner, state__in=[PENDING, FITTING]).count()
    if waiting >= settings.CALIBRATION_MAX_QUEUED_FITS:
        raise TooManyQueuedFits(waiting=waiting, limit=settings.CALIBRATION_MAX_QUEUED_FITS)


def calibration_fit_pending(*, calibration_id: int) -> dict[str, Any]:
    """Fit a pending calibration from its stored runs (the task's body). Idempotent: a ready or missing row is left
    alone, a redelivered task refits from the same runs. A fit that cannot run (too few or unusable runs) marks the
    row failed with the reason; the row is never left half-written."""
    claimed = CalibrationRow.objects.filter(pk=calibration_id, state__in=[PENDING, FITTING, FAILED]).update(
        state=FITTING
    )
    row = CalibrationRow.objects.filter(pk=calibration_id).first()
    if not claimed or row is None:
        return {"calibration_id": calibration_id, "state": row.state if row else "missing"}
    try:
        fields = _fitted_fields(runs_from_records(row.pending_runs or []), row.name)
    except RunValidationError as error:
        fields = {"state": FAILED, "error": str(error), "loo_mape": None}
    except CalibrationFitFailed as error:
        fields = {"state": FAILED, "error": error.reason, "loo_mape": None}
    except Exception:
        logger.exception("fitting calibration %s failed", calibration_id)
        fields = {"state": FAILED, "error": "the fit failed unexpectedly; it has been logged", "loo_mape": None}
    CalibrationRow.objects.filter(pk=calibration_id).update(**fields)
    return {"calibration_id": calibration_id, "state": fields["state"], "error": fields.get("error", "")}


# Why a calibration that is not ready cannot be activated, by state (the state labels read "'x' is fit failed").
_NOT_READY = {
    PENDING: "cannot be activated yet: it is queued for fitting",
    FITTING: "cannot be activated yet: it is still fitting",
    FAILED: "cannot be activated: its fit failed",
}


def calibration_activate(*, user: User, calibration: CalibrationRow) -> None:
    """Make ``calibration`` (the user's own, a shared one or the default) the one the user's predictions use."""
    if calibration.owner_id is not None and calibration.owner_id != user.pk:
        raise CalibrationNotAvailable("calibration: not found")
    if calibration.state != READY:
        raise CalibrationNotReady(f"calibration: {calibration.name!r} {_NOT_READY[calibration.state]}")
    ActiveCalibration.objects.update_or_create(user=user, defaults={"calibration": calibration})


def default_calibration_row() -> CalibrationRow:
    """The ``is_default`` row, loading the shipped calibration first if bootstrap has not run yet."""
    row = CalibrationRow.objects.filter(is_default=True).first()
    if row is None:
        ensure_default_calibration()
        row = CalibrationRow.objects.get(is_default=True)
    return row


def calibrations_visible_to(*, user: User) -> QuerySet[CalibrationRow]:
    """The calibrations ``user`` may see and use: their own and the shared ones (owner null: the default, and those
    ``manage.py calibrate`` stores without --owner), the default first, then newest first."""
    return CalibrationRow.objects.filter(Q(owner=user) | Q(owner__isnull=True)).order_by(
        "-is_default", "-created_at", "-id"
    )


def calibration_visible_to(*, user: User, calibration_id: int) -> CalibrationRow:
    """Raises Calibration.DoesNotExist for a missing id and for another user's calibration alike."""
    return calibrations_visible_to(user=user).get(pk=calibration_id)


def active_calibration_id(*, user: User) -> int:
    """The id of the calibration ``user`` made active, else the default's."""
    active = ActiveCalibration.objects.filter(user=user).values_list("calibration_id", flat=True).first()
    return active if active is not None else default_calibration_row().pk


def calibration_for_user(*, user: User | AnonymousUser | None) -> tuple[CalibrationRow, calibrate.Calibration]:
    """The user's active calibration (row and parsed), else the default; anonymous or None users get the default."""
    row: CalibrationRow | None = None
    if user is not None and user.is_authenticated:
        active = ActiveCalibration.objects.select_related("calibration").filter(user=user).first()
        row = active.calibration if active is not None else None
    if row is None or row.state != READY:
        row = default_calibration_row()
    return row, calibrate.Calibration.from_dict(row.document)


def held_out_accuracy(*, row: CalibrationRow) -> dict[str, Any]:
    """The held-out error a scenario naming no software stack is judged by, as its Advice's calibration carries it and
    the planner, the PDF and the workbook print it: ``held_out`` (the method: leave-one-stack-out for the shipped
    calibration), ``held_out_median_ape`` and ``baseline_held_out_median_ape`` (a constant-MFU guess held out the same
    way), fractions; each null where the fit has no such figure or is not ready. An outside tester read 14.6% there
    and 8.2% (the leave-one-out mean, ``loo_mape``) on the calibrations page and API, unlabelled as different."""
    empty: dict[str, Any] = {"held_out": None, "held_out_median_ape": None, "baseline_held_out_median_ape": None}
    if row.state != READY or not row.document:
        return empty
    figures = calibrate.Calibration.from_dict(row.document).held_out_accuracy(stack=None, known_stack=False)
    return {key: figures.get(key) for key in empty}


def calibration_named(*, name: str, owner: User | None = None) -> CalibrationRow:
    """The calibration called ``name`` for the commands: the owner's own first, then a shared one (owner null,
    the default included), then the only user calibration of that name; CalibrationNotAvailable says why not."""
    rows = list(CalibrationRow.objects.filter(name=name.strip()).select_related("owner").order_by("pk"))
    rows = [row for row in rows if row.state == READY]
    for wanted in (
        [row for row in rows if owner is not None and row.owner_id == owner.pk],
        [row for row in rows if row.owner_id is None],
    ):
        if wanted:
            return wanted[0]
    if len(rows) == 1 and owner is None:
        return rows[0]
    if not rows:
        known = ", ".join(sorted(CalibrationRow.objects.values_list("name", flat=True).distinct())[:20])
        raise CalibrationNotAvailable(f"no calibration named {name!r}; known: {known}")
    owners = ", ".join(sorted({row.owner.get_username() for row in rows if row.owner is not None}))
    raise CalibrationNotAvailable(f"{len(rows)} calibrations are named {name!r} (owners: {owners}); pass --owner")


def owns_calibration_task(*, user: User | AnonymousUser, task_id: str) -> bool:
    """Whether ``task_id`` fits one of ``user``'s calibrations (settings.TASK_VIEWERS: they may poll it)."""
    if isinstance(user, AnonymousUser):
        return False
    return CalibrationRow.objects.filter(owner=user, task_id=task_id).exists()
