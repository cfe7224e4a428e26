"""The market's data a deadline quote reads (paper 003 on the live market; docs/economy.md).

* prices ``b_k`` (money per slot-second): the market's one price curve (``market.hooks.price_curve``:
  ERA's, anchored to the spot market's realised rate) averaged over the quote's window, the price
  of one more slot of each type (:func:`unit_prices`);
* availability over time: a slot is free for a booking when no promise (reservation, booking)
  holds it in the window and no running task holds it; running tasks are never pre-empted, but
  they end, and the slots they free go to reservations and bookings first (the engine's
  reservation stage comes before the auction). So the availability of type k after a wait of s
  seconds is ``C_k - promised_k - busy_k(now + s)`` (:func:`availability`), and the quote picks
  the cheapest of these candidate starts (:func:`start_candidates`), paper 003's cheapest of P
  nodes with "the cluster after s seconds" as the nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings
from numpy.typing import NDArray

from marketplace.deadlines.models import DeadlineBooking
from marketplace.market import hooks
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.outlook import Outlook
from marketplace.web.text import seconds_text

PRICE_SOURCE_CURVE = "ERA price curve"
PRICE_SOURCE_FLOOR = "floor price"
MAX_STARTS = 24  # candidate starts a quote compares (the running tasks' end times, thinned evenly)
TINY_PRICE = 1e-9  # paper 003 needs b > 0: a free slot is priced at this


def floor_unit_price() -> float:
    """The unit price (money per slot-second) without a price curve (no part prices time slots):
    settings ``DEADLINE_FLOOR_UNIT_PRICE``, default 0.01."""
    return float(getattr(settings, "DEADLINE_FLOOR_UNIT_PRICE", 0.01))


def unit_prices(*, market: Market, types: Sequence[ResourceType], start: float | None = None,
                end: float | None = None) -> tuple[NDArray[np.float64], str]:
    """Unit prices ``b_j`` (money per slot-second) for a booking over [start, end) (default: the next
    hour), and their source: the mean over the window's slots of the market's price curve for one
    more slot of the type (``market.hooks.price_curve``), the same curve ERA's quotes price from.
    A type whose every slot in the window is taken keeps the curve's dearest finite price (it has
    no slot to sell anyway). Without a curve: :func:`floor_unit_price`. Never below a type's reserve price."""
    start = market.sim_time if start is None else start
    end = start + 3600.0 if end is None else max(end, start + 1e-9)
    curve = hooks.price_curve(market, types, start, end)
    reserve = np.array([float(t.reserve_price) for t in types])  # never below the reserve prices
    if curve is None:
        return np.maximum(np.full(len(types), floor_unit_price()), reserve), PRICE_SOURCE_FLOOR
    _, prices = curve
    out = np.empty(len(types))
    for j in range(len(types)):
        row = prices[j]
        finite = row[np.isfinite(row)]
        out[j] = float(finite.mean()) if finite.size else float(np.nanmax(np.where(np.isfinite(prices), prices, np.nan), initial=0.0))
    return np.maximum(np.maximum(out, TINY_PRICE), reserve), PRICE_SOURCE_CURVE


def reserved_units(*, market: Market, types: Sequence[ResourceType], start: float, end: float) -> NDArray[np.int64]:
    """Most units of each type promised to deadline bookings and ERA reservations of active
    jobs at any time in [start, end) (a sweep over the bookings' windows)."""
    m = len(types)
    events: list[tuple[float, int, int, int]] = []
    # every part's promises (market.hooks): these bookings, and ERA's reservations (paper 001)
    for j, units, p_start, p_end, _ in hooks.promised_windows(market, types, start, end):
        events.append((max(p_start, start), 1, j, units))
        events.append((p_end, -1, j, units))
    level, peak = np.zeros(m, dtype=np.int64), np.zeros(m, dtype=np.int64)
    for _, sign, j, units in sorted(events, key=lambda e: (e[0], e[1])):  # ends before starts at one instant
        level[j] += sign * units
        peak[j] = max(peak[j], level[j])
    return peak


def booking_promises(market: Market, types: Sequence[ResourceType], start: float, end: float) -> list[hooks.Promise]:
    """Paper 003's promises (``market.hooks.MarketPart.promises``): the slots of active jobs' deadline
    bookings whose window overlaps [start, end), one promise per resource type booked."""
    rows = DeadlineBooking.objects.filter(
        market=market, job__status__in=Job.ACTIVE, sim_end__gt=start, sim_start__lt=end,
    ).values_list("sim_start", "sim_end", "slots", "job_id")
    return [hooks.Promise(j, int(units), float(b_start), float(b_end), job_id)
            for b_start, b_end, slots, job_id in rows for j, units in enumerate(slots[:len(types)]) if units > 0]


