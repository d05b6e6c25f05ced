"""The /fleet/ page: the issue's figures through the page, its two pictures, errors by pointer, saving."""

from __future__ import annotations

import json
import re

import pytest

from advisor.models import Fleet, Proposal
from tests.advisor.fleet.figures import BASE_AND_WEEK, FIGURES, fleet

pytestmark = pytest.mark.django_db


def post(client, document, **extra):  # type: ignore[no-untyped-def]
    return client.post("/fleet/", {"fleet": json.dumps(document), "action": "plan", **extra})


def test_get_shows_the_form_with_the_example(client) -> None:  # type: ignore[no-untyped-def]
    page = client.get("/fleet/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-testid="fleet-form"' in html and 'data-testid="fleet-calculate"' in html
    assert "70B pretraining" in html  # examples/fleet-2027.json prefilled


@pytest.mark.parametrize(("label", "document", "owned", "usd", "all_rent"), FIGURES, ids=[f[0] for f in FIGURES])
def test_done_when_figures_on_the_page(client, label, document, owned, usd, all_rent) -> None:  # type: ignore[no-untyped-def]
    page = post(client, document)
    assert page.status_code == 200, page.content[:2000]
    html = page.content.decode()
    assert f"Own {owned} GPUs: ${usd:,.0f} a year" in html
    assert f"Renting everything: ${all_rent:,.0f}" in html
    for testid in ("fleet-results", "chart-load-duration", "chart-fleet-cost", "fleet-tiers"):
        assert f'data-testid="{testid}"' in html
    assert html.count("<svg") >= 2
    assert f"yearly cost P10 ${usd:,.0f}" in html  # hours given, one manual price: no spread
    # A capacity planner's probe: the range sat wholly above the headline with nothing saying why.
    assert "the headline prices every rented hour at the cheapest offer" in " ".join(html.split())


def test_charts_mark_the_owned_level_and_the_cheapest(client) -> None:  # type: ignore[no-untyped-def]
    html = post(client, BASE_AND_WEEK).content.decode()
    assert "owned (32 GPUs)" in html
    assert "cheapest: own 32, $458k" in html
    assert "u* = 50%: 32 GPUs" in html


def test_bad_input_names_the_field_and_stores_nothing(client, user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    page = post(client, fleet({"gpus": 8, "hours": 9000}), action="save", name="bad")
    assert page.status_code == 400
    assert "/jobs/0/hours" in page.content.decode()
    assert Fleet.objects.count() == 0
    assert "not valid JSON" in client.post("/fleet/", {"fleet": "{", "action": "plan"}).content.decode()


@pytest.mark.parametrize("name", ["bell\x07", "x" * 201])
def test_a_bad_name_is_a_400_naming_the_field_and_the_plan_stays(client, user, name) -> None:  # type: ignore[no-untyped-def]
    # It answered 200 with a "Not saved" notice where every other bad field of the page is a 400 naming it.
    client.force_login(user)
    page = post(client, BASE_AND_WEEK, action="save", name=name)
    assert page.status_code == 400
    html = page.content.decode()
    # The Name box was refused, not the document's /name (a reviewer: "/name" pointed into the valid JSON).
    assert "<code>the Name box</code>: not saved:" in html
    assert 'data-testid="fleet-results"' in html  # the plan the user asked for is still shown
    assert Fleet.objects.count() == 0
    if name.isprintable():
        assert f'value="{name}"' in html  # shown again to be corrected


def test_a_blank_name_in_the_document_saves_as_untitled_as_no_name_does(client, user) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: a document name of spaces was refused on save ("/name: must not be empty") where no name at all
    # saved as "Untitled fleet".
    client.force_login(user)
    assert post(client, {**BASE_AND_WEEK, "name": "   "}, action="save", name="").status_code == 302
    assert Fleet.objects.get().name == "Untitled fleet"


def test_the_name_box_names_the_fleet_and_its_document(client, user) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: Name box "Team A budget" with a document named "2027 program" saved one fleet under two names (the
    # PDF and proposal said one, the Fleet Plan JSON the other). Refusing it (400) then blocked an outsider's journey
    # (F5): the prefilled JSON names itself "2027 program", so typing any name in the box next to "Save fleet" was
    # refused, with the error shown twice. The box names the fleet: it is prefilled from the document, and a name
    # typed there is written into the document, so the fleet still has one name.
    client.force_login(user)
    assert 'value="2027 program" aria-describedby="fleet-name-rule"' in client.get("/fleet/").content.decode()
    page = post(client, {**BASE_AND_WEEK, "name": "2027 program"}, action="save", name="Team A budget")
    assert page.status_code == 302, page.content.decode()[:3000]
    unnamed = {key: value for key, value in BASE_AND_WEEK.items() if key != "name"}
    assert post(client, unnamed, action="save", name="Team B budget").status_code == 302
    assert post(client, {**BASE_AND_WEEK, "name": " Team C "}, action="save", name="").status_code == 302
    stored = {fleet.name: fleet.document["name"] for fleet in Fleet.objects.all()}
    assert stored == {"Team A budget": "Team A budget", "Team B budget": "Team B budget", "Team C": "Team C"}
    fleet = Fleet.objects.get(name="Team A budget")
    assert fleet.versions.get().document["name"] == "Team A budget"
    # The saved fleet opens with its name in the box; a bad typed name is refused once, at the box.
    assert 'value="Team A budget" aria-describedby' in client.get(f"/fleet/?id={fleet.pk}").content.decode()
    html = post(client, {**BASE_AND_WEEK, "name": "2027 program"}, action="save", name="bell\x07").content.decode()
    assert html.count("not saved:") == 1 and "<code>the Name box</code>: not saved:" in html


def test_a_bad_usage_upload_keeps_the_fleet_from_being_saved(client, user) -> None:  # type: ignore[no-untyped-def]
    # A reviewer: the upload's error was dropped and the fleet saved without its usage (302).
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(user)
    upload = SimpleUploadedFile("usage.csv", b"\xff\xfe bad", content_type="text/csv")
    page = client.post(
        "/fleet/", {"fleet": json.dumps(BASE_AND_WEEK), "action": "save", "name": "u", "usage_file": upload}
    )
    assert page.status_code == 400
    assert "/usage/csv" in page.content.decode()
    assert Fleet.objects.count() == 0


def test_save_then_open_then_another_user_gets_404(client, user, other_user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    # The document names itself as the Name box does: one fleet, one name (it was saved under two before).
    document = {**BASE_AND_WEEK, "name": "2027 base"}
    saved = post(client, document, action="save", name="2027 base")
    assert saved.status_code == 302
    stored = Fleet.objects.get()
    assert stored.name == "2027 base" and stored.document == document and stored.versions.count() == 1
    page = client.get(saved["Location"])
    assert page.status_code == 200 and "Own 32 GPUs" in page.content.decode()
    client.force_login(other_user)
    assert client.get(f"/fleet/?id={stored.pk}").status_code == 404


def test_example_usage_shows_its_attribution(client) -> None:  # type: ignore[no-untyped-def]
    document = {k: v for k, v in BASE_AND_WEEK.items() if k != "jobs"}
    html = post(client, document, example_usage="1").content.decode()
    assert 'data-testid="usage-attribution"' in html
    assert "CC BY 4.0" in html and "Helios trace" in html


@pytest.mark.django_db
def test_a_fleet_proposal_has_its_own_page_pdf_and_workbook(client, user) -> None:  # type: ignore[no-untyped-def]
    from advisor.fleet.store import fleet_create
    from advisor.proposals import issue_fleet_proposal

    proposal = issue_fleet_proposal(
        user=user, fleet_id=fleet_create(owner=user, name="2027", document=BASE_AND_WEEK).pk
    )
    client.force_login(user)
    page = client.get(f"/proposals/{proposal.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "fleet plan" in html and "Own 32 GPUs: $457,920 a year" in html
    pdf = client.get(f"/proposals/{proposal.pk}/proposal.pdf")
    assert pdf.status_code == 200 and pdf["Content-Type"] == "application/pdf"
    # Its workbook (DESIGN.md names no exception for fleets; tests/api/test_fleet_workbook.py checks its figures).
    workbook = client.get(f"/proposals/{proposal.pk}/proposal.xlsx")
    assert workbook.status_code == 200 and workbook["Content-Type"].endswith("spreadsheetml.sheet")
    # The service's reason as written ("PDF"), not lowercased by str.capitalize() (a reviewer: "send its pdf.").
    shared = client.post(f"/proposals/{proposal.pk}/share/", follow=True)
    assert "A fleet proposal is not shared by link; send its PDF." in shared.content.decode()
    again = client.post(f"/proposals/{proposal.pk}/recompute/")
    assert again.status_code == 302
    fresh = Proposal.objects.exclude(pk=proposal.pk).get()
    assert (
        fresh.kind == "fleet"
        and fresh.recomputed_from_id == proposal.pk
        and fresh.advice == proposal.advice | {"generated_at": fresh.advice["generated_at"]}
    )


# The textarea is read as the API reads a JSON body (core.jsontext): each of these was a 500, or saved.
HOSTILE_TEXT = {
    "deep": ("[" * 50_000, "", "nested deeper than 32 arrays/objects"),
    "long integer": (
        json.dumps(fleet({"gpus": 8, "hours": 100})).replace('"gpus": 8', '"gpus": ' + "9" * 5000),
        "/jobs/0/gpus",
        "a number with more than 1,000 digits is not accepted; got 5,000",
    ),
    # json.dumps writes the lone surrogate as the escape \udc80: valid JSON text, a string nothing can store.
    "lone surrogate": (json.dumps(fleet({"name": "\udc80", "gpus": 8, "hours": 100})), "/jobs/0/name", "surrogates"),
    "NaN": (json.dumps(fleet({"gpus": 8, "hours": 100})).replace("100", "NaN"), "", "NaN is not valid JSON"),
    # Saved, with the last of the two hours (Python's json keeps the last; other readers keep the first).
    "name given twice": (
        json.dumps(fleet({"gpus": 8, "hours": 100})).replace('"hours": 100', '"hours": 100, "hours": 5'),
        "/jobs/0/hours",
        "the name &quot;hours&quot; is given more than once",
    ),
}


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
@pytest.mark.parametrize("label", HOSTILE_TEXT)
def test_hostile_json_text_is_refused_naming_the_pointer_and_nothing_is_saved(client, user, label, signed_in) -> None:  # type: ignore[no-untyped-def]
    if signed_in:
        client.force_login(user)
    text, where, message = HOSTILE_TEXT[label]
    page = client.post("/fleet/", {"fleet": text, "action": "save", "name": "hostile"})
    assert page.status_code == 400, page.content[:500]
    html = page.content.decode()
    assert f"<code>{where or '/'}</code>: " in html
    assert message in html
    assert "set_int_max_str_digits" not in html
    assert Fleet.objects.count() == 0


def test_the_page_and_the_api_refuse_deep_text_with_the_same_words(client, user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    page = client.post("/fleet/", {"fleet": "[" * 50_000, "action": "plan"}).content.decode()
    api = client.post("/api/v1/fleet-plans", data=b"[" * 50_000, content_type="application/json").json()
    detail = api["errors"][0]["detail"]
    assert detail.startswith("JSON parse error - ")
    assert detail.removeprefix("JSON parse error - ") in page


@pytest.mark.django_db
def test_an_unpriced_all_rent_reads_not_priced(client) -> None:  # type: ignore[no-untyped-def]
    # A hostile probe: the page and PDF printed "Renting everything: $ (saves $)" when renting was not priced.
    from tests.web.conftest import load_bundled_data

    load_bundled_data()
    page = post(
        client,
        {
            "name": "s",
            "gpu": "h100-sxm",
            "rent": {"markets": ["spot"]},
            "jobs": [{"name": "x", "gpus": 8, "hours": 8760}],
        },
    )
    assert page.status_code == 200, page.content[:2000]
    html = page.content.decode()
    assert "Renting everything: not priced" in html and "$ (saves $)" not in html


def test_a_usage_upload_with_a_byte_order_mark_is_read(client, user) -> None:  # type: ignore[no-untyped-def]
    # The page decoded uploads as 'utf-8', keeping the BOM in the header's first name (Excel's "CSV UTF-8").
    from django.core.files.uploadedfile import SimpleUploadedFile

    text = "timestamp,gpus_busy\n" + "".join(f"2025-01-01T{hour:02d}:00:00Z,{8 + hour % 3}\n" for hour in range(24))
    upload = SimpleUploadedFile("usage.csv", b"\xef\xbb\xbf" + text.encode(), content_type="text/csv")
    page = client.post("/fleet/", {"fleet": json.dumps(BASE_AND_WEEK), "usage_file": upload})
    assert page.status_code == 200, page.content.decode()[:3000]
    assert "missing timestamp" not in page.content.decode()


def test_a_service_with_peak_hours_renders_as_one_job(client) -> None:  # type: ignore[no-untyped-def]
    from tests.advisor.fleet.test_inference_jobs import serving

    page = post(client, serving(400, 100))
    assert page.status_code == 200, page.content[:2000]
    html = page.content.decode()
    assert 'data-testid="fleet-results"' in html and html.count("<svg") >= 2
    assert "<td>chat API</td>" in html and "<td>chat API (peak hours)</td>" in html
    assert "Own 0 GPUs: $124,480 a year" in html  # its advice's rent at $2.50 a GPU-hour (before: own 24, $262,800)


def test_the_fleet_proposal_page_links_its_workbook_next_to_its_pdf(client, user) -> None:  # type: ignore[no-untyped-def]
    """As the scenario proposal page does (templates/proposals/detail.html): the workbook existed, unlinked."""
    from advisor.fleet.store import fleet_create
    from advisor.proposals import issue_fleet_proposal

    proposal = issue_fleet_proposal(
        user=user, fleet_id=fleet_create(owner=user, name="2027", document=BASE_AND_WEEK).pk
    )
    client.force_login(user)
    html = client.get(f"/proposals/{proposal.pk}/").content.decode()
    actions = html.split('class="scenario-actions"')[1].split("</div>")[0]
    pdf = actions.index('data-testid="proposal-pdf"')
    link = re.search(r'<a [^>]*href="([^"]+)"[^>]*data-testid="proposal-xlsx"', actions)
    assert link is not None and link.start() > pdf
    assert link.group(1) == f"/proposals/{proposal.pk}/proposal.xlsx"
    workbook = client.get(link.group(1))
    assert workbook.status_code == 200 and workbook["Content-Type"].endswith("spreadsheetml.sheet")


def test_a_stale_prefilled_name_never_overrides_the_json_name(client, user) -> None:  # type: ignore[no-untyped-def]
    # A new user's probe (F2): the box next to Plan, unlabelled and prefilled "2027 program", re-posted that name
    # after the user pasted a JSON named "Probe fleet 2027", and the fleet (and its proposal) was saved as
    # "2027 program". The rule: the box shows the JSON's name; left as shown, the JSON's name wins.
    client.force_login(user)
    form = client.get("/fleet/").content.decode()
    assert '<label for="fleet-name">' in form and 'id="fleet-name"' in form
    assert 'name="name_shown" value="2027 program"' in form
    pasted = {**BASE_AND_WEEK, "name": "Probe fleet 2027"}
    # Plan: the box is filled again from the pasted JSON's own name, not the stale one.
    planned = post(client, pasted, name="2027 program", name_shown="2027 program").content.decode()
    assert 'value="Probe fleet 2027"' in planned and 'value="2027 program"' not in planned
    saved = post(client, pasted, action="save", name="2027 program", name_shown="2027 program")
    assert saved.status_code == 302, saved.content.decode()[:2000]
    fleet = Fleet.objects.get()
    assert fleet.name == "Probe fleet 2027" and fleet.document["name"] == "Probe fleet 2027"


def test_a_name_typed_over_the_json_name_wins_and_says_so(client, user) -> None:  # type: ignore[no-untyped-def]
    client.force_login(user)
    pasted = {**BASE_AND_WEEK, "name": "Probe fleet 2027"}
    saved = post(client, pasted, action="save", name="Team D", name_shown="Probe fleet 2027")
    assert saved.status_code == 302
    assert Fleet.objects.get().document["name"] == "Team D"
    page = " ".join(client.get(saved["Location"]).content.decode().split())
    assert "replaces the JSON name “Probe fleet 2027”" in page


def test_short_run_hours_keep_a_decimal_and_no_fabric_line_when_owning_nothing(client) -> None:  # type: ignore[no-untyped-def]
    # A new user's probe (F10): peak-hours rows of 1.42 h and 0.58 h both read "1"; and "Owning more than one
    # server: capex includes the scale-out (InfiniBand) fabric" was printed beside "Own 0 GPUs".
    document = {
        "name": "x",
        "gpu": "h100-sxm",
        "rent": {"usd_per_gpu_hour": 1.0},
        "jobs": [{"name": "short", "gpus": 128, "hours": 1.42}, {"name": "tiny", "gpus": 8, "hours": 0.58}],
    }
    html = post(client, document).content.decode()
    assert "Own 0 GPUs" in html
    assert "<td>short</td><td>128</td><td>1.4</td>" in html and "<td>tiny</td><td>8</td><td>0.6</td>" in html
    assert 'data-testid="fleet-fabric"' not in html
    # Ten hours and more stay whole and grouped.
    big = post(client, {**document, "jobs": [{"name": "long", "gpus": 8, "hours": 1234.4}]}).content.decode()
    assert "<td>long</td><td>8</td><td>1,234</td>" in big


def test_the_tier_table_names_markets_as_the_scenario_pages_do(client) -> None:  # type: ignore[no-untyped-def]
    # A new user's probe (F10): the fleet's tier table printed raw ids ("on_demand") where scenario pages say
    # "on-demand".
    html = post(client, BASE_AND_WEEK).content.decode()
    table = html.split('data-testid="fleet-tiers"', 1)[1].split("</table>", 1)[0]
    cells = re.findall(r"<tr><td>([^<]*)</td>", table)
    assert cells and "on-demand" in cells and not [c for c in cells if "_" in c], cells


def test_peak_hours_lines_read_as_gpus_on_top_of_the_base_for_hours_a_day(client) -> None:  # type: ignore[no-untyped-def]
    # A new user's probe (F10): nothing said a "(peak hours)" line's GPUs are on top of the service's all-year line.
    from tests.advisor.fleet.test_inference_jobs import serving

    html = post(client, serving(400, 100)).content.decode()
    rows = re.findall(r"<tr><td>chat API \(peak hours\)</td><td>([^<]*)</td><td>([^<]*)</td>", html)
    assert rows, html[html.find("chat API") : html.find("chat API") + 400]
    for gpus, hours in rows:
        assert gpus.startswith("+") and hours.endswith(" a day"), (gpus, hours)
    assert "on top of the service" in html
