"""Reservations with dynamic prices and quotes (ERA, paper 001, Secs. 2.3 and 3.1).

* :func:`reservation_quote` -- price a request ("W units of a resource type for
  T seconds inside [A, D), worth at most V") without committing: the cheapest
  start, the price of every feasible start, valid until an expiry. V is stored
  (the predictors learn from it) but never used to set the price.
* :func:`reservation_accept` -- book a quote at its price; re-priced when it
  expired or another booking moved the promised capacity since (a changed
  offer is not accepted: :class:`QuoteMoved` carries the new quote).
* :func:`reservation_decline` -- close an open quote.
* :func:`reservation_request` -- the one-shot request: quote, then accept iff
  V covers the price (paper 001, Alg. 1 lines 12-16).
* :func:`reservation_book` -- book given units of a type in [start, end) at a
  given price for a new job: the one write every reservation goes through
  (ERA's acceptance, and deadline bookings of paper 003).
* :func:`cluster_update` -- ERA's ``update`` from the cluster (paper 001, Sec. 2.3.2):
  capacity changes and ended jobs, each a market change, so the market re-plans.

Money: a quote holds nothing (it is not a commitment, as EC2 Capacity Blocks
offerings are not); a booking holds its price and charges it at once through
the ledger (a ``fixed`` payment rule: paid at acceptance), in the booking's
transaction, so a refused payment writes nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from marketplace.auction.services import job_cancel, parse_budget
from marketplace.ledger.services import job_charge, job_hold, money
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.config import resource_capacity_set
from marketplace.market.services.market import market_changed, part_in_use
from marketplace.market.validation import StateConflict
from marketplace.reservations import adapters as ra
from marketplace.reservations.models import Reservation, ReservationQuote, ReservationSettings

MIN_HOLD = Decimal("0.0001")  # a job's budget must be > 0; a free reservation holds this and is charged 0


class QuoteMoved(ValidationError):
    """The quote expired or the promised capacity changed and the offer is not the same:
    ``quote`` is the new one (or None when no start has room any more)."""

    def __init__(self, message: str, quote: ReservationQuote | None) -> None:
        super().__init__({"quote": message})
        self.quote = quote


@dataclass(frozen=True)
class Window:
    """A validated request in slots from the mechanism's origin."""

    units: int
    duration: int
    arrival: int
    deadline: int


def _resource(market: Market, name: object) -> ResourceType:
    try:
        return ResourceType.objects.get(market=market, name=str(name))
    except ResourceType.DoesNotExist:
        names = ", ".join(ResourceType.objects.filter(market=market).values_list("name", flat=True))
        raise ValidationError({"resource_type": f"Unknown resource type '{name}' (known: {names})."}) from None


def _number(field: str, value: object) -> float:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValidationError({field: "Enter a number."}) from None
    if not math.isfinite(x):
        raise ValidationError({field: "Enter a finite number."})
    return x


def parse_value(value: object) -> Decimal | None:
    """V: None, or a finite positive money amount. Raises ValidationError({"value": ...})."""
    if value is None or value == "":
        return None
    try:
        return parse_budget(value)
    except ValidationError as exc:
        raise ValidationError({"value": exc.message_dict["budget"]}) from None


def _window(*, market: Market, rt: ResourceType, s: ReservationSettings, units: object, duration: object,
            arrival: object, deadline: object) -> Window:
    """Field-level checks of a request, then its slots (paper 001, Secs. 2.3 and 3.1). Nothing is written.

    Raises:
        ValidationError: per field: units not a whole number in [1, capacity]; a
            duration that is not positive or longer than the window; an empty or
            inverted window, one in the past or beyond the horizon.
    """
    errors: dict[str, str] = {}
    try:
        w = int(str(units))
        if not 1 <= w <= rt.capacity:
            errors["units"] = f"Ask for 1 to {rt.capacity} units ({rt.name} has {rt.capacity})."
    except ValueError:
        w, errors["units"] = 0, "Enter a whole number of units."
    t_s, a_s, d_s = (_number(f, v) for f, v in (("duration", duration), ("arrival", arrival), ("deadline", deadline)))
    slot = s.slot_seconds
    origin = ra.origin_slot(market.sim_time, slot)
    if t_s <= 0:
        errors["duration"] = "The duration must be positive."
    if d_s <= a_s:
        errors["deadline"] = "The window is empty or inverted: the deadline must come after the arrival."
    elif d_s <= market.sim_time:
        errors["deadline"] = f"The window is in the past (the market clock is at {market.sim_time:.0f} s)."
    elif t_s > d_s - a_s:
        errors["duration"] = "The duration is longer than the window."
    if errors:
        raise ValidationError(errors)
    t = max(1, ra.slot_ceil(t_s, slot))
    a = max(ra.slot_ceil(a_s, slot), origin) - origin
    d = ra.slot_floor(d_s, slot) - origin
    if d - a < t:
        held = max(d - a, 0)
        raise ValidationError({"duration": f"In whole {slot:g} s slots from now the window holds {held} slots, fewer than {t}."})
    if d > s.horizon_slots:
        raise ValidationError({"deadline": f"Reservations reach at most {s.horizon_slots} slots ({s.horizon_slots * slot:.0f} s) ahead."})
    return Window(w, t, a, d)