def booked_job_ids(job_ids: list[int]) -> set[int]:
    """Which of these jobs hold a deadline booking (``market.hooks.MarketPart.fixed_price_jobs``: sold at a fixed price)."""
    return set(DeadlineBooking.objects.filter(job_id__in=job_ids).values_list("job_id", flat=True))


START_TOLERANCE_S = 1e-6  # times compared after a round trip through a form or JSON


@dataclass(frozen=True)
class StartChange:
    """The start a booking was quoted and the one it got, simulated seconds on the market clock.

    ``quoted`` is the start the tenant accepted (the quote's ``starts_at``; the booking's own quote's
    when it gave none); ``booked`` is when the booked slots are free (now + the wait at booking);
    ``moved`` is ``booked - max(quoted, now)`` (a quoted start the clock has passed counts as now:
    nothing starts in the past), negative when the slots free sooner; ``notice`` says so in words
    (empty when the start did not move).
    """

    quoted: float
    booked: float
    moved: float
    notice: str


def start_change(*, quoted: float | None, booked: float, now: float) -> StartChange:
    """The booked start against the quoted one (:class:`StartChange`); ``now`` is the booking's time."""
    if quoted is None:
        return StartChange(booked, booked, 0.0, "")
    moved = booked - max(quoted, now)
    if abs(moved) <= START_TOLERANCE_S:
        return StartChange(quoted, booked, 0.0, "")
    notice = (f"The start moved: the quote said the slots are free at {quoted:.0f} s, the booking has them at "
              f"{booked:.0f} s on the market clock ({seconds_text(abs(moved))} {'later' if moved > 0 else 'sooner'}; "
              "the market moved since the quote).")
    return StartChange(quoted, booked, moved, notice)


def booking_start_change(booking: DeadlineBooking) -> StartChange:
    """A stored booking's quoted against booked start (bookings made before both were stored: no change)."""
    booked = booking.booked_start if booking.booked_start is not None else booking.sim_start
    return start_change(quoted=booking.quoted_start, booked=booked, now=booking.sim_start)


@dataclass(frozen=True)
class Start:
    """A candidate start: after ``delay`` seconds, ``available`` (m,) slots of each type are free."""

    delay: float
    available: NDArray[np.float64]


def availability(*, capacity: NDArray[np.int64], promised: NDArray[np.int64], outlook: Outlook, at: float) -> NDArray[np.float64]:
    """(m,) slots free for a booking at simulated time ``at``: capacity less promised less the
    slots the auction's running tasks still hold then (never negative)."""
    busy = np.array([outlook.busy_at(j, at) for j in range(len(capacity))], dtype=np.int64)
    out: NDArray[np.float64] = np.maximum(capacity - promised - busy, 0).astype(np.float64)
    return out


def start_candidates(*, capacity: NDArray[np.int64], promised: NDArray[np.int64], outlook: Outlook, now: float,
                     before: float, limit: int = MAX_STARTS) -> list[Start]:
    """Now, and each time before ``before`` at which running tasks end (thinned evenly to ``limit``,
    always keeping the first and the last: when every running task has ended), with what is free then."""
    ends = sorted({t for j in range(len(capacity)) for t in outlook.free_times(j) if t < before})
    if len(ends) > limit - 1:
        picks = np.unique(np.round(np.linspace(0, len(ends) - 1, limit - 1)).astype(np.int64))
        ends = [ends[k] for k in picks.tolist()]
    times = [now, *ends]
    return [Start(t - now, availability(capacity=capacity, promised=promised, outlook=outlook, at=t)) for t in times]


def promised_reason(types: Sequence[ResourceType], tasks: Sequence[int], capacity: NDArray[np.int64],
                    promised: NDArray[np.int64]) -> str:
    """Why no start can run the work: the types it needs whose every slot is promised in the window."""
    full = [t.name for t, n, c, p in zip(types, tasks, capacity.tolist(), promised.tolist(), strict=True) if n > 0 and p >= c]
    if not full:
        return ""
    return (f"Every {' and '.join(full)} slot is promised to reservations and deadline bookings until the deadline; "
            "choose a later deadline or fewer slots.")


def booking_price_points(market: Market, types: Sequence[ResourceType], since: float) -> list[hooks.PricePoint]:
    """Paper 003's prices paid (``market.hooks.MarketPart.price_points``): what each booking pays per slot-second
    of its work (payment / work, the rate its quote showed), on every type it booked, at the simulated time it was
    booked (newest 500 since ``since``). One rate for all its types, as the spot market's realised rate splits a
    job's one payment in proportion to its slot-seconds (docs/economy.md, section 2)."""
    rows = (DeadlineBooking.objects.filter(market=market, sim_start__gte=since, work__gt=0).order_by("-id")
            .values_list("sim_start", "payment", "work", "slots")[:500])
    return [("deadline booking", j, float(at), float(payment) / float(work))
            for at, payment, work, slots in rows for j in range(min(len(types), len(slots))) if slots[j] > 0]
