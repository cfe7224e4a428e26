"""Market clearing: the market's mechanism on the engine's snapshot, stored as a Plan.

One clearing at a time per market: a lease on the market row (a conditional
UPDATE, so it works on SQLite and PostgreSQL without holding a transaction open
during the solve). The state is read under the market row lock together with
its ``state_version``: the engine's snapshot (``simulator.market.engine.MarketEngine``,
the same one the offline runner clears), plus the bids placed since the last
clock tick. The solve runs outside any transaction; the Plan is stored (one
row, whatever the number of jobs) only if the version is unchanged, else it is
recomputed (a result computed from a stale state is dropped).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import F, Subquery
from django.utils import timezone

from marketplace.infra import instances, rows
from marketplace.market import adapters, hooks
from marketplace.market.models.allocation import AllocationSnapshot, PriceSample
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.services.market import active_job_ids, engine_context, engine_load, engine_marks
from scheduler.plan import Plan
from scheduler.registry import MECHANISMS
from scheduler.types import MarketSnapshot

log = logging.getLogger(__name__)
MAX_ATTEMPTS = 3  # solves per clearing; the last one's result is stored even if the state moved
PLAN_RETENTION = 20  # newest clearings per market that keep their whole Plan (at least)
PRUNE_EVERY = 8  # prune after every clearing whose id is a multiple of this


@dataclass(frozen=True)
class ClearingResult:
    """What a clearing stored (or why it stored nothing)."""

    status: str  # "cleared", "current" (this version is cleared already), "busy" (another clearing
    # holds the lease), "stale" (gave up after MAX_ATTEMPTS)
    snapshot_id: int | None = None
    state_version: int | None = None
    n_jobs: int = 0
    rounds: int = 0
    solve_ms: float = 0.0


_TABLE = Market._meta.db_table
_LEASE_COLUMN = Market._meta.get_field("clearing_lease_until").column


def _take_lease(market_id: int) -> tuple[datetime, Market] | None:
    """Take the market's clearing lease unless another clearing holds an unexpired one,
    or there is nothing to clear (``cleared_version`` already equals ``state_version``).

    One conditional UPDATE (raw SQL: it runs on every clearing and the ORM's
    compilation cost more than the statement) that also returns the market row
    (without ``engine_state``) as the lease left it: what :func:`_read_state` reads first.

    Returns:
        (the lease's expiry, which also identifies it (:func:`_release_lease`
        frees only this lease, never one another clearing took over), the market row), or None.
    """
    now = timezone.now()
    until = now + timedelta(seconds=settings.MARKET_LEASE_S)
    field = Market._meta.get_field("clearing_lease_until")
    market = instances.update_returning(
        Market,
        f"UPDATE {_TABLE} SET {_LEASE_COLUMN} = %s WHERE id = %s AND cleared_version < state_version"
        f" AND ({_LEASE_COLUMN} IS NULL OR {_LEASE_COLUMN} < %s)",
        [field.get_db_prep_value(until, connection), market_id, field.get_db_prep_value(now, connection)],
        exclude=("engine_state",),
    )
    return None if market is None else (until, market)


def _acquire_lease(market_id: int) -> datetime | None:
    """:func:`_take_lease` without the row: the lease's expiry, or None."""
    leased = _take_lease(market_id)
    return None if leased is None else leased[0]


def _renew_lease(market_id: int, lease: datetime) -> datetime:
    """Push this clearing's lease ``MARKET_LEASE_S`` ahead (before each new attempt), so a
    long clearing keeps it while a dead one loses it soon (``services.sweeper`` takes it over)."""
    until = timezone.now() + timedelta(seconds=settings.MARKET_LEASE_S)
    renewed = Market.objects.filter(pk=market_id, clearing_lease_until=lease).update(clearing_lease_until=until)
    return until if renewed else lease


def _release_lease(market_id: int, lease: datetime) -> None:
    Market.objects.filter(pk=market_id, clearing_lease_until=lease).update(clearing_lease_until=None)


