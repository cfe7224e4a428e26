"""Reads used by views, the API and the charts (no writes here)."""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Count, Prefetch, QuerySet
from django.utils import timezone

from marketplace.infra import instances, rows, windows
from marketplace.infra.windows import Buckets, history_sums
from marketplace.ledger.money import SLOT_SECOND, price_unit
from marketplace.market import adapters, prices, statements, structure
from marketplace.market.models.allocation import AllocationSnapshot, FairnessSample, MarketSample, PriceSample, ShareSample
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import contended_settlements, price_level, realised_rates, reference_rates


def market_default() -> Market:
    """The market the pages show (the first one), without its stored engine (read only by the
    services that load the engine; deferred, so such a caller still gets it)."""
    return Market.objects.defer("engine_state").earliest("id")  # raises Market.DoesNotExist before seeding


def tenant_jobs(*, tenant: Tenant) -> QuerySet[Job]:
    """A tenant's jobs, newest first, with their work rows and their resource types (one query for both)."""
    work = Prefetch("work", queryset=JobWork.objects.select_related("resource_type"))
    return Job.objects.filter(tenant=tenant).select_related("queue").prefetch_related(work).order_by("-id")


def latest_snapshot(*, market: Market) -> AllocationSnapshot | None:
    """The market's newest clearing record, without its Plan (``plan`` is read on access)."""
    return instances.newest_row(AllocationSnapshot, exclude=("plan",), market=market.pk)


_SHARES: dict[int, tuple[int, dict[int, dict[str, float]]]] = {}  # market id -> (snapshot id, all shares)
_SHARES_LOCK = threading.Lock()


def current_shares(*, market: Market, job_ids: list[int] | None = None) -> dict[int, dict[str, float]]:
    """job id -> {resource type name: within-queue share} in the latest stored Plan.

    The decoded shares are kept in this process per newest snapshot id, so the lists and
    pages that show them read one id, not the Plan, until the next clearing; after it, the same
    statement reads the new Plan.
    """
    with _SHARES_LOCK:
        cached = _SHARES.get(market.pk)
    newest = adapters.plan_unless(market.pk, -1 if cached is None else cached[0])  # one statement
    if newest is None:
        return {}
    snap_id, plan = newest
    if plan is not None:  # a Plan this process has not decoded the shares of (always so when nothing is cached)
        names = [t.name for t in resource_types_of(market=market)]
        shares = {job: dict(zip(names, row, strict=True)) for job, row in zip(plan.job_ids.tolist(), plan.shares.tolist(), strict=True)}
        cached = (snap_id, shares)
        with _SHARES_LOCK:
            _SHARES[market.pk] = cached
    assert cached is not None
    if job_ids is None:
        return dict(cached[1])
    return {job: cached[1][job] for job in job_ids if job in cached[1]}


_PRICES: dict[int, tuple[int, int, dict[str, float]]] = {}  # market id -> (snapshot id, structure_version, prices)


def snapshot_prices(*, market: Market, snapshot: AllocationSnapshot) -> dict[str, float]:
    """Resource type name -> the unit price ``snapshot`` (a clearing of ``market``) implied, in the
    order its rows were written (the types' stage order). A snapshot's prices are written with it in
    one statement and never change (``market.services.clearing.plan_store``), and the names change only
    with ``structure_version``: the newest snapshot's are kept in this process under its id and that
    version, so the market state reads them once per clearing, not on every poll. A copy the caller may change."""
    version = 0 if "structure_version" in market.get_deferred_fields() else int(market.structure_version or 0)
    with _SHARES_LOCK:
        hit = _PRICES.get(market.pk)
    if version and hit is not None and hit[0] == snapshot.pk and hit[1] == version:
        return dict(hit[2])
    prices = {p.resource_type.name: p.price for p in snapshot.prices.select_related("resource_type").order_by("id")}
    if version:
        with _SHARES_LOCK:
            _PRICES[market.pk] = (snapshot.pk, version, prices)
    return dict(prices)


