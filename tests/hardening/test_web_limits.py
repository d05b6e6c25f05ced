"""Web pages under the API's limits and headers (issue 18): PDFs and the planner fragment throttled
per client before any work with the API's scope rates; Content-Security-Policy on every page;
`Cache-Control: no-store` on share and scenario pages; no `Server: gunicorn`."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from advisor import scenarios as store
from advisor.web import forms
from tests.api.examples import scenario

pytestmark = pytest.mark.django_db


@pytest.fixture
def rates(settings) -> None:  # type: ignore[no-untyped-def]
    framework = dict(settings.REST_FRAMEWORK)
    framework["DEFAULT_THROTTLE_RATES"] = {**framework["DEFAULT_THROTTLE_RATES"], "pdf": "2/hour", "advice": "3/hour"}
    settings.REST_FRAMEWORK = framework


@pytest.fixture
def pdf_calls(monkeypatch) -> list[Any]:  # type: ignore[no-untyped-def]
    """Counts the PDFs actually rendered (each one stands for ~2 s of CPU)."""
    calls: list[Any] = []

    def render(**kwargs: Any) -> bytes:
        calls.append(kwargs)
        return b"%PDF-1.7 stub"

    monkeypatch.setattr("advisor.web.views.render_proposal_pdf", render)
    return calls


def _assert_throttled(response: Any) -> None:
    assert response.status_code == 429, response.status_code
    assert int(response["Retry-After"]) > 0
    assert "Too many requests" in response.content.decode()


def test_web_pdfs_share_the_api_pdf_rate_per_client_and_refuse_before_rendering(rates, pdf_calls, user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="pdf", document=scenario())
    link = store.share_link_create(scenario=saved)
    owner = Client()
    owner.force_login(user)
    assert owner.get(f"/scenarios/{saved.pk}/proposal.pdf").status_code == 200
    assert owner.get(f"/scenarios/{saved.pk}/proposal.pdf").status_code == 200
    _assert_throttled(owner.get(f"/scenarios/{saved.pk}/proposal.pdf"))
    _assert_throttled(owner.post("/plan/proposal.pdf", dict(forms.preset_initial("7b-pretrain"))))
    assert len(pdf_calls) == 2
    # Another client (an anonymous visitor of the share link) has its own count.
    visitor = Client(REMOTE_ADDR="198.51.100.7")
    assert visitor.get(f"/s/{link.token}/proposal.pdf").status_code == 200
    assert len(pdf_calls) == 3


def test_the_planner_fragment_uses_the_advice_rate(rates) -> None:  # type: ignore[no-untyped-def]
    web = Client()
    form = dict(forms.preset_initial("7b-pretrain"))
    for _ in range(3):
        assert web.post("/plan/results/", form).status_code == 200
    _assert_throttled(web.post("/plan/results/", form))


# --- headers ----------------------------------------------------------------------------------------


def test_every_page_and_the_api_carry_the_content_security_policy(settings, user) -> None:  # type: ignore[no-untyped-def]
    web = Client()
    web.force_login(user)
    for path in ["/", "/plan/", "/prices/", "/calibrations/", "/scenarios/", "/api/docs/", "/api/v1/gpus", "/healthz"]:
        response = web.get(path)
        assert response.status_code == 200, path
        policy = response["Content-Security-Policy"]
        assert policy == settings.CONTENT_SECURITY_POLICY, path
        assert "script-src 'self';" in policy and "'unsafe-inline'" not in policy


def test_the_api_docs_page_has_no_inline_script_or_style() -> None:
    page = Client().get("/api/docs/").content.decode()
    assert "<style" not in page
    assert "<script>" not in page and "<script src=" in page


def test_share_and_scenario_pages_are_never_stored(user) -> None:  # type: ignore[no-untyped-def]
    saved = store.scenario_create(owner=user, name="private", document=scenario())
    link = store.share_link_create(scenario=saved)
    owner = Client()
    owner.force_login(user)
    for client, path in [
        (owner, "/scenarios/"),
        (owner, f"/scenarios/{saved.pk}/"),
        (Client(), f"/s/{link.token}/"),
    ]:
        response = client.get(path)
        assert response.status_code == 200, path
        assert "no-store" in response["Cache-Control"], path
    assert "no-store" not in Client().get("/prices/").get("Cache-Control", "")


def test_gunicorn_sends_no_server_header(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "DEBUG": "1",
        "DATABASE_URL": os.environ.get("DATABASE_URL", f"sqlite:///{tmp_path}/db.sqlite3"),
    }
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "advisor.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=root,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as response:
                    headers = response.headers
                break
            except urllib.error.HTTPError as error:  # a 503 (no database here) still carries the headers
                headers = error.headers
                break
            except OSError:
                assert server.poll() is None, server.stderr.read().decode() if server.stderr else ""
                assert time.monotonic() < deadline, "gunicorn did not start"
                time.sleep(0.3)
        assert headers.get("Server") is None, headers.get("Server")
        assert headers.get("Content-Security-Policy")
    finally:
        server.terminate()
        server.wait(timeout=30)
