"""The live cluster clock: advance simulated time and apply what the cluster did.

The cluster itself is ``simulator.cluster.Cluster`` (the same code offline runs
use); its state is kept, serialised, on the market row. One tick runs in one
transaction under the market row lock: load the cluster, learn new and
cancelled jobs, dispatch by the latest clearing's shares, advance, store
progress, completions (departures: the budget is charged) and fairness samples.
A departure bumps the state version and enqueues ``clear_market`` after commit.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from marketplace import adapters
from marketplace.models import FairnessSample, Job, JobWork, Market, MarketSample, ResourceType
from marketplace.services.ledger import job_held_amount, ledger_charge, ledger_release
from simulator.cluster import AdvanceReport, Cluster

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TickResult:
    """Summary of one clock tick."""

    sim_time: float
    started_tasks: int
    finished_tasks: int
    finished_jobs: int
    active_jobs: int


def _load_cluster(market: Market, tree_map: adapters.TreeMap, types: list[ResourceType]) -> Cluster:
    state = market.cluster_state or {}
    capacity = [t.capacity for t in types]
    if state.get("tree_signature") == tree_map.signature and state.get("types") == [t.pk for t in types]:
        cluster = Cluster.from_state(tree_map.tree, state["cluster"])
        cluster.set_capacity(capacity)
    else:
        if state:
            # The hierarchy or the resource types changed: the fair-share history
            # restarts, and tasks that were running go back to pending.
            log.warning("market %s: queue tree or resource types changed; restarting the cluster model", market.pk)
            _requeue_running(market)
        cluster = Cluster(
            capacity, tree_map.tree, policy=market.fairshare_policy, t_wait=market.t_wait,
            dispatch=market.dispatch_mode, staged=True, seed=market.pk,
            sample_interval=settings.MARKET_SAMPLE_INTERVAL_S, now=market.sim_time,
        )
    cluster.set_policy(policy=market.fairshare_policy, t_wait=market.t_wait)
    return cluster


def _requeue_running(market: Market) -> None:
    for w in JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE, running__gt=0):
        w.pending += w.running
        w.running = 0
        w.save(update_fields=["pending", "running"])


def _sync_jobs(cluster: Cluster, market: Market, tree_map: adapters.TreeMap, types: list[ResourceType]) -> None:
    """Tell the cluster about jobs that arrived or were cancelled since the last tick."""
    known = set(cluster.known_jobs())
    active = {j.pk: j for j in Job.objects.filter(market=market, status__in=Job.ACTIVE)}
    gone = known - active.keys()
    for job_id in gone:
        cluster.cancel(job_id)  # its running tasks are killed now
    JobWork.objects.filter(job_id__in=gone).update(running=0)
    new = [job for pk, job in active.items() if pk not in known]
    works: dict[int, list[JobWork]] = {}
    for w in JobWork.objects.filter(job__in=new):
        works.setdefault(w.job_id, []).append(w)
    for job in sorted(new, key=lambda j: j.pk):
        cluster.submit(adapters.job_spec(job, works.get(job.pk, []), types, tree_map, cluster.now))


def _apply_progress(report: AdvanceReport, types: list[ResourceType]) -> None:
    if not report.progress:
        return
    works = JobWork.objects.filter(job_id__in=report.progress.keys()).select_related("job")
    col = {t.pk: j for j, t in enumerate(types)}
    started: set[int] = set()
    changed = []
    for w in works:
        pending, running, done = report.progress[w.job_id]
        j = col[w.resource_type_id]
        w.pending, w.running, w.done = pending[j], running[j], done[j]
        changed.append(w)
        if (running[j] or done[j]) and w.job.status == Job.Status.QUEUED:
            started.add(w.job_id)
    JobWork.objects.bulk_update(changed, ["pending", "running", "done"])
    Job.objects.filter(pk__in=started, status=Job.Status.QUEUED).update(status=Job.Status.RUNNING, sim_start_time=report.now)


def _apply_departures(report: AdvanceReport) -> int:
    """Finished jobs: status, times, and the charge of their budget (paper 000, Sec. 3)."""
    count = 0
    for fin in report.finished:
        job = Job.objects.select_related("tenant__account").get(pk=fin.job_id)
        if job.status not in Job.ACTIVE:
            continue
        held = job_held_amount(job=job)
        charge = min(held, job.budget)
        if charge > 0:
            ledger_charge(account=job.tenant.account, job=job, amount=charge)
        if held - charge > 0:
            ledger_release(account=job.tenant.account, job=job, amount=held - charge)
        job.status = Job.Status.FINISHED
        job.charged = charge if charge > 0 else Decimal("0")
        job.sim_start_time = fin.start_time
        job.sim_finish_time = fin.finish_time
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "charged", "sim_start_time", "sim_finish_time", "finished_at"])
        count += 1
    return count


def _finite(x: float) -> float | None:
    """rho is infinite for a leaf that used resources it was never entitled to; stored as null (JSON has no inf)."""
    return float(x) if math.isfinite(x) else None


def _store_samples(market: Market, report: AdvanceReport, tree_map: adapters.TreeMap, types: list[ResourceType], active: int) -> None:
    fair, overall = [], []
    for s in report.samples:
        for j, t in enumerate(types):
            overall.append(MarketSample(
                market=market, sim_time=s.time, resource_type=t, benefit=float(s.benefit[j]), loss=float(s.loss[j]),
                utilisation=float(s.utilisation[j]), active_jobs=active,
            ))
            for leaf, queue_id in enumerate(tree_map.leaf_queue_ids):
                fair.append(FairnessSample(
                    market=market, sim_time=s.time, queue_id=queue_id, resource_type=t,
                    usage=float(s.usage[leaf, j]), share=float(s.share[leaf, j]), demand=float(s.demand[leaf, j]),
                    entitled=float(s.entitled[leaf, j]), rho=_finite(s.rho[leaf, j]), running=float(s.running[leaf, j]),
                ))
    FairnessSample.objects.bulk_create(fair, batch_size=500)
    MarketSample.objects.bulk_create(overall, batch_size=500)


def cluster_advance(
    *, market_id: int, until: float | None = None, seconds: float | None = None, stop_on_departure: bool = False
) -> TickResult:
    """Advance the live cluster to simulated time ``until`` (or by ``seconds``).

    With ``stop_on_departure`` the tick ends at the first job completion, so the
    next tick dispatches by a clearing that has seen the departure.

    Raises:
        ValueError: ``until`` lies before the market's current simulated time.
    """
    from marketplace.tasks import clear_market

    with transaction.atomic():
        market = Market.objects.select_for_update().get(pk=market_id)
        target = until if until is not None else market.sim_time + (seconds or 0.0)
        if target < market.sim_time:
            raise ValueError(f"cannot move the clock back from {market.sim_time} to {target}")
        tree_map = adapters.queue_tree(market)
        types = adapters.resource_types(market)
        cluster = _load_cluster(market, tree_map, types)
        _sync_jobs(cluster, market, tree_map, types)
        cluster.set_shares(adapters.latest_shares(market, types))
        report = cluster.advance(target, stop_on_departure=stop_on_departure)
        _apply_progress(report, types)
        departures = _apply_departures(report)
        active = len(cluster.active_jobs())
        _store_samples(market, report, tree_map, types, active)
        market.sim_time = report.now
        market.cluster_state = {"tree_signature": tree_map.signature, "types": [t.pk for t in types], "cluster": cluster.to_state()}
        fields = ["sim_time", "cluster_state"]
        if departures:
            market.state_version += 1
            fields.append("state_version")
            clear_market.delay_on_commit(market.pk)
        market.save(update_fields=fields)
    return TickResult(report.now, report.started_tasks, report.finished_tasks, departures, active)



def cluster_tick(*, market_id: int, max_wall_s: float = 5.0) -> TickResult:
    """The live clock: advance by clock_speed x wall seconds since the last tick.

    A pause (no tick for a while) is not replayed in one jump: at most
    ``max_wall_s`` wall seconds count per tick.
    """
    now = timezone.now()
    with transaction.atomic():
        market = Market.objects.select_for_update().get(pk=market_id)
        last = market.clock_wall_at or now
        elapsed = min(max((now - last).total_seconds(), 0.0), max_wall_s)
        Market.objects.filter(pk=market_id).update(clock_wall_at=now)
        return cluster_advance(market_id=market_id, seconds=market.clock_speed * elapsed)
