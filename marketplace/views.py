"""Web pages: thin views that read through ``selectors`` and write through ``services``.

Tenant pages (bid, jobs, account) act on ``request.user.tenant``; a job of
another tenant is a 404, never a 403, so job ids are not an oracle. The
dashboard polls ``dashboard_data`` (JSON: headline numbers and plotly figures,
downsampled to at most ``MAX_POINTS`` points per trace) every few seconds.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.paginator import Page, Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from django.views.defaults import page_not_found
from plotly.utils import PlotlyJSONEncoder

from marketplace import bid_preview, charts, selectors, selectors_abacus, selectors_fairshare, selectors_visibility
from marketplace.forms import BidForm, JobFilterForm, MarketSettingsForm, apply_service_errors
from marketplace.http_cache import poller_revalidates
from marketplace.models.accounts import Tenant
from marketplace.models.jobs import Job
from marketplace.models.market import Market
from marketplace.models.queues import ResourceType
from marketplace.money import format_price_number
from marketplace.resilience import cache_get, cache_set
from marketplace.services.bids import bid_submit, job_cancel
from marketplace.services.config import market_configure
from marketplace.services.idempotency import form_submit_once

PAGE_SIZE = 25
MAX_POINTS = 500  # per trace on the dashboard: hours of simulated time stay a few hundred kB
DASHBOARD_CACHE_S = 60  # figures are keyed by cleared version and newest sample, so a cached one is never stale

View = Callable[..., HttpResponse]


# --- Helpers ----------------------------------------------------------------------------------


def _render(
    request: HttpRequest, template: str, context: dict[str, Any], *, market: Market | None = None, status: int = 200
) -> HttpResponse:
    """Render with what the base layout needs: the market and its simulated clock."""
    market = market or selectors.market_or_none()
    base = {"market": market, "sim_clock": charts.format_hms(market.sim_time) if market else None}
    return render(request, template, base | context, status=status)


def tenant_required(view: View) -> View:
    """Log-in required, and the user must be a tenant (``request.tenant``); others get a 403 page."""

    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        tenant = selectors.tenant_of(user=request.user)
        if tenant is None:
            return _render(request, "marketplace/not_tenant.html", {}, status=403)
        request.tenant = tenant  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapper


def _page(request: HttpRequest, items: Any) -> Page:
    return Paginator(items, PAGE_SIZE).get_page(request.GET.get("page"))


class _Echo:
    """A file-like object whose write returns the line (for streaming CSV)."""

    def write(self, value: str) -> str:
        return value


def _csv_response(filename: str, header: list[str], rows: Iterable[list[Any]]) -> StreamingHttpResponse:
    writer = csv.writer(_Echo())

    def lines() -> Iterator[str]:
        yield writer.writerow(header)
        for row in rows:
            yield writer.writerow(row)

    response = StreamingHttpResponse(lines(), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _job_rows(jobs: list[Job], market: Market, types: list[ResourceType]) -> list[dict[str, Any]]:
    """Jobs as table rows: money from the ledger, current shares, progress per resource type."""
    ids = [j.pk for j in jobs]
    money = selectors.job_money(job_ids=ids)
    shares = selectors.current_shares(market=market, job_ids=ids)
    paths = selectors.queue_paths(market=market)
    rows = []
    for job in jobs:
        work = {w.resource_type_id: w for w in job.work.all()}
        held, charged = money.get(job.pk, (0, 0))
        row_shares = [shares.get(job.pk, {}).get(t.name) for t in types]
        progress = [(work[t.pk].done, work[t.pk].tasks) if t.pk in work else None for t in types]
        rows.append({
            "job": job, "queue": paths.get(job.queue_id, ""), "held": held, "charged": charged,
            "shares": row_shares, "progress": progress,
            "cells": [
                {"progress": p, "share": None if v is None or p is None else f"{v:.0%}"} for p, v in zip(progress, row_shares, strict=True)
            ],
            "submit": charts.format_hms(job.sim_submit_time), "start": charts.format_hms(job.sim_start_time),
            # A cancelled job never finished: its end is a cancellation, and it has no response time.
            "cancelled": job.status == Job.Status.CANCELLED,
            "finish": charts.format_hms(job.sim_finish_time),
            "response": charts.format_hms(job.response_time),
        })
    return rows


# --- Dashboard --------------------------------------------------------------------------------


def _headline(overview: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Element id -> text (and meter values) of the dashboard's headline numbers."""
    jobs = overview["jobs"]
    text = {
        "sim-clock": charts.format_hms(overview["sim_time"]), "stat-clock": charts.format_hms(overview["sim_time"]),
        "jobs-queued": str(jobs.get("queued", 0)), "jobs-running": str(jobs.get("running", 0)),
        "jobs-finished": str(jobs.get("finished", 0)), "clearings": str(overview["clearings"]),
    }
    meters = {}
    for k, r in enumerate(overview["resources"]):
        text[f"util-{k}"] = f"{r['utilisation']:.0%} ({r['running']}/{r['capacity']})"
        text[f"price-{k}"] = format_price_number(overview["prices"].get(r["name"], 0.0)) if overview["prices"] else "—"
        meters[f"meter-{k}"] = min(max(r["utilisation"], 0.0), 1.0)
    last = overview["last_clearing"]
    if last:
        text["clearing-rounds"] = f"{last['rounds']}{'' if last['converged'] else ' (not converged)'}"
        text["clearing-time"] = f"{last['solve_ms']:.1f} ms solve, {last['total_ms']:.1f} ms total"
        text["clearing-jobs"] = f"{last['n_jobs']} jobs at simulated {charts.format_hms(last['sim_time'])}"
    return {"text": text, "meters": meters}


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    market = selectors.market_or_none()
    if market is None:
        return _render(request, "marketplace/no_market.html", {})
    overview = selectors.market_overview(market=market)
    headline = _headline(overview)
    resources = [
        {**r, "key": k, "util_text": headline["text"][f"util-{k}"], "price_text": headline["text"][f"price-{k}"]}
        for k, r in enumerate(overview["resources"])
    ]
    return _render(request, "marketplace/dashboard.html", {
        "nav": "dashboard", "overview": overview, "resources": resources,
        "headline": {k.replace("-", "_"): v for k, v in headline["text"].items()},
        "is_tenant": selectors.tenant_of(user=request.user) is not None,
    }, market=market)


