"""Paper 003's hook into the market's core (``market.hooks``): a deadline booking's slots are a
promise every other quote leaves free (ERA's prices count them as promised units too), and a booked
job is served at its fixed price, never by the auction (a cancellation keeps that price paid)."""

from __future__ import annotations

from marketplace.deadlines.selectors import booked_job_ids, booking_price_points, booking_promises
from marketplace.market import hooks


def register() -> None:
    hooks.register(part="deadlines", promise_source=booking_promises, fixed_price=booked_job_ids,
                   price_points=booking_price_points)