def forget_caches() -> None:
    """Drop this process's cached shares and prices (tests: primary keys repeat across rolled-back tests)."""
    with _SHARES_LOCK:
        _SHARES.clear()
        _PRICES.clear()
    structure.forget()
    windows.forget()
    prices.forget()


@dataclass(frozen=True)
class RunningUnits:
    job_id: int
    tenant: str
    queue: str
    status: str
    running: dict[str, int]
    pending: dict[str, int]
    shares: dict[str, float]


def current_allocation(*, market: Market, tenant: Tenant | None = None) -> list[RunningUnits]:
    """What runs now (ERA's current_allocation, paper 001 Sec. 2.3.2): per active job (of
    ``tenant`` only, when given), units held per resource type, pending tasks, and the latest shares.

    Active jobs that hold nothing yet are included with empty allocations, so a
    cluster manager may start them early. Plain value rows (two queries, no model
    instance): the list has one entry per active job, hundreds under load.
    """
    jobs_sql, works_sql = statements.allocation(tenant is not None)
    params = [market.pk, *Job.ACTIVE, *([tenant.pk] if tenant is not None else [])]
    with connection.cursor() as cursor:
        cursor.execute(jobs_sql, params)
        jobs = cursor.fetchall()
        shares = current_shares(market=market, job_ids=[j[0] for j in jobs])
        cursor.execute(works_sql, params)
        works = cursor.fetchall()
    paths = queue_paths(market=market)
    running: dict[int, dict[str, int]] = defaultdict(dict)
    pending: dict[int, dict[str, int]] = defaultdict(dict)
    for job_id, name, run, wait in works:
        running[job_id][name] = run
        pending[job_id][name] = wait
    return [
        RunningUnits(job_id=pk, tenant=tenant, queue=paths.get(queue_id, ""), status=status,
                     running=running.get(pk, {}), pending=pending.get(pk, {}), shares=shares.get(pk, {}))
        for pk, tenant, queue_id, status in jobs
    ]


def job_counts(*, market: Market) -> dict[str, int]:
    """Status -> how many of the market's jobs have it (every status, 0 for none). A job that left
    (finished, cancelled: a final status) has ``sim_finish_time``, the clock's time then; the ones
    that left before the settled past are a running total kept in the cache and extended by the
    jobs that left since (``infra.windows.history_sums``), so a site with hundreds of thousands of
    finished jobs does not count them on every dashboard poll. The rest (the active jobs, with no
    finish time, and those that left lately) are counted in one query through the
    ``(market, sim_finish_time)`` index."""
    counts = dict.fromkeys(Job.Status.values, 0)
    created = market.created_at.timestamp() if market.created_at else 0.0
    by_status = history_sums(rows=Job.objects.filter(market=market), time_field="sim_finish_time", group=("status",),
                             sums={"n": Count("id")}, now=market.sim_time, buckets=Buckets(key=f"jobs:{market.pk}:{created:.6f}"),
                             recent=lambda cut: statements.recent_counts(market.pk, cut))
    for (status,), (n,) in by_status.items():
        counts[status] = counts.get(status, 0) + int(n)
    return counts


def queue_totals(*, market: Market) -> list[dict[str, Any]]:
    """Per queue (by dotted path, sorted): its active jobs, and their running units and pending tasks
    per resource type (the types some active job of the queue has work of, in stage order), summed in
    the database in one query: the public part of the current allocation, without a row per job."""
    paths = queue_paths(market=market)
    types = resource_types_of(market=market)
    totals: dict[str, dict[str, Any]] = {}
    with connection.cursor() as cursor:
        cursor.execute(statements.queue_totals(len(types)), [*(t.pk for t in types for _ in range(3)), market.pk, *Job.ACTIVE])
        found = cursor.fetchall()
    for queue_id, n, *by_type in found:
        q = totals.setdefault(paths.get(queue_id, ""), {"jobs": 0, "running": {}, "pending": {}})
        q["jobs"] += n
        for k, t in enumerate(types):
            if by_type[3 * k]:
                q["running"][t.name] = q["running"].get(t.name, 0) + int(by_type[3 * k + 1] or 0)
                q["pending"][t.name] = q["pending"].get(t.name, 0) + int(by_type[3 * k + 2] or 0)
    return [{"queue": path, **q} for path, q in sorted(totals.items())]


