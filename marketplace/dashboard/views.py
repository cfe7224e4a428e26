"""Staff pages: every tenant's jobs, and crediting or debiting an account with a reason.

Both read through ``market.visibility`` / write through ``ledger.services.account_adjust``;
a non-staff user gets 403 (the navigation does not offer these links to them).
"""

from __future__ import annotations

import json
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q, Sum
from django.http import HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods
from plotly.utils import PlotlyJSONEncoder

from marketplace.auction.selectors import job_rows
from marketplace.dashboard import figures
from marketplace.dashboard.forms import LedgerAdjustForm, MarketSettingsForm, ReservePricesForm, StaffJobFilterForm
from marketplace.fairshare.selectors import twait_guidance_rows
from marketplace.ledger.idempotency import form_submit_once
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.money import format_price_number
from marketplace.ledger.selectors import account_of, entry_count, tenant_ledger
from marketplace.ledger.services import account_adjust
from marketplace.market import hooks, roles, selectors, visibility
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.config import market_configure, reserve_prices_set
from marketplace.slurm.selectors import backend_status
from marketplace.web import charts
from marketplace.web.forms import apply_service_errors
from marketplace.web.http_cache import poller_revalidates
from marketplace.web.shortcuts import View, blank, csv_response, paginate, render_page, tenant_required


def staff_required(view: View) -> View:
    @login_required
    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not roles.is_staff(request.user):
            raise PermissionDenied("Only staff may see this page.")
        return view(request, *args, **kwargs)

    return wrapper


@staff_required
@require_GET
def staff_jobs(request: HttpRequest) -> HttpResponse:
    """Every tenant's jobs, newest first, filtered by tenant and status."""
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    filters = StaffJobFilterForm(request.GET or None, market=market)
    tenant = status = None
    if filters.is_valid():
        tenant = filters.cleaned_data["tenant"].name if filters.cleaned_data["tenant"] else None
        status = filters.cleaned_data["status"] or None
    viewer = visibility.viewer_of(user=request.user)
    page = paginate(request, visibility.staff_job_list(market=market, viewer=viewer, tenant=tenant, status=status))
    types = selectors.resource_types_of(market=market)
    query = "&".join(f"{k}={v}" for k, v in (("tenant", tenant), ("status", status)) if v)
    return render_page(request, "dashboard/staff_jobs.html", {
        "nav": "staff-jobs", "filters": filters, "page": page, "rows": job_rows(list(page), market, types), "types": types,
        "query": query,
    }, market=market)


@staff_required
@require_http_methods(["GET", "POST"])
def staff_ledger_adjust(request: HttpRequest) -> HttpResponse:
    """Credit or debit a tenant's account with a reason (one audited ledger entry)."""
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    form = LedgerAdjustForm(request.POST or None, market=market, initial={"tenant": request.GET.get("tenant")})
    if request.method == "POST" and form.is_valid():
        try:
            entry_id = _adjust_once(request, form)
        except ValidationError as exc:
            apply_service_errors(form, exc)
        else:
            d = form.cleaned_data
            messages.success(request, f"{d['direction'].title()} of {d['amount']} on {d['tenant'].name}'s account booked "
                                      f"(ledger entry #{entry_id}).")
            return redirect("staff-ledger-adjust")
    recent = LedgerEntry.objects.filter(account__tenant__market=market, kind__in=("credit", "debit")) \
        .select_related("account__tenant", "created_by").order_by("-id")[:20]
    return render_page(request, "dashboard/staff_ledger_adjust.html", {"nav": "staff-ledger", "form": form, "recent": recent},
                   market=market)


def _adjust_once(request: HttpRequest, form: LedgerAdjustForm) -> int:
    """Book the form's adjustment; a second submission of the same rendered form (its hidden
    ``idempotency_key``) returns the first entry instead of booking another."""
    d = form.cleaned_data

    def book() -> int:
        entry = account_adjust(tenant=d["tenant"], direction=d["direction"], amount=d["amount"], reason=d["reason"], user=request.user)
        return entry.pk

    return form_submit_once(request=request, key=d.get("idempotency_key") or "", scope="page-adjust", name="entry", call=book,
                            reused="This form was already submitted with other values; reload the page.")


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
        text["clearing-time"] = f"{last['solve_ms']:.1f} ms solve, {last['total_ms']:.1f} ms total (computer time)"
        text["clearing-jobs"] = f"{last['n_jobs']} jobs at {charts.format_hms(last['sim_time'])} on the market clock"
        text["clearing-params"] = clearing_params_text(last.get("params") or {})
    return {"text": text, "meters": meters}


def clearing_params_text(params: dict[str, Any]) -> str:
    """The parameters a clearing used, in one line ("abacus, alpha 0.1, ...")."""
    if not params:
        return "—"
    t_wait = "off" if params.get("t_wait") is None else f"{params['t_wait']:g} s"
    capacity = " + ".join(str(c) for c in params.get("capacity", []))
    return (f"{params.get('mechanism')} (alpha {params.get('alpha')}, tolerance {params.get('auction_tolerance'):g}, "
            f"at most {params.get('auction_max_rounds')} rounds) · {params.get('fairshare_policy')} (T_wait {t_wait}, "
            f"history {params.get('fairshare_history')}) · {params.get('dispatch_mode')} dispatch · slots {capacity}")


