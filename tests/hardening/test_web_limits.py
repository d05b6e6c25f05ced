"""Web pages under the API's limits and headers (issue 18): PDFs and the planner fragment throttled
per client before any work with the API's scope rates; Content-Security-Policy on every page;
`Cache-Control: no-store` on share and scenario pages; no `Server: gunicorn` from `make serve-prod`'s server."""

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


@pytest.fixture
def proposal_and_fleet(user):  # type: ignore[no-untyped-def]
    """One issued scenario proposal and one saved fleet of ``user``: (proposal id, fleet id)."""
    from advisor.fleet.store import fleet_create
    from advisor.proposals import issue_proposal
    from tests.advisor.fleet.figures import BASE_AND_WEEK

    saved = store.scenario_create(owner=user, name="private", document=scenario())
    proposal = issue_proposal(user=user, scenario_id=saved.pk)
    fleet = fleet_create(owner=user, name="done-when", document=BASE_AND_WEEK)
    return proposal.pk, fleet.pk


# A proposal holds the scenario's name, its document and the whole Advice; a fleet its jobs and plan. A reviewer:
# each of these answered without Cache-Control while the scenario reads said no-store.
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/proposals",
        "/api/v1/proposals/{proposal}",
        "/api/v1/proposals/{proposal}/proposal.xlsx",
        "/proposals/{proposal}/",
        "/api/v1/fleets",
        "/api/v1/fleets/{fleet}",
        "/fleet/?id={fleet}",
    ],
)
def test_proposal_and_fleet_reads_are_never_stored(user, proposal_and_fleet, path) -> None:  # type: ignore[no-untyped-def]
    proposal, fleet = proposal_and_fleet
    owner = Client()
    owner.force_login(user)
    response = owner.get(path.format(proposal=proposal, fleet=fleet))
    assert response.status_code == 200, path
    assert "no-store" in response.get("Cache-Control", ""), path


def test_production_server_does_not_name_its_software(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`make serve-prod`'s gunicorn (config/gunicorn.conf.py, ASGI worker) answers without `Server: gunicorn`."""
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
        "GUNICORN_WORKERS": "1",
    }
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "-c",
            str(root / "config" / "gunicorn.conf.py"),
            "--bind",
            f"127.0.0.1:{port}",
        ],
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
        assert "gunicorn" not in (headers.get("Server") or "").lower(), headers.get("Server")
        assert headers.get("Content-Security-Policy")
    finally:
        server.terminate()
        server.wait(timeout=30)


# --- the PDF printer's URL fetcher ------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "http://169.254.169.254/latest/meta-data/",
        "https://example.com/static/css/app.css",
        "https://proposal.invalid/etc/passwd",
        "https://proposal.invalid/static/../../advisor/settings.py",
        "https://proposal.invalid/static/%2e%2e/%2e%2e/advisor/settings.py",
        "https://proposal.invalid/static/css/no-such.css",
    ],
)
def test_the_pdf_url_fetcher_refuses_everything_but_static_files(url: str) -> None:
    from advisor.proposal import RefusedURL, static_file_for, static_only_fetcher

    with pytest.raises(RefusedURL):
        static_file_for(url)
    with pytest.raises(RefusedURL):
        static_only_fetcher().fetch(url)


def test_the_pdf_url_fetcher_serves_static_files() -> None:
    from advisor.proposal import PROPOSAL_BASE_URL, static_only_fetcher

    fetched = static_only_fetcher().fetch(PROPOSAL_BASE_URL + "static/css/app.css")
    assert fetched.content_type == "text/css" and b"svg.chart.history" in fetched.read()


def test_weasyprint_prints_with_the_fetcher_and_reads_no_file(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from weasyprint import HTML

    from advisor import proposal

    fetcher = proposal.static_only_fetcher()
    asked: list[str] = []
    original = type(fetcher).fetch

    def spy(self: Any, url: str, headers: Any = None) -> Any:
        asked.append(url)
        return original(self, url, headers)

    monkeypatch.setattr(type(fetcher), "fetch", spy)
    html = '<p>x</p><img src="file:///etc/hostname"><link rel="stylesheet" href="/static/css/app.css">'
    pdf = HTML(string=html, base_url=proposal.PROPOSAL_BASE_URL, url_fetcher=fetcher).write_pdf()
    assert pdf.startswith(b"%PDF")
    assert "file:///etc/hostname" in asked and proposal.PROPOSAL_BASE_URL + "static/css/app.css" in asked


def test_the_proposal_pdf_is_printed_with_the_static_only_fetcher(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import weasyprint

    from advisor import proposal
    from advisor.advice import advise
    from pricing.services import load_bundled_data

    used: list[Any] = []
    real = weasyprint.HTML

    def recording(*args: Any, **kwargs: Any) -> Any:
        used.append(kwargs.get("url_fetcher"))
        return real(*args, **kwargs)

    monkeypatch.setattr(weasyprint, "HTML", recording)
    load_bundled_data()
    pdf = proposal.render_proposal_pdf(advice=advise(scenario()).to_dict(), scenario_name="fetcher")
    assert pdf.startswith(b"%PDF") and used == [proposal.static_only_fetcher()]