@require_GET
@poller_revalidates
def dashboard_data(request: HttpRequest) -> JsonResponse:
    """The dashboard's live data: headline numbers and the figures, for ``Plotly.react``."""
    if not request.user.is_authenticated:
        return JsonResponse({"detail": "Log in again to see live data."}, status=401)
    market = selectors.market_or_none()
    if market is None:
        return JsonResponse({"detail": "No market exists yet."}, status=404)
    # The share chart carries job names: the viewer's own jobs for a tenant, every tenant's for
    # staff and cluster managers (selectors_visibility); "?jobs=mine" narrows staff to their own.
    viewer = selectors_visibility.viewer_of(user=request.user)
    only_own = request.GET.get("jobs") == "mine"
    # The figures change only with a clearing (prices, shares) or a new sample (fairness,
    # utilisation): cached per cleared version and newest sample, shared by every viewer;
    # the headline (the clock) is read fresh. A cache outage is a miss, never a 500.
    last_sample = selectors.last_sample_time(market=market)
    key = f"dashboard-figures:{market.pk}:{market.cleared_version}:{market.clearings}:{last_sample}:{_chart_scope(viewer, only_own)}"
    figures = cache_get(key)
    if figures is None:
        figures = json.loads(json.dumps(_dashboard_figures(market, viewer, only_own), cls=PlotlyJSONEncoder))
        cache_set(key, figures, DASHBOARD_CACHE_S)
    payload = {"headline": _headline(selectors.market_overview(market=market)), "figures": figures}
    return JsonResponse(payload, encoder=PlotlyJSONEncoder)


def _chart_scope(viewer: selectors_visibility.Viewer, only_own: bool) -> str:
    """The cache key's part for whose jobs the figures show."""
    if viewer.all_tenants and not only_own:
        return "all"
    return f"t{viewer.tenant.pk}" if viewer.tenant else "none"


def _dashboard_figures(market: Market, viewer: selectors_visibility.Viewer, only_own: bool) -> dict[str, charts.Figure]:
    times = selectors.sample_times(market=market, max_points=MAX_POINTS)
    labels = selectors_visibility.chart_jobs_for(market=market, viewer=viewer, only_own=only_own)
    return charts.dashboard_figures(
        resources=[(t.name, t.capacity) for t in selectors.resource_types_of(market=market)],
        fairness=selectors.fairness_points(market=market, times=times),
        samples=selectors.market_points(market=market, times=times),
        prices=selectors.price_points(market=market, max_points=MAX_POINTS),
        shares=selectors.share_points(market=market, job_ids=list(labels), max_points=MAX_POINTS),
        job_labels=labels, job_until=selectors.job_share_until(market=market, job_ids=list(labels)), now=market.sim_time,
    )


