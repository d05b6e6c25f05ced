"""Without the system libraries WeasyPrint loads (Pango), the PDF links answer 503 saying what to
install; every other page keeps working."""

from __future__ import annotations

import importlib.abc
import sys

import pytest
from django.test import Client
from rest_framework.test import APIClient

from advisor import scenarios as store
from tests.api.examples import scenario


class _NoPango(importlib.abc.MetaPathFinder):
    """What importing WeasyPrint does on a machine without Pango: cffi's dlopen raises OSError."""

    def find_spec(self, name, path, target=None):  # type: ignore[no-untyped-def]
        if name == "weasyprint" or name.startswith("weasyprint."):
            raise OSError("cannot load library 'libpango-1.0-0': libpango-1.0-0: cannot open shared object file")
        return None


@pytest.fixture
def no_pango(monkeypatch):  # type: ignore[no-untyped-def]
    for name in [name for name in sys.modules if name == "weasyprint" or name.startswith("weasyprint.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_NoPango(), *sys.meta_path])


@pytest.mark.django_db
def test_without_pango_the_pdf_answers_503_naming_the_library(no_pango, user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="no pango", document=scenario())
    api = APIClient()
    api.force_authenticate(user)
    response = api.get(f"/api/v1/scenarios/{saved.pk}/proposal.pdf")
    assert response.status_code == 503
    assert response["Content-Type"].startswith("application/problem+json")
    assert "libpango-1.0-0" in response.json()["detail"]

    web = Client()
    web.force_login(user)
    page = web.get(f"/scenarios/{saved.pk}/proposal.pdf")
    assert page.status_code == 503
    assert "WeasyPrint needs the Pango library" in page.content.decode()
    # The rest of the app does not need Pango.
    assert api.get(f"/api/v1/scenarios/{saved.pk}/advice").status_code == 200
