"""HTTP conventions an integrator relies on: unknown query parameters refused by name, stable offer ids that
open their history, ETag/Last-Modified on offers, ETag + If-Match on scenarios, Idempotency-Key on POST,
a page past the end is empty, unknown providers refused, and an advised layout can be fed back."""

from __future__ import annotations

import copy

import pytest

from advisor.models import IdempotentResponse, Proposal, Scenario
from pricing.models import Offer
from tests.api.conftest import assert_problem
from tests.api.examples import scenario

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _catalog(db: None) -> None:
    from pricing.services import load_bundled_data

    load_bundled_data()


@pytest.mark.parametrize(
    ("url", "unknown"),
    [
        ("/api/v1/offers?gpus=h100-sxm", ["gpus"]),
        ("/api/v1/offers?gpu=h100-sxm&region=us-east-1", ["region"]),
        ("/api/v1/scenarios?sort=name&q=x", ["q", "sort"]),
        ("/api/v1/feeds?verbose=1", ["verbose"]),
    ],
)
def test_unknown_query_parameters_are_named(alice, url, unknown) -> None:  # type: ignore[no-untyped-def]
    body = assert_problem(alice.get(url), 400)
    assert sorted(error["parameter"] for error in body["errors"]) == unknown
    assert "allowed here" in body["errors"][0]["detail"]


@pytest.mark.parametrize(
    ("url", "repeated"),
    [
        ("/api/v1/offers?gpu=h100-sxm&gpu=l4", {"gpu": 2}),
        ("/api/v1/offers?market=spot&market=on_demand&market=spot", {"market": 3}),
        ("/api/v1/offers?provider=aws&provider=azure&gpu=l4", {"provider": 2}),
        ("/api/v1/offers?format=csv&format=json", {"format": 2}),
        ("/api/v1/gpus/h100-sxm/price-history?since=2025-01-01&since=2026-01-01", {"since": 2}),
        ("/api/v1/scenarios?page=1&page=2", {"page": 2}),
        ("/api/v1/gpus/h100-sxm/price-history?market=spot&market=on_demand", {"market": 2}),
        # Where the last format is one the endpoint lacks: content negotiation ran first and answered 406.
        ("/api/v1/gpus/h100-sxm?format=json&format=pdf", {"format": 2}),
        # Beside the other bad parameters, as any repeated parameter (the negotiation's own check named it alone).
        ("/api/v1/scenarios?format=json&format=json&page=1&page=2", {"format": 2, "page": 2}),
    ],
)
def test_a_parameter_given_more_than_once_is_refused_not_the_last_one_kept(alice, url, repeated) -> None:  # type: ignore[no-untyped-def]
    # ?gpu=h100-sxm&gpu=l4 listed the l4 offers alone (35), and nothing said the h100-sxm filter was dropped.
    body = assert_problem(alice.get(url), 400)
    assert {error["parameter"]: error["pointer"] for error in body["errors"]} == {
        name: f"#/{name}" for name in repeated
    }
    for error in body["errors"]:
        times = repeated[error["parameter"]]
        # The list hint only where the parameter takes a list (price-history's market): on /offers none does, and
        # ?gpu=h100-sxm,l4 is another 400 (an outsider's check).
        takes_list = url.startswith("/api/v1/gpus/h100-sxm/price-history?market")
        hint = " (several values as one comma-separated list)" if takes_list else ""
        assert error["detail"] == f"given {times} times; give it once{hint}"


def test_documented_parameters_still_pass_and_anonymous_callers_get_401_first(alice, anon) -> None:  # type: ignore[no-untyped-def]
    assert alice.get("/api/v1/offers?gpu=h100-sxm&market=spot&page=1&page_size=5&format=json").status_code == 200
    assert alice.get("/api/v1/gpus?format=csv").status_code == 200
    assert anon.get("/api/v1/offers?gpus=h100-sxm").status_code == 401
    # A ?format= given twice too: content negotiation runs before authentication, the parameter check after it.
    assert anon.get("/api/v1/scenarios?format=json&format=json").status_code == 401


