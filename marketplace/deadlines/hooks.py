"""Paper 003's hook into the market's core (``market.hooks``): a deadline booking's slots are a
promise every other quote leaves free (ERA's prices count them as promised units too)."""

from __future__ import annotations

from marketplace.deadlines.services import booking_promises
from marketplace.market import hooks


def register() -> None:
    hooks.register(part="deadlines", promise_source=booking_promises)
