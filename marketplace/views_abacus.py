"""Pages for Abacus's tenant extras (paper 000, Secs. 5-6): utility fits and the price preview.

Thin views: reads through ``selectors_abacus``, writes through ``services.utility``.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from marketplace import charts_abacus, selectors_abacus
from marketplace.models.accounts import Tenant
from marketplace.services.utility import utility_fit_adopt
from marketplace.views import _render, tenant_required


def _fit_rows(tenant: Tenant) -> list[dict[str, Any]]:
    rows = []
    for n, c in enumerate(selectors_abacus.utility_fits(tenant=tenant)):
        fit = c.fit
        row: dict[str, Any] = {"c": c, "figure": None, "weights": [], "fid": f"fit-figure-{n}"}
        if fit is not None:
            row["weights"] = [
                {"type": t, "w": float(fit.weights[k]), "share": float(fit.normalised[k]), "spread": float(fit.spread[k]),
                 "adopted": None if c.adopted is None else c.adopted.get(t)}
                for k, t in enumerate(c.types)
            ]
            row["figure"] = charts_abacus.utility_fit_figure(
                c.points, fit.weights.tolist(), fit.intercept, kind=fit.kind, title=f"Class {c.job_class}: fit against measurement")
        rows.append(row)
    return rows


@tenant_required
@require_GET
def utility_fits(request: HttpRequest) -> HttpResponse:
    """The tenant's job classes with their fitted utility weights (paper 000, Sec. 5)."""
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    rows = _fit_rows(tenant)
    return _render(request, "marketplace/abacus/utility_fits.html", {
        "nav": "utility", "tenant": tenant, "rows": rows, "waiting": [r["c"] for r in rows if r["c"].fit is None],
    }, market=tenant.market)


@tenant_required
@require_POST
def utility_fit_adopt_view(request: HttpRequest) -> HttpResponse:
    tenant: Tenant = request.tenant  # type: ignore[attr-defined]
    job_class = request.POST.get("job_class", "")
    try:
        adopted = utility_fit_adopt(tenant=tenant, job_class=job_class, user=request.user)
    except ValidationError as exc:
        for message in exc.message_dict.get("job_class", exc.messages):
            messages.error(request, message)
    else:
        messages.success(request, f"Adopted the fit of class {adopted.job_class!r} ({adopted.jobs} jobs) for new bids.")
    return redirect("utility-fits")
