"""The Slurm backend's part of the market's core (``market.hooks.MarketPart``), in ``MARKET_PARTS`` when
``CLUSTER_BACKEND=slurm``: before a tick it polls Slurm and keeps its advance reservations in step with
the market's promises; in the tick it tells the engine the ends Slurm reported and records the batches
the engine started; after the tick commits those batches are submitted (``services``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.checks import CheckMessage, Error, Warning
from django.core.checks import register as register_check

from marketplace.market.hooks import MarketPart
from marketplace.slurm import selectors
from marketplace.slurm.client import SlurmError, SlurmUnavailable
from marketplace.slurm.services import backend, dispatch, poll, reservations, tick

if TYPE_CHECKING:
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)


class SlurmPart(MarketPart):
    """Slurm as the executor of the market's decisions."""

    name = "slurm"
    arguments = backend.Arguments

    def before_tick(self, market_id: int) -> None:
        status = poll.slurm_poll(market_id=market_id)
        if not status.reachable:
            return  # dispatch pauses; the dashboard says since when
        try:
            reservations.reservations_sync(market_id=market_id)
            dispatch.slurm_dispatch(market_id=market_id, sync_reservations=False)  # what a crashed dispatcher left (idempotent by key)
        except SlurmUnavailable as exc:
            log.warning("slurm: market %s: %s", market_id, exc)

    def executions(self, market: Market, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        return selectors.job_executions(market=market, job_ids=job_ids)

    def engine_report(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        tick.engine_feed(market=market, engine=engine, types=types)

    def engine_stepped(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        tick.launches_record(market=market, engine=engine, types=types)


@register_check("slurm")
def partitions_match(app_configs: Any = None, **kwargs: Any) -> list[CheckMessage]:
    """At start (``manage.py check``, ``runserver``, ``run_clock``, ``replay_trace``): every resource type
    of every market has a Slurm partition of its name. A missing one is an error with a clear message;
    an unreachable controller is only a warning (bids are accepted while Slurm is away)."""
    from django.db import DatabaseError

    from marketplace.market.adapters import resource_types
    from marketplace.market.models.market import Market

    try:
        markets = list(Market.objects.all())
        wanted = {m.pk: [t.name for t in resource_types(m)] for m in markets}
    except DatabaseError:
        return []  # no tables yet (before migrate): nothing to match
    try:
        have = {p.name for p in backend.slurm_client().partitions()}
    except (SlurmUnavailable, SlurmError) as exc:
        return [Warning(f"Slurm is unreachable: {exc}", hint="make slurm-up (as root)", id="slurm.W001")]
    return [Error(f"market {pk}: resource type {name!r} has no Slurm partition of that name (Slurm has: {', '.join(sorted(have))})",
                  hint="make slurm-up writes one partition per resource type (manage.py slurm_config)", id="slurm.E001")
            for pk, names in wanted.items() for name in names if name not in have]