def _record_cleared(market_id: int, version: int, *, unchanged: bool) -> bool:
    """Record ``version`` as cleared (``cleared_version``, one more clearing, the lease freed)
    unless a clearing of it or a later one was recorded, and, with ``unchanged``, only if
    ``state_version`` is still ``version``; True if recorded. One conditional UPDATE built
    once (it runs on every clearing, while holding the market row)."""
    sql = f"UPDATE {_TABLE} SET cleared_version = %s, clearings = clearings + 1, {_LEASE_COLUMN} = NULL WHERE id = %s" \
          " AND cleared_version < %s" + (" AND state_version = %s" if unchanged else "")
    with connection.cursor() as cursor:
        cursor.execute(sql, [version, market_id, version] + ([version] if unchanged else []))
        return cursor.rowcount == 1


def _is_current(market_id: int) -> bool:
    """True when the market's ``state_version`` is cleared already."""
    return Market.objects.filter(pk=market_id, cleared_version__gte=F("state_version")).exists()


def _fault_injection_delay() -> bool:
    """Sleep ``MARKET_CLEARING_DELAY_S`` (0 outside the crash tests) while holding the lease:
    the integration tests use it to kill a real worker in the middle of a clearing. True if it slept."""
    delay = float(getattr(settings, "MARKET_CLEARING_DELAY_S", 0.0))
    if delay > 0:
        time.sleep(delay)
    return delay > 0


def _read_state(market_id: int, market: Market | None = None) -> tuple[Market, MarketSnapshot | None, list[ResourceType], dict]:
    """The market row (``market``: as just read, else read here), the snapshot to clear (None:
    this version is cleared already), the resource types and the parameters the snapshot carries.

    The parameters and capacities are the market row's, not the engine's: the engine
    learns a change only at the next tick's sync, and a clearing on its stale settings
    would mark the change's version cleared (docs/economy.md, "Settings").

    Read without a lock or a transaction: whatever commits meanwhile either is
    already in what was read or moved ``state_version`` since the row was read,
    and then the version check in :func:`market_clear` drops this result.
    """
    if market is None:
        market = instances.get_row(Market, market_id, exclude=("engine_state",))
    if market.cleared_version >= market.state_version:
        return market, None, [], {}
    context = engine_context(market)
    engine = engine_load(market=market, context=context)
    marks = engine_marks(market=market)
    extra, gone = [], []
    if market.state_version != marks.state_version:  # bids or cancellations since the last tick
        active_ids, known = active_job_ids(market_id=market_id), engine.known_jobs()
        new = sorted(active_ids.difference(known))  # the bids the engine has not seen
        new = sorted(set(new) - hooks.excluded_from_clearing(market, new))  # a part serves these itself (ERA: reserved)
        extra = adapters.job_specs(new, context.types, context.tree_map, market.sim_time)
        gone = [job for job in known if job not in active_ids]
    newer = None
    if market.clearings != marks.clearings:  # a clearing since the last tick: warm-start from it
        latest = adapters.latest_plan(market_id)
        newer = latest[1] if latest is not None and latest[0] != engine.plan_id else None
    config, capacity = adapters.market_config(market), [t.capacity for t in context.types]
    snap = engine.snapshot(extra, exclude=gone, warm=newer, config=config, capacity=capacity)
    return market, snap, context.types, adapters.clearing_params(config, capacity)


def plan_store(*, market: Market, plan: Plan, types: list[ResourceType], solve_ms: float, t0: float, params: dict) -> int:
    """Store ``plan`` as the clearing of ``market.state_version`` at ``market.sim_time``:
    one ``AllocationSnapshot`` row and its unit prices (one statement on PostgreSQL) (``t0``: ``perf_counter`` when the
    clearing began; ``params``: the parameters it used, ``adapters.clearing_params``). The
    caller holds the market row and records ``cleared_version`` and ``clearings``. Returns the
    snapshot id (the Plan's id for ``MarketEngine.apply_plan``)."""
    d = plan.diagnostics
    total_ms = (time.perf_counter() - t0) * 1000.0  # load + solve + encode
    snapshot_id = rows.insert_with_children(AllocationSnapshot, _SNAPSHOT_FIELDS, (
        market.pk, market.state_version, market.sim_time, d.mechanism, plan.to_bytes(), d.max_kkt_residual, d.rounds,
        d.converged, plan.n, solve_ms, total_ms, timezone.now(), params,
    ), PriceSample, ("snapshot", "resource_type", "sim_time", "price"),
        [(t.pk, market.sim_time, float(d.prices[j])) for j, t in enumerate(types)])  # fmt: skip
    if not d.converged:  # every clearing (task or tick) is stored here: the market's log says so, never silently
        log.warning("auction did not converge in %d rounds (market %s, clearing %s, %d jobs, max KKT residual %.3g)",
                    d.rounds, market.pk, snapshot_id, plan.n, d.max_kkt_residual)
    if snapshot_id % PRUNE_EVERY == 0:
        _prune(market.pk)
    market_id = market.pk
    transaction.on_commit(lambda: adapters.remember_plan(market_id, snapshot_id, plan))  # the next latest_plan reads no bytes
    return snapshot_id