# --- Bids and jobs ----------------------------------------------------------------------------


@tenant_required
@require_http_methods(["GET", "POST"])
def bid_new(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    form = BidForm(request.POST or None, resource_types=selectors.resource_types_of(market=tenant.market))
    preview = None
    if request.method == "POST" and request.POST.get("action") == "preview":
        preview = bid_preview.preview_for_form(form, tenant)  # a dry run: nothing placed or held
    elif request.method == "POST" and form.is_valid():
        try:
            job_id = _submit_bid_once(request, form, tenant)
        except ValidationError as exc:
            form.add_service_errors(exc)
        else:
            messages.success(request, f"Bid placed: job #{job_id} holds its budget until it completes.")
            return redirect("job-detail", pk=job_id)
    return _render(request, "marketplace/bid_form.html", {
        "nav": "bid", "form": form, "account": selectors.account_of(tenant=tenant), "tenant": tenant,
        "queue": selectors.queue_paths(market=tenant.market).get(tenant.default_queue_id, ""), "preview": preview,
    }, market=tenant.market)


def _submit_bid_once(request: HttpRequest, form: BidForm, tenant: Tenant) -> int:
    """Place the form's bid; a second submission of the same rendered form (its hidden
    ``idempotency_key``) returns the first job instead of placing another bid."""
    d = form.cleaned_data

    def place() -> int:
        job = bid_submit(
            tenant=tenant, budget=d["budget"], work=form.work(), utility=d["utility"], name=d["name"], user=request.user,
            min_utility=d.get("min_utility"), job_class=d.get("job_class") or "",
            use_adopted_utility=bool(d.get("use_adopted_utility")),
        )
        return job.pk

    return form_submit_once(request=request, key=d.get("idempotency_key") or "", scope="page-bid", name="job", call=place,
                            reused="This form was already submitted with other values; reload the page to place a new bid.")


def _status_filter(request: HttpRequest) -> tuple[JobFilterForm, str]:
    """The job-status filter of the job list and its CSV export ("" = all)."""
    filters = JobFilterForm(request.GET or None)
    return filters, (filters.cleaned_data["status"] if filters.is_valid() else "")


@tenant_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    filters, status = _status_filter(request)
    page = _page(request, selectors.tenant_job_list(tenant=tenant, status=status))
    types = selectors.resource_types_of(market=tenant.market)
    return _render(request, "marketplace/job_list.html", {
        "nav": "jobs", "filters": filters, "status": status, "page": page, "types": types,
        "query": urlencode({"status": status}) if status else "",
        "rows": _job_rows(list(page.object_list), tenant.market, types),
    }, market=tenant.market)


@tenant_required
@require_GET
def job_detail(request: HttpRequest, pk: int) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job = get_object_or_404(selectors.tenant_jobs(tenant=tenant), pk=pk)
    market = tenant.market
    types = selectors.resource_types_of(market=market)
    row = _job_rows([job], market, types)[0]
    figure = charts.job_share_figure(
        selectors.share_points(market=market, job_ids=[job.pk], max_points=MAX_POINTS),
        labels={job.pk: f"#{job.pk}"}, until=selectors.job_share_until(market=market, job_ids=[job.pk]),
        origin=job.sim_submit_time, title="Share history within the queue",
    )
    return _render(request, "marketplace/job_detail.html", {
        "nav": "jobs", "job": job, "row": row, "types": types, "work": list(job.work.all()),
        "shares": [(t, cell["share"]) for t, cell in zip(types, row["cells"], strict=True)],
        "figure": figure, "ledger": selectors.job_ledger(job=job),
        "active": job.status in Job.ACTIVE, "waiting": selectors_fairshare.job_waiting(job=job),
        "slo": selectors_abacus.slo_status(market=market, jobs=[job])[job.pk] if job.min_utility is not None else None,
    }, market=market)


@tenant_required
@require_http_methods(["GET", "POST"])
def job_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: the confirmation page (a plain form, so it works without JavaScript); POST: cancel."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job = get_object_or_404(selectors.tenant_jobs(tenant=tenant), pk=pk)
    if request.method == "GET":
        if job.status not in Job.ACTIVE:
            messages.info(request, f"Job #{job.pk} is {job.get_status_display().lower()}; there is nothing to cancel.")
            return redirect("job-detail", pk=job.pk)
        row = _job_rows([job], tenant.market, selectors.resource_types_of(market=tenant.market))[0]
        return _render(request, "marketplace/job_cancel.html", {"nav": "jobs", "job": job, "row": row}, market=tenant.market)
    try:
        job_cancel(job=job, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        messages.success(request, f"Job #{job.pk} cancelled; its hold was released.")
    return redirect("job-detail", pk=job.pk)


@tenant_required
@require_GET
def job_list_csv(request: HttpRequest) -> StreamingHttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    _filters, status = _status_filter(request)
    types = selectors.resource_types_of(market=tenant.market)
    jobs = selectors.tenant_job_list(tenant=tenant, status=status)
    header = ["id", "name", "queue", "status", "utility", "budget", "held", "charged"]
    for t in types:
        header += [f"{t.name}_share", f"{t.name}_done", f"{t.name}_tasks"]
    header += ["sim_submit_s", "sim_start_s", "sim_finish_s", "response_s"]

    def rows() -> Iterator[list[Any]]:
        for chunk in Paginator(jobs, 500):
            for r in _job_rows(list(chunk.object_list), tenant.market, types):
                job = r["job"]
                line: list[Any] = [job.pk, job.name, r["queue"], job.status, job.utility, job.budget, r["held"], r["charged"]]
                for share, progress in zip(r["shares"], r["progress"], strict=True):
                    line += ["" if share is None else f"{share:.6f}", *(progress or ("", ""))]
                line += [job.sim_submit_time, _blank(job.sim_start_time), _blank(job.sim_finish_time), _blank(job.response_time)]
                yield line

    return _csv_response(f"jobs-{tenant.name}.csv", header, rows())


def _blank(value: object) -> object:
    return "" if value is None else value


# --- Account ----------------------------------------------------------------------------------


@tenant_required
@require_GET
def account(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    return _render(request, "marketplace/account.html", {
        "nav": "account", "tenant": tenant, "account": selectors.account_of(tenant=tenant),
        "page": _page(request, selectors.tenant_ledger(tenant=tenant)),
    }, market=tenant.market)


@tenant_required
@require_GET
def ledger_csv(request: HttpRequest) -> StreamingHttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    header = ["id", "created_at", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after", "job", "memo"]
    rows = (
        [e.pk, e.created_at.isoformat(), e.kind, e.amount, e.available_delta, e.held_delta, e.available_after, e.held_after,
         _blank(e.job_id), e.memo]
        for e in selectors.tenant_ledger(tenant=tenant).iterator(chunk_size=500)
    )
    return _csv_response(f"ledger-{tenant.name}.csv", header, rows)


# --- Market settings (staff) ------------------------------------------------------------------


@login_required
@require_http_methods(["GET", "POST"])
def market_settings(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may change the market settings.")
    market = selectors.market_or_none()
    if market is None:
        return _render(request, "marketplace/no_market.html", {})
    form = MarketSettingsForm(request.POST or None, initial=MarketSettingsForm.initial_for(market))
    if request.method == "POST" and form.is_valid():
        try:
            changed = market_configure(market=market, user=request.user, reason=form.cleaned_data["reason"], **form.changes())
        except ValidationError as exc:
            apply_service_errors(form, exc)
        else:
            if changed:
                messages.success(request, "Saved: " + "; ".join(f"{c.field} {c.old_value} → {c.new_value}" for c in changed))
            else:
                messages.info(request, "Nothing changed.")
            return redirect("market-settings")
    t_task = selectors.mean_task_duration(market=market)
    return _render(request, "marketplace/market_settings.html", {
        "nav": "settings", "form": form, "t_task": t_task, "guidance": selectors.twait_guidance_rows(t_task=t_task, t_wait=market.t_wait),
        "queues": selectors.queue_tree_rows(market=market), "types": selectors.resource_types_of(market=market),
        "history": _page(request, selectors.config_history(market=market)),
        "convergence": selectors.clearing_convergence(market=market),
        "admin_queues": reverse("admin:marketplace_queue_changelist"),
        "admin_types": reverse("admin:marketplace_resourcetype_changelist"),
    }, market=market)


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """404 handler: JSON under /api/ (the API's documented error shape), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception or Exception("not found"))
