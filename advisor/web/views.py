"""Web pages: they translate HTTP to the planning, scenario and calibration services and back.

Another user's scenario, share link or calibration does not exist for you: every lookup goes
through an owner-scoped selector and a miss answers 404.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from advisor import proposals as proposal_store
from advisor import scenarios as store
from advisor.models import Scenario
from advisor.proposal import PdfUnavailable, render_proposal_pdf
from advisor.versioned import DocumentNameError
from advisor.web import forms as planner_forms
from advisor.web import proposal_views
from advisor.web.forms import PlannerForm
from advisor.web.pending import pending_planner_input
from advisor.web.planning import ScenarioError, advice_for, catalog_freshness, ownership_defaults_or_none
from advisor.web.presenters import compare_columns, freshness, results_context
from advisor.web.throttling import throttled
from core.auth import signed_in_user
from core.ids import id_or_404, parse_id
from core.textcheck import shown

PENDING_KEY = "planner_pending"


# --- helpers -----------------------------------------------------------------------------------


def _planner_form(
    data: QueryDict | dict[str, Any] | None = None,
    *,
    initial: dict[str, Any] | None = None,
    editing: Scenario | None = None,
) -> PlannerForm:
    return PlannerForm(
        data,
        initial=initial,
        ownership_defaults=ownership_defaults_or_none(),
        editing=editing.document if editing is not None else None,
    )


def _apply_scenario_errors(form: PlannerForm, error: ScenarioError) -> None:
    for item in error.errors:
        field = planner_forms.field_for_pointer(item.get("pointer") or "")
        message = planner_forms.in_form_words(item.get("message", "invalid"), form, pointer=item.get("pointer") or "")
        if field and field in form.fields:
            form.add_error(field, message)
        else:
            form.add_error(None, f"{item.get('pointer') or 'scenario'}: {message}")


def _editing(request: HttpRequest) -> Scenario | None:
    """The saved scenario the planner is editing (hidden scenario_id), if it is the user's."""
    raw = request.POST.get("scenario_id", "")
    if not raw or not request.user.is_authenticated:
        return None
    return _own_scenario(request, id_or_404(raw, what="scenario"))


def _document(form: PlannerForm, editing: Scenario | None) -> dict[str, Any]:
    document = form.to_scenario()
    return planner_forms.merge_into(editing.document, document) if editing is not None else document


def _calculate(request: HttpRequest, form: PlannerForm, *, editing: Scenario | None = None) -> dict[str, Any] | None:
    """The Advice for a bound planner form, or None with the problems added to the form."""
    if not form.is_valid():
        return None
    try:
        return advice_for(document=_document(form, editing), user=request.user)
    except ScenarioError as error:
        _apply_scenario_errors(form, error)
        return None


def _error_items(form: PlannerForm) -> list[tuple[str, list[str]]]:
    return [(field, [str(error) for error in errors]) for field, errors in form.errors.items()]


def _planner_page(
    request: HttpRequest,
    *,
    form: PlannerForm,
    advice: dict[str, Any] | None = None,
    editing: Scenario | None = None,
    preset_key: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, Any] = {
        "form": form,
        "sections": planner_forms.sections(form),
        "kind": planner_forms.current_kind(form),
        "presets": list(planner_forms.PRESETS.items()),
        "preset_key": preset_key,
        "editing": editing,
        "results": advice is not None,
    }
    if advice is not None:
        context.update(results_context(advice=advice))
    else:
        context["freshness"] = freshness(advice={"price_freshness": catalog_freshness()})
    return render(request, "planner/plan.html", context, status=status)


def _own_scenario(request: HttpRequest, scenario_id: int) -> Scenario:
    try:
        return store.scenario_for_user(user=signed_in_user(request), scenario_id=scenario_id)
    except Scenario.DoesNotExist:
        raise Http404("No such scenario") from None


def _pdf_response(*, advice: dict[str, Any], name: str) -> HttpResponse:
    try:
        pdf = render_proposal_pdf(advice=advice, scenario_name=name)
    except PdfUnavailable as error:
        return HttpResponse(render_to_string("503.html", {"detail": str(error)}), status=503)
    response = HttpResponse(pdf, content_type="application/pdf")
    filename = f"{slugify(name) or 'scenario'}-proposal.pdf"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _advice_or_errors(*, scenario: Scenario) -> tuple[dict[str, Any] | None, list[dict[str, str]]]:
    try:
        return advice_for(document=scenario.document, user=scenario.owner), []
    except ScenarioError as error:
        return None, error.errors


# --- the planner -------------------------------------------------------------------------------


