"""VM pools: staff edit VM types, pool sizes and the pool manager's settings; tenants submit Cura jobs.

Writes only here (conventions: services write). Every parameter change is a
``ConfigChange`` row. A Cura job submission locks the market, rebuilds the
pools' reservation timelines from the stored reservations (and the VMs still
booting after a reconfiguration), asks ``scheduler.cura.VMAwareScheduler``
for the job's lowest-cost deadline-meeting configuration at the earliest
start (paper 004, Sec. III-A), and stores it. At the end of each
reconfiguration time window the pool manager (Sec. III-B) may re-size the
pools; its decision is stored whether executed or not.

In the live market every Cura reservation is fixed when it is made (it is
what the tenant was told); re-planning of tentative reservations (Alg. 1,
lines 12-28) happens in the simulator (``simulator.cura_sim``), not here.
Cura's resource cost is shown, not charged: paper 004 leaves pricing out
(footnote 2) and the ledger moves money only for market jobs.
"""

from __future__ import annotations

import math
from decimal import Decimal, InvalidOperation
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.models import ConfigChange, Market, Tenant
from marketplace.models.pools import CuraJob, PoolReconfiguration, PoolSettings, VMInstanceType, VMPool
from scheduler.cura import CuraJob as SchedJob
from scheduler.cura import Rejected, VMAwareScheduler
from scheduler.cura_profiles import PAPER_PROFILES, PAPER_SIZES, VMType
from scheduler.cura_reconfig import ReconfigurationManager
from scheduler.cura_timeline import Interval

MAX_POOL = 100_000
MAX_CORE_BUDGET = 2_147_483_647  # the column's (PositiveIntegerField) largest value
SETTINGS_FIELDS = ("beta", "reconf_window_s", "boot_s", "shutdown_s", "framework_start_s", "core_budget")


def _user(user: object) -> Any:
    return user if getattr(user, "is_authenticated", False) else None


def _audit(market: Market, field: str, old: Any, new: Any, user: object, reason: str = "") -> ConfigChange:
    return ConfigChange.objects.create(
        market=market, field=field, old_value=str(old), new_value=str(new), changed_by=_user(user), reason=reason,
    )


def _price(value: Any) -> Decimal:
    try:
        price = Decimal(str(value))
    except (InvalidOperation, ValueError):
        raise ValidationError({"price": "Enter the unit price as a number (money per VM-second)."}) from None
    if not price.is_finite() or price <= 0 or price >= Decimal("1e8"):
        raise ValidationError({"price": "The unit price must be greater than 0 (money per VM-second)."})
    return price.quantize(Decimal("1e-12"))


@transaction.atomic
def vm_type_save(
    *, market: Market, name: str, vcpus: int, memory_gb: float, price: Any, vm_type: VMInstanceType | None = None,
    user: object = None, reason: str = "",
) -> VMInstanceType:
    """Create a VM type (with an empty pool) or change one, audited.

    Raises:
        ValidationError: field-level ({"name"|"vcpus"|"memory_gb"|"price": ...}).
    """
    errors: dict[str, str] = {}
    name = str(name).strip()
    if not name or len(name) > 40:
        errors["name"] = "Give the VM type a name of 1 to 40 characters."
    elif VMInstanceType.objects.filter(market=market, name=name).exclude(pk=getattr(vm_type, "pk", None)).exists():
        errors["name"] = f"This market already has a VM type named {name}."
    if isinstance(vcpus, bool) or not isinstance(vcpus, int) or not 1 <= vcpus <= 1024:
        errors["vcpus"] = "vCPUs must be a whole number from 1 to 1024."
    if not isinstance(memory_gb, (int, float)) or not math.isfinite(memory_gb) or not 0 < memory_gb <= 1e5:
        errors["memory_gb"] = "Memory must be more than 0 GB."
    try:
        unit = _price(price)
    except ValidationError as exc:
        errors.update({k: v[0] for k, v in exc.message_dict.items()})
    if errors:
        raise ValidationError(errors)
    Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    new = {"name": name, "vcpus": vcpus, "memory_gb": float(memory_gb), "price": unit}
    if vm_type is None:
        position = VMInstanceType.objects.filter(market=market).count()
        vm_type = VMInstanceType.objects.create(market=market, position=position, **new)
        VMPool.objects.create(vm_type=vm_type, size=0)
        _audit(market, f"vm_type[{name}]", "", f"{vcpus} vCPU, {memory_gb:g} GB, {unit}/VM-s", user, reason)
        return vm_type
    for field, value in new.items():
        old = getattr(vm_type, field)
        if old != value:
            _audit(market, f"vm_type[{vm_type.name}].{field}", old, value, user, reason)
            setattr(vm_type, field, value)
    vm_type.save()
    return vm_type


