"""Calibration fits off the request (issues 18.1 and 14): uploads over CALIBRATION_INLINE_MAX_RUNS are
validated synchronously, stored, and fitted by the idempotent `fit_calibration(calibration_id)` task.
The API answers 202 with a task to poll (201 when the fit already finished: small uploads, or the
embedded mode where tasks run in-process); the pages show the state; a queue outage stores nothing."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from celery import current_app as app
from celery.result import AsyncResult
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from advisor import calibrations
from advisor.models import Calibration
from advisor.tasks import fit_calibration
from core.queueing import QueueUnavailable, record_issued
from tests.hardening.test_upload_limits import runs_csv

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def large(settings) -> str:  # type: ignore[no-untyped-def]
    """An upload over the inline limit (kept small so the fit stays quick)."""
    settings.CALIBRATION_INLINE_MAX_RUNS = 3
    return runs_csv(6)


@pytest.fixture
def queued(monkeypatch) -> list[tuple[Any, ...]]:  # type: ignore[no-untyped-def]
    """A broker that takes the task and a worker that has not run it yet."""
    sent: list[tuple[Any, ...]] = []

    def enqueue(task: Any, *args: Any, owner: Any = None) -> AsyncResult:
        sent.append((task.name, *args))
        result = AsyncResult(str(uuid.uuid4()), app=app)
        record_issued(task_id=result.id, kind=task.name, owner=owner)  # as core.queueing.enqueue does
        return result

    monkeypatch.setattr(calibrations, "enqueue", enqueue)
    monkeypatch.setattr("advisor.fit_recovery.enqueue", enqueue)
    return sent


def test_a_large_upload_answers_202_with_a_task_and_the_worker_fits_it(api, large, queued, user, other_user) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 202, response.content[:300]
    body = response.json()
    assert body["state"] == "pending" and body["runs"] == 6
    row = Calibration.objects.get(pk=body["id"])
    assert queued == [("advisor.fit_calibration", row.pk)]
    assert row.task_id == body["task_id"] and body["status_url"].endswith(f"/api/v1/tasks/{row.task_id}")
    assert len(row.pending_runs) == 6
    # The owner may poll the task; another user may not (the same 403 as for any task that is not theirs).
    assert api.get(body["status_url"]).json()["status"] == "PENDING"
    other = APIClient()
    other.force_authenticate(other_user)
    assert other.get(body["status_url"]).status_code == 403
    # Not usable until fitted.
    assert api.post(f"/api/v1/calibrations/{row.pk}/activate").status_code == 409
    page = _web(user).get(f"/calibrations/{row.pk}/").content.decode()
    assert 'data-state="pending"' in page and 'http-equiv="refresh"' in page

    result = fit_calibration(row.pk)
    assert result == {"calibration_id": row.pk, "state": "ready", "error": ""}
    row.refresh_from_db()
    assert row.state == "ready" and row.pending_runs is None and row.document["params"]
    document = row.document
    assert fit_calibration(row.pk)["state"] == "ready"  # idempotent: a redelivered task changes nothing
    row.refresh_from_db()
    assert row.document == document
    assert api.post(f"/api/v1/calibrations/{row.pk}/activate").status_code == 200
    assert 'data-testid="fit-summary"' in _web(user).get(f"/calibrations/{row.pk}/").content.decode()


def test_in_the_embedded_mode_a_large_upload_is_fitted_in_process(api, large) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 201, response.content[:300]
    assert response.json()["state"] == "ready"
    assert Calibration.objects.get(name="big").state == "ready"


def test_small_uploads_are_fitted_in_the_request(api, settings, queued) -> None:  # type: ignore[no-untyped-def]
    settings.CALIBRATION_INLINE_MAX_RUNS = 24
    response = api.post("/api/v1/calibrations?name=small", data=runs_csv(6), content_type="text/csv")
    assert response.status_code == 201
    assert queued == []


def test_with_the_queue_down_a_large_upload_answers_503_and_stores_nothing(api, large, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    def down(*args: Any, **kwargs: Any) -> None:
        raise QueueUnavailable(OSError("connection refused"))

    monkeypatch.setattr(calibrations, "enqueue", down)
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json") and int(response["Retry-After"]) > 0
    assert not Calibration.objects.filter(is_default=False).exists()


def test_runs_that_cannot_be_fitted_mark_the_calibration_failed_with_the_reason(api, large, queued) -> None:  # type: ignore[no-untyped-def]
    # Runs without a measured throughput are refused at the upload now (named per run); runs stored pending that
    # cannot be fitted (stored by an older version that took them) still end failed with the reason.
    response = api.post("/api/v1/calibrations?name=unmeasured", data=large, content_type="text/csv")
    assert response.status_code == 202, response.content[:300]
    row = Calibration.objects.get(name="unmeasured")
    unmeasured = [{**cells, "tokens_per_s": "", "step_time_s": ""} for cells in row.pending_runs]
    Calibration.objects.filter(pk=row.pk).update(pending_runs=unmeasured)
    assert fit_calibration(row.pk)["state"] == "failed"
    row.refresh_from_db()
    assert row.state == "failed" and "tokens_per_s" in row.error
    assert api.get(f"/api/v1/calibrations/{row.pk}").json()["error"] == row.error


def test_the_page_upload_of_a_large_file_shows_the_fit_in_progress(user, large, queued) -> None:  # type: ignore[no-untyped-def]
    web = _web(user)
    upload = SimpleUploadedFile("runs.csv", large.encode(), content_type="text/csv")
    response = web.post("/calibrations/", {"name": "from the page", "runs": upload}, follow=True)
    assert response.status_code == 200
    page = response.content.decode()
    assert "is being fitted" in page and 'data-state="pending"' in page
    listing = web.get("/calibrations/").content.decode()
    assert "Queued for fitting" in listing


def _web(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_the_report_page_renders_the_refinement_fields_it_finds(user) -> None:  # type: ignore[no-untyped-def]
    """Scaling efficiency by GPU count, the residual trend, moved and kept parameters, coverage: each shown when the
    stored report has it (and the page still renders without them, as for the shipped default)."""
    default = calibrations.default_calibration_row()
    report = {
        **default.document["report"],
        "refines": default.name,
        "scaling_efficiency": [
            {
                "config_family": "1.3B ddp a100-80gb",
                "gpus": [1, 8, 32],
                "measured": [1, 0.9, 0.67],
                "predicted": [1, 0.92, 0.7],
            }
        ],
        "residual_trend_per_doubling": 0.06,
        "residual_trend_flagged": True,
        "moved": ["fabric_efficiency"],
        "kept_at_prior": {"overlap": "the runs do not identify it"},
        "parameters": [{"name": "fabric_efficiency", "value": 0.33, "prior": 0.8}],
        "coverage": {"num_gpus": [1, 32], "gpus": ["a100-80gb"]},
    }
    row = Calibration.objects.create(
        owner=user, name="refined", document={**default.document, "report": report}, runs=6, loo_mape=0.05
    )
    page = _web(user).get(f"/calibrations/{row.pk}/").content.decode()
    assert 'data-testid="scaling-efficiency"' in page and "67.0%" in page and "70.0%" in page
    # The same curves drawn: measured solid, predicted dashed, on a log2 GPU axis with the three counts as ticks.
    chart = page.split('data-testid="chart-scaling-efficiency"', 1)[1].split("</figure>", 1)[0]
    assert "<svg" in chart and 'stroke-dasharray="5 4"' in chart
    assert all(f">{gpus}<" in chart for gpus in (1, 8, 32))
    assert 'data-testid="residual-trend-flag"' in page
    assert "Moved by your runs: fabric_efficiency" in page and "overlap kept at the prior" in page
    assert 'data-testid="parameters"' in page and "0.33" in page
    assert "1 \u2013 32" in page and "a100-80gb" in page
    plain = _web(user).get(f"/calibrations/{default.pk}/").content.decode()
    assert 'data-testid="fit-summary"' in plain and 'data-testid="residual-trend-flag"' not in plain


def test_a_fit_whose_queued_task_was_lost_shows_stalled_and_beat_queues_it_again(  # type: ignore[no-untyped-def]
    api, large, queued, settings
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from advisor.tasks import requeue_stalled_fits
    from core.models import IssuedTask

    body = api.post("/api/v1/calibrations?name=lost", data=large, content_type="text/csv").json()
    assert body["state"] == "pending"
    assert requeue_stalled_fits() == []  # queued a moment ago: not stalled
    # The broker lost the message (a Redis flush); an hour later nothing has fitted it.
    hour_ago = timezone.now() - timedelta(seconds=settings.CALIBRATION_FIT_STALLED_AFTER_S + 1)
    Calibration.objects.filter(pk=body["id"]).update(created_at=hour_ago)
    IssuedTask.objects.filter(pk=body["task_id"]).update(created_at=hour_ago)
    assert api.get(f"/api/v1/calibrations/{body['id']}").json()["state"] == "stalled"
    assert api.post(f"/api/v1/calibrations/{body['id']}/activate").status_code == 409

    assert requeue_stalled_fits() == [body["id"]]
    row = Calibration.objects.get(pk=body["id"])
    assert queued[-1] == ("advisor.fit_calibration", row.pk) and row.task_id != body["task_id"]
    assert api.get(f"/api/v1/calibrations/{row.pk}").json()["state"] == "pending"  # queued again just now
    assert requeue_stalled_fits() == []
    fit_calibration(row.pk)
    assert api.get(f"/api/v1/calibrations/{row.pk}").json()["state"] == "ready"
    assert any(entry["task"] == "advisor.requeue_stalled_fits" for entry in settings.CELERY_BEAT_SCHEDULE.values())


@pytest.fixture
def unfittable(monkeypatch) -> str:  # type: ignore[no-untyped-def]
    """The fit of stored runs fails (in-process, in the embedded mode): the reason the task stores on the row."""
    from estimator.runs import RowError, RunValidationError

    def cannot_fit(*args: Any, **kwargs: Any) -> None:
        raise RunValidationError([RowError(2, "tokens_per_s", "no family of these runs can be fitted")])

    monkeypatch.setattr(calibrations, "_fitted_fields", cannot_fit)
    return "no family of these runs can be fitted"


def test_a_large_upload_whose_in_process_fit_fails_is_refused_by_the_api_and_nothing_is_kept(
    api, large, unfittable
) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 400, response.content[:300]
    (error,) = response.json()["errors"]
    assert error["pointer"] == "#/runs" and error["code"] == "cannot_fit" and unfittable in error["detail"]
    assert not Calibration.objects.filter(is_default=False).exists()


def test_the_page_upload_whose_in_process_fit_fails_shows_why_on_the_form_and_keeps_nothing(
    user, large, unfittable
) -> None:  # type: ignore[no-untyped-def]
    # The page said "is being fitted" and kept a failed row, where the API refused the same upload (400 cannot_fit).
    upload = SimpleUploadedFile("runs.csv", large.encode(), content_type="text/csv")
    response = _web(user).post("/calibrations/", {"name": "from the page", "runs": upload})
    assert response.status_code == 400
    page = response.content.decode()
    assert "is being fitted" not in page
    (error,) = response.context["form"].errors["runs"]
    assert error.startswith("The runs could not be fitted: ") and unfittable in error
    assert not Calibration.objects.filter(is_default=False).exists()


@pytest.fixture
def overflowing_fit(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A fit whose error figures overflowed (a measured 1e-305 tokens/s did: the report held None, and storing it
    was float(None), a 500 on the API and the page)."""
    from estimator import calibrate

    real_fit = calibrate.fit

    class Overflowed:
        def __init__(self, fitted: Any) -> None:
            self.fitted = fitted

        def to_dict(self) -> dict[str, Any]:
            document = self.fitted.to_dict()
            report = {**document["report"], "loo_mape": None, "in_sample_mape": float("nan")}
            return {**document, "report": report}

    monkeypatch.setattr(calibrate, "fit", lambda *args, **kwargs: Overflowed(real_fit(*args, **kwargs)))


