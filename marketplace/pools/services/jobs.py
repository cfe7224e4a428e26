"""Live Cura jobs (paper 004): admitted onto the VM pools, run by the cluster's clock, paid through the ledger.

The pools' scheduler is :class:`simulator.cura.live.CuraDriver` (Alg. 1 and the
Sec. III-B pool manager, the code the simulator runs), kept as JSON on the
market's ``PoolSettings`` between requests. Every write runs under the market
row lock (lock order: market, then accounts, as the ledger's).

* **Submission** (:func:`cura_job_submit`): the driver is brought to the
  market's time, the job's estimate is its class's *learnt profile*
  (:func:`scheduler.cura.profiles.learn_profile` over the tenant's completed
  runs of the class, the built-in Table II-V profile as the prior), Alg. 1
  places it (or it waits for a window), and the most any deadline-meeting
  configuration could cost is held on the tenant's account.
* **The clock** (:func:`cura_advance`, called by ``market.services.clock.cluster_advance``
  on every tick): the driver steps through every reservation start, window end and
  pool-manager window up to the tick's time -- re-planning as the simulator does --
  and the rows follow: reserved -> running -> done; a run that ends is charged its
  configuration's cost (VMs x unit price x planned runtime, the price the scheduler
  chose it by) and the rest of the hold is released; a job that no configuration
  can finish in time any more is *missed* and its whole hold released; executed
  reconfigurations re-size the pools (audited).
* **Cancellation** (:func:`cura_job_cancel`): the job leaves the pools (a running
  job's VMs are freed now) and its hold is released.

Paper 004 leaves pricing out (footnote 2): charging the resource cost of the
configuration is this product's choice, and the hold bounds it.
"""

from __future__ import annotations

import math
from decimal import ROUND_DOWN, Decimal
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.infra import rows
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import money, tenant_movements
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.market import part_in_use
from marketplace.market.validation import StateConflict
from marketplace.pools.models import CuraJob, CuraLedgerLink, PoolReconfiguration, PoolSettings, VMInstanceType, VMPool
from marketplace.pools.services.pools import pool_settings_of
from scheduler.cura.profiles import PAPER_PROFILES, PAPER_SIZES, JobProfile, Run, VMType, learn_profile
from scheduler.cura.reconfig import ReconfigurationManager
from scheduler.cura.timeline import Interval
from scheduler.cura.vm_aware import CuraJob as SchedJob
from scheduler.cura.vm_aware import Placement, Rejected, VMAwareScheduler
from simulator.cura.live import CuraDriver, StepEvents

HOLD, CHARGE, RELEASE = LedgerEntry.Kind.HOLD, LedgerEntry.Kind.CHARGE, LedgerEntry.Kind.RELEASE


def _spec(types: list[VMInstanceType]) -> list[VMType]:
    return [VMType(t.name, t.vcpus, t.memory_gb, float(t.price)) for t in types]


def _signature(types: list[VMInstanceType], ps: PoolSettings) -> list[Any]:
    return [[t.name, t.vcpus, float(t.price)] for t in types] + [[ps.beta, ps.reconf_window_s, ps.boot_s, ps.shutdown_s,
                                                                   ps.framework_start_s, ps.core_budget]]


def _fresh(market: Market, types: list[VMInstanceType], ps: PoolSettings, now: float) -> CuraDriver:
    """A driver for the pools as they are, holding the runs in progress and re-planning the rest."""
    spec = _spec(types)
    sched = VMAwareScheduler(spec, [t.pool.size for t in types], PAPER_SIZES, framework_start=ps.framework_start_s)
    budget = ps.core_budget or sum(t.vcpus * t.pool.size for t in types)
    manager = ReconfigurationManager(spec, budget, window=ps.reconf_window_s, beta=ps.beta, shutdown_s=ps.shutdown_s,
                                     boot_s=ps.boot_s, framework_start=ps.framework_start_s)
    manager.window_start = now
    driver = CuraDriver(sched, manager, now)
    index = {t.pk: v for v, t in enumerate(types)}
    for job in CuraJob.objects.filter(market=market, status__in=CuraJob.LIVE).order_by("arrival_s", "pk"):
        sj = SchedJob(job.pk, job.arrival_s, job.deadline_s, _estimate_of(job, len(types)))
        if job.status == CuraJob.Status.RUNNING and job.vm_type_id in index and job.finished_s is not None:
            v = index[job.vm_type_id]
            k = PAPER_SIZES.index(job.vms) if job.vms in PAPER_SIZES else 0
            p = Placement(job.pk, v, k, job.vms, float(job.start_s or now), float(job.finished_s), float(job.cost or 0))
            sched.jobs[job.pk] = sj
            sched.started[job.pk] = p
            sched.pools[v].add(Interval(job.pk, job.vms, p.start, p.end, tentative=False))
        else:
            try:
                driver.submit(sj, scale=job.runtime_scale)
            except Rejected:
                continue  # missed at the next tick's rows sync
    return driver


