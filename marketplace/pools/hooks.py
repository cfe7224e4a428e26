"""Cura's part of the market's core (``market.hooks.MarketPart``): the VM pools' jobs run on the
market's clock, inside each tick (paper 004, Sec. III), and what they paid joins the market's one-unit prices."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from marketplace.market.hooks import MarketPart, PartJob, PricePoint
from marketplace.pools.selectors import cura_jobs_of, cura_ledger_jobs, cura_part_job, pool_price_points
from marketplace.pools.services.jobs import cura_advance

if TYPE_CHECKING:
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from marketplace.market.models.tenants import Tenant


class PoolsPart(MarketPart):
    """Cura VM pools (paper 004)."""

    name = "pools"
    idle_until_used = True  # a market with no pool job: no query a tick

    def tick_work(self, market: Market) -> None:
        cura_advance(market=market)

    def price_points(self, market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
        return pool_price_points(market, types, since)
    def tenant_jobs(self, tenant: Tenant, limit: int) -> list[PartJob]:
        return [cura_part_job(job) for job in cura_jobs_of(tenant=tenant)[:limit]]

    def ledger_jobs(self, entry_ids: list[int]) -> dict[int, PartJob]:
        return cura_ledger_jobs(entry_ids=entry_ids)
