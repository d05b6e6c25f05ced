"""The fleet page ``/fleet/``: a Fleet Plan input (JSON, an optional usage CSV) in, the plan and its two
pictures out; logged-in users save it as a versioned fleet (``advisor.fleet.store``). It only
translates: the plan comes from ``advisor.fleet.service``, the pictures from ``advisor.fleet.charts``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from advisor.advice.fleet.document import parse_fleet, with_usage_csv
from advisor.fleet.models import Fleet
from advisor.fleet.proposal import fleet_results_context
from advisor.fleet.service import fleet_plan_for
from advisor.fleet.store import fleet_create, fleet_for_user, fleet_update, fleets_for_user
from advisor.proposals import issue_fleet_proposal, proposals_for_fleet
from advisor.scenario import ScenarioError, pointer
from advisor.versioned import DocumentNameConflict, DocumentNameError, named_document
from core.auth import signed_in_user
from core.ids import id_or_404
from core.jsontext import JSONTextError, parse_json_text

EXAMPLES: Final[Path] = Path(settings.BASE_DIR) / "examples"
EXAMPLE_FLEET: Final[Path] = EXAMPLES / "fleet-2027.json"
EXAMPLE_USAGE: Final[Path] = EXAMPLES / "usage-helios-earth-2020-05.csv"
MAX_USAGE_UPLOAD_BYTES: Final[int] = 20 * 1024 * 1024


def _example_text() -> str:
    try:
        return EXAMPLE_FLEET.read_text(encoding="utf-8")
    except OSError:
        return json.dumps({"name": "fleet", "gpu": "h100-sxm", "jobs": [{"gpus": 8, "hours": 100}]}, indent=2)


def _example_document() -> Any:
    try:
        return parse_json_text(_example_text())
    except JSONTextError:
        return None


def _usage_text(request: HttpRequest) -> tuple[str | None, list[dict[str, str]]]:
    upload = request.FILES.get("usage_file")
    if upload is not None:
        if (upload.size or 0) > MAX_USAGE_UPLOAD_BYTES:
            return None, [{"pointer": "/usage/csv", "message": f"at most {MAX_USAGE_UPLOAD_BYTES:,} bytes"}]
        try:
            return upload.read().decode("utf-8-sig"), []
        except UnicodeDecodeError:
            return None, [{"pointer": "/usage/csv", "message": "the usage file must be UTF-8 text (CSV)"}]
    if request.POST.get("example_usage"):
        return EXAMPLE_USAGE.read_text(encoding="utf-8"), []
    return None, []


def _own_fleet(request: HttpRequest, fleet_id: str) -> Fleet | None:
    if not fleet_id or not request.user.is_authenticated:
        return None
    try:
        return fleet_for_user(user=request.user, fleet_id=id_or_404(fleet_id, what="fleet"))
    except Fleet.DoesNotExist as exc:
        raise Http404("No such fleet.") from exc


def _plan(request: HttpRequest, text: str, usage: str | None) -> tuple[Any, dict | None, list[dict[str, str]]]:
    """(document, plan, errors) of the submitted fleet text."""
    try:
        # The API's reading of a JSON body: the textarea is the same input by another door (anonymous too).
        document = parse_json_text(text)
    except JSONTextError as error:
        return None, None, [{"pointer": pointer(*p.path), "message": p.message} for p in error.problems]
    if usage is not None:
        document = with_usage_csv(document, usage)
    try:
        return document, fleet_plan_for(document=document, user=request.user), []
    except ScenarioError as error:
        return document, None, error.errors


def _typed_name(request: HttpRequest) -> str:
    """The name the user typed in the Name box: "" when the box was left as the page filled it (``name_shown``).
    The rule stated next to the box: the fleet takes the JSON's name unless a different one is typed in the box. A
    box left as filled is no choice: after the JSON was edited its value is stale (a new user's probe, F2: a JSON
    named "Probe fleet 2027" was saved as the prefilled "2027 program")."""
    typed = (request.POST.get("name") or "").strip()
    return "" if typed == (request.POST.get("name_shown") or "").strip() else typed


def _document_name(document: Any) -> str:
    """The document's own name as the Name box shows it ("" when it has none, or one the box must not echo)."""
    given = document.get("name") if isinstance(document, dict) else None
    return given.strip() if isinstance(given, str) and given.isprintable() else ""