def running_units(*, market: Market) -> dict[str, int]:
    """Resource type name -> the units the market's active jobs run of it (types none runs: absent), in one
    plain statement (``JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE)
    .values("resource_type__name").annotate(Sum("running"))``, without compiling it on every poll)."""
    work, jobs, types = rows.table(JobWork), rows.table(Job), rows.table(ResourceType)
    w, j, t = (lambda name: f"{work}.{rows.column(JobWork, name)}", lambda name: f"{jobs}.{rows.column(Job, name)}",
               lambda name: f"{types}.{rows.column(ResourceType, name)}")
    active = list(Job.ACTIVE)
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT {t('name')}, SUM({w('running')}) FROM {work} INNER JOIN {jobs} ON {w('job')} = {j('id')} "
                       f"INNER JOIN {types} ON {w('resource_type')} = {t('id')} WHERE {j('market')} = %s "
                       f"AND {j('status')} IN ({', '.join(['%s'] * len(active))}) GROUP BY {t('name')}", [market.pk, *active])
        return {name: int(r or 0) for name, r in cursor.fetchall()}


def market_overview(*, market: Market) -> dict[str, object]:
    """Headline numbers for the dashboard and the API's market state."""
    counts = job_counts(market=market)
    types = resource_types_of(market=market)
    contended = contended_settlements(market=market)  # one read for the level and every type's reference
    running = running_units(market=market)
    snap = latest_snapshot(market=market)
    return {
        "market": market.name,
        "sim_time": market.sim_time,
        "state_version": market.state_version,
        "cleared_version": market.cleared_version,
        "clearings": market.clearings,
        "alpha": market.alpha,
        "t_wait": "off" if market.t_wait == float("inf") else market.t_wait,
        "mechanism": market.mechanism,
        "fairshare_policy": market.fairshare_policy,
        "fairshare_history": market.fairshare_history,
        "fairshare_history_length": market.fairshare_history_length,
        "dispatch_mode": market.dispatch_mode,
        "clock_speed": market.clock_speed,
        "jobs": {s: counts.get(s, 0) for s in Job.Status.values},
        "resources": [
            {"name": t.name, "capacity": t.capacity, "running": running.get(t.name, 0), "utilisation": running.get(t.name, 0) / t.capacity}
            for t in types
        ],
        "prices": snapshot_prices(market=market, snapshot=snap) if snap else {},
        "spot": {"unit": price_unit(SLOT_SECOND), "realised_rate": realised_rates(market=market, types=types),
                 "price_level": price_level(market=market, contended=contended, types=types),
                 "reference_rate": reference_rates(market=market, types=types, contended=contended),
                 "reserve_price": {t.name: float(t.reserve_price) for t in types}},
        "last_clearing": None if snap is None else {
            "id": snap.pk, "state_version": snap.state_version, "sim_time": snap.sim_time, "rounds": snap.rounds,
            "converged": snap.converged, "n_jobs": snap.n_jobs, "solve_ms": snap.solve_ms, "total_ms": snap.total_ms,
            "params": snap.params,
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


def leaf_queues(*, market: Market) -> list[Queue]:
    return [q for q in Queue.objects.filter(market=market).prefetch_related("children") if not q.children.all()]


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


def tenant_job_list(*, tenant: Tenant, status: str | None = None, scope: str = "all", search: str = "") -> QuerySet[Job]:
    """A tenant's jobs, newest first, optionally of one status (unknown statuses give all jobs),
    ``scope`` "mine" (placed through a page or the API) or "replayed" (from a trace: they carry
    its job id in ``external_id``), and names containing ``search`` (case-insensitive)."""
    qs = tenant_jobs(tenant=tenant)
    if status in Job.Status.values:
        qs = qs.filter(status=status)
    if scope == "mine":
        qs = qs.filter(external_id="")
    elif scope == "replayed":
        qs = qs.exclude(external_id="")
    return qs.filter(name__icontains=search) if search else qs


def queue_paths(*, market: Market) -> dict[int, str]:
    """queue id -> dotted path (``models.queues.dotted_paths``): one query per ``structure_version``
    (``marketplace.market.structure``)."""
    return structure.queue_paths(market)


def last_sample_time(*, market: Market) -> float | None:
    """Simulated time of the market's newest sample (None before the first)."""
    return MarketSample.objects.filter(market=market).order_by("-sim_time").values_list("sim_time", flat=True).first()


def sample_times(*, market: Market, max_points: int = 500) -> list[float]:
    """Simulated times of the market's samples, thinned to at most ``max_points`` (evenly spaced)."""
    times = list(
        MarketSample.objects.filter(market=market).order_by("sim_time").values_list("sim_time", flat=True).distinct()
    )
    return evenly_spaced(times, max_points)


def fairness_points(*, market: Market, times: list[float]) -> list[dict[str, object]]:
    """Fairness samples at ``times``: sim_time, queue (path), resource, rho, running."""
    paths = queue_paths(market=market)
    names = dict(ResourceType.objects.filter(market=market).values_list("id", "name"))
    rows = (FairnessSample.objects.filter(market=market, sim_time__in=times).order_by("sim_time", "id")
            .values_list("sim_time", "queue_id", "resource_type_id", "rho", "running"))
    return [{"sim_time": t, "queue": paths.get(q, str(q)), "resource": names.get(r), "rho": rho, "running": running}
            for t, q, r, rho, running in rows]


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
    """Within-queue shares of ``job_ids`` over time (at most ``max_points`` samples per job,
    evenly spaced): sim_time, job_id, resource, share. The history is the clock's
    ``ShareSample`` rows (one per fairness sample and one at departure).

    Only resource types on which the job has tasks (the Plan holds a zero share for the others).
    """
    types = resource_types_of(market=market)
    with_tasks = {(w[0], w[1]) for w in JobWork.objects.filter(job_id__in=job_ids, tasks__gt=0).values_list("job_id", "resource_type_id")}
    by_job: dict[int, list[tuple[float, list[float]]]] = defaultdict(list)
    samples = ShareSample.objects.filter(job_id__in=job_ids).order_by("job_id", "sim_time", "id")
    for job_id, t, shares in samples.values_list("job_id", "sim_time", "shares"):
        by_job[job_id].append((t, shares))
    active = set(Job.objects.filter(pk__in=job_ids, status__in=Job.ACTIVE).values_list("id", flat=True))
    for job_id, named in current_shares(market=market, job_ids=list(active)).items():
        now = [named.get(rt.name, 0.0) for rt in types]  # the Plan in force, at the market's clock
        if not by_job[job_id] or by_job[job_id][-1][0] < market.sim_time:
            by_job[job_id].append((market.sim_time, now))
    out: list[dict[str, object]] = []
    for job_id in sorted(by_job):
        for t, shares in evenly_spaced(by_job[job_id], max_points):
            out.extend(
                {"sim_time": t, "job_id": job_id, "resource": rt.name, "share": share}
                for rt, share in zip(types, shares, strict=False) if (job_id, rt.pk) in with_tasks
            )
    out.sort(key=lambda r: (r["sim_time"], r["job_id"]))  # type: ignore[arg-type, return-value]
    return out


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
        picked = list(jobs.filter(share_samples__isnull=False).distinct().order_by("-id").values("id", "name", "tenant__name")[:limit])
    return {r["id"]: f"#{r['id']} {r['name'] or r['tenant__name']}".strip() for r in picked}


def job_share_until(*, market: Market, job_ids: list[int]) -> dict[int, float]:
    """job id -> simulated time up to which its last share holds: its finish (or cancel) time, else now."""
    rows = Job.objects.filter(market=market, pk__in=job_ids).values_list("id", "sim_finish_time")
    return {pk: market.sim_time if finish is None else finish for pk, finish in rows}


def resource_types_of(*, market: Market) -> list[ResourceType]:
    """The market's resource types in stage order (the columns of bid forms and tables): one query per
    ``structure_version`` (``marketplace.market.structure``)."""
    return structure.resource_types(market)


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


def queue_tree_nodes(*, market: Market) -> list[Queue]:
    """All queues of the market (parents before children by id, as created)."""
    return list(Queue.objects.filter(market=market).order_by("id"))


def market_or_none() -> Market | None:
    """The market the pages show (the first one), or None before any exists."""
    return Market.objects.order_by("id").first()


def replayed_jobs(*, market: Market) -> QuerySet[Job]:
    """The market's jobs that a trace replay submitted (``replay_trace``: a trace job id in
    ``external_id``, a name ``trace-<id>``), as opposed to jobs a tenant placed."""
    return Job.objects.filter(market=market).exclude(external_id="").filter(name__startswith="trace-")


CLOCK_STALE_S = 5.0  # a clock not ticked for this long is stopped (run_clock ticks every 0.5 s, the replay every 0.5 s)


def market_clock(*, market: Market) -> dict[str, Any]:
    """The market clock as a page shows it: ``sim_time`` (simulated s, extrapolated from the last
    tick at ``clock_speed`` simulated s per wall s), ``speed`` (that rate while the clock runs, 0
    while it is stopped: no tick for ``CLOCK_STALE_S`` wall s) and ``running``. The browser ticks
    the header clock at ``speed`` between reads (``static/js/clock.js``)."""
    since = None if market.clock_wall_at is None else (timezone.now() - market.clock_wall_at).total_seconds()
    running = since is not None and 0.0 <= since < CLOCK_STALE_S
    speed = float(market.clock_speed) if running else 0.0
    return {"sim_time": market.sim_time + speed * (since or 0.0), "speed": speed, "running": running}


def tenant_of(*, user: object) -> Tenant | None:
    """The tenant of a login (with its market and default queue), or None for a non-tenant (e.g. staff)."""
    if not getattr(user, "is_authenticated", False):
        return None
    return Tenant.objects.select_related("market", "default_queue").defer("market__engine_state").filter(user=user).first()


# --- Eq. 7 guidance and the queue tree, shared by the settings page and the admin ---------------


def queue_tree_rows(*, market: Market) -> list[dict[str, Any]]:
    """The queue tree depth-first, with depth and each node's fair fraction of the cluster
    (``QueueTree.node_fraction``: the fractions H-LTRF uses, paper 002 Eq. 2)."""
    tree_map = adapters.queue_tree(market)
    tree = tree_map.tree
    fraction = tree.node_fraction()
    queues = {q.pk: q for q in Queue.objects.filter(market=market)}
    by_path = {path: pk for pk, path in queue_paths(market=market).items()}
    rows: list[dict[str, Any]] = []

    def walk(node: int) -> None:
        depth = int(tree.depth[node])
        q = queues[by_path[tree.names[node]]]
        rows.append(
            {"queue": q, "depth": depth, "indent": depth * 1.25, "fraction": float(fraction[node]), "leaf": not tree.children[node]}
        )
        for child in tree.children[node]:
            walk(child)

    walk(tree.root)
    return rows


def clearing_convergence(*, market: Market, last: int = 200) -> dict[str, Any]:
    """Convergence of the market's newest ``last`` clearings (paper 000, Alg. 1 capped at
    ``max_rounds``: non-convergence is reported, never silent).

    Returns ``{"checked", "unconverged", "max_rounds", "median_rounds", "worst"}``;
    ``worst`` lists up to 5 unconverged clearings (id, sim_time s, rounds, jobs, KKT residual).
    """
    rows = list(AllocationSnapshot.objects.filter(market=market).order_by("-id")
                .values("id", "sim_time", "rounds", "converged", "n_jobs", "max_kkt_residual")[:last])
    rounds = sorted(r["rounds"] for r in rows)
    bad = [r for r in rows if not r["converged"]]
    return {
        "checked": len(rows), "unconverged": len(bad), "max_rounds": market.auction_max_rounds,
        "median_rounds": rounds[len(rounds) // 2] if rounds else None, "worst": bad[:5],
    }


# --- Experiment runs (simulator.experiments) ------------------------------------------------------


