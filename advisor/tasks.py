from __future__ import annotations

from celery import shared_task

from advisor.calibrations import calibration_fit_pending


@shared_task(name="advisor.ping")
def ping(payload: str) -> dict[str, str]:
    """Round trip used by health checks and the worker integration test."""
    return {"pong": payload}


@shared_task(name="advisor.fit_calibration")
def fit_calibration(calibration_id: int) -> dict[str, object]:
    """Fit an uploaded calibration off the request; idempotent (a redelivered task refits the same stored runs)."""
    return calibration_fit_pending(calibration_id=calibration_id)


@shared_task(name="advisor.requeue_stalled_fits")
def requeue_stalled_fits() -> list[int]:
    """Beat: queue again the calibration fits whose queued task was lost (advisor/fit_recovery.py)."""
    from advisor.fit_recovery import requeue_stalled_fits as requeue

    return requeue()
