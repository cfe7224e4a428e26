"""ERA's part of the ORM <-> numpy seam (``adapters.py`` holds the rest).

Reservation rows become a :class:`scheduler.era.mechanisms.BasicEcon` (or a baseline) in
integer slots, and engine bookings (``scheduler.plan.Reservation``) in
simulated seconds. Slots: slot k covers [k * slot, (k + 1) * slot) simulated
seconds; a mechanism's slot 0 is the market's first whole slot not yet begun
(its *origin*), so nothing is ever sold in the past.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from marketplace.market import hooks
from marketplace.market.adapters import resource_types
from marketplace.market.hooks import Promise
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.outlook import Outlook, market_outlook
from marketplace.market.prices import contended_settlements, reference_of, settlement_sums
from marketplace.reservations.models import Reservation, ReservationQuote, ReservationSettings
from scheduler import plan
from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import ConstantPrice, LPPredictor, PastRequest, SpreadingPredictor
from scheduler.era.spot import LEVEL_BINS, SpotAnchored, SpotCurve, backlog_fill, occupancy

HISTORY_LIMIT = 5000  # newest past requests a predictor learns from


def era_settings(market: Market | int) -> ReservationSettings:
    """The market's ERA settings (made with their defaults on first use)."""
    market_id = market if isinstance(market, int) else market.pk
    return ReservationSettings.objects.get_or_create(market_id=market_id)[0]


def slot_ceil(seconds: float, slot: float) -> int:
    """The first slot boundary at or after ``seconds`` (as a slot index)."""
    return math.ceil(seconds / slot - 1e-9)


def slot_floor(seconds: float, slot: float) -> int:
    """The last slot boundary at or before ``seconds`` (as a slot index)."""
    return math.floor(seconds / slot + 1e-9)


def origin_slot(sim_time: float, slot: float) -> int:
    """The first whole slot that has not begun at ``sim_time``."""
    return slot_ceil(sim_time, slot)


@dataclass(frozen=True)
class _FromOrigin:
    """A predictor of absolute slots queried with slots counted from ``origin``."""

    base: Any
    origin: int

    def inverse_demand(self, t: Any, quantity: Any) -> Any:
        return self.base.inverse_demand(np.asarray(t) + self.origin, quantity)

    def at(self, now: int) -> _FromOrigin:
        """As seen at slot ``now`` counted from ``origin``: the base's ``at`` at the absolute slot
        (the demand arriving from then on, paper 001 Sec. 3.2; the base learnt in absolute slots)."""
        at = getattr(self.base, "at", None)
        return _FromOrigin(at(int(now) + self.origin), self.origin) if callable(at) else self


def past_requests(market: Market, resource_type: ResourceType, s: ReservationSettings) -> list[PastRequest]:
    """Requests that named a value (quotes and bookings), in absolute slots, newest first."""
    slot = s.slot_seconds
    rows = (
        ReservationQuote.objects.filter(market=market, resource_type=resource_type, value__isnull=False)
        .order_by("-id").values_list("units", "duration", "arrival", "deadline", "value")[:HISTORY_LIMIT]
    )
    out = []
    for units, duration, arrival, deadline, value in rows:
        a, d = slot_ceil(arrival, slot), slot_floor(deadline, slot)
        t = max(1, slot_ceil(duration, slot))
        if a >= 0 and a + t <= d and value > 0:
            out.append(PastRequest(int(units), t, a, d, float(value)))
    return out


def predictor_of(market: Market, resource_type: ResourceType, s: ReservationSettings, origin: int) -> Any:
    """The configured predictor (paper 001, Sec. 3.2; docs/mechanisms.md, "ERA"), learning from past requests on a daily cycle."""
    if s.predictor == ReservationSettings.Predictor.CONSTANT:
        return ConstantPrice(s.reserve_price)
    history = past_requests(market, resource_type, s)
    if not history:
        return ConstantPrice(s.reserve_price)
    horizon = max(r.deadline for r in history)
    period = int(s.period_slots)
    if s.predictor == ReservationSettings.Predictor.LP:
        base: Any = LPPredictor(history, float(resource_type.capacity), horizon, floor=s.reserve_price, period=period)
    else:
        base = SpreadingPredictor(history, horizon, floor=s.reserve_price, period=period)
    return _FromOrigin(base, origin)