def _estimate_of(job: CuraJob, V: int) -> np.ndarray[Any, np.dtype[np.float64]]:
    if job.estimate:
        return np.array(job.estimate, dtype=np.float64)
    return np.asarray(PAPER_PROFILES[job.job_type].runtime[:V], dtype=np.float64)


def _load(market: Market, types: list[VMInstanceType], ps: PoolSettings) -> tuple[CuraDriver, StepEvents]:
    """The stored driver brought up to the market's time (every instant before it), or a
    fresh one when staff changed the VM types or the manager's settings; a pool staff
    re-sized by hand is re-sized in the scheduler (Sec. III-B's resize) and re-planned now."""
    now = float(market.sim_time)
    state = ps.engine_state or {}
    if state.get("signature") == _signature(types, ps):
        driver = CuraDriver.from_state(state["driver"])
        ev = StepEvents()
        sizes = [t.pool.size for t in types]
        if sizes != driver.sched.pool_sizes:  # since the last tick: effective from the driver's time
            driver.resize(sizes, ps.shutdown_s + ps.boot_s)
            driver.step(driver.now, ev)
        return driver, driver.advance(now, ev)
    driver = _fresh(market, types, ps, now)
    return driver, driver.step(now)


def _store(ps: PoolSettings, types: list[VMInstanceType], driver: CuraDriver) -> None:
    ps.engine_state = {"signature": _signature(types, ps), "driver": driver.to_state()}
    PoolSettings.objects.filter(pk=ps.pk).update(engine_state=ps.engine_state)


def learnt_profile(*, tenant: Tenant, job_type: int, job_class: str, V: int, framework_start: float) -> JobProfile:
    """The class's profile learnt from the tenant's completed runs of it (paper 004, Sec. II-C);
    the built-in Table II-V profile of ``job_type`` is the prior."""
    base = PAPER_PROFILES[job_type]
    prior = JobProfile(base.name, base.sizes, base.runtime[:V])
    done = CuraJob.objects.filter(tenant=tenant, job_class=job_class, status=CuraJob.Status.DONE, finished_s__isnull=False)
    order = {t.pk: t.position for t in VMInstanceType.objects.filter(market_id=tenant.market_id)}
    ranks = {pk: r for r, pk in enumerate(sorted(order, key=lambda pk: (order[pk], pk)))}
    runs = []
    for vm_type_id, vms, start, end in done.values_list("vm_type_id", "vms", "start_s", "finished_s"):
        if vm_type_id in ranks and ranks[vm_type_id] < V and end - start - framework_start > 0:
            runs.append(Run(ranks[vm_type_id], int(vms), float(end - start - framework_start)))
    return learn_profile(job_class, runs[-200:], prior) if runs else prior


# ------------------------------------------------------------------ the clock


def cura_advance(*, market: Market) -> StepEvents | None:
    """Run the pools' schedule up to the market's simulated time (the caller holds the
    market row lock and has moved ``market.sim_time``)."""
    if not CuraJob.objects.filter(market=market, status__in=CuraJob.LIVE).exists():
        return None  # nothing in flight (one query a tick): the next submission catches the driver up
    types = list(VMInstanceType.objects.filter(market=market).select_related("pool"))
    ps = pool_settings_of(market=market)
    driver, ev = _load(market, types, ps)
    _apply(market, types, driver, ev)
    _store(ps, types, driver)
    return ev