def test_the_schema_refuses_a_format_given_twice(anon) -> None:  # type: ignore[no-untyped-def]
    assert anon.get("/api/schema/?format=json").status_code == 200
    assert_problem(anon.get("/api/schema/?format=json&format=yaml"), 400, "#/format")


def test_a_csv_path_answers_what_format_csv_answers_and_errors_stay_problems(alice) -> None:  # type: ignore[no-untyped-def]
    """`<list>.csv` is the list's CSV, whatever Accept says (the operation a generated client can read: the
    `?format=csv` one was parsed as JSON); its query parameters and errors are the list's."""
    for listed in ("/api/v1/gpus", "/api/v1/offers?gpu=h100-sxm&market=spot", "/api/v1/scenarios", "/api/v1/feeds"):
        route, _, query = listed.partition("?")
        by_format = alice.get(f"{route}?{query}&format=csv" if query else f"{route}?format=csv")
        own = alice.get(f"{route}.csv?{query}", HTTP_ACCEPT="application/json")
        assert own.status_code == 200 and own["Content-Type"] == "text/csv; charset=utf-8", listed
        assert own.content == by_format.content, listed
    assert alice.get("/api/v1/offers.csv?gpu=h100-sxm").content.decode().startswith("id,")
    body = assert_problem(alice.get("/api/v1/offers.csv?gpus=h100-sxm"), 400)
    assert body["errors"][0]["parameter"] == "gpus"
    assert_problem(alice.get("/api/v1/gpus/no-such-gpu/price-history.csv"), 404)
    estimated = alice.post(
        "/api/v1/estimate.csv",
        "gpu,num_gpus,params_b,seq_len,global_batch\nh100-sxm,8,7,4096,256\n",
        content_type="text/csv",
    )
    assert estimated.status_code == 200 and estimated["Content-Type"] == "text/csv; charset=utf-8", estimated.content
    assert "predicted_tokens_per_s" in estimated.content.decode().splitlines()[0]


def test_offers_have_stable_ids_that_open_their_history(alice) -> None:  # type: ignore[no-untyped-def]
    offers = alice.get("/api/v1/offers?gpu=h100-sxm").json()["results"]
    first = offers[0]
    row = Offer.objects.get(pk=first["id"])
    assert (row.provider.slug, row.instance_type, row.region, row.market) == (
        first["provider"],
        first["instance"],
        first["region"],
        first["market"],
    )
    history = alice.get(f"/api/v1/offers/{first['id']}/history")
    assert history.status_code == 200 and history.json()["count"] >= 1
    # Reloading the same catalog (a refresh) keeps the ids: the natural key finds the same rows.
    from pricing.services import load_bundled_data

    load_bundled_data()
    again = alice.get("/api/v1/offers?gpu=h100-sxm").json()["results"]
    assert [offer["id"] for offer in again] == [offer["id"] for offer in offers]


def test_offers_carry_etag_and_last_modified(alice) -> None:  # type: ignore[no-untyped-def]
    first = alice.get("/api/v1/offers?gpu=h100-sxm")
    assert first.status_code == 200 and first["ETag"].startswith('"') and first["Last-Modified"].endswith("GMT")
    unchanged = alice.get("/api/v1/offers?gpu=h100-sxm", HTTP_IF_NONE_MATCH=first["ETag"])
    assert unchanged.status_code == 304 and unchanged.content == b""
    other = alice.get("/api/v1/offers?gpu=a100-80gb")
    assert other["ETag"] != first["ETag"]
    Offer.objects.filter(pk=first.json()["results"][0]["id"]).update(usd_per_gpu_hour=999)
    changed = alice.get("/api/v1/offers?gpu=h100-sxm", HTTP_IF_NONE_MATCH=first["ETag"])
    assert changed.status_code == 200 and changed["ETag"] != first["ETag"]


def test_a_page_past_the_end_is_an_empty_page(alice) -> None:  # type: ignore[no-untyped-def]
    total = alice.get("/api/v1/offers?gpu=h100-sxm&page_size=10").json()["count"]
    past = alice.get("/api/v1/offers?gpu=h100-sxm&page_size=10&page=999")
    assert past.status_code == 200
    assert past.json()["results"] == [] and past.json()["count"] == total and past.json()["next"] is None


