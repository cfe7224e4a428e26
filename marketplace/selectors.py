"""Reads used by views, the API and the charts (no writes here)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from decimal import Decimal

from django.db.models import Count, F, QuerySet, Sum

from marketplace.models import (
    Account, AllocationSnapshot, FairnessSample, Job, JobShare, JobWork, LedgerEntry, Market, MarketSample,
    PriceSample, Queue, ResourceType, Tenant,
)


def market_default() -> Market:
    """The market the pages show (the first one)."""
    return Market.objects.earliest("id")  # raises Market.DoesNotExist before seeding


def tenant_jobs(*, tenant: Tenant) -> QuerySet[Job]:
    """A tenant's jobs, newest first, with their work rows."""
    return Job.objects.filter(tenant=tenant).select_related("queue").prefetch_related("work__resource_type").order_by("-id")


def tenant_ledger(*, tenant: Tenant) -> QuerySet[LedgerEntry]:
    return LedgerEntry.objects.filter(account__tenant=tenant).select_related("job").order_by("-id")


def job_money(*, job_ids: list[int]) -> dict[int, tuple[Decimal, Decimal]]:
    """job id -> (amount held now, amount charged), from the ledger."""
    held = defaultdict(Decimal)
    charged = defaultdict(Decimal)
    for job_id, kind, amount, held_delta in LedgerEntry.objects.filter(job_id__in=job_ids).values_list("job_id", "kind", "amount", "held_delta"):
        held[job_id] += held_delta
        if kind == LedgerEntry.Kind.CHARGE:
            charged[job_id] += amount
    return {j: (held[j], charged[j]) for j in job_ids}


def latest_snapshot(*, market: Market) -> AllocationSnapshot | None:
    return AllocationSnapshot.objects.filter(market=market).order_by("-id").first()


def current_shares(*, market: Market, job_ids: list[int] | None = None) -> dict[int, dict[str, float]]:
    """job id -> {resource type name: within-queue share} at the latest clearing."""
    snap = latest_snapshot(market=market)
    if snap is None:
        return {}
    rows = JobShare.objects.filter(snapshot=snap)
    if job_ids is not None:
        rows = rows.filter(job_id__in=job_ids)
    out: dict[int, dict[str, float]] = defaultdict(dict)
    for job_id, name, share in rows.values_list("job_id", "resource_type__name", "share"):
        out[job_id][name] = share
    return dict(out)


@dataclass(frozen=True)
class RunningUnits:
    job_id: int
    tenant: str
    queue: str
    status: str
    running: dict[str, int]
    pending: dict[str, int]
    shares: dict[str, float]


def current_allocation(*, market: Market) -> list[RunningUnits]:
    """What runs now (ERA's current_allocation, paper 001 Sec. 2.3.2): per active job,
    units held per resource type, pending tasks, and the latest shares.

    Active jobs that hold nothing yet are included with empty allocations, so a
    cluster manager may start them early.
    """
    jobs = list(Job.objects.filter(market=market, status__in=Job.ACTIVE).select_related("tenant", "queue").order_by("id"))
    shares = current_shares(market=market, job_ids=[j.pk for j in jobs])
    works: dict[int, list[JobWork]] = defaultdict(list)
    for w in JobWork.objects.filter(job__in=jobs).select_related("resource_type"):
        works[w.job_id].append(w)
    return [
        RunningUnits(
            job_id=j.pk, tenant=j.tenant.name, queue=j.queue.path, status=j.status,
            running={w.resource_type.name: w.running for w in works[j.pk]},
            pending={w.resource_type.name: w.pending for w in works[j.pk]},
            shares=shares.get(j.pk, {}),
        )
        for j in jobs
    ]


def market_overview(*, market: Market) -> dict[str, object]:
    """Headline numbers for the dashboard and the API's market state."""
    counts = {r["status"]: r["n"] for r in Job.objects.filter(market=market).values("status").annotate(n=Count("id"))}
    types = list(ResourceType.objects.filter(market=market))
    running = {
        r["resource_type__name"]: r["r"] or 0
        for r in JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE).values("resource_type__name").annotate(r=Sum("running"))
    }
    snap = latest_snapshot(market=market)
    return {
        "market": market.name,
        "sim_time": market.sim_time,
        "state_version": market.state_version,
        "cleared_version": market.cleared_version,
        "clearings": market.clearings,
        "alpha": market.alpha,
        "t_wait": market.t_wait,
        "fairshare_policy": market.fairshare_policy,
        "clock_speed": market.clock_speed,
        "jobs": {s: counts.get(s, 0) for s in Job.Status.values},
        "resources": [
            {"name": t.name, "capacity": t.capacity, "running": running.get(t.name, 0), "utilisation": running.get(t.name, 0) / t.capacity}
            for t in types
        ],
        "prices": {p.resource_type.name: p.price for p in snap.prices.select_related("resource_type")} if snap else {},
        "last_clearing": None if snap is None else {
            "id": snap.pk, "state_version": snap.state_version, "sim_time": snap.sim_time, "rounds": snap.rounds,
            "converged": snap.converged, "n_jobs": snap.n_jobs, "solve_ms": snap.solve_ms, "total_ms": snap.total_ms,
        },
    }