@transaction.atomic
def pool_resize(*, pool: VMPool, size: int, user: object = None, reason: str = "") -> VMPool:
    """Set a pool's size by hand, audited.

    Raises:
        ValidationError: {"size": ...} unless 0 <= size <= 100000.
    """
    if isinstance(size, bool) or not isinstance(size, int) or not 0 <= size <= MAX_POOL:
        raise ValidationError({"size": f"The pool size must be a whole number of VMs from 0 to {MAX_POOL}."})
    pool = VMPool.objects.select_related("vm_type__market").select_for_update().get(pk=pool.pk)
    if pool.size != size:
        _audit(pool.vm_type.market, f"pool[{pool.vm_type.name}]", pool.size, size, user, reason)
        pool.size = size
        pool.save(update_fields=["size"])
    return pool


def pool_settings_of(*, market: Market) -> PoolSettings:
    """The market's pool settings (created with the defaults on first use)."""
    return PoolSettings.objects.get_or_create(market=market)[0]


@transaction.atomic
def pool_settings_update(*, market: Market, user: object = None, reason: str = "", **changes: Any) -> list[ConfigChange]:
    """Change beta, the reconfiguration window, boot / shutdown / framework start times or
    the core budget; each changed field audited.

    Raises:
        ValidationError: field-level, nothing written.
    """
    unknown = set(changes) - set(SETTINGS_FIELDS)
    if unknown:
        raise ValidationError(dict.fromkeys(unknown, "Not a pool setting."))
    errors = {}
    for field, value in changes.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            errors[field] = "Enter a number."
        elif field == "reconf_window_s" and value <= 0:
            errors[field] = "The reconfiguration window must be longer than 0 s."
        elif value < 0:
            errors[field] = "Must be 0 or more."
        elif field == "core_budget" and int(value) != value:
            errors[field] = "The core budget is a whole number of vCPUs."
        elif field == "core_budget" and value > MAX_CORE_BUDGET:
            errors[field] = f"At most {MAX_CORE_BUDGET} vCPUs."
    if errors:
        raise ValidationError(errors)
    Market.objects.select_for_update().defer("engine_state").get(pk=market.pk)
    ps = PoolSettings.objects.select_for_update().get(pk=pool_settings_of(market=market).pk)
    audit = []
    for field, value in changes.items():
        old = getattr(ps, field)
        if old != value:
            audit.append(_audit(market, f"pools.{field}", old, value, user, reason))
            setattr(ps, field, int(value) if field == "core_budget" else float(value))
    ps.save()
    return audit


@transaction.atomic
def pools_setup_paper(*, market: Market, size: int = 40, user: object = None) -> list[VMInstanceType]:
    """The VM types of paper 004, App. A (VM-1/2/3: 2/4/8 vCPUs and GB, 1/6, 1/3, 2/3 per
    VM-second) with ``size`` VMs each, for a market without VM types."""
    from scheduler.cura_profiles import PAPER_VM_TYPES

    if VMInstanceType.objects.filter(market=market).exists():
        raise ValidationError("This market already has VM types.")
    out: list[int] = []
    for t in PAPER_VM_TYPES:
        price = Decimal(str(round(t.price, 12)))
        vt = vm_type_save(market=market, name=t.name, vcpus=t.vcpus, memory_gb=t.memory_gb, price=price, user=user)
        pool_resize(pool=vt.pool, size=size, user=user)
        out.append(vt.pk)
    pool_settings_of(market=market)
    return list(VMInstanceType.objects.filter(pk__in=out).select_related("pool"))


# ------------------------------------------------------------------ Cura jobs


def _scheduler(market: Market, types: list[VMInstanceType], ps: PoolSettings, now: float) -> VMAwareScheduler:
    """The pools as they stand at ``now``: stored reservations and booting VMs held."""
    spec = [VMType(t.name, t.vcpus, t.memory_gb, float(t.price)) for t in types]
    sched = VMAwareScheduler(spec, [t.pool.size for t in types], PAPER_SIZES, framework_start=ps.framework_start_s)
    index = {t.pk: v for v, t in enumerate(types)}
    for job in CuraJob.objects.filter(market=market, status=CuraJob.Status.RESERVED, end_s__gt=now):
        if job.vm_type_id in index:
            sched.pools[index[job.vm_type_id]].add(Interval(job.pk, job.vms, float(job.start_s or now), float(job.end_s or now), False))
    ready_after = ps.shutdown_s + ps.boot_s
    for k, rec in enumerate(PoolReconfiguration.objects.filter(market=market, executed=True, time_s__gt=now - ready_after)):
        for v, t in enumerate(types):
            extra = int(rec.after.get(t.name, 0)) - int(rec.before.get(t.name, 0))
            if extra > 0:
                sched.pools[v].add(Interval(-1 - k * len(types) - v, extra, now, rec.time_s + ready_after, False))
    return sched