def test_a_fit_with_no_finite_error_is_refused_not_a_500(api, overflowing_fit) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/calibrations?name=overflow", data=runs_csv(3), content_type="text/csv")
    assert response.status_code == 400, response.content[:300]
    (error,) = response.json()["errors"]
    assert error["pointer"] == "#/runs" and error["code"] == "cannot_fit" and "error" in error["detail"]
    assert not Calibration.objects.filter(is_default=False).exists()


def test_a_queued_fit_with_no_finite_error_ends_failed_with_the_reason(api, large, queued, overflowing_fit) -> None:  # type: ignore[no-untyped-def]
    response = api.post("/api/v1/calibrations?name=overflow", data=large, content_type="text/csv")
    assert response.status_code == 202, response.content[:300]
    row = Calibration.objects.get(name="overflow")
    assert fit_calibration(row.pk)["state"] == "failed"
    row.refresh_from_db()
    assert row.state == "failed" and "not a finite number" in row.error


def test_a_measured_rate_below_one_token_a_second_is_refused_naming_row_and_column(api) -> None:  # type: ignore[no-untyped-def]
    text = runs_csv(3)
    header, first, *rest = text.splitlines()
    columns = header.split(",")
    cells = first.split(",")
    cells[columns.index("tokens_per_s")] = "1e-320"
    body = "\n".join([header, ",".join(cells), *rest]) + "\n"
    response = api.post("/api/v1/calibrations?name=tiny", data=body, content_type="text/csv")
    assert response.status_code == 400, response.content[:300]
    assert any("tokens_per_s" in str(error) and "1" in str(error) for error in response.json()["errors"])