def promised_slots(market: Market, resource_type: ResourceType, s: ReservationSettings, origin: int,
                   promises: Sequence[Promise] | None = None) -> np.ndarray:
    """(horizon,) units promised in each slot from ``origin`` on, by the reservations and
    the deadline bookings of active jobs (a finished or cancelled job's units are free again).
    ``promises``: ``market.hooks.promised_windows`` from ``origin`` on over ``resource_types(market)``,
    when the caller has read them for several types."""
    slot, horizon = s.slot_seconds, int(s.horizon_slots)
    promised = np.zeros(horizon, dtype=np.int64)
    # every part's promises (market.hooks): ERA's reservations and paper 003's deadline bookings
    types = resource_types(market)
    column = [t.pk for t in types].index(resource_type.pk)
    if promises is None:
        promises = hooks.promised_windows(market, types, origin * slot, math.inf)
    windows = [(p.units, p.start, p.end) for p in promises if p.j == column]
    for units, start, end in windows:
        lo = max(slot_floor(start, slot) - origin, 0)
        hi = min(slot_ceil(end, slot) - origin, horizon)
        if lo < hi:
            promised[lo:hi] += units
    return promised


@dataclass(frozen=True)
class EraState:
    """Basic-Econ on the market's state now for one resource type, and what it was fed.

    Attributes:
        mech: the mechanism; its ``promised`` is ``promised + busy``.
        origin: its slot 0 (the first whole slot not begun).
        promised: (horizon,) units promised to reservations and bookings per slot.
        busy: (horizon,) units the auction's running tasks still hold per slot (never pre-empted).
        fill: (horizon,) units the auction's queued work would use per slot (its demand).
        curve: the spot market's rate by level of demand (None: nothing sold yet; then the
            configured predictor prices alone, as in paper 001).
    """

    mech: BasicEcon
    origin: int
    promised: np.ndarray
    busy: np.ndarray
    fill: np.ndarray
    curve: SpotCurve | None


def spot_curve(*, market: Market, resource_type: ResourceType) -> SpotCurve | None:
    """The type's spot rate by level of demand over the recent window, fitted robustly
    (``market.prices.recent_settlements``; ``scheduler.era.spot.SpotCurve`` with one vote per tenant in
    each level and the type's reference rate as one more), never below the type's reserve price:
    what ERA's prices are anchored to (docs/economy.md, "A price nobody moves alone"). None: nothing
    sold in the window and no reserve price.

    The fit needs only each tenant's charges and slot-seconds per level bin, so the database sums
    them (one row per bin and tenant, not one per settlement: a busy day holds hundreds of
    thousands: ``market.prices.settlement_sums``); the bin is the fit's own, ``min(floor(clip(u, 0, 1) x bins), bins - 1)``.
    """
    mine = [r for r in settlement_sums(market=market) if r.resource_type_id == resource_type.pk]
    reserve = float(resource_type.reserve_price)
    by_bin: dict[tuple[int, int | None], list[float]] = {}
    for r in mine:
        if r.sold:
            into = by_bin.setdefault((r.level_bin, r.tenant_id), [0.0, 0.0])
            into[0] += r.charged
            into[1] += r.slot_seconds
    if not by_bin:
        return SpotCurve.flat(reserve) if reserve > 0 and not mine else None
    sold = sorted(by_bin.items(), key=lambda item: (item[0][0], -1 if item[0][1] is None else item[0][1]))
    u = np.array([(b + 0.5) / LEVEL_BINS for (b, _), _ in sold], dtype=np.float64)
    c = np.array([cw[0] for _, cw in sold], dtype=np.float64)
    w = np.array([cw[1] for _, cw in sold], dtype=np.float64)
    voters = np.array([t if t is not None else -1 for (_, t), _ in sold], dtype=np.int64)
    # the type's reference rate, from the same window: the tenants that bought in contention vote
    prior = reference_of([(tenant, c, w) for _, tenant, c, w in contended_settlements(market=market, sums=mine)], floor=reserve)
    curve = SpotCurve.fit(u, c, w, voters=voters, prior=prior)
    return curve.floored(reserve) if curve is not None else None


