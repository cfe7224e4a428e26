"""Market clearing: run the allocation policy on the current state and store the result.

One clearing at a time per market: a lease on the market row (a conditional
UPDATE, so it works on SQLite and PostgreSQL without holding a transaction open
during the solve). The state is read under the market row lock together with
its ``state_version``; the numpy solve runs outside any transaction; the
result is stored only if the version is unchanged, else it is recomputed (a
result computed from a stale state is dropped).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from marketplace import adapters
from marketplace.models import AllocationSnapshot, JobShare, Market, PriceSample
from scheduler.registry import get_policy
from scheduler.types import MarketSnapshot, Outcome

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 5


@dataclass(frozen=True)
class ClearingResult:
    """What a clearing stored (or why it stored nothing)."""

    status: str  # "cleared", "busy" (another clearing holds the lease), "stale" (gave up after MAX_ATTEMPTS)
    snapshot_id: int | None = None
    state_version: int | None = None
    n_jobs: int = 0
    rounds: int = 0
    solve_ms: float = 0.0


def _acquire_lease(market_id: int) -> bool:
    now = timezone.now()
    until = now + timedelta(seconds=settings.MARKET_LEASE_S)
    free = Q(clearing_lease_until__isnull=True) | Q(clearing_lease_until__lt=now)
    return Market.objects.filter(pk=market_id).filter(free).update(clearing_lease_until=until) == 1


def _release_lease(market_id: int) -> None:
    Market.objects.filter(pk=market_id).update(clearing_lease_until=None)


def _read_state(market_id: int) -> tuple[Market, MarketSnapshot, list]:
    with transaction.atomic():
        market = Market.objects.select_for_update().get(pk=market_id)
        tree_map = adapters.queue_tree(market)
        types = adapters.resource_types(market)
        return market, adapters.market_snapshot(market, tree_map, types), types


def _store(market: Market, snap: MarketSnapshot, out: Outcome, types: list, solve_ms: float, t0: float) -> int:
    record = AllocationSnapshot.objects.create(
        market=market, state_version=market.state_version, sim_time=market.sim_time, policy=out.policy,
        rounds=out.rounds, converged=out.converged, n_jobs=snap.n, solve_ms=solve_ms, total_ms=0.0,
    )
    shares, budgets, type_ids = out.shares.tolist(), out.sub_budgets.tolist(), [t.pk for t in types]
    JobShare.objects.bulk_create(
        JobShare(snapshot_id=record.pk, job_id=job_id, resource_type_id=rt_id, share=shares[i][j], sub_budget=budgets[i][j])
        for i, job_id in enumerate(snap.job_ids.tolist())
        for j, rt_id in enumerate(type_ids)
    )
    PriceSample.objects.bulk_create(
        PriceSample(snapshot=record, resource_type=t, sim_time=market.sim_time, price=float(out.prices[j])) for j, t in enumerate(types)
    )
    record.total_ms = (time.perf_counter() - t0) * 1000.0
    record.save(update_fields=["total_ms"])
    return record.pk


def market_clear(*, market_id: int, policy: str = "abacus") -> ClearingResult:
    """Clear the market now (paper 000, Alg. 1 over each leaf queue's jobs).

    Returns:
        ClearingResult; status "busy" when another clearing holds the lease (it
        will see this change through the version check), "stale" when the state
        kept changing for MAX_ATTEMPTS solves (a new clearing is enqueued).
    """
    if not _acquire_lease(market_id):
        return ClearingResult(status="busy")
    try:
        for _ in range(MAX_ATTEMPTS):
            t0 = time.perf_counter()
            market, snap, types = _read_state(market_id)
            ts = time.perf_counter()
            out = get_policy(policy).allocate(snap)
            solve_ms = (time.perf_counter() - ts) * 1000.0
            if not out.converged:
                log.warning("auction did not converge in %d rounds (market %s, %d jobs)", out.rounds, market_id, snap.n)
            with transaction.atomic():
                current = Market.objects.select_for_update().get(pk=market_id)
                if current.state_version != market.state_version:
                    continue  # stale: the state moved during the solve; recompute on the new state
                snapshot_id = _store(current, snap, out, types, solve_ms, t0)
                current.cleared_version = current.state_version
                current.clearings += 1
                current.clearing_lease_until = None
                current.save(update_fields=["cleared_version", "clearings", "clearing_lease_until"])
            return ClearingResult("cleared", snapshot_id, market.state_version, snap.n, out.rounds, solve_ms)
    finally:
        _release_lease(market_id)
    from marketplace.tasks import clear_market

    transaction.on_commit(lambda: clear_market.delay(market_id))
    return ClearingResult(status="stale")