def _price_quote(*, market: Market, tenant: Tenant, rt: ResourceType, s: ReservationSettings, win: Window,
                 value: Decimal | None) -> ReservationQuote | None:
    """Run Basic-Econ on the state now and store an open quote (None: no start has room)."""
    mech, origin = ra.era_mechanism(market, rt, s)
    # priced as seen now (slot 0 = origin): the demand arriving from now on (paper 001, Sec. 3.2)
    totals = mech.prices(win.units, win.duration, win.arrival, win.deadline, now=0)
    offer = mech.quote(win.units, win.duration, win.arrival, win.deadline, now=0)
    if offer is None:
        return None
    slot = s.slot_seconds
    offers = [[(origin + win.arrival + k) * slot, float(p) if np.isfinite(p) else None] for k, p in enumerate(totals.tolist())]
    return ReservationQuote.objects.create(
        market=market, tenant=tenant, resource_type=rt, units=win.units, duration=win.duration * slot,
        arrival=(origin + win.arrival) * slot, deadline=(origin + win.deadline) * slot, value=value,
        start=(origin + offer.start) * slot, price=money(offer.price), offers=offers, book_version=s.book_version,
        quoted_at=market.sim_time, expires_at=timezone.now() + timedelta(seconds=s.quote_ttl_seconds),
    )


@transaction.atomic
def reservation_quote(*, tenant: Tenant, resource_type: object, units: object, duration: object, arrival: object,
                      deadline: object, value: object = None) -> ReservationQuote:
    """Price a reservation request (paper 001, Alg. 1, without committing).

    Args:
        resource_type: the type's name; units: W; duration: T (simulated s);
        arrival, deadline: the window [A, D) (simulated s on the market clock);
        value: V, the most the tenant would pay (optional; stored, never priced on).

    Returns:
        An open quote: the cheapest start and its price, every feasible start's price.

    Raises:
        ValidationError: field errors (see ``_window``), a bad value, or
            {"window": ...} when no start in the window has room.
    """
    market = Market.objects.defer("engine_state").get(pk=tenant.market_id)
    rt = _resource(market, resource_type)
    v = parse_value(value)
    s = ra.era_settings(market)
    win = _window(market=market, rt=rt, s=s, units=units, duration=duration, arrival=arrival, deadline=deadline)
    quote = _price_quote(market=market, tenant=tenant, rt=rt, s=s, win=win, value=v)
    if quote is None:
        raise ValidationError({"window": "No start in this window has that many units free; widen the window or ask for fewer units."})
    return quote


def _requote(quote: ReservationQuote, market: Market, s: ReservationSettings) -> ReservationQuote | None:
    """The same request priced on the market now (its window clipped to the slots not begun).

    Raises:
        QuoteMoved: (with no quote) the window no longer holds the duration, or no start has room;
            the message says which and why.
    """
    rt = quote.resource_type
    try:
        win = _window(market=market, rt=rt, s=s, units=quote.units, duration=quote.duration, arrival=quote.arrival,
                      deadline=quote.deadline)
    except ValidationError as exc:
        raise QuoteMoved(f"This request cannot be booked any more: {' '.join(exc.messages)} Ask for a new window.", None) from None
    fresh = _price_quote(market=market, tenant=quote.tenant, rt=rt, s=s, win=win, value=quote.value)
    if fresh is None:
        raise QuoteMoved(_no_room(market, rt, s, win), None)
    return fresh


