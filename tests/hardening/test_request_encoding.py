"""Query strings and urlencoded forms whose bytes are not UTF-8: Django decodes them with errors="replace", so
`?name=%ED%A0%80` (an encoded lone surrogate) was stored as a calibration named '\ufffd\ufffd\ufffd' and a form's
name 'x\\xED\\xA0\\x80y' saved as 'x\ufffd\ufffd\ufffdy'. They answer 400 naming the parameter or field, as a JSON
body's bad character does (the hostile-input probe, finding 6)."""

from __future__ import annotations

import pytest
from django.test import Client

from advisor.models import Calibration, Scenario
from tests.api.conftest import assert_problem

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(user):  # type: ignore[no-untyped-def]
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


def test_a_query_parameter_that_is_not_utf8_is_a_400_naming_it(api) -> None:  # type: ignore[no-untyped-def]
    csv_body = "gpu,num_gpus,params_b,seq_len,global_batch,tokens_per_s\nh100-sxm,8,7,4096,8,30000\n"
    response = api.post("/api/v1/calibrations?name=%ED%A0%80", csv_body, content_type="text/csv")
    body = assert_problem(response, 400, "#/name")
    assert body["errors"][0]["parameter"] == "name"
    assert "must be valid UTF-8" in body["errors"][0]["detail"]
    assert not Calibration.objects.exists()
    # A bad name is named as the parameter, escaped.
    named = assert_problem(api.get("/api/v1/gpus?x%FF=1"), 400)
    assert named["errors"][0]["parameter"] == "x\\xff"


def test_a_form_field_that_is_not_utf8_is_a_400_naming_it(user) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    response = client.post(
        "/plan/save/", b"name=x%ED%A0%80y&scenario=%7B%7D", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 400
    text = response.content.decode()
    assert "name" in text and "must be valid UTF-8" in text
    assert not Scenario.objects.exists()


def test_valid_utf8_passes(user) -> None:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    assert client.get("/plan/?name=caf%C3%A9").status_code == 200
    response = client.post(
        "/accounts/login/", "username=caf%C3%A9&password=x", content_type="application/x-www-form-urlencoded"
    )
    assert response.status_code == 200
