"""The dashboard's part of the market's core (``market.hooks.MarketPart``): after each tick, while
someone watches the dashboard, a worker computes the market's figures, so a poll only reads them
(``dashboard.figures``)."""

from __future__ import annotations

from marketplace.dashboard.figures import ask, watched
from marketplace.market.hooks import MarketPart


class DashboardPart(MarketPart):
    """The dashboard's figures, kept computed for its viewers."""

    name = "dashboard"

    def after_tick(self, market_id: int) -> None:
        if watched(market_id):
            ask(market_id)
