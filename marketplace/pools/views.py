"""Pages of the VM pools (paper 004, Cura): the staff page of the pools and the tenants' Cura jobs."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect
from django.template.loader import render_to_string
from django.views.decorators.http import require_GET, require_http_methods

from marketplace.ledger.money import format_money
from marketplace.market import selectors
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import price_level
from marketplace.pools.charts import pool_figures
from marketplace.pools.forms import CuraJobForm, PoolSettingsForm, PoolSizeForm, VMTypeForm
from marketplace.pools.models import VMPool
from marketplace.pools.selectors import cura_jobs_of, pool_rows, pool_series, reconfigurations, vm_types_of
from marketplace.pools.services.jobs import cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import (
    SETTINGS_FIELDS,
    pool_resize,
    pool_settings_of,
    pool_settings_update,
    pools_price_at_level,
    pools_setup_paper,
    vm_type_save,
)
from marketplace.web.forms import apply_service_errors
from marketplace.web.http_cache import poller_revalidates
from marketplace.web.shortcuts import paginate, render_page, tenant_required


@login_required
@require_http_methods(["GET", "POST"])
def pools_admin(request: HttpRequest) -> HttpResponse:
    """Staff: pool sizes over time, utilisation, reconfigurations; edit VM types, pools and beta."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may manage the VM pools.")
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    ps = pool_settings_of(market=market)
    initial = {f: getattr(ps, f) for f in SETTINGS_FIELDS}
    action = request.POST.get("action") if request.method == "POST" else None
    settings_form = PoolSettingsForm(request.POST if action == "settings" else None, initial=initial, prefix="s")
    type_form = VMTypeForm(request.POST if action == "vm_type" else None, prefix="t")
    size_form = PoolSizeForm(request.POST if action == "size" else None, prefix="p")
    if action == "level":
        pools_price_at_level(market=market, user=request.user, reason=request.POST.get("reason", ""))
        messages.success(request, f"Re-priced the VM types at the market's level, {price_level(market=market):.4g} per slot-second.")
        return redirect("pools")
    if action == "paper":
        try:
            pools_setup_paper(market=market, user=request.user)
            messages.success(request, "Created the VM types of paper 004, App. A, with 40 VMs each, priced at the market's level.")
        except ValidationError as exc:
            messages.error(request, " ".join(exc.messages))
        return redirect("pools")
    if action == "settings" and settings_form.is_valid():
        data = dict(settings_form.cleaned_data)
        reason = data.pop("reason")
        try:
            changed = pool_settings_update(market=market, user=request.user, reason=reason, **data)
        except ValidationError as exc:
            apply_service_errors(settings_form, exc)
        else:
            text = "; ".join(f"{c.field} {c.old_value} → {c.new_value}" for c in changed)
            messages.success(request, f"Saved: {text}" if changed else "Nothing changed.")
            return redirect("pools")
    if action == "vm_type" and type_form.is_valid():
        d = type_form.cleaned_data
        try:
            vm_type_save(market=market, name=d["name"], vcpus=d["vcpus"], memory_gb=d["memory_gb"], price=d["price"],
                         user=request.user, reason=d["reason"])
        except ValidationError as exc:
            apply_service_errors(type_form, exc)
        else:
            messages.success(request, f"Added VM type {d['name']} with an empty pool.")
            return redirect("pools")
    if action == "size" and size_form.is_valid():
        pool = get_object_or_404(VMPool, pk=size_form.cleaned_data["pool"], vm_type__market=market)
        try:
            pool_resize(pool=pool, size=size_form.cleaned_data["size"], user=request.user, reason=size_form.cleaned_data["reason"])
        except ValidationError as exc:
            apply_service_errors(size_form, exc)
        else:
            messages.success(request, f"{pool.vm_type.name} pool: {size_form.cleaned_data['size']} VMs.")
            return redirect("pools")
    types = vm_types_of(market=market)
    sizes_fig, util_fig = pool_figures(pool_series(market=market, types=types))
    level = price_level(market=market)
    return render_page(request, "pools/admin.html", {
        "nav": "pools", "settings_form": settings_form, "type_form": type_form, "size_form": size_form,
        "rows": pool_rows(market=market, level=level), "sizes_fig": sizes_fig, "util_fig": util_fig, "price_level": level,
        "reconfigurations": paginate(request, reconfigurations(market=market)),
        "size_error_pool": size_form["pool"].value() if size_form.errors else None,
    }, market=market)


@tenant_required
@require_http_methods(["GET", "POST"])
def cura_jobs(request: HttpRequest) -> HttpResponse:
    """Tenants: submit a job with a deadline only; see the configuration Cura chose for each job."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    form = CuraJobForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = cura_job_submit(tenant=tenant, user=request.user, **form.cleaned_data)
        except ValidationError as exc:
            apply_service_errors(form, exc)
        else:
            if job.vm_type is None:
                messages.success(request, f"Job {job.pk} waits for room in a pool; {format_money(job.held)} is held.")
            else:
                times = f"from {job.start_s:.0f} s to {job.end_s:.0f} s (market clock)"
                messages.success(request, f"Job {job.pk}: {job.vms} \N{MULTIPLICATION SIGN} {job.vm_type.name} {times}, "
                                          f"cost {format_money(job.cost)} ({format_money(job.held)} held until it ends).")
            return redirect("cura-jobs")
    level = price_level(market=tenant.market)
    return render_page(request, "pools/jobs.html", {
        "nav": "cura", "form": form, "page": paginate(request, cura_jobs_of(tenant=tenant)),
        "pools": pool_rows(market=tenant.market, level=level), "price_level": level,
    }, market=tenant.market)


@tenant_required
@require_http_methods(["POST"])
def cura_job_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    """Tenants: withdraw a Cura job that has not ended; it pays for the VM-seconds it ran, the rest is released."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job = get_object_or_404(cura_jobs_of(tenant=tenant), pk=pk)
    try:
        done = cura_job_cancel(job=job, user=request.user)
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
    else:
        if done.charged > 0:
            messages.success(request, f"Job {job.pk} cancelled; it paid {format_money(done.charged)} for the VM-seconds it ran "
                                      "and the rest of its hold was released.")
        else:
            messages.success(request, f"Job {job.pk} cancelled; its hold was released (it had not run).")
    return redirect("cura-jobs")


@tenant_required
@require_GET
@poller_revalidates
def cura_jobs_live(request: HttpRequest) -> HttpResponse:
    """``{"fragments": {"cura-rows": html}}``: the Cura jobs table's rows for the same page, polled by
    ``static/js/live.js`` (an ETag of the content: unchanged rows are a 304)."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    page = paginate(request, cura_jobs_of(tenant=tenant))
    html = render_to_string("pools/_job_rows.html", {"page": page}, request=request)
    return JsonResponse({"fragments": {"cura-rows": html}})