def _apply(market: Market, types: list[VMInstanceType], driver: CuraDriver, ev: StepEvents) -> None:
    """The rows and the money follow the driver's decisions."""
    fs = driver.sched.framework_start
    for rec in ev.reconfigurations:
        names = [t.name for t in types]
        PoolReconfiguration.objects.create(
            market=market, time_s=rec.time, before=dict(zip(names, rec.before, strict=True)),
            target=dict(zip(names, rec.target, strict=True)), after=dict(zip(names, rec.after, strict=True)),
            benefit=rec.benefit, cost=rec.cost, executed=rec.executed, jobs=rec.jobs,
        )
        if rec.executed:
            for t, size in zip(types, rec.after, strict=True):
                if t.pool.size != size:
                    ConfigChange.objects.create(market=market, field=f"pool[{t.name}]", old_value=str(t.pool.size), new_value=str(size),
                                                reason=f"reconfiguration at {rec.time:.0f} s")
                    VMPool.objects.filter(pk=t.pool.pk).update(size=size)
                    t.pool.size = size
    ids = {p.job_id for p in ev.started + ev.finished} | set(ev.missed) | set(driver.sched.tentative) | set(driver.sched.waiting)
    jobs = {j.pk: j for j in CuraJob.objects.select_for_update().filter(market=market, pk__in=ids).order_by("pk")}
    for p in ev.started:
        job = jobs.get(p.job_id)
        if job is not None:
            _place(job, types, p, CuraJob.Status.RUNNING, fs)
    for job_id, p in driver.sched.tentative.items():
        if job_id in jobs:
            _place(jobs[job_id], types, p, CuraJob.Status.RESERVED, fs)
    for job_id in driver.sched.waiting:
        job = jobs.get(job_id)
        if job is not None and job.status == CuraJob.Status.RESERVED:
            job.status, job.vm_type, job.vms, job.start_s, job.end_s, job.cost = CuraJob.Status.WAITING, None, 0, None, None, None
    for p in ev.finished:
        job = jobs.get(p.job_id)
        if job is not None and job.status == CuraJob.Status.RUNNING:
            job.status, job.finished_s = CuraJob.Status.DONE, p.end
            _settle(job, money(float(job.cost or 0)))
    for job_id in ev.missed:
        job = jobs.get(job_id)
        if job is not None and job.status in CuraJob.LIVE:
            job.status = CuraJob.Status.MISSED
            _settle(job, Decimal(0))
    CuraJob.objects.bulk_update(list(jobs.values()), _ROW_FIELDS)


_ROW_FIELDS = ["status", "vm_type", "vms", "start_s", "end_s", "cost", "finished_s", "held", "charged"]


def _place(job: CuraJob, types: list[VMInstanceType], p: Placement, status: str, fs: float) -> None:
    """A reservation's or a run's configuration on the row; ``end_s`` is the planned end
    (the estimate's), ``finished_s`` the real run's (the cluster's truth)."""
    job.status, job.vm_type, job.vms = status, types[p.vm_type], p.vms
    job.start_s, job.cost = p.start, Decimal(str(round(p.cost, 6)))
    job.end_s = p.start + fs + float(_estimate_of(job, len(types))[p.vm_type, p.size_index])
    if status == CuraJob.Status.RUNNING:
        job.finished_s = p.end


def _money(*, tenant_id: int, cura_job_id: int, movements: list[tuple[str, Decimal, str]], user: object = None) -> None:
    """Hold, charge or release money of a Cura job (paper 004): one account lock, and each entry
    linked to the Cura job (``CuraLedgerLink``). Raises ValidationError like ``ledger.services.job_hold``."""
    entries = tenant_movements(tenant_id=tenant_id, movements=movements, user=user)
    rows.insert_rows(CuraLedgerLink, ("entry", "cura_job"), [(e.pk, cura_job_id) for e in entries])


def _settle(job: CuraJob, amount: Decimal, memo: str = "") -> None:
    """Charge ``amount`` of the hold (never more than held) and release the rest."""
    amount = min(amount, job.held)
    _money(tenant_id=job.tenant_id, cura_job_id=job.pk, movements=[
        (CHARGE, amount, memo or f"Cura job {job.pk}: its configuration's cost"),
        (RELEASE, job.held - amount, f"rest of the hold of Cura job {job.pk}"),
    ])
    job.charged += amount
    job.held = Decimal(0)


# ------------------------------------------------------------------ tenants