def era_state(market: Market, resource_type: ResourceType, s: ReservationSettings | None = None,
              outlook: Outlook | None = None, promises: Sequence[Promise] | None = None) -> EraState:
    """Basic-Econ for one resource type on the whole live market (docs/economy.md, "Quotes"):

    * capacity is promised from the times slots actually free: the units the auction's running
      tasks hold until they end count as promised (``market.outlook``);
    * the demand it prices with sees the auction too: the configured predictor (past requests,
      paper 001 Sec. 3.2), anchored to the spot market's realised rate at the level of demand the
      slot would reach, the auction's queued work included (``scheduler.era.spot.SpotAnchored``).
    """
    s = s or era_settings(market)
    slot, horizon, capacity = s.slot_seconds, int(s.horizon_slots), int(resource_type.capacity)
    outlook = outlook or market_outlook(market=market)
    j, origin, promised, busy = _promised_and_busy(market, resource_type, s, outlook, promises)
    taken = promised + busy
    fill = backlog_fill(capacity - taken, float(outlook.backlog[j]), slot=slot)
    base = predictor_of(market, resource_type, s, origin)
    curve = spot_curve(market=market, resource_type=resource_type)
    predictor = base if curve is None else SpotAnchored(base, curve, capacity, slot, fill)
    mech = BasicEcon(capacity, horizon, predictor, list_price=s.list_price, max_discount=s.max_discount,
                     late_penalty=s.late_penalty, promised=taken)
    return EraState(mech, origin, promised, busy, fill, curve)


def _promised_and_busy(market: Market, resource_type: ResourceType, s: ReservationSettings, outlook: Outlook,
                       promises: Sequence[Promise] | None) -> tuple[int, int, np.ndarray, np.ndarray]:
    """(the type's index in the market, origin slot, (horizon,) units promised to reservations and bookings, (horizon,) units the auction's
    running tasks hold) per slot of one resource type: what :func:`era_state` promises from."""
    slot, horizon = s.slot_seconds, int(s.horizon_slots)
    origin = origin_slot(market.sim_time, slot)
    j = [t.pk for t in resource_types(market)].index(resource_type.pk)
    promised = promised_slots(market, resource_type, s, origin, promises)
    busy = occupancy(*outlook.finishes[j], origin=origin * slot, slot=slot, horizon=horizon)
    return j, origin, promised, busy


def era_taken(market: Market, resource_type: ResourceType, s: ReservationSettings | None = None) -> tuple[np.ndarray, int]:
    """((horizon,) int64 units of each slot promised or held by running tasks, the origin slot) for one
    resource type: ``era_state(...).mech.promised`` and ``.origin``, the same arrays, without the demand
    and the prices (what a booking checks its room against: about a third of :func:`era_state`'s work)."""
    s = s or era_settings(market)
    _, origin, promised, busy = _promised_and_busy(market, resource_type, s, market_outlook(market=market), None)
    return np.asarray(promised + busy, dtype=np.int64).reshape(-1), origin


def has_room(taken: np.ndarray, capacity: int, lo: int, hi: int, units: int) -> bool:
    """Whether slots [lo, hi) of ``taken`` (:func:`era_taken`) lie in the horizon and have ``units`` free
    below ``capacity`` in every one of them."""
    return 0 <= lo < hi <= taken.shape[0] and not np.any(taken[lo:hi] + units > capacity)


def era_mechanism(market: Market, resource_type: ResourceType, s: ReservationSettings | None = None) -> tuple[BasicEcon, int]:
    """(Basic-Econ on the market's state now, its origin slot) for one resource type (:func:`era_state`)."""
    state = era_state(market, resource_type, s)
    return state.mech, state.origin


