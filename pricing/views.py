"""The price page: translate the request, call selectors/tasks, render. No logic of their own."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.admin.views.decorators import staff_member_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_POST

from pricing import selectors, services
from pricing.charts import history_svg
from pricing.forms import SORTS, OfferFilterForm, RefreshForm
from pricing.models import FeedRun, Offer

PAGE_SIZE = 100


@require_GET
def price_list(request: HttpRequest) -> HttpResponse:
    form = OfferFilterForm(request.GET or None)
    offers = Offer.objects.none()
    if form.is_bound and not form.is_valid():
        status = 400
    else:
        status = 200
        data = form.cleaned_data if form.is_bound else {}
        offers = selectors.current_offers(
            gpu=data.get("gpu") or None,
            providers=[data["provider"]] if data.get("provider") else None,
            markets=[data["market"]] if data.get("market") else None,
            regions=[data["region"]] if data.get("region") else None,
        ).order_by(data.get("sort") or "usd_per_gpu_hour", "provider__slug", "instance_type", "region", "id")
    page = Paginator(offers, PAGE_SIZE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "form": form,
        "page": page,
        "query": query.urlencode(),
        "sorts": SORTS,
        "stale_before": selectors.stale_before(),
        "freshness": selectors.price_freshness(),
        "compiled_on": selectors.snapshot_compiled_on(),
        "feeds": selectors.feed_statuses(),
        "refresh_form": RefreshForm(),
    }
    return render(request, "pricing/prices.html", context, status=status)


@require_GET
def offer_detail(request: HttpRequest, pk: int) -> HttpResponse:
    offer = get_object_or_404(Offer.objects.select_related("provider"), pk=pk)
    placed = selectors.offer_history_rows(offer=offer)
    chart = history_svg(
        [(when, float(row.usd_per_gpu_hour)) for when, row in placed],
        now=timezone.now(),
        title=f"{offer}: USD per GPU-hour",
    )
    context = {
        "offer": offer,
        "history": [row for _, row in placed],
        "chart": chart,
        "stale": selectors.is_stale(offer),
        "compiled_on": selectors.snapshot_compiled_on(),
    }
    return render(request, "pricing/offer_detail.html", context)


@require_POST
@staff_member_required
def refresh(request: HttpRequest) -> HttpResponse:
    from core.queueing import QueueUnavailable, enqueue, operator_command, runs_in_process
    from pricing.tasks import refresh_all, refresh_feed

    form = RefreshForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Unknown feed.")
        return redirect("pricing:prices")
    feed = form.cleaned_data["feed"]
    task, args = (refresh_feed, (feed,)) if feed else (refresh_all, ())
    what = feed or "all feeds"
    feeds_section = f"{request.build_absolute_uri('/prices/')}#feeds"
    in_process = runs_in_process()
    if services.refresh_runs_feeds_in_request(feed=feed, in_process=in_process):
        messages.error(
            request,
            f"Refresh of {what} was not started: without a task queue (Redis) it would run every feed it covers one "
            f"after another inside this page's request. Run `{operator_command(task, args)}` on the server, or "
            "refresh one feed at a time here.",
        )
        return redirect(feeds_section)
    try:
        enqueue(task, *args, owner=request.user)
    except QueueUnavailable as error:
        messages.error(request, f"Refresh of {what} could not be queued: {error}")
        return redirect(feeds_section)
    if in_process:  # it ran inside enqueue(): it is over, whatever its outcome
        messages.info(
            request, f"Refresh of {what} ran in this request and has finished; its outcome shows under Feed status."
        )
    else:
        messages.info(request, f"Refresh of {what} started; progress shows under Feed status.")
    return redirect(feeds_section)


@never_cache
@require_GET
def feed_status(request: HttpRequest) -> JsonResponse:
    """Each feed's last run with its progress, for the page's progress bars; errors as a short category."""
    services.fail_orphaned_runs()
    feeds: list[dict[str, Any]] = []
    for status in selectors.feed_statuses():
        run = status.last_run
        feeds.append(
            {
                "feed": status.name,
                "configured": status.configured,
                "stale": status.stale,
                "last_run": None
                if run is None
                else {
                    "id": run.id,
                    "status": run.status,
                    "started_at": run.started_at,
                    "finished_at": run.finished_at,
                    "accepted": run.accepted,
                    "rejected": run.rejected,
                    "error": selectors.run_error_category(run),
                    "progress": selectors.run_progress(run),
                },
                "last_success_at": status.last_success.finished_at if status.last_success else None,
            }
        )
    running = any(f["last_run"] and f["last_run"]["status"] == FeedRun.Status.RUNNING for f in feeds)
    return JsonResponse({"running": running, "feeds": feeds})