def _no_room(market: Market, rt: ResourceType, s: ReservationSettings, win: Window) -> str:
    """Exactly why no start of the window has room: the freest slot's promised and busy units."""
    state = ra.era_state(market, rt, s)
    lo, hi = win.arrival, win.deadline
    k = lo + int(np.argmin(state.mech.promised[lo:hi]))
    when = (state.origin + k) * s.slot_seconds
    return (f"No start in the window has {win.units} {rt.name} units free for {win.duration} slots: at its freest slot "
            f"({when:g} s on the market clock) {int(state.promised[k])} of {rt.capacity} units are promised to reservations and bookings "
            f"and {int(state.busy[k])} are held by running tasks. Ask for fewer units or a later window.")


def _books_as_quoted(quote: ReservationQuote, market: Market, s: ReservationSettings, room: tuple[np.ndarray, int]) -> bool:
    """True when the quote can be booked as it stands: open, not expired, no booking since it was
    priced, its start not begun, and its units still free in its slots (the running tasks of the
    auction move between ticks: a unit free when quoted may be held now); ``room``: ``ra.era_taken`` of
    its type, read under the market lock."""
    if quote.expires_at <= timezone.now() or quote.book_version != s.book_version or quote.start < market.sim_time:
        return False
    taken, origin = room
    lo = ra.slot_floor(quote.start, s.slot_seconds) - origin
    hi = ra.slot_ceil(quote.start + quote.duration, s.slot_seconds) - origin
    return ra.has_room(taken, int(quote.resource_type.capacity), lo, hi, quote.units)


def reservation_accept(*, quote: ReservationQuote, user: object = None, rebook: bool = True) -> Reservation:
    """Accept an open quote: book it at its price, paid now through the ledger.

    A quote that cannot be booked as it stands (:func:`_books_as_quoted`: it expired, another
    booking moved the promised capacity, its start has begun, or running tasks now hold its
    units) is re-priced first on the market now, the same request over the slots of its window
    not yet begun (docs/economy.md, "Accepting a quote"): the next feasible start at no more than
    the accepted price is booked at the new price; a dearer one is not (:class:`QuoteMoved`
    carries it, and the old quote is closed); no feasible start, or a window that has passed,
    is a :class:`QuoteMoved` without a quote whose message says exactly why. With ``rebook=False``
    (the API: a client books exactly the quote it names) the re-priced quote is never booked in its
    place: it is a :class:`QuoteMoved` carrying the new quote, whatever its price.

    Raises:
        StateConflict: {"quote": ...} for a quote that is not open (a ValidationError);
            QuoteMoved; {"budget": ...} when the tenant's funds do not cover the price.
    """
    moved: QuoteMoved | None = None
    with transaction.atomic():
        market = Market.objects.select_for_update().defer("engine_state").get(pk=quote.market_id)
        s = ReservationSettings.objects.select_for_update().get(pk=ra.era_settings(market).pk)
        quote = ReservationQuote.objects.select_for_update().select_related("resource_type", "tenant").get(pk=quote.pk)
        if quote.status != ReservationQuote.Status.OPEN:
            raise StateConflict({"quote": f"This quote is {quote.get_status_display().lower()}; ask for a new one."})
        price = quote.price
        room = ra.era_taken(market, quote.resource_type, s)  # a re-priced quote keeps the type: one read for both checks
        if not _books_as_quoted(quote, market, s, room):
            try:
                fresh = _requote(quote, market, s)
            except QuoteMoved as exc:
                fresh, moved = None, exc
            quote.status, quote.replaced_by = ReservationQuote.Status.EXPIRED, fresh
            quote.save(update_fields=["status", "replaced_by"])
            if fresh is not None and fresh.price > price:
                moved = QuoteMoved(f"The market moved since this quote: the next feasible start ({fresh.start:g} s on the market "
                                   f"clock) now costs {fresh.price}, more than the {price} you accepted. Review the new quote.", fresh)
            elif fresh is not None and not rebook:
                moved = QuoteMoved(f"This quote can no longer be booked as it stands (it expired or the market moved): the "
                                   f"next feasible start ({fresh.start:g} s on the market clock) costs {fresh.price}. Review "
                                   f"the new quote and accept it to book.", fresh)
            elif fresh is not None:
                quote, price = fresh, fresh.price  # the next feasible start, at no more than the accepted price
        if moved is None:
            reservation = reservation_book(
                tenant=quote.tenant, resource_type=quote.resource_type, units=quote.units, start=quote.start,
                end=quote.start + quote.duration, price=price, arrival=quote.arrival, deadline=quote.deadline,
                value=quote.value, quote=quote, user=user, _locked=(market, s), _room=room,
            )
            quote.status = ReservationQuote.Status.ACCEPTED
            quote.save(update_fields=["status"])
            return reservation
    raise moved  # after commit: the new quote is kept, the old one closed