def fairness_series(*, market: Market, resource: str | None = None, since: float | None = None) -> QuerySet[FairnessSample]:
    qs = FairnessSample.objects.filter(market=market).select_related("queue", "resource_type").order_by("sim_time", "id")
    if resource:
        qs = qs.filter(resource_type__name=resource)
    if since is not None:
        qs = qs.filter(sim_time__gte=since)
    return qs


def market_series(*, market: Market, resource: str | None = None) -> QuerySet[MarketSample]:
    qs = MarketSample.objects.filter(market=market).select_related("resource_type").order_by("sim_time", "id")
    return qs.filter(resource_type__name=resource) if resource else qs


def price_series(*, market: Market, resource: str | None = None) -> QuerySet[PriceSample]:
    qs = PriceSample.objects.filter(snapshot__market=market).select_related("resource_type").order_by("sim_time", "id")
    return qs.filter(resource_type__name=resource) if resource else qs


def job_share_series(*, market: Market, job_ids: list[int]) -> QuerySet[JobShare]:
    return (
        JobShare.objects.filter(snapshot__market=market, job_id__in=job_ids)
        .select_related("resource_type", "snapshot").order_by("snapshot_id")
    )


def leaf_queues(*, market: Market) -> list[Queue]:
    return [q for q in Queue.objects.filter(market=market).prefetch_related("children") if not q.children.all()]


def account_of(*, tenant: Tenant) -> Account:
    return Account.objects.get(tenant=tenant)


# --- Pages: lists, charts and settings --------------------------------------------------------


def evenly_spaced(values: list, max_points: int) -> list:
    """At most ``max_points`` items of ``values``, evenly spaced, always keeping the first and last."""
    n = len(values)
    if n <= max_points:
        return list(values)
    if max_points <= 1:
        return [values[-1]]
    step = (n - 1) / (max_points - 1)
    return [values[round(k * step)] for k in range(max_points)]


def tenant_job_list(*, tenant: Tenant, status: str | None = None) -> QuerySet[Job]:
    """A tenant's jobs, newest first, optionally of one status (unknown statuses give all jobs)."""
    qs = tenant_jobs(tenant=tenant)
    return qs.filter(status=status) if status in Job.Status.values else qs


def queue_paths(*, market: Market) -> dict[int, str]:
    """queue id -> dotted path, in one query (``Queue.path`` walks the parents row by row)."""
    rows = {pk: (name, parent) for pk, name, parent in Queue.objects.filter(market=market).values_list("id", "name", "parent_id")}

    def path(pk: int) -> str:
        name, parent = rows[pk]
        return name if parent is None or parent not in rows else f"{path(parent)}.{name}"

    return {pk: path(pk) for pk in rows}


def sample_times(*, market: Market, max_points: int = 500) -> list[float]:
    """Simulated times of the market's samples, thinned to at most ``max_points`` (evenly spaced)."""
    times = list(
        MarketSample.objects.filter(market=market).order_by("sim_time").values_list("sim_time", flat=True).distinct()
    )
    return evenly_spaced(times, max_points)


def fairness_points(*, market: Market, times: list[float]) -> list[dict[str, object]]:
    """Fairness samples at ``times``: sim_time, queue (path), resource, rho, running."""
    paths = queue_paths(market=market)
    rows = (
        FairnessSample.objects.filter(market=market, sim_time__in=times).order_by("sim_time", "id")
        .values("sim_time", "queue_id", "resource_type__name", "rho", "running")
    )
    return [
        {"sim_time": r["sim_time"], "queue": paths.get(r["queue_id"], str(r["queue_id"])), "resource": r["resource_type__name"],
         "rho": r["rho"], "running": r["running"]}
        for r in rows
    ]


def market_points(*, market: Market, times: list[float]) -> list[dict[str, object]]:
    """Market samples at ``times``: sim_time, resource, utilisation, benefit, loss."""
    rows = (
        MarketSample.objects.filter(market=market, sim_time__in=times).order_by("sim_time", "id")
        .values("sim_time", "resource_type__name", "utilisation", "benefit", "loss")
    )
    return [
        {"sim_time": r["sim_time"], "resource": r["resource_type__name"], "utilisation": r["utilisation"],
         "benefit": r["benefit"], "loss": r["loss"]}
        for r in rows
    ]


