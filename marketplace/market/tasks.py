"""Celery tasks of the market's core: clearing, the clock's tick and the sweeper.

Thin and idempotent: a task takes ids, re-reads the world and calls one service; services
enqueue these by their registered name and never import this module.
Task names stay ``marketplace.tasks.<name>`` (the names queued messages, beat's schedule and the
services' ``publish_task`` calls use), whatever module defines them.
"""

from __future__ import annotations

from celery import shared_task

from marketplace.infra.resilience import publish_task
from marketplace.market import hooks
from marketplace.market.models.market import Market
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_tick
from marketplace.market.services.market import clearing_finished, clearing_pace, clearing_started
from marketplace.market.services.sweeper import market_sweep


@shared_task(name="marketplace.tasks.clear_market_task", ignore_result=True)
def clear_market_task(market_id: int) -> str:
    """Recompute the market now; a duplicate or reordered trigger is harmless.

    A clearing that gave up because the state kept moving ("stale") enqueues a
    fresh one, which will see the newest state.
    """
    clearing_pace(market_id=market_id)  # at most one clearing per MARKET_CLEARING_MIN_INTERVAL_S: the wait's changes join it
    clearing_started(market_id=market_id)  # before the state is read: a change from now on publishes again
    try:
        status = market_clear(market_id=market_id).status
    finally:
        clearing_finished(market_id=market_id)
    if status == "stale":
        publish_task("marketplace.tasks.clear_market_task", market_id)  # the sweeper covers a broker outage
    return status


@shared_task(name="marketplace.tasks.cluster_tick_task", ignore_result=True)
def cluster_tick_task(market_id: int | None = None) -> int:
    """Advance each market's live clock by clock_speed x wall time since its last tick (run by beat);
    after each market's tick committed, the parts' after-tick work (``hooks.after_tick``)."""
    ids = [market_id] if market_id else list(Market.objects.values_list("pk", flat=True))
    for pk in ids:
        cluster_tick(market_id=pk)
        hooks.after_tick(pk)
    return len(ids)


@shared_task(name="marketplace.tasks.sweep_markets_task", ignore_result=True)
def sweep_markets_task() -> int:
    """Clear markets left behind (lost trigger, dead worker's lease); run by beat every
    ``MARKET_SWEEP_S`` seconds. Returns how many markets it cleared."""
    return market_sweep().cleared
