"""POST /api/v1/advice, saved-scenario advice and the PDF proposal: the same document as advise()."""

from __future__ import annotations

import dataclasses
import io
import json

import pytest
from pypdf import PdfReader

from advisor.web.planning import advice_for
from tests.api.conftest import assert_problem
from tests.api.examples import DESIGN_SCENARIO, scenario

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


def _without_clock(advice: dict) -> dict:
    return {k: v for k, v in advice.items() if k != "generated_at"}


def test_advice_is_the_pipelines_document(alice, user) -> None:  # type: ignore[no-untyped-def]
    response = alice.post("/api/v1/advice", DESIGN_SCENARIO, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert _without_clock(body) == _without_clock(advice_for(document=DESIGN_SCENARIO, user=user))
    assert [size["gpus"] for size in body["sizes"]] == DESIGN_SCENARIO["cluster_sizes"]
    assert body["recommendation"]["action"] in {"rent", "buy"}
    assert body["scenario"]["gpu"] == "h100-sxm" and body["calibration"]["name"]
    for size in body["sizes"]:
        assert {"gpus", "nodes", "fits_memory", "step_time_s", "run_hours", "rent", "buy"} <= set(size)


@pytest.mark.parametrize(
    ("document", "pointers"),
    [
        (scenario(gpu="h900"), ["#/gpu"]),
        (scenario(utilization=0), ["#/utilization"]),
        (scenario(extra=True), ["#/extra"]),
        ({"gpu": "h100-sxm"}, ["#/workload"]),
        (
            {**scenario(), "workload": {"kind": "training", "model": {"params_b": "7"}, "tokens": -1}},
            ["#/workload/model/params_b", "#/workload/tokens"],
        ),
        ([], ["#"]),
    ],
)
def test_invalid_scenarios_are_problems_with_pointers(alice, document, pointers) -> None:  # type: ignore[no-untyped-def]
    assert_problem(alice.post("/api/v1/advice", document, format="json"), 400, *pointers)


def test_malformed_json_and_wrong_media_type(alice) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(alice.post("/api/v1/advice", "{not json", content_type="application/json"), 400, "#")
    assert body["type"] == "/problems/validation-error"
    assert_problem(alice.post("/api/v1/advice", "a,b", content_type="text/csv"), 415)
    assert_problem(alice.get("/api/v1/advice"), 405)


def test_saved_scenario_advice_and_pdf(alice, bob) -> None:  # type: ignore[no-untyped-def]
    created = alice.post("/api/v1/scenarios", {"name": "Q3 plan", "scenario": scenario()}, format="json").json()
    advice = alice.get(f"/api/v1/scenarios/{created['id']}/advice")
    assert advice.status_code == 200 and advice.json()["scenario"]["gpu"] == "h100-sxm"
    pdf = alice.get(f"/api/v1/scenarios/{created['id']}/proposal.pdf", HTTP_ACCEPT="application/json")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    assert 'filename="q3-plan-proposal.pdf"' in pdf["Content-Disposition"]
    text = "".join(page.extract_text() for page in PdfReader(io.BytesIO(pdf.content)).pages)
    assert "Q3 plan" in text
    assert_problem(bob.get(f"/api/v1/scenarios/{created['id']}/advice"), 404)
    assert_problem(bob.get(f"/api/v1/scenarios/{created['id']}/proposal.pdf"), 404)


def test_saved_document_that_no_longer_validates_is_409(alice, user) -> None:  # type: ignore[no-untyped-def]
    from advisor.scenarios import scenario_create

    stale = scenario_create(owner=user, name="old", document={**scenario(), "retired_field": 1})
    assert_problem(alice.get(f"/api/v1/scenarios/{stale.pk}/advice"), 409, "#/scenario/retired_field")
    assert_problem(alice.get(f"/api/v1/scenarios/{stale.pk}/proposal.pdf"), 409, "#/scenario/retired_field")


def test_identical_requests_are_answered_from_the_cache_until_inputs_change(alice, user, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import advisor.api.advice_cache as advice_cache
    from advisor.calibrations import default_calibration_row
    from advisor.models import Calibration
    from pricing.models import FeedRun

    calls: list[dict] = []
    real = advice_cache.advice_for

    def counting(*, document, user):  # type: ignore[no-untyped-def]
        calls.append(document)
        return real(document=document, user=user)

    monkeypatch.setattr(advice_cache, "advice_for", counting)
    document = scenario()
    first = alice.post("/api/v1/advice", document, format="json").json()
    second = alice.post("/api/v1/advice", document, format="json").json()
    assert second == first and len(calls) == 1
    alice.post("/api/v1/advice", scenario(utilization=0.5), format="json")
    assert len(calls) == 2, "a different scenario is computed"
    FeedRun.objects.create(feed="lambda", status="success")
    alice.post("/api/v1/advice", document, format="json")
    assert len(calls) == 3, "new price data invalidates"
    default = default_calibration_row()
    mine = Calibration.objects.create(
        owner=user, name="mine", document=default.document, runs=default.runs, loo_mape=default.loo_mape
    )
    assert alice.post(f"/api/v1/calibrations/{mine.pk}/activate").status_code == 200
    alice.post("/api/v1/advice", document, format="json")
    assert len(calls) == 4, "another calibration invalidates"
    assert_problem(alice.post("/api/v1/advice", scenario(gpu="x"), format="json"), 400, "#/gpu")
    assert_problem(alice.post("/api/v1/advice", scenario(gpu="x"), format="json"), 400, "#/gpu")
    assert len(calls) == 6, "invalid scenarios are not cached"


def test_an_advice_cached_during_a_refresh_is_not_served_after_the_refresh_commits_new_prices(user, settings) -> None:  # type: ignore[no-untyped-def]
    """The refresh's FeedRun row exists (running) before its offers are written: an advice computed while
    it fetches holds the old prices and must not be the cached answer once the new prices are committed."""
    import responses

    from advisor.api.advice_cache import cached_advice_for
    from pricing.feeds.lambda_cloud import API_URL
    from pricing.models import FeedRun
    from pricing.services import feed_refresh
    from tests.pricing.helpers import fixture_json

    settings.PRICING_LAMBDA_API_KEY = "recorded-test-key"
    document = scenario()
    payload = fixture_json("written/lambda_instance_types.json")
    during: list[dict] = []

    def answer(request):  # type: ignore[no-untyped-def]
        if FeedRun.objects.filter(feed="lambda", status="success").exists():  # the second refresh, mid-fetch
            assert FeedRun.objects.filter(feed="lambda", status="running").exists()
            during.append(cached_advice_for(document=document, user=user))
        return 200, {}, json.dumps(payload)

    with responses.RequestsMock() as mock:
        mock.add_callback(responses.GET, API_URL, callback=answer)
        assert feed_refresh(name="lambda").status == "success"
        payload["data"]["gpu_8x_h100_sxm5"]["instance_type"]["price_cents_per_hour"] = 80  # $0.10/GPU-h: cheapest
        run = feed_refresh(name="lambda")
    assert run.status == "success" and run.changed == 2 and len(during) == 1
    after = cached_advice_for(document=document, user=user)
    fresh = advice_for(document=document, user=user)
    assert _without_clock(after) != _without_clock(during[0]), "the advice computed with the old prices is served"
    assert _without_clock(after) == _without_clock(fresh)


SHORT_ANSWERS = {
    "name": "one-token answers",
    "workload": {
        "kind": "inference",
        "model": {"name": "llama-3.1-8b"},
        "precision": "bf16",
        "traffic": {"peak_requests_per_s": 300, "mean_requests_per_s": 150, "input_tokens": 512, "output_tokens": 1},
        "latency": {"ttft_p95_s": 0.5, "tpot_p95_s": 0.05},
    },
    "gpu": "h100-sxm",
}


def _without_peak_figures(size):  # type: ignore[no-untyped-def]
    """A sizing whose deployments carry no figures at the peak (NaN), as the sizing answers where it cannot read
    them."""

    def sized(**kwargs):  # type: ignore[no-untyped-def]
        nan = float("nan")
        return [
            dataclasses.replace(d, batch_at_peak=nan, ttft_at_peak_s=nan, tpot_at_peak_s=nan) for d in size(**kwargs)
        ]

    return sized


@pytest.mark.parametrize("peak_figures", ["computed", "missing"])
def test_an_inference_advice_is_an_answer_or_a_problem_naming_a_field_never_a_server_error(
    alice, monkeypatch, peak_figures
) -> None:  # type: ignore[no-untyped-def]
    # An outsider's probe: 8B, 300 requests/s of 512-token prompts with one-token answers was a 500: the sizing
    # had no figures at the peak (NaN) and the recommendation's reason formatted the missing number.
    from estimator import inference as inf

    if peak_figures == "missing":
        monkeypatch.setattr(inf, "size_deployments", _without_peak_figures(inf.size_deployments))
    response = alice.post("/api/v1/advice", SHORT_ANSWERS, format="json")
    if response.status_code == 400:
        assert_problem(response, 400, "#/workload")
        return
    assert response.status_code == 200, response.content[:2000]
    reasons = " ".join(response.json()["recommendation"]["reasons"])
    assert "None" not in reasons and "nan" not in reasons, reasons


def _offers_shown(advice: dict) -> list[dict]:
    """Every offer document an Advice shows: each size's headline rent offer and each market's."""
    offers = []
    for size in advice["sizes"]:
        rent = size.get("rent") or {}
        offers.append(rent.get("offer"))
        offers.extend((market or {}).get("offer") for market in (rent.get("by_market") or {}).values())
    return [offer for offer in offers if offer]


def test_the_recommended_offer_opens_its_history_by_id(alice) -> None:  # type: ignore[no-untyped-def]
    # The outside client's report: AdviceOffer.id ("GET /api/v1/offers/{id}/history") was never sent.
    body = alice.post("/api/v1/advice", DESIGN_SCENARIO, format="json").json()
    recommended = next(s for s in body["sizes"] if s["gpus"] == body["recommendation"]["gpus"])
    offer = recommended["rent"]["offer"]
    assert isinstance(offer.get("id"), int), offer
    history = alice.get(f"/api/v1/offers/{offer['id']}/history")
    assert history.status_code == 200, history.content
    assert history.json()["results"][-1]["usd_per_gpu_hour"] == pytest.approx(offer["usd_per_gpu_hour"])
    listed = {o["id"]: o for o in alice.get("/api/v1/offers?gpu=h100-sxm&page_size=500").json()["results"]}
    for shown in _offers_shown(body):
        same = listed[shown["id"]]
        assert [same[k] for k in ("provider", "instance", "region", "market")] == [
            shown[k] for k in ("provider", "instance", "region", "market")
        ]


def test_a_manual_price_has_no_offer_id(alice) -> None:  # type: ignore[no-untyped-def]
    body = alice.post("/api/v1/advice", scenario(rent={"usd_per_gpu_hour": 2.5}), format="json").json()
    offers = _offers_shown(body)
    assert offers and all(offer.get("id") is None for offer in offers)