def _save(client, name: str = "plan", **headers):  # type: ignore[no-untyped-def]
    return client.post("/api/v1/scenarios", {"name": name, "scenario": scenario()}, format="json", **headers)


def test_two_posts_with_one_idempotency_key_create_one_scenario(alice, bob) -> None:  # type: ignore[no-untyped-def]
    first = _save(alice, HTTP_IDEMPOTENCY_KEY="retry-1")
    second = _save(alice, HTTP_IDEMPOTENCY_KEY="retry-1")
    assert first.status_code == second.status_code == 201
    assert second.json() == first.json() and second["Location"] == first["Location"]
    assert second["Idempotent-Replayed"] == "true"
    assert Scenario.objects.count() == 1
    # Keys are per user; the same key with another body is refused, not replayed.
    assert _save(bob, HTTP_IDEMPOTENCY_KEY="retry-1").status_code == 201
    assert_problem(_save(alice, "other", HTTP_IDEMPOTENCY_KEY="retry-1"), 422)
    assert Scenario.objects.count() == 2
    # Without a key every POST creates.
    _save(alice)
    assert Scenario.objects.count() == 3


def test_idempotency_keys_expire(alice, settings) -> None:  # type: ignore[no-untyped-def]
    import datetime as dt

    _save(alice, HTTP_IDEMPOTENCY_KEY="k")
    IdempotentResponse.objects.update(created_at=dt.datetime(2020, 1, 1, tzinfo=dt.UTC))
    assert _save(alice, HTTP_IDEMPOTENCY_KEY="k").status_code == 201
    assert Scenario.objects.count() == 2 and IdempotentResponse.objects.count() == 1


def test_proposal_post_is_idempotent(alice) -> None:  # type: ignore[no-untyped-def]
    saved = _save(alice).json()
    url = f"/api/v1/scenarios/{saved['id']}/proposals"
    first = alice.post(url, HTTP_IDEMPOTENCY_KEY="issue-1")
    second = alice.post(url, HTTP_IDEMPOTENCY_KEY="issue-1")
    assert first.status_code == second.status_code == 201 and first.json()["id"] == second.json()["id"]
    assert Proposal.objects.count() == 1


def test_scenarios_carry_an_etag_and_put_honours_if_match(alice) -> None:  # type: ignore[no-untyped-def]
    created = _save(alice)
    url = f"/api/v1/scenarios/{created.json()['id']}"
    fetched = alice.get(url)
    assert fetched["ETag"] == created["ETag"]
    assert alice.get(url, HTTP_IF_NONE_MATCH=fetched["ETag"]).status_code == 304
    body = {"name": "renamed", "scenario": scenario()}
    updated = alice.put(url, body, format="json", HTTP_IF_MATCH=fetched["ETag"])
    assert updated.status_code == 200 and updated["ETag"] != fetched["ETag"]
    stale = alice.put(url, {**body, "name": "lost update"}, format="json", HTTP_IF_MATCH=fetched["ETag"])
    assert_problem(stale, 412)
    assert alice.get(url).json()["name"] == "renamed"
    assert alice.put(url, {**body, "name": "no header"}, format="json").status_code == 200


def test_unknown_provider_ids_are_refused_listing_the_known_ones(alice) -> None:  # type: ignore[no-untyped-def]
    doc = scenario(rent={"providers": ["aws", "nosuch"]})
    body = assert_problem(alice.post("/api/v1/advice", doc, format="json"), 400, "#/rent/providers/1")
    detail = body["errors"][0]["detail"]
    assert "nosuch" in detail and "aws" in detail and "lambda" in detail
    assert alice.post("/api/v1/advice", scenario(rent={"providers": ["aws"]}), format="json").status_code == 200


def test_an_advised_layout_is_accepted_as_workload_parallelism(alice) -> None:  # type: ignore[no-untyped-def]
    doc = scenario(cluster_sizes=[1, 8, 16])
    advice = alice.post("/api/v1/advice", doc, format="json").json()
    fitting = [size for size in advice["sizes"] if size["fits_memory"]]
    assert fitting
    for size in fitting:
        again = copy.deepcopy(doc)
        again["cluster_sizes"] = [size["gpus"]]
        again["workload"]["parallelism"] = size["layout"]
        response = alice.post("/api/v1/advice", again, format="json")
        assert response.status_code == 200, (size["layout"], response.content[:500])
        assert response.json()["sizes"][0]["layout"] == size["layout"]


