"""Every upload path refuses bodies over DATA_UPLOAD_MAX_MEMORY_SIZE and files over MAX_UPLOAD_ROWS
rows, with a message saying the limit: the calibration upload page, POST /api/v1/calibrations and
POST /api/v1/estimate (CSV and JSON bodies), and scenario JSON bodies."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from rest_framework.test import APIClient

from advisor.models import Calibration

PUBLIC_RUNS = Path(__file__).resolve().parents[2] / "estimator" / "data" / "public_runs.csv"
ROWS_LIMIT = 5
BYTES_LIMIT = 4096


def runs_csv(rows: int) -> str:
    with PUBLIC_RUNS.open(newline="") as handle:
        reader = csv.DictReader(handle)
        fieldnames = reader.fieldnames or []
        records = [row for _, row in zip(range(rows), reader, strict=False)]
    assert len(records) == rows, "public_runs.csv has too few rows for this test"
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=fieldnames, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    return out.getvalue()


@pytest.fixture
def limits(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MAX_UPLOAD_ROWS = ROWS_LIMIT
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = BYTES_LIMIT
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = BYTES_LIMIT


@pytest.fixture
def api(user) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.force_authenticate(user)
    return client


def _padded_csv() -> str:
    """Few rows, many bytes: a long ignored extra column."""
    text = runs_csv(2)
    header, *rows = text.splitlines()
    return "\n".join([header + ",note", *(row + "," + "x" * BYTES_LIMIT for row in rows)]) + "\n"


@pytest.mark.django_db
def test_calibration_page_refuses_a_file_over_the_size_limit(limits, user) -> None:  # type: ignore[no-untyped-def]
    web = Client()
    web.force_login(user)
    big = SimpleUploadedFile("runs.csv", _padded_csv().encode(), content_type="text/csv")
    response = web.post("/calibrations/", {"name": "too big", "runs": big})
    assert response.status_code == 400
    assert f"The file is larger than {BYTES_LIMIT // 1024} KiB." in response.content.decode()
    assert not Calibration.objects.filter(owner=user).exists()


@pytest.mark.django_db
def test_calibration_page_refuses_a_file_over_the_row_limit(limits, settings, user) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
    web = Client()
    web.force_login(user)
    many = SimpleUploadedFile("runs.csv", runs_csv(ROWS_LIMIT + 1).encode(), content_type="text/csv")
    response = web.post("/calibrations/", {"name": "too many", "runs": many})
    assert response.status_code == 400
    assert f"At most {ROWS_LIMIT} rows per upload." in response.content.decode()
    assert not Calibration.objects.filter(owner=user).exists()


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/calibrations?name=x", "/api/v1/estimate"])
def test_api_refuses_a_csv_body_over_the_size_limit(limits, api, url: str) -> None:  # type: ignore[no-untyped-def]
    response = api.generic("POST", url, _padded_csv(), content_type="text/csv")
    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/problem+json")
    assert f"larger than {BYTES_LIMIT} bytes" in response.json()["detail"]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/calibrations?name=x", "/api/v1/estimate"])
def test_api_refuses_a_csv_body_over_the_row_limit(limits, settings, api, url: str) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
    response = api.generic("POST", url, runs_csv(ROWS_LIMIT + 3), content_type="text/csv")
    assert response.status_code == 400, response.content[:300]
    errors = response.json()["errors"]
    assert errors[0]["pointer"] == "#/csv"
    assert errors[0]["detail"] == f"at most {ROWS_LIMIT} rows"


@pytest.mark.django_db
def test_api_refuses_a_json_runs_list_over_the_row_limit(limits, settings, api) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
    runs = [dict(row) for row in csv.DictReader(io.StringIO(runs_csv(ROWS_LIMIT + 1)))]
    response = api.post("/api/v1/estimate", {"runs": runs}, format="json")
    assert response.status_code == 400
    expected = {"pointer": "#/runs", "detail": f"at most {ROWS_LIMIT} rows", "code": "too_many"}
    assert response.json()["errors"][0] == expected


@pytest.mark.django_db
def test_a_row_count_at_the_limit_is_accepted(limits, settings, api) -> None:  # type: ignore[no-untyped-def]
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
    response = api.generic("POST", "/api/v1/estimate", runs_csv(ROWS_LIMIT), content_type="text/csv")
    assert response.status_code == 200, response.content[:300]


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/api/v1/advice", "/api/v1/scenarios"])
def test_api_refuses_a_json_body_over_the_size_limit(limits, api, url: str) -> None:  # type: ignore[no-untyped-def]
    body = '{"name": "' + "x" * (2 * BYTES_LIMIT) + '"}'
    response = api.generic("POST", url, body, content_type="application/json")
    assert response.status_code == 413
    assert f"larger than {BYTES_LIMIT} bytes" in response.json()["detail"]


@pytest.mark.django_db
def test_web_forms_refuse_a_body_over_the_size_limit(limits, user) -> None:  # type: ignore[no-untyped-def]
    web = Client()
    web.force_login(user)
    response = web.post("/plan/results/", {"name": "x" * (2 * BYTES_LIMIT)})
    # Django's RequestDataTooBig: a 400, never a worker parsing an unbounded form.
    assert response.status_code == 400