def test_in_the_embedded_mode_an_upload_over_the_in_process_limit_is_413_and_nothing_is_kept(  # type: ignore[no-untyped-def]
    api, large, settings, user
) -> None:
    # An outsider's probe: without a task queue the fit ran inside the request, 64 s for 20,000 runs (the row
    # limit), 19 s for 5,000; a web worker held that long, by one request.
    settings.CALIBRATION_IN_PROCESS_MAX_RUNS = 5
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 413, response.content[:300]
    detail = response.json()["detail"]
    assert "CALIBRATION_IN_PROCESS_MAX_RUNS" in detail and "6 runs" in detail and "at most 5" in detail
    upload = SimpleUploadedFile("runs.csv", large.encode(), content_type="text/csv")
    page = _web(user).post("/calibrations/", {"name": "from the page", "runs": upload})
    assert page.status_code == 400 and "CALIBRATION_IN_PROCESS_MAX_RUNS" in page.content.decode()
    assert not Calibration.objects.filter(is_default=False).exists()


def test_with_a_queue_the_in_process_limit_does_not_apply(api, large, settings, queued) -> None:  # type: ignore[no-untyped-def]
    settings.CALIBRATION_IN_PROCESS_MAX_RUNS = 5
    app.conf.task_always_eager = False  # a broker and a worker: the fit leaves the request (conftest restores it)
    response = api.post("/api/v1/calibrations?name=big", data=large, content_type="text/csv")
    assert response.status_code == 202, response.content[:300]


def test_a_user_with_the_most_fits_waiting_gets_429_and_nothing_is_kept(api, large, settings, queued, user) -> None:  # type: ignore[no-untyped-def]
    settings.CALIBRATION_MAX_QUEUED_FITS = 2
    for name in ("one", "two"):
        assert api.post(f"/api/v1/calibrations?name={name}", data=large, content_type="text/csv").status_code == 202
    response = api.post("/api/v1/calibrations?name=three", data=large, content_type="text/csv")
    assert response.status_code == 429, response.content[:300]
    assert int(response["Retry-After"]) > 0 and "CALIBRATION_MAX_QUEUED_FITS" in response.json()["detail"]
    upload = SimpleUploadedFile("runs.csv", large.encode(), content_type="text/csv")
    page = _web(user).post("/calibrations/", {"name": "from the page", "runs": upload})
    assert page.status_code == 400 and "at most 2 at once" in page.content.decode()
    assert sorted(Calibration.objects.filter(is_default=False).values_list("name", flat=True)) == ["one", "two"]
    # A finished fit frees its place.
    fit_calibration(Calibration.objects.get(name="one").pk)
    assert api.post("/api/v1/calibrations?name=three", data=large, content_type="text/csv").status_code == 202