def test_query_parameters_name_what_is_allowed(alice) -> None:  # type: ignore[no-untyped-def]
    # Last sessions' outsider probes: offers?gpu=bogus did not list the GPU ids, and price-history with an unknown
    # provider answered 200 [] (read as "no prices").
    gpu = assert_problem(alice.get("/api/v1/offers?gpu=bogus"), 400, "#/gpu")["errors"][0]["detail"]
    assert '"bogus" is not a GPU id' in gpu and "h100-sxm" in gpu and "a100-80gb" in gpu
    market = assert_problem(alice.get("/api/v1/offers?market=cheap"), 400, "#/market")["errors"][0]["detail"]
    assert "on_demand" in market and "spot" in market
    history = alice.get("/api/v1/gpus/h100-sxm/price-history?provider=aws,nosuch")
    detail = assert_problem(history, 400, "#/provider")["errors"][0]["detail"]
    assert "'nosuch'" in detail and "known providers:" in detail and "aws" in detail
    assert alice.get("/api/v1/gpus/h100-sxm/price-history?provider=aws").status_code == 200


def test_an_empty_list_as_csv_still_has_its_header_row(alice) -> None:  # type: ignore[no-untyped-def]
    """A CSV with no rows names its columns (the header of the same list with one row in it): a spreadsheet or a
    script opening a user's empty scenarios.csv found a file with nothing in it (a hostile probe)."""
    empty = alice.get("/api/v1/scenarios.csv").content.decode().splitlines()
    assert len(empty) == 1 and empty[0].startswith("id,"), empty
    workload = {"kind": "training", "model": {"params_b": 7}, "tokens": 1e9}
    saved = alice.post(
        "/api/v1/scenarios", {"name": "one", "scenario": {"workload": workload, "gpu": "h100-sxm"}}, format="json"
    )
    assert saved.status_code == 201, saved.content
    one = alice.get("/api/v1/scenarios.csv").content.decode().splitlines()
    assert len(one) == 2 and one[0] == empty[0]
    calibrations = alice.get("/api/v1/calibrations.csv").content.decode().splitlines()
    assert calibrations and "name" in calibrations[0].split(","), calibrations


@pytest.mark.parametrize(
    ("query", "parameter"),
    [("provider=nosuch", "provider"), ("market=spot,on_demand", "market"), ("provider=aws,lambda", "provider")],
)
def test_offer_filter_errors_name_their_query_parameter(alice, query, parameter) -> None:  # type: ignore[no-untyped-def]
    """A probe: /api/v1/offers filter errors had the body-field shape (no 'parameter', 'The request has invalid
    fields') while every other query error, page_size on the same endpoint included, names its parameter."""
    body = assert_problem(alice.get(f"/api/v1/offers?{query}"), 400, f"#/{parameter}")
    assert [error["parameter"] for error in body["errors"]] == [parameter]
    page_size = assert_problem(alice.get("/api/v1/offers?page_size=501"), 400, "#/page_size")
    assert body["detail"] == page_size["detail"] == "The query has invalid parameters; see errors."


@pytest.mark.parametrize("parameter", ["page", "page_size"])
@pytest.mark.parametrize("raw", ["%D9%A1", "%EF%BC%91", "%2B1", "%201", "1%20", "1_0", "1.0"])
def test_page_numbers_are_ascii_digits_only(alice, parameter: str, raw: str) -> None:  # type: ignore[no-untyped-def]
    """Python's int() read Arabic-Indic and fullwidth digits, '+1' and ' 1' (a hostile probe got 200s, and the
    fullwidth digit was echoed on in the next link); the ids a page writes are plain ASCII digits."""
    body = assert_problem(alice.get(f"/api/v1/scenarios?{parameter}={raw}"), 400)
    assert [error["parameter"] for error in body["errors"]] == [parameter]
    assert "digits" in body["errors"][0]["detail"]
    assert alice.get(f"/api/v1/scenarios?{parameter}=1").status_code == 200
