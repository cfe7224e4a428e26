"""Staff pages: every tenant's jobs, and crediting or debiting an account with a reason.

Both read through ``selectors_visibility`` / write through ``services.ledger_adjust``;
a non-staff user gets 403 (the navigation does not offer these links to them).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_http_methods

from marketplace import roles, selectors, selectors_visibility
from marketplace.forms import apply_service_errors
from marketplace.forms_staff import LedgerAdjustForm, StaffJobFilterForm
from marketplace.models.accounts import LedgerEntry
from marketplace.services.idempotency import form_submit_once
from marketplace.services.ledger_adjust import account_adjust
from marketplace.views import _job_rows, _page, _render

View = Callable[..., HttpResponse]


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
        return _render(request, "marketplace/no_market.html", {})
    filters = StaffJobFilterForm(request.GET or None, market=market)
    tenant = status = None
    if filters.is_valid():
        tenant = filters.cleaned_data["tenant"].name if filters.cleaned_data["tenant"] else None
        status = filters.cleaned_data["status"] or None
    viewer = selectors_visibility.viewer_of(user=request.user)
    page = _page(request, selectors_visibility.staff_job_list(market=market, viewer=viewer, tenant=tenant, status=status))
    types = selectors.resource_types_of(market=market)
    query = "&".join(f"{k}={v}" for k, v in (("tenant", tenant), ("status", status)) if v)
    return _render(request, "marketplace/staff_jobs.html", {
        "nav": "staff-jobs", "filters": filters, "page": page, "rows": _job_rows(list(page), market, types), "types": types,
        "query": query,
    }, market=market)


@staff_required
@require_http_methods(["GET", "POST"])
def staff_ledger_adjust(request: HttpRequest) -> HttpResponse:
    """Credit or debit a tenant's account with a reason (one audited ledger entry)."""
    market = selectors.market_or_none()
    if market is None:
        return _render(request, "marketplace/no_market.html", {})
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
    return _render(request, "marketplace/staff_ledger_adjust.html", {"nav": "staff-ledger", "form": form, "recent": recent},
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