_SNAPSHOT_FIELDS = ("market", "state_version", "sim_time", "mechanism", "plan", "max_kkt_residual", "rounds",
                    "converged", "n_jobs", "solve_ms", "total_ms", "created_at", "params")


def _prune(market_id: int) -> None:
    """Drop the Plans of the clearings that left the retention window since the last
    pruning: a bounded batch (at most ``2 * PRUNE_EVERY`` rows, found through the
    (market, -id) index) in one statement, so the store time does not grow with the
    history."""
    newest_first = AllocationSnapshot.objects.filter(market_id=market_id).order_by("-id").values("id")
    gone = newest_first[PLAN_RETENTION : PLAN_RETENTION + 2 * PRUNE_EVERY]
    AllocationSnapshot.objects.filter(pk__in=Subquery(gone), plan__isnull=False).update(plan=None)


def market_clear(*, market_id: int) -> ClearingResult:
    """Clear the market now with its configured mechanism (paper 000, Alg. 1 over
    each leaf queue's jobs, for ``abacus``) and store the Plan.

    Returns:
        ClearingResult; status "current" when ``state_version`` is cleared already
        (a duplicate or redelivered trigger: one UPDATE and one SELECT, no solve),
        "busy" when another clearing holds the lease (it will see this change
        through the version check; if it died, ``services.sweeper`` takes the
        lease over at expiry), "stale" when the state kept changing for
        MAX_ATTEMPTS solves: the last result was stored (it is one solve old)
        and the caller enqueues a new clearing.
    """
    leased = _take_lease(market_id)
    if leased is None:
        return ClearingResult(status="current" if _is_current(market_id) else "busy")
    lease, row = leased  # row: the market as the lease left it (the first attempt's read)
    released = False
    try:
        for attempt in range(MAX_ATTEMPTS):
            if attempt:
                lease = _renew_lease(market_id, lease)
            if _fault_injection_delay():
                row = None  # read the row after the delay, as an attempt does
            t0 = time.perf_counter()
            market, snap, types, params = _read_state(market_id, row)
            row = None  # a later attempt reads the row again
            if snap is None:  # a tick (or another clearing) has cleared this version: nothing to do
                return ClearingResult("current", state_version=market.state_version)
            ts = time.perf_counter()
            plan = MECHANISMS.build(market.mechanism).clear(snap)
            solve_ms = (time.perf_counter() - ts) * 1000.0
            d = plan.diagnostics
            with transaction.atomic():
                # The version check and the bookkeeping in one conditional UPDATE (it also
                # takes the row lock and frees the lease). No row: the state moved during the
                # solve (this result is dropped and recomputed on the new state), or another
                # clearing that took over an expired lease stored this version first (then
                # nothing is stored twice).
                # On the last attempt a result on a state that has moved since is stored all the
                # same (unless a newer one was): under a steady stream of bids every solve is
                # overtaken, and dropping them all left the market uncleared for minutes. It is
                # at most one solve old, and the market stays behind (cleared_version <
                # state_version), so the next trigger or the sweeper clears again.
                last = attempt == MAX_ATTEMPTS - 1
                if not _record_cleared(market_id, market.state_version, unchanged=not last):
                    if _is_current(market_id):
                        return ClearingResult(status="current")
                    continue
                snapshot_id = plan_store(market=market, plan=plan, types=types, solve_ms=solve_ms, t0=t0, params=params)
            released = True  # the update above freed the lease
            moved = last and Market.objects.filter(pk=market_id, state_version__gt=market.state_version).exists()
            return ClearingResult("stale" if moved else "cleared", snapshot_id, market.state_version, snap.n, d.rounds, solve_ms)
    finally:
        if not released:
            _release_lease(market_id, lease)
    return ClearingResult(status="stale")
