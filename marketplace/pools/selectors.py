"""Reads of the VM pools (paper 004): pools, their sizes and use over simulated time, reconfigurations, Cura jobs."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.urls import reverse

from marketplace.ledger.money import format_money
from marketplace.market.hooks import PartJob, PricePoint
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import price_level
from marketplace.pools.models import CuraJob, CuraLedgerLink, PoolReconfiguration, VMInstanceType


def vm_types_of(*, market: Market) -> list[VMInstanceType]:
    """The market's VM types in pool order, with their pools."""
    return list(VMInstanceType.objects.filter(market=market).select_related("pool"))


def busy_at(*, market: Market, t: float) -> dict[int, int]:
    """VM type id -> VMs held by Cura jobs running at simulated time t."""
    out: dict[int, int] = {}
    for vm_type_id, vms, start, end in _held(market):
        if start <= t < end:
            out[vm_type_id] = out.get(vm_type_id, 0) + vms
    return out


HOLDING = (CuraJob.Status.RESERVED, CuraJob.Status.RUNNING, CuraJob.Status.DONE)


def _held(market: Market) -> list[tuple[int, int, float, float]]:
    """(VM type id, VMs, start, end) of every reservation and run: a run ends when it
    really did (``finished_s``), a reservation when it is planned to."""
    rows = CuraJob.objects.filter(market=market, status__in=HOLDING, start_s__isnull=False)
    fields = ("vm_type_id", "vms", "start_s", "end_s", "finished_s")
    return [(t, k, s, f if f is not None else e) for t, k, s, e, f in rows.values_list(*fields)]


def slot_rate(vm_type: VMInstanceType) -> float:
    """A VM type's price in the market's one unit, money per slot-second: its price per VM-second
    over its slots (a map slot per vCPU, as the simulator's pools give them, ``simulator.cura.pools``;
    docs/economy.md)."""
    return float(vm_type.price) / vm_type.vcpus


def pool_rows(*, market: Market, level: float | None = None) -> list[dict[str, Any]]:
    """One row per pool: type, size, cores, VMs busy now, utilisation now, the price per slot-second
    and its ratio to the market's price level (``level_ratio``: 1 when the pools are priced at the level;
    ``level``: the caller's ``price_level`` when it has read it already)."""
    busy = busy_at(market=market, t=market.sim_time)
    level = price_level(market=market) if level is None else level
    rows = []
    for t in vm_types_of(market=market):
        used = busy.get(t.pk, 0)
        rows.append({"type": t, "pool": t.pool, "cores": t.vcpus * t.pool.size, "busy": used,
                     "utilisation": used / t.pool.size if t.pool.size else 0.0, "slot_rate": slot_rate(t),
                     "level_ratio": slot_rate(t) / level if level > 0 else None})
    return rows


POINTS_LIMIT = 500  # newest pool jobs a chart shows


def pool_price_points(market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
    """Paper 004's prices paid (``market.hooks.MarketPart.price_points``): what each charged Cura job paid per
    slot-second of its work (``CuraJob.paid_rate``: its charge over VMs x vCPUs x the seconds it ran), at the
    simulated time it was charged, newest ``POINTS_LIMIT`` since ``since``. Drawn in the first resource type's
    column: a pool vCPU is a map slot (``simulator.cura.pools``)."""
    if not types:
        return []
    jobs = (CuraJob.objects.filter(market=market, charged__gt=0, finished_s__gte=since).select_related("vm_type")
            .order_by("-id")[:POINTS_LIMIT])
    return [("pool job", 0, float(j.finished_s), rate) for j in jobs
            if j.finished_s is not None and (rate := j.paid_rate) is not None]


def pool_series(*, market: Market, types: list[VMInstanceType]) -> dict[str, list[dict[str, Any]]]:
    """Per VM type name, a step series over simulated time of the pool size and the
    VMs busy: rows ``{"t": s, "size": VMs, "busy": VMs}`` at every reservation start or
    end and every executed reconfiguration (sizes before the first come from it)."""
    recs = list(PoolReconfiguration.objects.filter(market=market, executed=True).order_by("time_s"))
    jobs = _held(market)
    now = float(market.sim_time)
    out: dict[str, list[dict[str, Any]]] = {}
    for t in types:
        size0 = int(recs[0].before.get(t.name, t.pool.size)) if recs else t.pool.size
        changes = [(r.time_s, int(r.after.get(t.name, size0))) for r in recs]
        events: list[tuple[float, int]] = []
        for vm_type_id, vms, start, end in jobs:
            if vm_type_id == t.pk:
                events += [(start, vms), (end, -vms)]
        times = sorted({0.0, now, *(c for c, _ in changes), *(e for e, _ in events)})
        rows, size, busy, ci, ev = [], size0, 0, 0, sorted(events)
        k = 0
        for time in times:
            while ci < len(changes) and changes[ci][0] <= time:
                size = changes[ci][1]
                ci += 1
            while k < len(ev) and ev[k][0] <= time:
                busy += ev[k][1]
                k += 1
            rows.append({"t": time, "size": size, "busy": busy})
        out[t.name] = rows
    return out


def reconfigurations(*, market: Market) -> QuerySet[PoolReconfiguration]:
    return PoolReconfiguration.objects.filter(market=market)


def cura_jobs_of(*, tenant: Tenant) -> QuerySet[CuraJob]:
    return CuraJob.objects.filter(tenant=tenant).select_related("vm_type")


def cura_part_job(job: CuraJob) -> PartJob:
    """A Cura job as My jobs and the ledger show it (``market.hooks.PartJob``): a link to its row on the Cura page."""
    what = f"{job.vms} \N{MULTIPLICATION SIGN} {job.vm_type.name}" if job.vm_type is not None else "no VMs yet"
    end = job.finished_s if job.finished_s is not None else job.end_s
    until = f", ends at {end:.0f} s" if end is not None else ""
    money = f"charged {format_money(job.charged)}" if job.charged > 0 else f"holds {format_money(job.held)}"
    return PartJob(label=f"Cura job #{job.pk}", url=f"{reverse('cura-jobs')}#cura-{job.pk}", status=job.get_status_display(),
                   summary=f"{job.job_class or f'type {job.job_type}'}: {what}, deadline {job.deadline_s:.0f} s{until}; {money}")


def cura_ledger_jobs(*, entry_ids: list[int]) -> dict[int, PartJob]:
    """Ledger entry id -> the Cura job it moved money for."""
    links = CuraLedgerLink.objects.filter(entry_id__in=entry_ids).select_related("cura_job__vm_type")
    return {link.entry_id: cura_part_job(link.cura_job) for link in links}
