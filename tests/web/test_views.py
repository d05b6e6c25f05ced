"""Web pages that do not need the advice pipeline: inline errors, ownership, share links, login."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from advisor import scenarios as store
from advisor.models import Scenario
from advisor.web import forms

pytestmark = pytest.mark.django_db


def _planner_data(**overrides: Any) -> dict[str, Any]:
    data = dict(forms.preset_initial("7b-pretrain"))
    data.update(overrides)
    return data


def test_planner_renders_the_form_with_its_testids(client: Client) -> None:
    response = client.get("/plan/")
    assert response.status_code == 200
    html = response.content.decode()
    for testid in ("scenario-form", "calculate", "save-scenario"):
        assert f'data-testid="{testid}"' in html
    # Every input is labelled.
    assert html.count("<label") >= 25
    assert 'value="7"' in html  # the 7B preset


def test_unknown_preset_falls_back_to_the_default(client: Client) -> None:
    response = client.get("/plan/?preset=nope")
    assert response.status_code == 200
    assert 'value="7"' in response.content.decode()


@pytest.mark.parametrize("url", ["/plan/", "/plan/results/", "/plan/proposal.pdf"])
def test_bad_input_shows_inline_errors_and_keeps_what_was_typed(client: Client, url: str) -> None:
    response = client.post(url, _planner_data(params_b="seven", cluster_sizes="8, sixteen"))
    assert response.status_code in (400, 422)
    html = response.content.decode()
    assert "Enter a number." in html
    assert "Enter whole numbers of GPUs" in html
    if url != "/plan/results/":
        # The full page comes back with the typed text still in the fields, errors next to them.
        assert 'value="seven"' in html
        assert 'value="8, sixteen"' in html
        assert 'id="error-params_b" role="alert">Enter a number.' in html
    else:
        assert 'data-error-for="params_b"' in html


def test_out_of_range_input_is_an_inline_error_not_a_500(client: Client) -> None:
    response = client.post("/plan/", _planner_data(utilization_pct="250", tokens_b="-1"))
    assert response.status_code == 400
    html = response.content.decode()
    assert 'value="250"' in html
    assert "less than or equal to 100" in html


def test_saving_anonymously_goes_to_login_and_comes_back_with_the_inputs(client: Client, user: Any) -> None:
    response = client.post("/plan/save/", _planner_data(name="Kept across login", params_b="13"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))
    assert "restore%3D1" in response["Location"] or "restore=1" in response["Location"]
    client.force_login(user)
    page = client.get("/plan/?restore=1")
    html = page.content.decode()
    assert 'value="Kept across login"' in html
    assert 'value="13"' in html


def test_scenario_pages_require_login(client: Client) -> None:
    response = client.get("/scenarios/")
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.fixture
def bobs_scenario(other_user: Any, scenario_document: dict[str, Any]) -> Any:
    return store.scenario_create(owner=other_user, name="Bob's plan", document=scenario_document)


@pytest.fixture
def alices_scenario(user: Any, scenario_document: dict[str, Any]) -> Any:
    return store.scenario_create(owner=user, name="Alice's plan", document=scenario_document)


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/scenarios/{id}/"),
        ("get", "/scenarios/{id}/proposal.pdf"),
        ("post", "/scenarios/{id}/rename/"),
        ("post", "/scenarios/{id}/duplicate/"),
        ("post", "/scenarios/{id}/delete/"),
        ("post", "/scenarios/{id}/share/"),
        ("post", "/scenarios/{id}/versions/1/restore/"),
        ("get", "/plan/?scenario={id}"),
    ],
)
def test_another_users_scenario_is_not_found(
    client: Client, user: Any, bobs_scenario: Any, method: str, path: str
) -> None:
    client.force_login(user)
    data = {"name": "mine now"} if method == "post" else None
    response = getattr(client, method)(path.format(id=bobs_scenario.pk), data)
    assert response.status_code == 404
    bobs_scenario.refresh_from_db()
    assert bobs_scenario.name == "Bob's plan"
    assert not bobs_scenario.share_links.exists()


def test_compare_with_another_users_scenario_is_not_found(
    client: Client, user: Any, alices_scenario: Any, bobs_scenario: Any
) -> None:
    client.force_login(user)
    response = client.get("/scenarios/compare/", {"ids": [alices_scenario.pk, bobs_scenario.pk]})
    assert response.status_code == 404


def test_compare_needs_two_to_four(client: Client, user: Any, alices_scenario: Any) -> None:
    client.force_login(user)
    response = client.get("/scenarios/compare/", {"ids": [alices_scenario.pk]})
    assert response.status_code == 302
    assert client.get("/scenarios/compare/", {"ids": ["x", "1"]}).status_code == 400


def test_revoking_another_users_share_link_is_not_found(client: Client, user: Any, bobs_scenario: Any) -> None:
    link = store.share_link_create(scenario=bobs_scenario)
    client.force_login(user)
    response = client.post(f"/scenarios/{bobs_scenario.pk}/share/{link.pk}/revoke/")
    assert response.status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None


def test_revoking_a_link_through_the_wrong_scenario_is_not_found(
    client: Client, user: Any, alices_scenario: Any, bobs_scenario: Any
) -> None:
    link = store.share_link_create(scenario=bobs_scenario)
    client.force_login(user)
    response = client.post(f"/scenarios/{alices_scenario.pk}/share/{link.pk}/revoke/")
    assert response.status_code == 404
    link.refresh_from_db()
    assert link.revoked_at is None


def test_revoked_share_link_is_not_found(client: Client, user: Any, alices_scenario: Any) -> None:
    link = store.share_link_create(scenario=alices_scenario)
    client.force_login(user)
    assert client.post(f"/scenarios/{alices_scenario.pk}/share/{link.pk}/revoke/").status_code == 302
    client.logout()
    assert client.get(f"/s/{link.token}/").status_code == 404
    assert client.get(f"/s/{link.token}/proposal.pdf").status_code == 404
    assert client.get("/s/not-a-token/").status_code == 404


@pytest.mark.usefixtures("bundled_data")
def test_rename_rejects_an_empty_name_and_keeps_the_old_one(client: Client, user: Any, alices_scenario: Any) -> None:
    client.force_login(user)
    response = client.post(f"/scenarios/{alices_scenario.pk}/rename/", {"name": "   "}, follow=True)
    assert response.status_code == 200
    assert "must not be empty" in response.content.decode()
    alices_scenario.refresh_from_db()
    assert alices_scenario.name == "Alice's plan"


def test_rename_and_duplicate_and_delete_keep_versions(client: Client, user: Any, alices_scenario: Any) -> None:
    client.force_login(user)
    client.post(f"/scenarios/{alices_scenario.pk}/rename/", {"name": "Renamed"})
    alices_scenario.refresh_from_db()
    assert alices_scenario.name == "Renamed"
    assert alices_scenario.document["name"] == "Renamed"
    assert list(alices_scenario.versions.values_list("number", "name")) == [(2, "Renamed"), (1, "Alice's plan")]
    client.post(f"/scenarios/{alices_scenario.pk}/duplicate/")
    assert store.scenarios_for_user(user=user).filter(name="Renamed (copy)").exists()
    client.post(f"/scenarios/{alices_scenario.pk}/delete/")
    assert not store.scenarios_for_user(user=user).filter(pk=alices_scenario.pk).exists()


def test_scenario_list_shows_only_mine(client: Client, user: Any, alices_scenario: Any, bobs_scenario: Any) -> None:
    client.force_login(user)
    html = client.get("/scenarios/").content.decode()
    assert "Alice&#x27;s plan" in html
    assert "Bob" not in html


def test_scenario_list_names_the_model_of_a_catalog_scenario(
    client: Client, user: Any, alices_scenario: Any, scenario_document: dict[str, Any]
) -> None:
    # An outsider (F7): the Model column printed "B" for a catalog model (its document has only model.name).
    catalog = {**scenario_document, "workload": {**scenario_document["workload"], "model": {"name": "llama-3.1-70b"}}}
    store.scenario_create(owner=user, name="Catalog plan", document=catalog)
    client.force_login(user)
    html = client.get("/scenarios/").content.decode()
    cells = re.findall(r'<td class="model">([^<]*)</td>', html)
    assert sorted(cells) == ["7B", "llama-3.1-70b"], cells


def test_long_names_wrap_instead_of_widening_the_page(client: Client, user: Any, alices_scenario: Any) -> None:
    # An outsider (F6): a 200-character name without spaces made the scenario, proposal and planner pages 3,000 px
    # wide and pushed the list's other columns out of view. Headings and the list's name cell may break anywhere.
    from django.contrib.staticfiles import finders

    client.force_login(user)
    html = client.get("/scenarios/").content.decode()
    assert re.search(r'<td class="name"><a href="/scenarios/\d+/">Alice', html), html
    css = Path(str(finders.find("css/app.css"))).read_text(encoding="utf-8")
    # The versions table on a scenario page lists every name the scenario had.
    rule = re.search(r"h1, \.scenario-list td\.name, details\.versions td \{([^}]*)\}", css)
    assert rule is not None and "overflow-wrap: anywhere" in rule.group(1)


# '²' and '٣' are digits to str.isdigit() (int() refuses the first, reads the second as 3); '-1', ' 1' and '1_0'
# are read by int(); 30 nines overflow a 64-bit key. None of them is an id a page writes.
NOT_IDS = ["²", "٣", "-1", " 1", "1_0", "9" * 30]


@pytest.mark.parametrize("raw", NOT_IDS)
@pytest.mark.parametrize(
    ("method", "path", "field"),
    [
        ("get", "/plan/", "scenario"),
        ("post", "/plan/", "scenario_id"),
        ("post", "/plan/results/", "scenario_id"),
        ("post", "/plan/save/", "scenario_id"),
        ("post", "/plan/proposal.pdf", "scenario_id"),
        ("get", "/fleet/", "id"),
        ("post", "/fleet/", "fleet_id"),
    ],
)
def test_an_id_that_is_not_ascii_digits_is_not_found(
    client: Client, user: Any, method: str, path: str, field: str, raw: str
) -> None:
    client.force_login(user)
    data = {**_planner_data(), field: raw} if path.startswith("/plan/") and method == "post" else {field: raw}
    response = getattr(client, method)(path, data)
    assert response.status_code == 404, response.content[:300]
    assert Scenario.objects.count() == 0  # /plan/save/ did not save it as a new scenario either


@pytest.mark.parametrize("raw", NOT_IDS)
def test_compare_refuses_ids_that_are_not_ascii_digits(
    client: Client, user: Any, alices_scenario: Any, raw: str
) -> None:
    client.force_login(user)
    response = client.get("/scenarios/compare/", {"ids": [raw, alices_scenario.pk]})
    assert response.status_code == 400
    assert b"ids must be scenario numbers" in response.content


def test_every_page_names_a_favicon_served_from_static(client: Client) -> None:
    # An outsider's probe: every page logged a console error, a 404 for /favicon.ico.
    import re
    from pathlib import Path

    from django.contrib.staticfiles import finders

    html = client.get("/").content.decode()
    link = re.search(r'<link rel="icon" href="/static/([^"]+)" type="image/svg\+xml">', html)
    assert link, html[:600]
    path = finders.find(link.group(1))
    assert path and "<svg" in Path(path).read_text(encoding="utf-8")


@pytest.mark.parametrize("path", ["/nonexistent/", "/scenarios/999/"])
def test_a_404_in_production_is_a_page_with_the_nav(client: Client, user: Any, settings: Any, path: str) -> None:
    # An outsider's probe: production 404s were Django's bare "Not Found", with no nav and no way back.
    settings.DEBUG = False
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 404
    html = response.content.decode()
    assert 'aria-label="Main"' in html and "Page not found" in html and 'href="/plan/"' in html


def test_a_500_is_a_page_with_the_nav(rf: Any) -> None:
    from django.views.defaults import server_error

    html = server_error(rf.get("/")).content.decode()
    assert 'aria-label="Main"' in html and "Something went wrong" in html


def test_a_400_is_a_page_with_the_nav(rf: Any) -> None:
    from django.core.exceptions import SuspiciousOperation
    from django.views.defaults import bad_request

    response = bad_request(rf.get("/"), SuspiciousOperation("x"))
    html = response.content.decode()
    assert response.status_code == 400 and 'aria-label="Main"' in html and "<h1>" in html


def test_get_logout_explains_and_offers_the_log_out_button(client: Client, user: Any) -> None:
    # An outsider's probe: GET /accounts/logout/ answered 405 with an empty body (the browser's own error page).
    client.force_login(user)
    response = client.get("/accounts/logout/")
    html = response.content.decode()
    assert response.status_code == 200, html[:300]
    main = html.split("<main", 1)[1].split("</main>", 1)[0]
    form = re.search(r'<form method="post" action="/accounts/logout/"[^>]*>(.*?)</form>', main, re.S)
    assert form is not None, main
    assert 'name="csrfmiddlewaretoken"' in form.group(1) and "Log out" in form.group(1)
    assert user.get_username() in main
    assert "_auth_user_id" in client.session  # a GET signs nobody out
    assert client.post("/accounts/logout/").status_code == 302
    assert "_auth_user_id" not in client.session


def test_get_logout_signed_out_links_to_sign_in(client: Client) -> None:
    response = client.get("/accounts/logout/")
    html = response.content.decode()
    assert response.status_code == 200, html[:300]
    main = html.split("<main", 1)[1].split("</main>", 1)[0]
    assert "not signed in" in main and f'href="{reverse("login")}"' in main
    assert "<form" not in main


def test_compare_with_one_ticked_keeps_the_tick(client: Client, user: Any, alices_scenario: Any) -> None:
    # An outsider's probe: one box ticked, "Compare selected": "Pick two to four scenarios to compare." and the tick
    # was gone.
    other = store.scenario_create(owner=user, name="Second", document=alices_scenario.document)
    client.force_login(user)
    response = client.get("/scenarios/compare/", {"ids": [alices_scenario.pk]}, follow=True)
    html = response.content.decode()
    assert response.status_code == 200 and "Pick two to four scenarios to compare" in html
    boxes = dict(re.findall(r'<input type="checkbox" name="ids" value="(\d+)"([^>]*)>', html))
    assert "checked" in boxes[str(alices_scenario.pk)], boxes
    assert "checked" not in boxes[str(other.pk)], boxes


@pytest.mark.parametrize("raw", ["abc", "1.5", "-2"])
def test_compare_with_ids_that_are_not_numbers_is_a_page_naming_the_parameter(
    client: Client, user: Any, alices_scenario: Any, raw: str
) -> None:
    client.force_login(user)
    response = client.get("/scenarios/compare/", {"ids": [raw, alices_scenario.pk]})
    html = response.content.decode()
    assert response.status_code == 400
    assert response["Content-Type"].startswith("text/html")
    assert 'class="site-header"' in html and "<h1>" in html  # the base layout, not bare text
    main = html.split("<main", 1)[1].split("</main>", 1)[0]
    assert "ids" in main and "scenario numbers" in main and "two to four" in main, main
    assert f"&#x27;{raw}&#x27;" in main  # what was sent, quoted
    assert f'href="{reverse("scenario-list")}"' in main