@transaction.atomic
def cura_job_submit(
    *, tenant: Tenant, job_type: int, deadline_in_s: float, job_class: str = "", runtime_scale: float = 1.0, user: object = None,
) -> CuraJob:
    """Submit a job with a deadline only; Cura picks VM type, cluster size and start (Alg. 1).

    Args:
        tenant: the submitting tenant.
        job_type: the built-in profile (paper 004, Tables II-V) the class starts from, 1-4.
        deadline_in_s: simulated seconds from now by which the job must end.
        job_class: the tenant's name for repeats of this job (default ``type <job_type>``):
            completed runs of the class refine its profile.
        runtime_scale: the simulated cluster's truth, real run / built-in profile (> 0).

    Returns:
        The stored job: reserved (VM type, VMs, [start, end), cost), running, or waiting
        for a window; the hold is on the tenant's account.

    Raises:
        ValidationError: {"job_type"|"deadline_in_s"|"runtime_scale"|"job_class": ...} (a deadline
            no configuration can meet names the earliest that works), {"budget": ...} without
            the funds for the hold, or {"__all__": ...} without pools.
    """
    if job_type not in PAPER_PROFILES:
        raise ValidationError({"job_type": f"Choose a job type from {min(PAPER_PROFILES)} to {max(PAPER_PROFILES)}."})
    if isinstance(deadline_in_s, bool) or not isinstance(deadline_in_s, (int, float)) or not 0 < deadline_in_s < 1e9:
        raise ValidationError({"deadline_in_s": "The deadline must be a number of seconds greater than 0."})
    if isinstance(runtime_scale, bool) or not isinstance(runtime_scale, (int, float)) or not 0.01 <= runtime_scale <= 100:
        raise ValidationError({"runtime_scale": "The real-to-profiled run ratio must be from 0.01 to 100."})
    job_class = str(job_class).strip() or f"type {job_type}"
    if len(job_class) > 60:
        raise ValidationError({"job_class": "Name the job class in at most 60 characters."})
    market = Market.objects.select_for_update().defer("engine_state").get(pk=tenant.market_id)
    types = list(VMInstanceType.objects.filter(market=market).select_related("pool"))
    if not types:
        raise ValidationError("This market has no VM pools yet.")
    if PAPER_PROFILES[job_type].runtime.shape[0] < len(types):
        raise ValidationError({"job_type": f"The built-in profiles cover {PAPER_PROFILES[job_type].runtime.shape[0]} VM types; "
                                           f"this market has {len(types)}."})
    ps = pool_settings_of(market=market)
    now = float(market.sim_time)
    driver, ev = _load(market, types, ps)
    profile = learnt_profile(tenant=tenant, job_type=job_type, job_class=job_class, V=len(types),
                             framework_start=ps.framework_start_s)
    part_in_use(market=market, name="pools")
    job = CuraJob.objects.create(
        market=market, tenant=tenant, job_type=job_type, job_class=job_class, runtime_scale=float(runtime_scale),
        arrival_s=now, deadline_s=now + float(deadline_in_s), status=CuraJob.Status.WAITING,
        estimate=profile.runtime.tolist(),
    )
    sj = SchedJob(job.pk, now, job.deadline_s, profile.runtime)
    try:
        driver.submit(sj, scale=float(runtime_scale) * _truth_ratio(profile, job_type, len(types)))
    except Rejected as exc:
        raise ValidationError({"deadline_in_s": _too_soon(exc.earliest_deadline - now)}) from None
    driver.step(now, ev)
    placed = job.pk in driver.sched.tentative or job.pk in driver.sched.started
    if not placed and _earliest_on_timeline(driver.sched, sj, now) > sj.deadline + 1e-9:
        raise ValidationError({"deadline_in_s": _too_soon(_earliest_on_timeline(driver.sched, sj, now) - now)})
    hold = money(_dearest(driver.sched, sj))
    _money(tenant_id=tenant.pk, cura_job_id=job.pk, movements=[(HOLD, hold, f"hold for Cura job {job.pk}")], user=user)
    CuraJob.objects.filter(pk=job.pk).update(held=hold)
    _apply(market, types, driver, ev)
    _store(ps, types, driver)
    job.refresh_from_db()
    return job


