"""What each role may read about jobs: the privacy tiers, enforced here (not in templates).

* **public** (any logged-in user, tenants included): per-queue totals (active jobs,
  running units, pending tasks per resource type), prices, fairness per queue, market
  state, utilisation, reservation totals and the lab's simulated studies. No job id, job
  name, tenant name or budget of another tenant.
* **own** (a tenant): its jobs, bids, ledger, quotes and reservations in full.
* **all tenants** (staff and cluster managers, ``roles.sees_all_tenants``): every job in
  full -- cluster managers poll the current allocation with job ids (paper 001,
  Sec. 2.3.2 ``getCurrentAllocation``); staff see the cross-tenant jobs view.

Views and the API ask these functions with a :class:`Viewer`; a tenant's answer is built
without the other tenants' rows, so no template can leak them.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from marketplace.market import roles, selectors
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant


@dataclass(frozen=True)
class Viewer:
    """Who reads: their tenant (if any) and whether they see every tenant's jobs."""

    tenant: Tenant | None
    all_tenants: bool

    def may_see_job(self, *, tenant_id: int) -> bool:
        return self.all_tenants or (self.tenant is not None and self.tenant.pk == tenant_id)


def viewer_of(*, user: Any) -> Viewer:
    """The viewer ``user`` is. The tenant read with the login is reused when there is one (an API
    token reads it with the token): a viewer needs only its identity."""
    state = getattr(user, "_state", None)
    if state is not None and "tenant" in state.fields_cache:
        tenant = state.fields_cache["tenant"]
    else:
        tenant = selectors.tenant_of(user=user)
    return Viewer(tenant=tenant, all_tenants=roles.sees_all_tenants(user))


def visible_jobs(*, market: Market, viewer: Viewer) -> QuerySet[Job]:
    """The jobs whose ids, names and budgets ``viewer`` may read."""
    jobs = Job.objects.filter(market=market)
    if viewer.all_tenants:
        return jobs
    if viewer.tenant is None:
        return jobs.none()
    return jobs.filter(tenant=viewer.tenant)


def allocation_for(*, market: Market, viewer: Viewer) -> dict[str, Any]:
    """The current allocation as ``viewer`` may read it (paper 001, Sec. 2.3.2).

    ``jobs``: one entry per active job the viewer may see (all for staff and cluster
    managers, the caller's own for a tenant); ``queues``: the public per-queue totals
    over every active job (job count, running units and pending tasks per resource type).
    ``scope`` says which: ``"all"`` or ``"own"``.
    """
    if not viewer.all_tenants:  # the tenant's own rows, and the totals summed in the database
        own_rows = [] if viewer.tenant is None else selectors.current_allocation(market=market, tenant=viewer.tenant)
        return {"scope": "own", "jobs": own_rows, "queues": selectors.queue_totals(market=market)}
    rows = selectors.current_allocation(market=market)
    queues: dict[str, dict[str, Any]] = defaultdict(lambda: {"jobs": 0, "running": defaultdict(int), "pending": defaultdict(int)})
    for r in rows:
        q = queues[r.queue]
        q["jobs"] += 1
        for name, units in r.running.items():
            q["running"][name] += units
        for name, tasks in r.pending.items():
            q["pending"][name] += tasks
    return {
        "scope": "all",
        "jobs": rows,
        "queues": [{"queue": path, "jobs": q["jobs"], "running": dict(q["running"]), "pending": dict(q["pending"])}
                   for path, q in sorted(queues.items())],
    }


def chart_jobs_for(*, market: Market, viewer: Viewer, only_own: bool = False, limit: int = 10) -> dict[int, str]:
    """Jobs for the dashboard's share chart (job id -> label): every tenant's for staff and
    cluster managers (unless ``only_own``), the caller's own for a tenant, none otherwise."""
    if viewer.all_tenants and not only_own:
        return selectors.chart_jobs(market=market, limit=limit)
    if viewer.tenant is None:
        return {}
    return selectors.chart_jobs(market=market, tenant=viewer.tenant, limit=limit)


def staff_job_list(*, market: Market, viewer: Viewer, tenant: str | None = None, status: str | None = None) -> QuerySet[Job]:
    """Every tenant's jobs, newest first, for the staff's cross-tenant view (``tenant``: a
    tenant name to filter by). Empty for a viewer who may not see all tenants."""
    jobs = visible_jobs(market=market, viewer=viewer) if viewer.all_tenants else Job.objects.none()
    if tenant:
        jobs = jobs.filter(tenant__name=tenant)
    if status:
        jobs = jobs.filter(status=status)
    return jobs.select_related("tenant__user", "queue").prefetch_related("work__resource_type").order_by("-id")