@require_http_methods(["GET", "POST"])
def planner(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        editing = _editing(request)
        form = _planner_form(request.POST, editing=editing)
        advice = _calculate(request, form, editing=editing)
        return _planner_page(request, form=form, advice=advice, editing=editing, status=200 if advice else 400)

    pending = request.session.get(PENDING_KEY)
    if pending and request.GET.get("restore"):
        form = _planner_form(QueryDict(urlencode(pending, doseq=True)))
        form.is_valid()  # show any problems next to what was typed
        if request.user.is_authenticated:
            messages.info(request, "Welcome back: your inputs are restored. Press Save to keep them.")
        return _planner_page(request, form=form)

    scenario_id = request.GET.get("scenario", "")
    if scenario_id and request.user.is_authenticated:
        scenario = _own_scenario(request, id_or_404(scenario_id, what="scenario"))
        form = _planner_form(initial=planner_forms.initial_from_scenario(scenario.document))
        return _planner_page(request, form=form, editing=scenario)

    preset_key = request.GET.get("preset", planner_forms.DEFAULT_PRESET)
    if preset_key not in planner_forms.PRESETS:
        preset_key = planner_forms.DEFAULT_PRESET
    form = _planner_form(initial=planner_forms.preset_initial(preset_key))
    return _planner_page(request, form=form, preset_key=preset_key)


@require_POST
@throttled("advice")
def planner_results(request: HttpRequest) -> HttpResponse:
    """The results fragment the planner's script swaps in as inputs change (422 with the errors)."""
    editing = _editing(request)
    form = _planner_form(request.POST, editing=editing)
    advice = _calculate(request, form, editing=editing)
    if advice is None:
        return render(request, "planner/results_fragment.html", {"errors": _error_items(form)}, status=422)
    return render(request, "planner/results_fragment.html", results_context(advice=advice))


@require_POST
@throttled("pdf")
def planner_proposal(request: HttpRequest) -> HttpResponse:
    """The PDF proposal of the scenario on screen (no need to save it first)."""
    editing = _editing(request)
    form = _planner_form(request.POST, editing=editing)
    advice = _calculate(request, form, editing=editing)
    if advice is None:
        return _planner_page(request, form=form, editing=editing, status=400)
    return _pdf_response(advice=advice, name=advice["scenario"].get("name") or "Scenario")


@require_POST
def planner_save(request: HttpRequest) -> HttpResponse:
    if not request.user.is_authenticated:
        # Keep what was typed across the login and bring it back to the planner.
        pending = pending_planner_input(request.POST)
        if pending is not None:
            request.session[PENDING_KEY] = pending
        next_url = f"{reverse('planner')}?restore=1"
        return redirect(f"{reverse('login')}?{urlencode({'next': next_url})}")
    editing = _editing(request)
    form = _planner_form(request.POST, editing=editing)
    advice = _calculate(request, form, editing=editing)
    if advice is None:
        return _planner_page(request, form=form, editing=editing, status=400)
    document = _document(form, editing)
    if editing is not None:
        scenario = store.scenario_update(scenario=editing, name=document["name"], document=document)
        messages.success(request, f"Saved “{scenario.name}” as a new version; earlier versions are kept.")
    else:
        scenario = store.scenario_create(owner=signed_in_user(request), name=document["name"], document=document)
        messages.success(request, f"Saved “{scenario.name}”.")
    request.session.pop(PENDING_KEY, None)
    if request.POST.get("then") == "issue":
        return proposal_views.issue_after_save(request, scenario)
    return redirect("scenario-detail", scenario_id=scenario.pk)


# --- saved scenarios ---------------------------------------------------------------------------


@login_required
@require_GET
def scenario_list(request: HttpRequest) -> HttpResponse:
    scenarios = store.scenarios_for_user(user=signed_in_user(request))
    ticked, _ = _ids_or_bad([raw for raw in request.GET.getlist("ids") if parse_id(raw) is not None])
    return render(request, "scenarios/list.html", {"scenarios": scenarios, "ticked": ticked})


@login_required
@require_GET
def scenario_detail(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    advice, errors = _advice_or_errors(scenario=scenario)
    context: dict[str, Any] = {
        "scenario": scenario,
        "versions": store.scenario_versions(scenario=scenario),
        "share_links": store.active_share_links(scenario=scenario),
        "proposals": proposal_store.proposals_for_scenario(user=signed_in_user(request), scenario_id=scenario.pk)[:20],
        "scenario_errors": errors,
        "pdf_url": reverse("scenario-proposal", kwargs={"scenario_id": scenario.pk}),
    }
    if advice is not None:
        context.update(results_context(advice=advice))
    return render(request, "scenarios/detail.html", context)


@login_required
@require_POST
def scenario_rename(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    name = request.POST.get("name", "")
    try:
        document = {**scenario.document, "name": name.strip()}
        store.scenario_update(scenario=scenario, name=name, document=document)
    except DocumentNameError as error:
        messages.error(request, str(error).replace("name: ", "Name ", 1))
    else:
        messages.success(request, "Renamed.")
    return redirect("scenario-detail", scenario_id=scenario.pk)


@login_required
@require_POST
def scenario_duplicate(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    copy = store.scenario_duplicate(scenario=scenario, owner=signed_in_user(request))
    messages.success(request, f"Duplicated as “{copy.name}”.")
    return redirect("scenario-detail", scenario_id=copy.pk)


@login_required
@require_POST
def scenario_delete(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    name = scenario.name
    store.scenario_delete(scenario=scenario)
    messages.success(request, f"Deleted “{name}”.")
    return redirect("scenario-list")


@login_required
@require_POST
def scenario_restore(request: HttpRequest, scenario_id: int, number: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    try:
        store.scenario_restore_version(scenario=scenario, number=number)
    except scenario.versions.model.DoesNotExist:
        raise Http404("No such version") from None
    messages.success(request, f"Restored version {number} as the newest version.")
    return redirect("scenario-detail", scenario_id=scenario.pk)


@login_required
@require_GET
@throttled("pdf")
def scenario_proposal(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    advice, errors = _advice_or_errors(scenario=scenario)
    if advice is None:
        messages.error(request, "This scenario is no longer valid: " + "; ".join(e["message"] for e in errors))
        return redirect("scenario-detail", scenario_id=scenario.pk)
    return _pdf_response(advice=advice, name=scenario.name)


def _ids_or_bad(raws: list[str]) -> tuple[list[int], str | None]:
    """The distinct scenario ids ``raws`` write, in order, or the first one that writes none."""
    ids: list[int] = []
    for raw in raws:
        number = parse_id(raw)
        if number is None:
            return [], raw
        if number not in ids:
            ids.append(number)
    return ids, None


@login_required
@require_GET
def scenario_compare(request: HttpRequest) -> HttpResponse:
    ids, bad = _ids_or_bad(request.GET.getlist("ids"))
    if bad is not None:
        detail = (
            f"The parameter ids must be scenario numbers (whole numbers such as 12, the boxes ticked on your "
            f"scenarios), two to four of them; {shown(bad)} is not one."
        )
        context = {
            "title": "Cannot compare these scenarios",
            "detail": detail,
            "back_url": reverse("scenario-list"),
            "back_label": "Your scenarios",
        }
        return render(request, "400.html", context, status=400)
    if not 2 <= len(ids) <= 4:
        messages.error(request, f"Pick two to four scenarios to compare (you ticked {len(ids)}).")
        # Back to the list with the ticks kept, so one more (or one less) is a click away.
        query = f"?{urlencode({'ids': ids}, doseq=True)}" if ids else ""
        return redirect(f"{reverse('scenario-list')}{query}")
    scenarios = [_own_scenario(request, i) for i in ids]
    pairs = [(s, _advice_or_errors(scenario=s)[0]) for s in scenarios]
    return render(request, "scenarios/compare.html", compare_columns(pairs=pairs))


@login_required
@require_POST
def share_create(request: HttpRequest, scenario_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    # A share link shows a frozen proposal: what the reader opens is what was shared, whatever prices do next.
    try:
        proposal = proposal_store.issue_proposal(user=signed_in_user(request), scenario_id=scenario.pk)
    except ScenarioError as error:
        messages.error(request, "This scenario no longer validates: " + error.messages)
        return redirect("scenario-detail", scenario_id=scenario.pk)
    link = proposal_store.proposal_share_link_create(proposal=proposal)
    url = request.build_absolute_uri(reverse("shared", kwargs={"token": link.token}))
    messages.success(
        request,
        f"Anyone with this link can read (not edit) this scenario as issued now (proposal {proposal.pk}): {url}",
    )
    return redirect("scenario-detail", scenario_id=scenario.pk)


@login_required
@require_POST
def share_revoke(request: HttpRequest, scenario_id: int, link_id: int) -> HttpResponse:
    scenario = _own_scenario(request, scenario_id)
    link = store.share_link_for_scenario(scenario=scenario, link_id=link_id)
    if link is None:
        raise Http404("No such share link")
    store.share_link_revoke(link=link)
    messages.success(request, "The share link is revoked; it now answers 'not found'.")
    return redirect("scenario-detail", scenario_id=scenario.pk)


def _shared_scenario(token: str) -> Scenario:
    scenario = store.scenario_for_share_token(token=token)
    if scenario is None:
        raise Http404("This link does not exist or was revoked")
    return scenario


@require_GET
def shared(request: HttpRequest, token: str) -> HttpResponse:
    scenario = _shared_scenario(token)
    proposal = proposal_store.proposal_for_share_token(token=token)
    if proposal is not None:
        return proposal_views.shared_proposal_page(request, proposal=proposal, token=token)
    # Links made before proposals existed keep showing the scenario computed with today's prices.
    advice, errors = _advice_or_errors(scenario=scenario)
    context: dict[str, Any] = {
        "scenario": scenario,
        "scenario_errors": errors,
        "pdf_url": reverse("shared-proposal", kwargs={"token": token}),
    }
    if advice is not None:
        context.update(results_context(advice=advice))
    return render(request, "scenarios/shared.html", context)


@require_GET
@throttled("pdf")
def shared_proposal(request: HttpRequest, token: str) -> HttpResponse:
    scenario = _shared_scenario(token)
    proposal = proposal_store.proposal_for_share_token(token=token)
    if proposal is not None:
        return proposal_views.frozen_pdf_response(proposal=proposal, shared=True)
    advice, _ = _advice_or_errors(scenario=scenario)
    if advice is None:
        raise Http404("This scenario cannot be computed any more")
    return _pdf_response(advice=advice, name=scenario.name)
