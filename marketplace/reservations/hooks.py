"""ERA's hooks into the market's core (``market.hooks``): reserved jobs never join the auction,
a tick books every reservation the engine does not hold yet (paper 001, Sec. 2.3), a reservation's
price is fixed at acceptance, and ERA's price curve is the market's (deadline quotes price from it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from marketplace.market import hooks
from marketplace.reservations.adapters import (
    engine_bookings_missing,
    quote_price_points,
    reservation_promises,
    reserved_job_ids,
    unit_price_curve,
)

if TYPE_CHECKING:
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from simulator.market.engine import MarketEngine


def book_missing(market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Book in ``engine`` the reservations of the market's active jobs it does not hold yet."""
    for booking, price in engine_bookings_missing(market, engine, types):
        engine.book(booking, price)  # paid at acceptance through the ledger; units held in its window


def register() -> None:
    hooks.register(part="reservations", clearing_exclusion=reserved_job_ids, engine_sync=book_missing,
                   promise_source=reservation_promises, fixed_price=reserved_job_ids, price_curve=unit_price_curve,
                   price_points=quote_price_points)
