"""Cura's part of the market's core (``market.hooks.MarketPart``): the VM pools' jobs run on the
market's clock, inside each tick (paper 004, Sec. III)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketplace.market.hooks import MarketPart
from marketplace.pools.services.jobs import cura_advance

if TYPE_CHECKING:
    from marketplace.market.models.market import Market


class PoolsPart(MarketPart):
    """Cura VM pools (paper 004)."""

    name = "pools"
    idle_until_used = True  # a market with no pool job: no query a tick

    def tick_work(self, market: Market) -> None:
        cura_advance(market=market)
