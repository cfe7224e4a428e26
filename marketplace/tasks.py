"""Celery tasks: take ids, re-read the world, call one service (idempotent).

Tasks import services, never the other way round: services enqueue
``clear_market_task`` by its registered name (``services.market``).
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from marketplace.models.market import Market
from marketplace.resilience import publish_task
from marketplace.services.clearing import market_clear
from marketplace.services.cluster import cluster_tick
from marketplace.services.experiments import experiment_execute, experiment_reap
from marketplace.services.market import clearing_finished, clearing_pace, clearing_started
from marketplace.services.simulations import simulation_execute
from marketplace.services.sweeper import market_sweep


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
    """Advance each market's live clock by clock_speed x wall time since its last tick (run by beat)."""
    ids = [market_id] if market_id else list(Market.objects.values_list("pk", flat=True))
    for pk in ids:
        cluster_tick(market_id=pk)
    return len(ids)


@shared_task(name="marketplace.tasks.experiment_run_task", ignore_result=True, soft_time_limit=3600, time_limit=3660)
def experiment_run_task(run_id: int) -> str:
    """Run a queued experiment (a redelivered task finds it claimed and returns)."""
    return experiment_execute(run_id=run_id)


@shared_task(name="marketplace.tasks.experiment_reap_task", ignore_result=True)
def experiment_reap_task() -> int:
    """Mark runs whose worker died (stale heartbeat) failed (run by beat)."""
    return experiment_reap()


@shared_task(name="marketplace.tasks.sweep_markets_task", ignore_result=True)
def sweep_markets_task() -> int:
    """Clear markets left behind (lost trigger, dead worker's lease); run by beat every
    ``MARKET_SWEEP_S`` seconds. Returns how many markets it cleared."""
    return market_sweep().cleared


@shared_task(
    name="marketplace.tasks.simulation_run_task", ignore_result=True, acks_late=False, reject_on_worker_lost=False,
    soft_time_limit=settings.SIMULATION_TIME_LIMIT_S, time_limit=settings.SIMULATION_TIME_LIMIT_S + 60,
)
def simulation_run_task(run_id: int) -> str:
    """Run one configuration of a simulation study (queue ``simulation``; acked on receipt, so
    never redelivered: a killed worker's run is reaped as failed, see ``services.simulations``)."""
    return simulation_execute(run_id=run_id)
