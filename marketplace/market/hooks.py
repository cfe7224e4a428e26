"""Where the parts plug into the market's core, so that the core names no part (README, "Layout").

The clearing, the clock's tick and the sweeper do work that belongs to a mechanism: ERA's
reserved jobs stay out of the auction and are booked in the engine (paper 001), Cura's VM
pools run on the market's clock (paper 004), the lab's runs are published again after a broker
outage. Each part registers its functions here in its ``hooks.register()``, which
``MarketplaceConfig.ready`` calls; the core calls what is registered, in registration order.
A new mechanism plugs in with a ``hooks.py`` of its own and no edit of ``market/``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from marketplace.market.models.market import Market
    from marketplace.market.models.queues import ResourceType
    from simulator.market.engine import MarketEngine

log = logging.getLogger(__name__)

ClearingExclusion = Callable[[list[int]], set[int]]
"""Of these new jobs (ids), the ones the part serves itself: a clearing leaves them out of the auction."""

PriceCurve = Callable[["Market", "Sequence[ResourceType]", float, float], "tuple[np.ndarray, np.ndarray]"]
"""The market's price curve over [start, end): (slot starts (k,) simulated s, (m, k) price of one more unit
of each type in each slot, money per slot-second; inf where a slot has no unit left). ERA's (paper 001)."""

PricePoint = tuple[str, int, float, float]
"""(what was priced, resource column j, simulated time, money per slot-second): one price a part offered."""

PricePoints = Callable[["Market", "Sequence[ResourceType]", float], list[PricePoint]]
"""A part's prices offered since a simulated time (reservation quotes, deadline bookings), per slot-second."""

FixedPrice = Callable[[list[int]], set[int]]
"""Of these jobs (ids), the ones the part sold at a price fixed at acceptance (a reservation, a booking):
a cancellation keeps that price paid (docs/economy.md, "Cancellations")."""

EngineSync = Callable[["Market", "MarketEngine", "list[ResourceType]"], None]
"""At a tick's sync (the market row locked): tell the engine what the part holds (bookings, say)."""

TickWork = Callable[["Market"], object]
"""After a tick's steps, in its transaction and on its clock (``market.sim_time`` already moved)."""

SweepWork = Callable[[], list[int]]
"""The sweeper's work for the part (outside any market's lock); returns the ids it acted on."""

Promise = tuple[int, int, float, float]
"""(resource column j in the market's resource-type order, units, start, end): units of one type
promised to one job in the simulated-time window [start, end)."""

PromiseSource = Callable[["Market", "Sequence[ResourceType]", float, float], list[Promise]]
"""A part's promises to active jobs whose window overlaps [start, end) (ERA reservations, deadline bookings)."""


@dataclass
class Hooks:
    """The registered hooks of each kind, by part name (registering a part again replaces its hooks)."""

    clearing_exclusions: dict[str, ClearingExclusion] = field(default_factory=dict)
    engine_syncs: dict[str, EngineSync] = field(default_factory=dict)
    tick_work: dict[str, TickWork] = field(default_factory=dict)
    sweep_work: dict[str, SweepWork] = field(default_factory=dict)
    promise_sources: dict[str, PromiseSource] = field(default_factory=dict)
    fixed_prices: dict[str, FixedPrice] = field(default_factory=dict)
    price_curves: dict[str, PriceCurve] = field(default_factory=dict)
    price_points: dict[str, PricePoints] = field(default_factory=dict)


HOOKS = Hooks()


def register(*, part: str, clearing_exclusion: ClearingExclusion | None = None, engine_sync: EngineSync | None = None,
             tick_work: TickWork | None = None, sweep_work: SweepWork | None = None,
             promise_source: PromiseSource | None = None, fixed_price: FixedPrice | None = None,
             price_curve: PriceCurve | None = None, price_points: PricePoints | None = None) -> None:
    """Register ``part``'s hooks (each optional). Idempotent: a second call for the same part
    replaces the first, so an app registry that runs ``ready()`` twice registers nothing twice."""
    for table, hook in ((HOOKS.clearing_exclusions, clearing_exclusion), (HOOKS.engine_syncs, engine_sync),
                        (HOOKS.tick_work, tick_work), (HOOKS.sweep_work, sweep_work),
                        (HOOKS.promise_sources, promise_source), (HOOKS.fixed_prices, fixed_price),
                        (HOOKS.price_curves, price_curve), (HOOKS.price_points, price_points)):
        if hook is not None:
            table[part] = hook


def excluded_from_clearing(job_ids: Iterable[int]) -> set[int]:
    """The jobs among ``job_ids`` that some part serves itself (never in the auction)."""
    ids = list(job_ids)
    out: set[int] = set()
    if ids:
        for hook in HOOKS.clearing_exclusions.values():
            out |= hook(ids)
    return out


def fixed_price_jobs(job_ids: Iterable[int]) -> set[int]:
    """The jobs among ``job_ids`` that some part sold at a price fixed at acceptance."""
    ids = list(job_ids)
    out: set[int] = set()
    if ids:
        for hook in HOOKS.fixed_prices.values():
            out |= hook(ids)
    return out


def sync_engine(market: Market, engine: MarketEngine, types: list[ResourceType]) -> None:
    """Every part's :data:`EngineSync`, in registration order."""
    for hook in HOOKS.engine_syncs.values():
        hook(market, engine, types)


def run_tick_work(market: Market) -> None:
    """Every part's :data:`TickWork`, in registration order (an error aborts the tick, as before)."""
    for hook in HOOKS.tick_work.values():
        hook(market)


def run_sweep_work() -> list[int]:
    """Every part's :data:`SweepWork`; one part's failure (the broker or the database still away)
    is logged and does not stop the others: the next sweep tries again."""
    done: list[int] = []
    for part, hook in HOOKS.sweep_work.items():
        try:
            done += hook()
        except Exception:
            log.exception("sweep work of %s failed", part)
    return done


def promised_windows(market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
    """Every part's promises to active jobs overlapping [start, end) (simulated seconds): what a
    quote must leave free, whichever mechanism made the promise (papers 001 and 003)."""
    out: list[Promise] = []
    for source in HOOKS.promise_sources.values():
        out += source(market, types, start, end)
    return out


def price_curve(market: Market, types: Sequence[ResourceType], start: float, end: float) -> tuple[np.ndarray, np.ndarray] | None:
    """The market's price curve over [start, end) (:data:`PriceCurve`): the first registered source's
    (ERA's), or None when no part prices time slots. One curve for every quote (docs/economy.md)."""
    for source in HOOKS.price_curves.values():
        return source(market, types, start, end)
    return None


def offered_prices(market: Market, types: Sequence[ResourceType], since: float) -> list[PricePoint]:
    """Every part's prices offered since ``since`` (simulated s), per slot-second (:data:`PricePoints`)."""
    out: list[PricePoint] = []
    for source in HOOKS.price_points.values():
        out += source(market, types, since)
    return out