def price_points(*, market: Market, max_points: int = 500) -> list[dict[str, object]]:
    """Implied prices at (at most ``max_points``, evenly spaced) clearings: sim_time, resource, price."""
    snaps = list(AllocationSnapshot.objects.filter(market=market).order_by("id").values_list("id", flat=True))
    keep = evenly_spaced(snaps, max_points)
    rows = (
        PriceSample.objects.filter(snapshot_id__in=keep).order_by("snapshot_id", "resource_type__stage", "resource_type_id")
        .values("sim_time", "resource_type__name", "price")
    )
    return [{"sim_time": r["sim_time"], "resource": r["resource_type__name"], "price": r["price"]} for r in rows]


def share_points(*, market: Market, job_ids: list[int], max_points: int = 500) -> list[dict[str, object]]:
    """Within-queue shares of ``job_ids`` over (at most ``max_points``) clearings: sim_time, job_id, resource, share.

    Only resource types on which the job has tasks (a clearing stores a zero share for the others).
    """
    snaps = list(
        JobShare.objects.filter(snapshot__market=market, job_id__in=job_ids).order_by("snapshot_id")
        .values_list("snapshot_id", flat=True).distinct()
    )
    keep = evenly_spaced(snaps, max_points)
    rows = (
        JobShare.objects.filter(snapshot_id__in=keep, job_id__in=job_ids)
        .filter(job__work__resource_type_id=F("resource_type_id"), job__work__tasks__gt=0)
        .order_by("snapshot_id", "job_id", "resource_type_id")
        .values("snapshot__sim_time", "job_id", "resource_type__name", "share")
    )
    return [{"sim_time": r["snapshot__sim_time"], "job_id": r["job_id"], "resource": r["resource_type__name"], "share": r["share"]}
            for r in rows]


def chart_jobs(*, market: Market, tenant: Tenant | None = None, limit: int = 10) -> dict[int, str]:
    """Jobs for the dashboard's share chart: job id -> label.

    The ``limit`` most recent active jobs (of ``tenant`` when given); when none
    is active, the most recent jobs that have been in a clearing.
    """
    jobs = Job.objects.filter(market=market)
    if tenant is not None:
        jobs = jobs.filter(tenant=tenant)
    picked = list(jobs.filter(status__in=Job.ACTIVE).order_by("-id").values("id", "name", "tenant__name")[:limit])
    if not picked:
        picked = list(jobs.filter(shares__isnull=False).distinct().order_by("-id").values("id", "name", "tenant__name")[:limit])
    return {r["id"]: f"#{r['id']} {r['name'] or r['tenant__name']}".strip() for r in picked}


def job_share_until(*, market: Market, job_ids: list[int]) -> dict[int, float]:
    """job id -> simulated time up to which its last share holds: its finish (or cancel) time, else now."""
    rows = Job.objects.filter(market=market, pk__in=job_ids).values_list("id", "sim_finish_time")
    return {pk: market.sim_time if finish is None else finish for pk, finish in rows}


def resource_types_of(*, market: Market) -> list[ResourceType]:
    """The market's resource types in stage order (the columns of bid forms and tables)."""
    return list(ResourceType.objects.filter(market=market).order_by("stage", "id"))


def mean_task_duration(*, market: Market, last_jobs: int = 100) -> float | None:
    """Mean task duration T_task (simulated s) over the work of the ``last_jobs`` most recent jobs, task-weighted."""
    recent = Job.objects.filter(market=market).order_by("-id").values_list("id", flat=True)[:last_jobs]
    total_tasks = total_time = 0.0
    for tasks, duration in JobWork.objects.filter(job_id__in=list(recent), tasks__gt=0).values_list("tasks", "task_duration"):
        total_tasks += tasks
        total_time += tasks * duration
    return total_time / total_tasks if total_tasks else None


def config_history(*, market: Market) -> QuerySet:
    """The market's configuration audit trail, newest first."""
    return market.config_changes.select_related("changed_by").order_by("-changed_at", "-id")


def job_ledger(*, job: Job) -> QuerySet[LedgerEntry]:
    """A job's ledger entries (hold, charge, release), oldest first."""
    return LedgerEntry.objects.filter(job=job).order_by("id")


def queue_tree_nodes(*, market: Market) -> list[Queue]:
    """All queues of the market (parents before children by id, as created)."""
    return list(Queue.objects.filter(market=market).order_by("id"))


def market_or_none() -> Market | None:
    """The market the pages show (the first one), or None before any exists."""
    return Market.objects.order_by("id").first()


def tenant_of(*, user: object) -> Tenant | None:
    """The tenant of a login (with its market and default queue), or None for a non-tenant (e.g. staff)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return Tenant.objects.select_related("market", "default_queue").filter(user=user).first()
