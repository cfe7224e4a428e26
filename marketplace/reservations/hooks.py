"""ERA's part of the market's core (``market.hooks.MarketPart``): reserved jobs never join the auction,
a tick books every reservation the engine does not hold yet (paper 001, Sec. 2.3), a reservation's
price is fixed at acceptance, and ERA's price curve is the market's (deadline quotes price from it)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from marketplace.market.hooks import Curve, MarketPart, PricePoint, Promise
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


class ReservationsPart(MarketPart):
    """ERA (paper 001): reservations, their bookings in the engine, and the market's price curve."""

    name = "reservations"
    idle_until_used = True  # a market with no reservation: no query a clearing or a tick

    def clearing_exclusions(self, job_ids: list[int]) -> set[int]:
        return reserved_job_ids(job_ids)

    def fixed_price_jobs(self, job_ids: list[int]) -> set[int]:
        return reserved_job_ids(job_ids)

    def engine_sync(self, market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
        book_missing(market, engine, types)

    def promises(self, market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
        return reservation_promises(market, types, start, end)

    def price_curve(self, market: Market, types: Sequence[ResourceType], start: float, end: float) -> Curve | None:
        return unit_price_curve(market, types, start, end)

    def price_points(self, market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
        return quote_price_points(market, types, since)