@transaction.atomic
def cura_job_submit(*, tenant: Tenant, job_type: int, deadline_in_s: float, user: object = None) -> CuraJob:
    """Submit a job with a deadline only; Cura picks VM type, cluster size and start.

    Args:
        tenant: the submitting tenant.
        job_type: a profiled job type, 1-4 (paper 004, Tables II-V).
        deadline_in_s: simulated seconds from now by which the job must end.

    Returns:
        The stored job with its configuration (VM type, VMs, [start, end), cost).

    Raises:
        ValidationError: {"job_type": ...}, or {"deadline_in_s": ...} when no
            configuration can meet the deadline (the message names the
            earliest deadline that works), or {"__all__": ...} without pools.
    """
    if job_type not in PAPER_PROFILES:
        raise ValidationError({"job_type": f"Choose a job type from {min(PAPER_PROFILES)} to {max(PAPER_PROFILES)}."})
    if isinstance(deadline_in_s, bool) or not isinstance(deadline_in_s, (int, float)) or not 0 < deadline_in_s < 1e9:
        raise ValidationError({"deadline_in_s": "The deadline must be a number of seconds greater than 0."})
    market = Market.objects.select_for_update().defer("engine_state").get(pk=tenant.market_id)
    types = list(VMInstanceType.objects.filter(market=market).select_related("pool"))
    if not types:
        raise ValidationError("This market has no VM pools yet.")
    ps = pool_settings_of(market=market)
    now = float(market.sim_time)
    _reconfigure_if_due(market, types, ps, now)
    types = list(VMInstanceType.objects.filter(market=market).select_related("pool"))
    sched = _scheduler(market, types, ps, now)
    runtime = PAPER_PROFILES[job_type].runtime
    if runtime.shape[0] != len(types):
        raise ValidationError({"job_type": f"The built-in profiles cover {runtime.shape[0]} VM types; this market has {len(types)}."})
    job = SchedJob(0, now, now + float(deadline_in_s), runtime)
    try:
        sched.submit(job)
        sched.plan(now)
    except Rejected as exc:
        raise ValidationError({"deadline_in_s": _too_soon(exc.earliest_deadline - now)}) from None
    placed = sched.tentative.get(0)
    if placed is None:  # the pools are busy until after the deadline
        earliest = _earliest_on_timeline(sched, job, now)
        raise ValidationError({"deadline_in_s": _too_soon(earliest - now)})
    return CuraJob.objects.create(
        market=market, tenant=tenant, job_type=job_type, arrival_s=now, deadline_s=job.deadline, status=CuraJob.Status.RESERVED,
        vm_type=types[placed.vm_type], vms=placed.vms, start_s=placed.start, end_s=placed.end,
        cost=Decimal(str(round(placed.cost, 6))),
    )


def _too_soon(earliest_in_s: float) -> str:
    if not math.isfinite(earliest_in_s):
        return "No VM type and cluster size of these pools can run this job."
    return (f"No VM type and cluster size meets this deadline; the earliest deadline that works is "
            f"{math.ceil(earliest_in_s)} s from now.")


def _earliest_on_timeline(sched: VMAwareScheduler, job: SchedJob, now: float) -> float:
    """Earliest end of any configuration on the pools as booked (no deadline)."""
    import numpy as np

    best = math.inf
    for v, pool in enumerate(sched.pools):
        rt = job.runtime[v] + sched.framework_start
        k = np.asarray(sched.sizes, dtype=np.float64)
        start, _ = pool.earliest(now, k, rt, np.full(k.size, now))
        best = min(best, float(np.min(start + rt)))
    return best


def _reconfigure_if_due(market: Market, types: list[VMInstanceType], ps: PoolSettings, now: float) -> PoolReconfiguration | None:
    """Sec. III-B at the end of a window: decide over the window's jobs and store the decision."""
    last = PoolReconfiguration.objects.filter(market=market).order_by("-time_s").first()
    start = last.time_s if last is not None else 0.0
    if now < start + ps.reconf_window_s:
        return None
    budget = ps.core_budget or sum(t.vcpus * t.pool.size for t in types)
    spec = [VMType(t.name, t.vcpus, t.memory_gb, float(t.price)) for t in types]
    manager = ReconfigurationManager(spec, budget, window=ps.reconf_window_s, beta=ps.beta, shutdown_s=ps.shutdown_s,
                                     boot_s=ps.boot_s, framework_start=ps.framework_start_s)
    window_jobs = CuraJob.objects.filter(market=market, status=CuraJob.Status.RESERVED, arrival_s__gte=start, arrival_s__lt=now)
    if not window_jobs.exists():
        return None
    for j in window_jobs:
        manager.observe(SchedJob(j.pk, j.arrival_s, j.deadline_s, PAPER_PROFILES[j.job_type].runtime), PAPER_SIZES, float(j.cost or 0))
    manager.window_start = now - ps.reconf_window_s
    sched = _scheduler(market, types, ps, now)
    rec = manager.step(sched, now)
    if rec is None:
        return None
    names = [t.name for t in types]
    row = PoolReconfiguration.objects.create(
        market=market, time_s=now, before=dict(zip(names, rec.before, strict=True)), target=dict(zip(names, rec.target, strict=True)),
        after=dict(zip(names, rec.after, strict=True)), benefit=rec.benefit, cost=rec.cost, executed=rec.executed, jobs=rec.jobs,
    )
    if rec.executed:
        for t, size in zip(types, rec.after, strict=True):
            if t.pool.size != size:
                _audit(market, f"pool[{t.name}]", t.pool.size, size, None, f"reconfiguration at {now:.0f} s")
                VMPool.objects.filter(pk=t.pool.pk).update(size=size)
    return row