def _truth_ratio(profile: JobProfile, job_type: int, V: int) -> float:
    """The estimate is the learnt profile; the truth is the built-in one x runtime_scale. The
    driver's ``scale`` is truth / estimate, read at the built-in profile's cheapest configuration."""
    base = PAPER_PROFILES[job_type].runtime[:V]
    v, s = np.unravel_index(int(np.argmin(base)), base.shape)
    return float(base[v, s] / profile.runtime[v, s])


def _dearest(sched: VMAwareScheduler, job: SchedJob) -> float:
    """The highest cost of any configuration that could meet the deadline from now: no
    re-planning can charge more than this hold."""
    rt = job.runtime + sched.framework_start
    k = np.asarray(sched.sizes, dtype=np.float64)[None, :]
    cost = np.where(job.arrival + rt <= job.deadline + 1e-9, k * sched.prices[:, None] * rt, 0.0)
    return float(cost.max())


@transaction.atomic
def cura_job_cancel(*, job: CuraJob, user: object = None) -> CuraJob:
    """Withdraw a waiting, reserved or running job: its VMs return to the pool now.

    Money (docs/economy.md, "Cancellations"): a running job pays for the VM-seconds it held, its
    configuration's price for the time it ran (VMs x unit price x seconds since its start, the rate
    its cost is charged at, :func:`cancellation_cost`), at most its configuration's cost and its
    hold; a waiting or reserved job received nothing and pays nothing. The rest is released.

    Raises:
        StateConflict: the job has already ended (a ValidationError; the API answers 409, as for a market job).
    """
    market = Market.objects.select_for_update().defer("engine_state").get(pk=job.market_id)
    job = CuraJob.objects.select_for_update().get(pk=job.pk)
    if job.status not in CuraJob.LIVE:
        raise StateConflict({"status": f"Cura job {job.pk} has already ended ({job.status})."})
    types = list(VMInstanceType.objects.filter(market=market).select_related("pool"))
    ps = pool_settings_of(market=market)
    driver, ev = _load(market, types, ps)
    driver.cancel(job.pk)
    driver.step(float(market.sim_time), ev)  # freed VMs and a closed window: re-plan now
    _apply(market, types, driver, ev)
    job.refresh_from_db()
    if job.status in CuraJob.LIVE:
        now = float(market.sim_time)
        running = job.status == CuraJob.Status.RUNNING
        used = cancellation_cost(job=job, now=now) if running else Decimal(0)
        job.status, job.finished_s = CuraJob.Status.CANCELLED, (now if running else None)
        memo = (f"Cura job {job.pk} cancelled: {job.vms} VMs of {job.vm_type.name if job.vm_type else '?'} for "
                f"{max(now - float(job.start_s if job.start_s is not None else now), 0.0):.0f} s of its run") if used > 0 else ""
        _settle(job, used, memo)
        job.save(update_fields=["status", "held", "charged", "finished_s"])
    _store(ps, types, driver)
    return job


def cancellation_cost(*, job: CuraJob, now: float) -> Decimal:
    """What a running Cura job cancelled at ``now`` owes: VMs x its VM type's price per VM-second x
    the seconds since its run started, rounded down to the money's places, at most its
    configuration's cost (paper 004's cost is VMs x unit price x runtime; docs/economy.md)."""
    if job.vm_type is None or job.start_s is None or now <= job.start_s:
        return Decimal(0)
    rate = Decimal(job.vms) * job.vm_type.price
    used = (rate * Decimal(repr(now - float(job.start_s)))).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    cost = money(float(job.cost)) if job.cost is not None else used
    return min(used, cost)


def _too_soon(earliest_in_s: float) -> str:
    if not math.isfinite(earliest_in_s):
        return "No VM type and cluster size of these pools can run this job."
    return (f"No VM type and cluster size meets this deadline; the earliest deadline that works is "
            f"{math.ceil(earliest_in_s)} s from now.")


def _earliest_on_timeline(sched: VMAwareScheduler, job: SchedJob, now: float) -> float:
    """Earliest end of any configuration on the pools as booked (no deadline)."""
    best = math.inf
    for v, pool in enumerate(sched.pools):
        rt = job.runtime[v] + sched.framework_start
        k = np.asarray(sched.sizes, dtype=np.float64)
        start, _ = pool.earliest(now, k, rt, np.full(k.size, now))
        best = min(best, float(np.min(start + rt)))
    return best
