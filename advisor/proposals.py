"""Frozen proposals: services (issue, recompute, share) and owner-scoped selectors.

A proposal stores the Advice as it was issued, with the offers, hardware quote and calibration it
used and a hash of all of it. Nothing reads live prices again for an issued proposal: what an
approver opens next month is what was proposed. "Recompute with today's prices" is a new proposal
from the same inputs, and ``advice_difference`` says what moved."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from advisor.advice.documents import recommended_size
from advisor.cash_flow import decision_amount, yearly_totals
from advisor.fleet.store import fleet_for_user
from advisor.models import Calibration, Fleet, Proposal, Scenario, ShareLink
from advisor.scenarios import scenario_for_user
from advisor.web.presenters import prices_as_of_text

OFFER_KEY = ("provider", "instance", "region", "market")
SCENARIO_DELETED = "the scenario of this proposal was deleted; it can no longer be shared"


# From this magnitude on Python writes an integral float with an exponent (1e+16); PostgreSQL's jsonb writes it
# as digits (10000000000000000), which reads back as an integer.
_EXPONENT_FROM = 1e16


def _stored_numbers(value: Any) -> Any:
    """`value` with its numbers as every database returns them: a float of 1e16 or more in magnitude becomes the
    integer its JSON text names (1.2345678901234567e+20: 123456789012345670000, not the binary value's digits),
    and -0.0 becomes 0.0 (jsonb has no negative zero); other numbers are unchanged."""
    if isinstance(value, float):
        if value == 0:
            return 0.0
        return int(Decimal(repr(value))) if abs(value) >= _EXPONENT_FROM and math.isfinite(value) else value
    if isinstance(value, Mapping):
        return {key: _stored_numbers(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_stored_numbers(item) for item in value]
    return value


def _canonical(value: Any) -> str:
    """The JSON a proposal stores and hashes. Its numbers are those SQLite and PostgreSQL both read back
    (`_stored_numbers`), so the served document is the same on both and its hash can be checked from it.
    allow_nan=False: a NaN or infinity would be stored differently by each database; fail loudly instead."""
    return json.dumps(_stored_numbers(value), sort_keys=True, separators=(",", ":"), allow_nan=False)


def content_hash(*, advice: Mapping[str, Any], provenance: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of `{"advice": ..., "provenance": ...}` written as JSON with sorted keys, no whitespace and
    non-ASCII characters as \\u escapes: in Python, `json.dumps(doc, sort_keys=True, separators=(",", ":"))` of
    the proposal's `advice` and `provenance` as the API serves them."""
    return hashlib.sha256(_canonical({"advice": advice, "provenance": provenance}).encode()).hexdigest()


def _offers_in(value: Any) -> Iterator[dict[str, Any]]:
    """Every offer object anywhere in the Advice (chosen, per market, per replica tier)."""
    if isinstance(value, Mapping):
        if "provider" in value and "usd_per_gpu_hour" in value:
            yield dict(value)
        for item in value.values():
            yield from _offers_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from _offers_in(item)


def offers_used(*, advice: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The distinct offers the Advice (or a Fleet Plan: its tier prices) quotes, each with its price, source and
    observation date."""
    seen: dict[tuple[Any, ...], dict[str, Any]] = {}
    for offer in _offers_in(advice.get("sizes") or advice.get("tier_prices") or []):
        seen.setdefault(tuple(offer.get(k) for k in OFFER_KEY), offer)
    return [seen[key] for key in sorted(seen, key=lambda k: tuple(str(part) for part in k))]


def _provenance(*, advice: Mapping[str, Any], calibration: Calibration) -> dict[str, Any]:
    return {
        "offers": offers_used(advice=advice),
        "prices_as_of": advice.get("prices_as_of"),
        "price_freshness": advice.get("price_freshness"),
        "hardware_quote": advice.get("hardware_quote", (advice.get("tier_prices") or {}).get("hardware_quote")),
        "calibration": {
            "id": calibration.pk,
            "name": calibration.name,
            "runs": calibration.runs,
            "loo_mape": calibration.loo_mape,
            "is_default": calibration.is_default,
            "created_at": calibration.created_at.isoformat() if calibration.created_at else None,
            "document_sha256": hashlib.sha256(_canonical(calibration.document).encode()).hexdigest(),
        },
    }


def _advise(*, user: User, document: dict[str, Any]) -> tuple[dict[str, Any], Calibration]:
    """The Advice of ``document`` with the user's active calibration; raises ScenarioError."""
    from advisor.advice import advise  # the pipeline pulls in the estimator and pricing: load on first use
    from advisor.calibrations import calibration_for_user
    from advisor.scenario import parse_scenario

    scenario = parse_scenario(document)
    row, calibration = calibration_for_user(user=user)
    # Through JSON once, so what is stored, hashed and served is the same document.
    advice = json.loads(_canonical(advise(scenario, calibration=calibration).to_dict()))
    return advice, row


def _fleet_plan(*, user: User, document: dict[str, Any]) -> tuple[dict[str, Any], Calibration]:
    """The Fleet Plan of ``document`` with the user's active calibration; raises ScenarioError."""
    from advisor.advice.fleet.service import fleet_plan  # the pipeline: load on first use, like _advise
    from advisor.calibrations import calibration_for_user

    row, calibration = calibration_for_user(user=user)
    return json.loads(_canonical(fleet_plan(document=document, calibration=calibration))), row


def _issue(
    *,
    user: User,
    scenario: Scenario | None,
    name: str,
    document: dict[str, Any],
    kind: str = Proposal.KIND_SCENARIO,
    **extra: Any,
) -> Proposal:
    compute = _fleet_plan if kind == Proposal.KIND_FLEET else _advise
    advice, calibration = compute(user=user, document=document)
    provenance = _provenance(advice=advice, calibration=calibration)
    return Proposal.objects.create(
        owner=user,
        kind=kind,
        scenario=scenario,
        scenario_name=name,
        scenario_document=document,
        issued_at=timezone.now(),
        advice=advice,
        provenance=provenance,
        content_hash=content_hash(advice=advice, provenance=provenance),
        **extra,
    )


@transaction.atomic
def issue_proposal(*, user: User, scenario_id: int) -> Proposal:
    """Freeze the Advice of the user's saved scenario as it stands now.

    Raises Scenario.DoesNotExist for another user's scenario and ScenarioError for a stored document
    the current rules reject."""
    scenario = scenario_for_user(user=user, scenario_id=scenario_id)
    return _issue(user=user, scenario=scenario, name=scenario.name, document=scenario.document)


@transaction.atomic
def issue_fleet_proposal(*, user: User, fleet_id: int) -> Proposal:
    """Freeze the Fleet Plan of the user's saved fleet as it stands now (the fleet's name and input are copied).

    Raises Fleet.DoesNotExist for another user's fleet and ScenarioError for a stored document the current rules
    reject."""
    fleet = fleet_for_user(user=user, fleet_id=fleet_id)
    return _issue(
        user=user, scenario=None, fleet=fleet, kind=Proposal.KIND_FLEET, name=fleet.name, document=fleet.document
    )


@transaction.atomic
def recompute_proposal(*, user: User, proposal_id: int) -> Proposal:
    """A new proposal from the same inputs as the given one, with today's prices and calibration."""
    previous = proposal_for_user(user=user, proposal_id=proposal_id)
    return _issue(
        user=user,
        scenario=previous.scenario,
        name=previous.scenario_name,
        document=previous.scenario_document,
        kind=previous.kind,
        fleet=previous.fleet,
        recomputed_from=previous,
    )


class NotShareable(ValueError):
    """Why a proposal cannot be shared by link (a 409 in the API, a message on the web page)."""

    @property
    def sentence(self) -> str:
        """The reason as a message says it: its first letter capitalised, the rest as written (str.capitalize()
        lowercased "PDF"), and a full stop."""
        reason = str(self)
        return reason[:1].upper() + reason[1:] + "."


def proposal_share_link_create(*, proposal: Proposal) -> ShareLink:
    """A read-only link to this frozen proposal. Raises NotShareable for a fleet proposal and when its scenario was
    deleted (links belong to a scenario and go with it)."""
    if proposal.kind == Proposal.KIND_FLEET:
        raise NotShareable("a fleet proposal is not shared by link; send its PDF")
    if proposal.scenario_id is None:
        raise NotShareable(SCENARIO_DELETED)
    try:
        with transaction.atomic():
            link = ShareLink.objects.create(scenario_id=proposal.scenario_id, proposal=proposal)
            # The scenario may go between the check above and this insert (a reviewer's concurrent DELETE: a 500).
            # Foreign keys are checked at commit (deferred, SQLite and PostgreSQL alike), which may be a caller's
            # outer transaction (an idempotent POST's): check this table's now, so the race is the refusal here.
            connection.check_constraints(table_names=[ShareLink._meta.db_table])
    except IntegrityError as error:
        raise NotShareable(SCENARIO_DELETED) from error
    return link


# --- selectors ---


def proposals_for_user(*, user: User) -> QuerySet[Proposal]:
    return Proposal.objects.filter(owner=user)


def proposal_for_user(*, user: User, proposal_id: int) -> Proposal:
    """Raises Proposal.DoesNotExist for a missing id and for another user's proposal alike."""
    return Proposal.objects.select_related("scenario", "recomputed_from").get(owner=user, pk=proposal_id)


def proposals_for_scenario(*, user: User, scenario_id: int) -> QuerySet[Proposal]:
    """The user's proposals of one of their scenarios; raises Scenario.DoesNotExist like scenario_for_user."""
    scenario = scenario_for_user(user=user, scenario_id=scenario_id)
    return proposals_for_user(user=user).filter(scenario=scenario)


def proposals_for_fleet(*, fleet: Fleet) -> QuerySet[Proposal]:
    """The proposals issued from one saved fleet (the caller got it through fleet_for_user: its owner's), newest
    first."""
    return proposals_for_user(user=fleet.owner).filter(fleet=fleet).order_by("-issued_at")


def proposal_share_links(*, proposal: Proposal) -> QuerySet[ShareLink]:
    return proposal.share_links.filter(revoked_at__isnull=True)


def proposal_for_share_token(*, token: str) -> Proposal | None:
    link = ShareLink.objects.select_related("proposal").filter(token=token, revoked_at__isnull=True).first()
    return link.proposal if link else None


# --- what changed between two proposals (pure) ---


def _recommended(advice: Mapping[str, Any]) -> Mapping[str, Any]:
    size: Mapping[str, Any] = recommended_size(advice) or {}
    return size


def _figures(advice: Mapping[str, Any]) -> dict[str, Any]:
    recommendation = advice.get("recommendation") or {}
    size = _recommended(advice)
    totals = yearly_totals(advice=advice) or {"total": {}}
    amount = decision_amount(advice=advice) or {}
    offer = (size.get("rent") or {}).get("offer") or {}
    return {
        "Decision": recommendation.get("action"),
        "GPUs": recommendation.get("gpus"),
        "Amount to approve (USD)": amount.get("usd"),
        "Rented price per GPU-hour (USD)": offer.get("usd_per_gpu_hour"),
        "Renting, cash over the horizon (USD)": totals["total"].get("rent_usd"),
        "Buying, cash over the horizon (USD)": totals["total"].get("buy_usd"),
        "Renting, present cost (USD)": totals["total"].get("rent_present_usd"),
        "Buying, present cost (USD)": totals["total"].get("buy_present_usd"),
        "Prices": prices_as_of_text(advice=advice),
    }


def advice_difference(*, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The headline figures of two Advice documents side by side, with the change where both are numbers."""
    old, new = _figures(before), _figures(after)
    rows = []
    for label in old:
        a, b = old[label], new[label]
        numeric = isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool)
        rows.append(
            {
                "label": label,
                "before": a,
                "after": b,
                "change": (b - a) if numeric else None,
                "changed": a != b,
            }
        )
    return rows