@login_required
@require_GET
def dashboard(request: HttpRequest) -> HttpResponse:
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    overview = selectors.market_overview(market=market)
    headline = _headline(overview)
    resources = [
        {**r, "key": k, "util_text": headline["text"][f"util-{k}"], "price_text": headline["text"][f"price-{k}"]}
        for k, r in enumerate(overview["resources"])
    ]
    return render_page(request, "dashboard/dashboard.html", {
        "nav": "dashboard", "overview": overview, "resources": resources,
        "headline": {k.replace("-", "_"): v for k, v in headline["text"].items()},
        "is_tenant": selectors.tenant_of(user=request.user) is not None,
        "backend": backend_status(market=market),
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
    # staff and cluster managers (market.visibility); "?jobs=mine" narrows staff to their own.
    viewer = visibility.viewer_of(user=request.user)
    only_own = request.GET.get("jobs") == "mine"
    # The figures: cached per version as the JSON text they are sent as (dashboard.figures); computed
    # on a worker after each tick while someone watches. The headline (the clock) is read fresh.
    figures.watch(market.pk)
    version = figures.figures_version(market)  # read once: the newest sample's time is a query
    shared = figures.shared_figures_json(market, version)
    jobs = figures.jobs_figure_json(market, version, viewer, only_own)
    body = f'{shared[:-1]}, "jobs": {jobs}}}' if shared != "{}" else f'{{"jobs": {jobs}}}'
    headline = json.dumps(_headline(selectors.market_overview(market=market)), cls=PlotlyJSONEncoder)
    return HttpResponse(f'{{"headline": {headline}, "figures": {body}}}', content_type="application/json")


@tenant_required
@require_GET
def account(request: HttpRequest) -> HttpResponse:
    """The tenant's balance and ledger. The entries of the trace replay's jobs (``make run`` replays
    the trace as the demo tenants' bids) are left out and summed in one line unless ``?replay=show``."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    entries = tenant_ledger(tenant=tenant)
    replay_jobs = selectors.replayed_jobs(market=tenant.market).filter(tenant=tenant).values("pk")
    replay_sum = entries.filter(job_id__in=replay_jobs).aggregate(
        n=Count("id"), amount=Sum("amount", filter=Q(kind=LedgerEntry.Kind.CHARGE)))
    show_replay = request.GET.get("replay") == "show"
    # the count is every entry's (kept counted: ledger.selectors.entry_count) less the replay's, not a
    # count of the filtered rows (at a million entries that reads each row against the replay's entries)
    account = account_of(tenant=tenant)
    total = entry_count(account_id=account.pk)
    page = paginate(request, entries if show_replay else entries.exclude(job_id__in=replay_jobs),
                    count=total if show_replay else total - replay_sum["n"])
    others = hooks.ledger_part_jobs([e.pk for e in page.object_list])  # Cura's jobs (one query, however many rows)
    for e in page.object_list:
        e.part_job = others.get(e.pk)
    return render_page(request, "dashboard/account.html", {
        "nav": "account", "tenant": tenant, "account": account, "page": page,
        "show_replay": show_replay, "replay_count": replay_sum["n"], "replay_amount": replay_sum["amount"] or 0,
        "query": "replay=show" if show_replay else "",
    }, market=tenant.market)


@tenant_required
@require_GET
def ledger_csv(request: HttpRequest) -> StreamingHttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    header = ["id", "created_at", "kind", "amount", "available_delta", "held_delta", "available_after", "held_after", "job", "memo"]
    rows = (
        [e.pk, e.created_at.isoformat(), e.kind, e.amount, e.available_delta, e.held_delta, e.available_after, e.held_after,
         blank(e.job_id), e.memo]
        for e in tenant_ledger(tenant=tenant).iterator(chunk_size=500)
    )
    return csv_response(f"ledger-{tenant.name}.csv", header, rows)


@login_required
@require_http_methods(["GET", "POST"])
def market_settings(request: HttpRequest) -> HttpResponse:
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may change the market settings.")
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    types = selectors.resource_types_of(market=market)
    posted_reserve = request.method == "POST" and "reserve_prices" in request.POST
    reserve_form = ReservePricesForm(request.POST if posted_reserve else None, types=types)
    if posted_reserve and reserve_form.is_valid():
        try:
            changed = reserve_prices_set(market=market, prices=reserve_form.prices(), user=request.user,
                                         reason=reserve_form.cleaned_data["reserve_reason"])
        except ValidationError as exc:
            apply_service_errors(reserve_form, exc)
        else:
            messages.success(request, "Saved: " + "; ".join(f"{c.field} {c.old_value} → {c.new_value}" for c in changed)
                             if changed else "Nothing changed.")
            return redirect("market-settings")
    form = MarketSettingsForm(None if posted_reserve else (request.POST or None), initial=MarketSettingsForm.initial_for(market))
    if request.method == "POST" and not posted_reserve and form.is_valid():
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
    return render_page(request, "dashboard/market_settings.html", {
        "nav": "settings", "form": form, "reserve_form": reserve_form,
        "t_task": t_task, "guidance": twait_guidance_rows(t_task=t_task, t_wait=market.t_wait),
        "queues": selectors.queue_tree_rows(market=market), "types": types,
        "history": paginate(request, selectors.config_history(market=market)),
        "convergence": selectors.clearing_convergence(market=market),
        "admin_queues": reverse("admin:marketplace_queue_changelist"),
        "admin_types": reverse("admin:marketplace_resourcetype_changelist"),
    }, market=market)