@transaction.atomic
def reservation_decline(*, quote: ReservationQuote) -> ReservationQuote:
    """Close an open quote (nothing was held, so nothing moves).

    Raises:
        StateConflict: {"quote": ...} for a quote that is not open (a ValidationError).
    """
    quote = ReservationQuote.objects.select_for_update().get(pk=quote.pk)
    if quote.status != ReservationQuote.Status.OPEN:
        raise StateConflict({"quote": f"This quote is already {quote.get_status_display().lower()}."})
    quote.status = ReservationQuote.Status.DECLINED
    quote.save(update_fields=["status"])
    return quote


@dataclass(frozen=True)
class RequestResult:
    """A one-shot request's answer: accepted or not, the quote, and the booking."""

    accepted: bool
    quote: ReservationQuote
    reservation: Reservation | None


def reservation_request(*, tenant: Tenant, resource_type: object, units: object, duration: object, arrival: object,
                        deadline: object, value: object, user: object = None) -> RequestResult:
    """The one-shot request (paper 001, Sec. 2.3.1 makeReservation): price without V,
    then accept iff ``V >= price`` (paper 001, Alg. 1 lines 12-16).

    Raises:
        ValidationError: as :func:`reservation_quote` (V is required here), or
            {"budget": ...} when the funds do not cover an accepted price.
    """
    if value is None or value == "":
        raise ValidationError({"value": "A one-shot request needs the value V: the most you would pay."})
    with transaction.atomic():
        # priced and booked under the market lock (the lock order of the bookings): no other booking
        # can move the promised capacity in between, so the decision is the mechanism's, never a stale quote's
        Market.objects.select_for_update().defer("engine_state").get(pk=tenant.market_id)
        ReservationSettings.objects.select_for_update().get(pk=ra.era_settings(tenant.market_id).pk)
        quote = reservation_quote(tenant=tenant, resource_type=resource_type, units=units, duration=duration,
                                  arrival=arrival, deadline=deadline, value=value)
        assert quote.value is not None
        if quote.value < quote.price:
            quote.status = ReservationQuote.Status.DECLINED
            quote.save(update_fields=["status"])
            return RequestResult(False, quote, None)
        reservation = reservation_accept(quote=quote, user=user)
        quote.refresh_from_db()
        return RequestResult(True, quote, reservation)


