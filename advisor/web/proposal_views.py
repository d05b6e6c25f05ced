"""Proposal pages: issue a frozen proposal, read it (page, PDF, xlsx), recompute it with today's prices
as a new proposal (showing what moved), and share it read-only. They translate HTTP to advisor.proposals.

Another user's proposal or scenario does not exist for you: lookups go through owner-scoped selectors."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST

from advisor import proposals as store
from advisor.fleet.proposal import fleet_results_context
from advisor.models import Proposal, Scenario
from advisor.proposal import frozen_proposal_pdf
from advisor.scenario import ScenarioError
from advisor.web.presenters import results_context
from advisor.xlsx import MEDIA_TYPE as XLSX_MEDIA_TYPE
from advisor.xlsx import proposal_workbook
from core.auth import signed_in_user


def _own_proposal(request: HttpRequest, proposal_id: int) -> Proposal:
    try:
        return store.proposal_for_user(user=signed_in_user(request), proposal_id=proposal_id)
    except Proposal.DoesNotExist:
        raise Http404("No such proposal") from None


def proposal_document(*, proposal: Proposal) -> dict[str, Any]:
    """The proposal as the API serves it (what the workbook is written from)."""
    return {
        "id": proposal.pk,
        "kind": proposal.kind,
        "scenario_id": proposal.scenario_id,
        "scenario_name": proposal.scenario_name,
        "issued_at": proposal.issued_at.isoformat(),
        "content_hash": proposal.content_hash,
        "advice": proposal.advice,
        "provenance": proposal.provenance,
    }


def _issue_or_message(request: HttpRequest, scenario_id: int) -> Proposal | None:
    try:
        return store.issue_proposal(user=signed_in_user(request), scenario_id=scenario_id)
    except Scenario.DoesNotExist:
        raise Http404("No such scenario") from None
    except ScenarioError as error:
        messages.error(request, "This scenario no longer validates: " + error.messages)
        return None


@login_required
@require_POST
def proposal_issue(request: HttpRequest, scenario_id: int) -> HttpResponse:
    proposal = _issue_or_message(request, scenario_id)
    if proposal is None:
        return redirect("scenario-detail", scenario_id=scenario_id)
    messages.success(request, f"Issued proposal {proposal.pk}: its figures are frozen as of now.")
    return redirect("proposal-detail", proposal_id=proposal.pk)


def issue_after_save(request: HttpRequest, scenario: Scenario) -> HttpResponse:
    """The planner's "Save and issue proposal": the scenario was just saved; freeze it."""
    proposal = _issue_or_message(request, scenario.pk)
    if proposal is None:
        return redirect("scenario-detail", scenario_id=scenario.pk)
    messages.success(request, f"Saved “{scenario.name}” and issued proposal {proposal.pk}.")
    return redirect("proposal-detail", proposal_id=proposal.pk)


def _shown(value: Any, *, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    return f"{value:+,.2f}" if signed else f"{value:,.2f}"


def _difference_rows(*, before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            **row,
            "before_text": _shown(row["before"]),
            "after_text": _shown(row["after"]),
            "change_text": _shown(row["change"], signed=True) if row["change"] is not None else "",
        }
        for row in store.advice_difference(before=before, after=after)
    ]


@login_required
@require_GET
def proposal_detail(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _own_proposal(request, proposal_id)
    if proposal.kind == Proposal.KIND_FLEET:
        return _fleet_proposal_detail(request, proposal)
    context: dict[str, Any] = {
        "proposal": proposal,
        "share_links": store.proposal_share_links(proposal=proposal),
        "difference": (
            _difference_rows(before=proposal.recomputed_from.advice, after=proposal.advice)
            if proposal.recomputed_from is not None
            else None
        ),
        "later": proposal.recomputations.order_by("-issued_at").first(),
        **results_context(advice=proposal.advice),
    }
    return render(request, "proposals/detail.html", context)


def _fleet_proposal_detail(request: HttpRequest, proposal: Proposal) -> HttpResponse:
    plan = proposal.advice
    context = {
        "proposal": proposal,
        "plan": plan,
        **fleet_results_context(plan=plan),
        "later": proposal.recomputations.order_by("-issued_at").first(),
    }
    return render(request, "fleet/proposal_detail.html", context)


def frozen_pdf_response(*, proposal: Proposal, shared: bool = False) -> HttpResponse:
    response = HttpResponse(frozen_proposal_pdf(proposal=proposal, shared=shared), content_type="application/pdf")
    filename = f"{slugify(proposal.scenario_name) or 'scenario'}-proposal-{proposal.pk}.pdf"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_GET
def proposal_pdf(request: HttpRequest, proposal_id: int) -> HttpResponse:
    return frozen_pdf_response(proposal=_own_proposal(request, proposal_id))


@login_required
@require_GET
def proposal_xlsx(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _own_proposal(request, proposal_id)
    response = HttpResponse(
        proposal_workbook(proposal=proposal_document(proposal=proposal)), content_type=XLSX_MEDIA_TYPE
    )
    filename = f"{slugify(proposal.scenario_name) or 'scenario'}-proposal-{proposal.pk}.xlsx"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@require_POST
def proposal_recompute(request: HttpRequest, proposal_id: int) -> HttpResponse:
    previous = _own_proposal(request, proposal_id)
    try:
        fresh = store.recompute_proposal(user=signed_in_user(request), proposal_id=previous.pk)
    except ScenarioError as error:
        messages.error(request, "These inputs no longer validate: " + error.messages)
        return redirect("proposal-detail", proposal_id=previous.pk)
    messages.success(request, f"Recomputed with today's prices as proposal {fresh.pk}; proposal {previous.pk} is kept.")
    return redirect("proposal-detail", proposal_id=fresh.pk)


@login_required
@require_POST
def proposal_share(request: HttpRequest, proposal_id: int) -> HttpResponse:
    proposal = _own_proposal(request, proposal_id)
    try:
        link = store.proposal_share_link_create(proposal=proposal)
    except store.NotShareable as error:
        messages.error(request, error.sentence)
    else:
        url = request.build_absolute_uri(reverse("shared", kwargs={"token": link.token}))
        messages.success(request, f"Anyone with this link can read this proposal as issued: {url}")
    return redirect("proposal-detail", proposal_id=proposal.pk)


def shared_proposal_page(request: HttpRequest, *, proposal: Proposal, token: str) -> HttpResponse:
    """What a share link to a frozen proposal shows: the stored Advice, never recomputed."""
    context = {
        "proposal": proposal,
        "pdf_url": reverse("shared-proposal", kwargs={"token": token}),
        **results_context(advice=proposal.advice),
    }
    return render(request, "proposals/shared.html", context)