def unit_price_curve(market: Market, types: Sequence[ResourceType], start: float, end: float) -> tuple[np.ndarray, np.ndarray]:
    """ERA's price curve as the market's (``market.hooks.MarketPart.price_curve``): the slot starts in [start, end)
    within the horizon, and the price of one more unit of each type in each, money per slot-second
    (paper 001, Alg. 1 line 7 with i = 1, over the slot's seconds; inf where the slot is full)."""
    s = era_settings(market)
    slot = s.slot_seconds
    outlook = market_outlook(market=market)
    origin = origin_slot(market.sim_time, slot)
    a = max(slot_floor(start, slot) - origin, 0)
    d = min(max(slot_ceil(end, slot) - origin, a + 1), int(s.horizon_slots))
    a = min(a, d - 1)
    promises = hooks.promised_windows(market, resource_types(market), origin * slot, math.inf)  # read once for every type
    prices = np.vstack([era_state(market, t, s, outlook, promises).mech.unit_prices(1, a, d, now=0)[:, 0] / slot for t in types])
    return (origin + np.arange(a, d)) * slot, prices


def engine_bookings(job_ids: Iterable[int], types: list[ResourceType]) -> list[tuple[plan.Reservation, float]]:
    """The bookings of these jobs as the engine takes them (``MarketEngine.book``)."""
    index = {t.pk: j for j, t in enumerate(types)}
    rows = Reservation.objects.filter(job_id__in=list(job_ids)).values_list("job_id", "resource_type_id", "units", "start", "end", "price")
    return [
        (plan.Reservation(job, index[rt], units, float(start), float(end)), float(price))
        for job, rt, units, start, end, price in rows
        if rt in index
    ]


def engine_bookings_missing(market: Market, engine: Any, types: list[ResourceType]) -> list[tuple[plan.Reservation, float]]:
    """Bookings of the market's active jobs that the engine does not hold yet (new jobs, and
    reservations added to a known job), each with its job's whole fixed price (the sum of
    the prices of the job's reservations; ``MarketEngine.book``)."""
    held = {(r.job_id, r.resource) for r in engine.booked()}
    index = {t.pk: j for j, t in enumerate(types)}
    rows = list(Reservation.objects.filter(market=market, job__status__in=Job.ACTIVE).values_list(
        "job_id", "resource_type_id", "units", "start", "end", "price",
    ))
    total: dict[int, float] = {}
    for job, *_, price in rows:
        total[job] = total.get(job, 0.0) + float(price)
    out = []
    for job, rt, units, start, end, _ in rows:
        if rt in index and (job, index[rt]) not in held and engine.knows(job):
            out.append((plan.Reservation(job, index[rt], units, float(start), float(end)), total[job]))
    return out


def reserved_job_ids(job_ids: Iterable[int]) -> set[int]:
    """Which of these jobs hold a reservation (they never join the auction)."""
    return set(Reservation.objects.filter(job_id__in=list(job_ids)).values_list("job_id", flat=True))


def reservation_promises(market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[Promise]:
    """ERA's promises (``market.hooks.MarketPart.promises``): the reservations of active jobs whose
    window overlaps [start, end)."""
    column = {t.pk: j for j, t in enumerate(types)}
    rows = Reservation.objects.filter(
        market=market, job__status__in=Job.ACTIVE, end__gt=start, start__lt=end,
    ).values_list("resource_type_id", "units", "start", "end", "job_id")
    return [Promise(column[rt], int(units), float(r_start), float(r_end), job_id)
            for rt, units, r_start, r_end, job_id in rows if rt in column]


POINTS_LIMIT = 500  # newest quotes a chart shows


def quote_price_points(market: Market, types: Sequence[ResourceType], since: float) -> list[hooks.PricePoint]:
    """ERA's prices paid (``market.hooks.MarketPart.price_points``): what each accepted reservation pays per
    slot-second of its work (price / (units x (end - start))), at the simulated time its quote was priced,
    newest ``POINTS_LIMIT`` since ``since``."""
    column = {t.pk: j for j, t in enumerate(types)}
    rows = (Reservation.objects.filter(market=market, quote__quoted_at__gte=since).order_by("-id")
            .values_list("resource_type_id", "quote__quoted_at", "price", "units", "start", "end")[:POINTS_LIMIT])
    return [("reservation", column[rt], float(at), float(price) / (units * (end - start)))
            for rt, at, price, units, start, end in rows if rt in column and units and end > start]
