"""Fair-share pages: the sshare-like table for every tenant, and the T_wait explorer's data
(paper 002, Sec. 4-5; Eq. 7). Reads come from ``fairshare.selectors``."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_GET

from marketplace.fairshare.charts import twait_explorer_figure
from marketplace.fairshare.selectors import fairshare_table, twait_explorer
from marketplace.market import selectors
from marketplace.market.services.config import parse_t_wait
from marketplace.web.shortcuts import render_page


@login_required
@require_GET
def fairshare_page(request: HttpRequest) -> HttpResponse:
    """Per queue: weight, share, accumulated usage, fairness degree now, demand (Slurm's sshare)."""
    market = selectors.market_or_none()
    if market is None:
        return render_page(request, "web/no_market.html", {})
    tenant = selectors.tenant_of(user=request.user)
    own = tenant.default_queue.path if tenant is not None and tenant.default_queue_id else None
    return render_page(request, "fairshare/table.html", {
        "nav": "fairshare", "table": fairshare_table(market=market), "own_queue": own,
    }, market=market)


@login_required
@require_GET
def twait_explorer_data(request: HttpRequest) -> JsonResponse:
    """``?t_wait=<seconds|off>`` -> the starvation example under that T_wait (staff only);
    400 with ``{"errors": {"t_wait": [...]}}`` for a bad value. Nothing is saved."""
    if not request.user.is_staff:
        raise PermissionDenied("Only staff may explore the market settings.")
    market = selectors.market_default()
    try:
        t_wait = parse_t_wait(request.GET.get("t_wait", ""))
    except ValidationError as exc:
        return JsonResponse({"errors": exc.message_dict}, status=400)
    explorer = twait_explorer(t_wait=t_wait, t_task=selectors.mean_task_duration(market=market))
    return JsonResponse(explorer | {"figure": twait_explorer_figure(explorer)})
