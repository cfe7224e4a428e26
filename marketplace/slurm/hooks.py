"""The Slurm backend's part of the market's core (``market.hooks.MarketPart``), in ``MARKET_PARTS`` when
``CLUSTER_BACKEND=slurm``: before a tick it polls Slurm and keeps its advance reservations in step with
the market's promises; in the tick it tells the engine the ends Slurm reported and records the batches
the engine started; after the tick commits those batches are submitted (``services``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from marketplace.market.hooks import MarketPart
from marketplace.slurm import selectors, services
from marketplace.slurm.client import SlurmUnavailable

if TYPE_CHECKING:
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)


class SlurmPart(MarketPart):
    """Slurm as the executor of the market's decisions."""

    name = "slurm"
    arguments = services.Arguments

    def before_tick(self, market_id: int) -> None:
        status = services.slurm_poll(market_id=market_id)
        if not status.reachable:
            return  # dispatch pauses; the dashboard says since when
        try:
            services.reservations_sync(market_id=market_id)
            services.slurm_dispatch(market_id=market_id)  # what a crashed dispatcher left (idempotent by key)
        except SlurmUnavailable as exc:
            log.warning("slurm: market %s: %s", market_id, exc)

    def executions(self, market: Market, job_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
        return selectors.job_executions(market=market, job_ids=job_ids)

    def engine_report(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        services.engine_feed(market=market, engine=engine, types=types)

    def engine_stepped(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        services.launches_record(market=market, engine=engine, types=types)
