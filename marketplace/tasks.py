"""Celery tasks: take ids, re-read the world, call one service (idempotent)."""

from __future__ import annotations

from celery import shared_task

from marketplace.models import Market
from marketplace.services.clearing import market_clear
from marketplace.services.cluster import cluster_tick as cluster_tick_service


@shared_task(name="marketplace.tasks.clear_market", ignore_result=True)
def clear_market(market_id: int) -> str:
    """Recompute the market now; a duplicate or reordered trigger is harmless."""
    return market_clear(market_id=market_id).status


@shared_task(name="marketplace.tasks.cluster_tick", ignore_result=True)
def cluster_tick(market_id: int | None = None) -> int:
    """Advance each market's live clock by clock_speed x wall time since its last tick (run by beat)."""
    ids = [market_id] if market_id else list(Market.objects.values_list("pk", flat=True))
    for pk in ids:
        cluster_tick_service(market_id=pk)
    return len(ids)