def _save(request: HttpRequest, editing: Fleet | None, document: Any) -> HttpResponse | list[dict[str, str]]:
    """The redirect to the saved fleet, or the errors (by pointer) that kept it from being saved."""
    typed = _typed_name(request)
    given = _document_name(document)
    replaced = given if typed and given and typed != given else ""
    if typed and isinstance(document, dict):
        # A name typed in the box replaces the document's own, which named_document then writes back in: one fleet,
        # still one name (an outsider: any name typed next to the prefilled "2027 program" JSON was refused).
        document = {key: value for key, value in document.items() if key != "name"}
    raw = document.get("name") if isinstance(document, dict) else None
    name = typed or (raw.strip() if isinstance(raw, str) else "")
    if editing is None:
        name = name or "Untitled fleet"
    try:
        parse_fleet(document)  # nothing invalid is stored (the caller saves only a document it could plan)
        # One fleet, one name, as the API and the scenario pages save it: the Name box's name is the document's too.
        name, document = named_document(name=name, document=document, model=Fleet)
        if editing is not None:
            fleet = fleet_update(fleet=editing, name=name, document=document)
            messages.success(request, f"Saved “{fleet.name}” as a new version; earlier versions are kept.")
        else:
            fleet = fleet_create(owner=signed_in_user(request), name=name, document=document)
            messages.success(request, f"Saved “{fleet.name}”.")
        if replaced:
            messages.info(request, f"Named from the Name box: the typed name replaces the JSON name “{replaced}”.")
    except ScenarioError as error:
        return error.errors
    except DocumentNameConflict as error:
        # Only with the box empty (a typed name replaces the document's), so it is the document's name: said once.
        return [{"pointer": "/name", "message": f"not saved: {error}"}]
    except DocumentNameError as error:
        # The Name box, when it was filled, is what was refused, not the document's /name.
        where = "the Name box" if typed else "/name"
        return [{"pointer": where, "message": f"not saved: {str(error).removeprefix('name: ')}"}]
    return redirect(f"{reverse('fleet')}?id={fleet.pk}")


def _saved_context(request: HttpRequest, editing: Fleet | None) -> dict[str, Any]:
    """The user's saved fleets (the page is where fleets are planned, so where they are found again: probe "pages"
    F6, a saved fleet was listed nowhere) and the open fleet's issued proposals."""
    if not request.user.is_authenticated:
        return {}
    return {
        "saved_fleets": fleets_for_user(user=signed_in_user(request)).order_by("-updated_at"),
        "fleet_proposals": proposals_for_fleet(fleet=editing) if editing is not None else None,
    }


@login_required
@require_POST
def fleet_proposal_issue(request: HttpRequest, fleet_id: int) -> HttpResponse:
    """ "Issue proposal" on a saved fleet: the API's service (``POST /api/v1/fleets/{id}/proposals``), then its
    page. Another user's fleet does not exist for you (404)."""
    try:
        proposal = issue_fleet_proposal(user=signed_in_user(request), fleet_id=fleet_id)
    except Fleet.DoesNotExist as exc:
        raise Http404("No such fleet.") from exc
    except ScenarioError as error:
        messages.error(request, "This fleet no longer plans: " + error.messages)
        return redirect(f"{reverse('fleet')}?id={fleet_id}")
    messages.success(request, f"Issued proposal {proposal.pk}: its figures are frozen as of now.")
    return redirect("proposal-detail", proposal_id=proposal.pk)


@require_http_methods(["GET", "POST"])
def fleet_page(request: HttpRequest) -> HttpResponse:
    editing = _own_fleet(request, request.POST.get("fleet_id") or request.GET.get("id", ""))
    context: dict[str, Any] = {"editing": editing, "text": _example_text(), "errors": [], "plan": None}
    # The Name box shows the fleet's name: the saved fleet's, else the document's own (the example's "2027 program").
    context["name_given"] = editing.name if editing is not None else _document_name(_example_document())
    context["name_shown"] = context["name_given"]
    if editing is not None and request.method == "GET":
        context["text"] = json.dumps(editing.document, indent=2)
        _, context["plan"], context["errors"] = _plan(request, context["text"], None)
    if request.method == "POST":
        context["text"] = request.POST.get("fleet", "")
        typed = _typed_name(request)
        usage, usage_errors = _usage_text(request)
        document, context["plan"], context["errors"] = _plan(request, context["text"], usage)
        # A typed name is shown again (never raw controls); a box left as filled is filled again from the JSON as it
        # now is, or keeps its name where the JSON has none (that name still names the fleet on save).
        shown = (request.POST.get("name") or "").strip()
        kept = typed or _document_name(document) or shown
        context["name_given"] = kept if kept.isprintable() else ""
        context["name_shown"] = "" if typed else context["name_given"]
        context["errors"] = usage_errors + context["errors"]
        # Nothing is saved while any input is refused (a bad usage upload was dropped and the fleet saved without it).
        saving = request.POST.get("action") == "save" and request.user.is_authenticated
        if context["plan"] is not None and not context["errors"] and saving:
            saved = _save(request, editing, document)
            if isinstance(saved, HttpResponse):
                return saved
            context["errors"] = saved
    plan = context["plan"]
    if plan is not None:
        context.update(fleet_results_context(plan=plan))
    context.update(_saved_context(request, editing))
    status = 400 if context["errors"] else 200
    return render(request, "fleet/plan.html", context, status=status)
