"""Paper 003's part of the market's core (``market.hooks.MarketPart``): a deadline booking's slots are
a promise every other quote leaves free (ERA's prices count them as promised units too), and a booked
job is served at its fixed price, never by the auction (a cancellation keeps that price paid)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from marketplace.deadlines.selectors import booked_job_ids, booking_price_points, booking_promises
from marketplace.market.hooks import MarketPart, PricePoint, Promise

if TYPE_CHECKING:
    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType


class DeadlinesPart(MarketPart):
    """Deadline quotes and bookings (paper 003)."""

    name = "deadlines"

    def fixed_price_jobs(self, job_ids: list[int]) -> set[int]:
        return booked_job_ids(job_ids)

    def promises(self, market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
        return booking_promises(market, types, start, end)

    def price_points(self, market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
        return booking_price_points(market, types, since)