@transaction.atomic
def reservation_book(
    *, tenant: Tenant, resource_type: ResourceType, units: int, start: float, end: float, price: Decimal,
    arrival: float | None = None, deadline: float | None = None, value: Decimal | None = None,
    quote: ReservationQuote | None = None, name: str = "", source: str = "era", user: object = None, job: Job | None = None,
    _locked: tuple[Market, ReservationSettings] | None = None, _room: tuple[np.ndarray, int] | None = None,
) -> Reservation:
    """Book ``units`` of ``resource_type`` in [start, end) at ``price`` for a job.

    Without ``job`` a new job is made: ``units`` tasks of ``end - start``
    seconds on the type, arriving at ``arrival`` (default ``start``; it may run
    early on idle units, Rayon, paper 001 Sec. 4). With ``job`` (an active job
    of the tenant, e.g. one a deadline quote sized, paper 003) the units are
    held for that job; one reservation per job and resource type. Either way
    the market's Plan holds the units for the job in the window (the engine
    books it at the next tick; a booked job leaves the auction and pays only
    its fixed prices), the price is held and charged now through the ledger,
    and the promised capacity is checked again under the market lock, so
    capacity is never over-promised.

    Raises:
        ValidationError: {"units": ...} no room in those slots; {"start": ...}
            a window in the past or empty; {"job": ...} a job that is not the
            tenant's, not active or already holds this type; {"budget": ...}
            not enough funds.
    """
    market, s = _locked or (
        Market.objects.select_for_update().defer("engine_state").get(pk=tenant.market_id),
        ReservationSettings.objects.select_for_update().get(pk=ra.era_settings(tenant.market_id).pk),
    )
    if not (math.isfinite(start) and math.isfinite(end) and market.sim_time <= start < end):
        raise ValidationError({"start": "A booking needs a window [start, end) that has not begun."})
    # the room ERA promises from, without its prices (``_room``: read by the caller under the same locks)
    taken, origin = _room or ra.era_taken(market, resource_type, s)
    slot = s.slot_seconds
    lo, hi = ra.slot_floor(start, slot) - origin, ra.slot_ceil(end, slot) - origin
    if not ra.has_room(taken, int(resource_type.capacity), lo, hi, units):
        raise ValidationError({"units": f"{units} {resource_type.name} units are no longer free in [{start:g}, {end:g})."})
    amount = Decimal(price).quantize(MIN_HOLD)
    if job is None:
        job = Job.objects.create(
            market=market, tenant=tenant, queue_id=tenant.default_queue_id,
            name=(name or f"reservation {units} x {resource_type.name}")[:120],
            budget=max(amount, MIN_HOLD), sim_submit_time=max(start if arrival is None else arrival, market.sim_time),
        )
        JobWork.objects.create(job=job, resource_type=resource_type, tasks=units, task_duration=end - start, pending=units)
        hold = job.budget
    else:
        job = Job.objects.select_for_update().get(pk=job.pk)
        if job.tenant_id != tenant.pk or job.status not in Job.ACTIVE:
            raise ValidationError({"job": "Only an active job of yours can hold a reservation."})
        if Reservation.objects.filter(job=job, resource_type=resource_type).exists():
            raise ValidationError({"job": f"This job already holds a reservation of {resource_type.name}."})
        hold = amount
    if hold > 0:
        job_hold(tenant_id=tenant.pk, job=job, amount=hold, user=user)
    job_charge(job=job, amount=amount, memo=f"reservation price of job {job.pk} (fixed at acceptance)")
    job.save(update_fields=["charged"])
    part_in_use(market=market, name="reservations")
    reservation = Reservation.objects.create(
        market=market, tenant=tenant, job=job, resource_type=resource_type, units=units, start=start, end=end,
        arrival=start if arrival is None else arrival, deadline=end if deadline is None else deadline,
        price=amount, value=value, quote=quote, source=source,
    )
    s.book_version += 1
    s.save(update_fields=["book_version"])
    market_changed(market=market)
    return reservation


@dataclass(frozen=True)
class ClusterUpdate:
    """What an update changed: the capacities set (resource type name -> slots) and the ids of the
    jobs it ended (the active ones among those named, in id order)."""

    capacity: dict[str, int]
    terminated: list[int]


def cluster_update(*, market: Market, capacity: dict[str, int], terminated: list[int], user: object = None) -> ClusterUpdate:
    """ERA's optional ``update`` from the cluster (paper 001, Sec. 2.3.2): the cluster tells ERA its
    actual state so that ERA re-plans.

    ``capacity`` (resource type name -> slots now under the cluster's management) sets each type's
    capacity (audited, applied at the next tick); every job of ``terminated`` that is still active is
    cancelled (its units and its promised capacity are free again; it pays as any cancellation does).
    Each is a market change, so the next clearing re-plans; an update that changes nothing still asks
    for a re-plan. One transaction: an update is applied whole or not at all.

    Raises ValidationError ``{"capacity": ...}`` for a resource type name the market does not have
    (nothing written), or a service's refusal of a capacity (``resource_capacity_set``).
    """
    types = {t.name: t for t in ResourceType.objects.filter(market=market)}
    unknown = [name for name in capacity if name not in types]
    if unknown:
        raise ValidationError({"capacity": f"Unknown resource types: {', '.join(unknown)}."})
    ended: list[int] = []
    with transaction.atomic():
        for name, units in capacity.items():
            resource_capacity_set(resource_type=types[name], capacity=units, user=user)
        for job in Job.objects.filter(market=market, pk__in=terminated, status__in=Job.ACTIVE).order_by("pk"):
            job_cancel(job=job, user=user)  # frees its units and its promised capacity
            ended.append(job.pk)
        if not capacity and not ended:
            market_changed(market=Market.objects.select_for_update().get(pk=market.pk))  # a re-plan on request
    return ClusterUpdate(capacity=dict(capacity), terminated=ended)
