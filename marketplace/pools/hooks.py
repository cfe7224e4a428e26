"""Cura's hook into the market's core (``market.hooks``): the VM pools' jobs run on the
market's clock, inside each tick (paper 004, Sec. III)."""

from __future__ import annotations

from marketplace.market import hooks
from marketplace.pools.services.jobs import cura_advance


def register() -> None:
    hooks.register(part="pools", tick_work=lambda market: cura_advance(market=market))
