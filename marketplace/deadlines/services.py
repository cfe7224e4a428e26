"""Deadline quotes and bookings: "what is the cheapest way to finish by D?" (paper 003).

A tenant gives its job's work (tasks x seconds per task, per resource type), a
deadline on the market clock and, optionally, the range of its estimate
(``alpha_err <= estimate / real <= beta_err``). The quote is paper 003's
Algorithm 1 on the market's data:

* **workload** ``l_k`` = tasks x task duration of type k (slot-seconds), with
  ``theta = 1`` because the staged cluster runs the map phase, then the reduce
  phase; the whole-slot vector is searched with the tasks' waves
  (``scheduler.deadline.slots``), which is the time the cluster really takes;
* **prices** ``b_k`` (money per slot-second) from ``selectors.unit_prices``: the market's one
  price curve (ERA's, anchored to the spot rate) over the quote's window;
* **candidate nodes**: the cluster now and after each time its running tasks end
  (``selectors.start_candidates``): a booking's slots are free when no promise and no running
  task holds them, and freed slots go to bookings before the auction; the quote is the cheapest
  candidate whose wait plus execution time meets the deadline (paper 003's cheapest of P nodes);
* **error tolerance**: the vector is planned for ``D' = alpha_err * D``
  (Eq. 22), so the real time stays in ``[T'/beta_err, T'/alpha_err]`` (``T'``
  the planned time, ``<= D'``; Theorems 3-4), hence within D.

Booking (:func:`deadline_book`) re-quotes under the market lock, creates the
job, charges the fixed price through the ledger (hold, then charge: the price
is due at acceptance) and books one reservation per resource type,
``(job, type, slots, [now, D))``, into the market engine with
``MarketEngine.book`` (``PaymentRule.fixed``): the reservation joins every Plan
the engine applies. Its slots hold from now, so every slot a running task frees
goes to it first, up to its slots (the engine's reservation stage), and it finishes
by ``start + start_delay + exec_time`` at the latest.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal

import numpy as np
from django.core.exceptions import ValidationError
from django.db import transaction
from numpy.typing import NDArray

from marketplace.auction.models import WorkItem
from marketplace.auction.services import MAX_TASK_DURATION_S, MAX_TASKS
from marketplace.deadlines.models import DeadlineBooking
from marketplace.deadlines.selectors import (
    MAX_STARTS,
    PRICE_SOURCE_CURVE,
    PRICE_SOURCE_FLOOR,
    START_TOLERANCE_S,
    Start,
    StartChange,
    booked_job_ids,
    booking_promises,
    floor_unit_price,
    promised_reason,
    reserved_units,
    start_candidates,
    start_change,
    unit_prices,
)
from marketplace.ledger.services import MONEY_QUANTUM, job_charge, job_hold, money
from marketplace.market import adapters
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.outlook import market_outlook
from marketplace.market.services.market import ENGINE_FIELDS, engine_context, engine_load, engine_store, market_changed
from marketplace.market.validation import StateConflict
from marketplace.web.text import seconds_text
from scheduler.deadline.payment import check_error_range
from scheduler.deadline.slots import SlotAllocation, min_payment_slots
from scheduler.plan import Reservation, empty_plan
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid
from simulator.records import JobSpec

THETA = 1.0  # map, then reduce: the phases never overlap (paper 003, Eq. 1)
CURVE_POINTS = 40
CURVE_STARTS = 8  # candidate starts each point of the payment-against-deadline curve compares


@dataclass(frozen=True)
class DeadlineQuote:
    """What a deadline costs (all times in simulated seconds; money in money units).

    ``deadline`` and ``start`` are on the market clock; ``relative_deadline``
    is ``deadline - start``; ``planned_deadline`` is ``D' = alpha_err *
    relative_deadline``. ``slots``/``exec_time``/``payment`` are the booked
    whole-slot vector; ``continuous_*`` paper 003's divisible optimum (Alg. 1)
    at D'; ``nominal_payment`` the whole-slot payment planning with D itself,
    so ``extra_cost`` is what the error tolerance costs. ``guarantee`` bounds
    the real execution time, ``paper_guarantee`` is ``[D'/beta, D'/alpha]``.
    """

    start: float
    deadline: float
    relative_deadline: float
    planned_deadline: float
    alpha_err: float
    beta_err: float
    types: list[str]
    tasks: list[int]
    workload: list[float]
    node: str
    unit_prices: list[float]
    price_source: str
    available: list[int]
    feasible: bool
    slots: list[int]
    exec_time: float
    payment: float
    continuous: list[float]
    continuous_exec_time: float
    continuous_payment: float
    rounded_up_payment: float
    nominal_payment: float
    extra_cost: float
    guarantee: tuple[float, float]
    paper_guarantee: tuple[float, float]
    fastest_time: float
    curve: list[tuple[float, float, float]] = field(default_factory=list)  # (relative D, whole-slot P, continuous P)
    start_delay: float = 0.0  # seconds until the booked slots are all free (running tasks end first)
    busy_now: list[int] = field(default_factory=list)  # slots of each type running a task now
    promised: list[int] = field(default_factory=list)  # slots of each type promised in the window
    capacity: list[int] = field(default_factory=list)
    reason: str = ""  # why no booking can meet the deadline, when none can

    @property
    def price(self) -> Decimal:
        """The booking price as ledger money (at least one quantum)."""
        return max(money(self.payment), MONEY_QUANTUM)

    @property
    def work(self) -> float:
        """The work booked, slot-seconds: tasks x seconds per task, summed over the types."""
        return float(sum(self.workload))

    @property
    def paid_rate(self) -> float:
        """What the tenant pays per slot-second of its work: the price / :attr:`work`, money per
        slot-second (NaN when infeasible). Paper 003 charges ``(T / R) sum_k b_k r_k`` (Eq. 2 with
        the mean price, R = 2 types here): half of the slots' unit prices over the booked time,
        on slots that are not all busy the whole time, so this differs from the unit prices ``b_k``
        (docs/economy.md, section 2)."""
        work = self.work
        return float(self.price) / work if self.feasible and work > 0 else math.nan

    @property
    def starts_at(self) -> float:
        """When the booked slots are free, simulated seconds on the market clock: ``start + start_delay``."""
        return self.start + self.start_delay

    @property
    def finishes_by(self) -> float:
        """The latest guaranteed finish on the market clock: ``start + guarantee[1]`` (wait included)."""
        return self.start + self.guarantee[1]

    @property
    def rounded_up_meets(self) -> bool:
        """Whether rounding the divisible optimum up in every type meets D' (with whole task
        waves it may not: ``ceil(n / r)`` waves can take longer than ``n / r``)."""
        return math.isfinite(self.rounded_up_payment)

    @property
    def rounding_cost(self) -> float:
        return self.payment - self.continuous_payment


# --- the market's data ---------------------------------------------------------------------------


def workload_of(types: Sequence[ResourceType], work: Sequence[WorkItem]) -> tuple[list[int], list[float]]:
    """(tasks, seconds per task) per resource type, in ``types`` order.

    Raises:
        ValidationError: {"work": [...]} for an unknown or repeated type, a count or
            duration out of range, or no work at all ("non-positive work").
    """
    index = {t.name: k for k, t in enumerate(types)}
    tasks, durations = [0] * len(types), [0.0] * len(types)
    errors, seen = [], set()
    for it in work:
        if it.resource_type not in index:
            errors.append(f"Unknown resource type '{it.resource_type}' (known: {', '.join(sorted(index))}).")
        elif it.resource_type in seen:
            errors.append(f"Resource type '{it.resource_type}' is given twice.")
        elif isinstance(it.tasks, bool) or not isinstance(it.tasks, int) or not 0 <= it.tasks <= MAX_TASKS:
            errors.append(f"{it.resource_type}: the number of tasks must be a whole number from 0 to {MAX_TASKS}.")
        elif not (isinstance(it.task_duration, int | float) and 0 < it.task_duration <= MAX_TASK_DURATION_S):  # NaN fails too
            errors.append(f"{it.resource_type}: the task duration must be a positive number of seconds up to {MAX_TASK_DURATION_S:.0f}.")
        else:
            seen.add(it.resource_type)
            tasks[index[it.resource_type]], durations[index[it.resource_type]] = it.tasks, float(it.task_duration)
    if not errors and sum(tasks) == 0:
        errors.append("The work must be positive: give at least one task with a positive duration.")
    if errors:
        raise ValidationError({"work": errors})
    return tasks, durations


# --- the quote ----------------------------------------------------------------------------------


MAX_DEADLINE_AHEAD_S = 365 * 86400.0  # a year of simulated time: far beyond any job, far below float overflow


MIN_ALPHA_ERR = 1e-3
MAX_BETA_ERR = 1e3
"""The estimate ranges a quote accepts: ``1e-320`` made ``fastest / alpha_err`` overflow (a 500)."""


def _check_request(market: Market, deadline: object, alpha_err: object, beta_err: object) -> tuple[float, float, float]:
    errors: dict[str, str] = {}
    try:
        D = float(deadline)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        D = math.nan
    if not math.isfinite(D):
        errors["deadline"] = "Enter the deadline as simulated seconds on the market clock."
    elif market.sim_time >= D:
        errors["deadline"] = f"The deadline is in the past: the market clock is at {market.sim_time:.0f} s."
    elif D - market.sim_time > MAX_DEADLINE_AHEAD_S:
        errors["deadline"] = f"The deadline lies more than {MAX_DEADLINE_AHEAD_S:.0f} simulated seconds (a year) ahead."
    try:
        a, b = float(alpha_err), float(beta_err)  # type: ignore[arg-type]
        check_error_range(a, b)
        if not (a >= MIN_ALPHA_ERR and b <= MAX_BETA_ERR):
            raise ValueError(f"the estimate range must lie within [{MIN_ALPHA_ERR:g}, {MAX_BETA_ERR:g}] "
                             "(an estimate more than a thousand times off plans nothing)")
    except (TypeError, ValueError) as exc:
        a = b = math.nan
        errors["alpha_err"] = str(exc) if isinstance(exc, ValueError) and "range" in str(exc) else "Enter numbers for the estimate range."
    if errors:
        raise ValidationError(errors)
    return D, a, b


def deadline_quote(
    *, market: Market, work: Sequence[WorkItem], deadline: object, alpha_err: object = 1.0, beta_err: object = 1.0,
    curve: bool = True,
) -> DeadlineQuote:
    """The cheapest whole-slot booking that finishes ``work`` by ``deadline`` (module docstring).

    Args:
        deadline: simulated seconds on the market clock (absolute), after now.
        alpha_err, beta_err: the estimate's range, ``0 < alpha_err <= 1 <= beta_err``.
        curve: also compute the payment against deadline (the cost of urgency).

    Raises:
        ValidationError: field errors ``deadline`` (in the past, not a number),
            ``work`` (non-positive, unknown types), ``alpha_err`` (a range that is
            not positive or does not contain 1).
    """
    D_abs, a_err, b_err = _check_request(market, deadline, alpha_err, beta_err)
    types = adapters.resource_types(market)
    tasks, durations = workload_of(types, work)
    start = market.sim_time
    D = D_abs - start
    planned = a_err * D
    prices, source = unit_prices(market=market, types=types, start=start, end=D_abs)
    capacity = np.array([t.capacity for t in types], dtype=np.int64)
    promised = reserved_units(market=market, types=types, start=start, end=D_abs)
    outlook = market_outlook(market=market)

    def starts(before: float, limit: int = MAX_STARTS) -> list[Start]:
        return start_candidates(capacity=capacity, promised=promised, outlook=outlook, now=start, before=before, limit=limit)

    every = starts(math.inf)
    booked, wait = _best(tasks, durations, planned, prices, starts(start + planned))
    nominal, _ = _best(tasks, durations, D, prices, starts(D_abs))
    fastest = min((c.delay + _solve(tasks, durations, 1e-9, prices, c.available).exec_time for c in every), default=math.inf)
    quote = DeadlineQuote(
        start=start, deadline=D_abs, relative_deadline=D, planned_deadline=planned, alpha_err=a_err, beta_err=b_err,
        types=[t.name for t in types], tasks=tasks, workload=[n * d for n, d in zip(tasks, durations, strict=True)],
        node=market.name if wait.delay <= 0 else f"{market.name} in {wait.delay:.0f} s", unit_prices=prices.tolist(),
        price_source=source, available=[int(x) for x in wait.available], feasible=booked.feasible,
        slots=[int(x) for x in booked.slots], exec_time=booked.exec_time, payment=booked.payment,
        continuous=booked.continuous.resources.tolist(), continuous_exec_time=booked.continuous.exec_time,
        continuous_payment=booked.continuous.payment, rounded_up_payment=booked.rounded_up_payment,
        nominal_payment=nominal.payment, extra_cost=booked.payment - nominal.payment,
        guarantee=(wait.delay + booked.exec_time / b_err, wait.delay + booked.exec_time / a_err),
        paper_guarantee=(planned / b_err, planned / a_err), fastest_time=fastest, start_delay=wait.delay,
        busy_now=[int(x) for x in outlook.busy], promised=[int(x) for x in promised], capacity=[int(x) for x in capacity],
        reason=_reason(types, tasks, capacity, promised, fastest, a_err, D),
    )
    if curve:
        quote = _with_curve(quote, tasks, durations, prices, starts(math.inf, CURVE_STARTS))
    return quote


def _solve(tasks: list[int], durations: list[float], D: float, prices: NDArray[np.float64],
           available: NDArray[np.float64]) -> SlotAllocation:
    """Paper 003's cheapest whole-slot vector for the work on one node (``scheduler.deadline.slots``)."""
    l_ = np.array([n * d for n, d in zip(tasks, durations, strict=True)])
    return min_payment_slots(l_, D, prices[None, :], available[None, :], theta=THETA, tasks=tasks)


def _best(tasks: list[int], durations: list[float], D: float, prices: NDArray[np.float64],
          starts: list[Start]) -> tuple[SlotAllocation, Start]:
    """The cheapest feasible booking over the candidate starts (a start after ``s`` seconds has
    ``D - s`` left; ties go to the earlier start), or, when none meets ``D``, the one that would
    finish first (for the quote to show)."""
    best: tuple[SlotAllocation, Start] | None = None
    fallback: tuple[float, SlotAllocation, Start] | None = None
    for c in starts:
        if c.delay >= D:
            break
        x = _solve(tasks, durations, D - c.delay, prices, c.available)
        if x.feasible and (best is None or x.payment < best[0].payment * (1 - 1e-12)):
            best = (x, c)
        elif not x.feasible and (fallback is None or c.delay + x.exec_time < fallback[0]):
            fallback = (c.delay + x.exec_time, x, c)
    if best is not None:
        return best
    if fallback is not None:
        return fallback[1], fallback[2]
    return _solve(tasks, durations, D, prices, starts[0].available), starts[0]


def _reason(types: Sequence[ResourceType], tasks: list[int], capacity: NDArray[np.int64], promised: NDArray[np.int64],
            fastest: float, alpha_err: float, D: float) -> str:
    """Why no booking meets the deadline (empty when one does)."""
    full = promised_reason(types, tasks, capacity, promised)
    if full or fastest / alpha_err <= D * (1 + 1e-12):
        return full
    return (f"Even with every slot as it frees the job takes {fastest:.0f} s from now"
            f"{f' (planned with D = {alpha_err:g} x the deadline)' if alpha_err < 1 else ''}; choose a deadline at least "
            f"{math.ceil(fastest / alpha_err)} s from now.")


def _with_curve(quote: DeadlineQuote, tasks: list[int], durations: list[float], prices: NDArray[np.float64],
                starts: list[Start]) -> DeadlineQuote:
    """Payment against deadline (the cost of urgency): from the tightest deadline the
    tolerance can still meet (``fastest / alpha_err``) to three times the asked one (the unit
    prices of the asked window throughout)."""
    lo = quote.fastest_time / quote.alpha_err
    if not math.isfinite(lo):
        return quote  # a type has no free unit: no deadline can be met
    hi = max(3.0 * quote.relative_deadline, 2.0 * lo)
    points = []
    for D in np.geomspace(max(lo, 1e-6), hi, CURVE_POINTS).tolist():
        x, _ = _best(tasks, durations, quote.alpha_err * D, prices, starts)
        if x.feasible:
            points.append((D, x.payment, x.continuous.payment))
    return DeadlineQuote(**{**quote.__dict__, "curve": points})


# --- booking ------------------------------------------------------------------------------------


class QuoteChanged(StateConflict):
    """The booking's own quote (made under the market lock) is worse than the one the tenant
    accepted: a dearer price (``max_payment``), a later start (``quoted_start``) or a later
    guaranteed finish (``quoted_finish``). ``quote`` is the new quote to review (a 409 in the API)."""

    def __init__(self, field: str, message: str, quote: DeadlineQuote) -> None:
        super().__init__({field: message})
        self.quote = quote


def _check_promise(quote: DeadlineQuote, max_payment: Decimal | None, quoted_start: float | None,
                   quoted_finish: float | None) -> StartChange:
    """Refuse a booking whose price or guarantee is worse than the quote the tenant accepted
    (:class:`QuoteChanged`); else the start it gets against the quoted one (``selectors.StartChange``)."""
    price = quote.price
    if max_payment is not None and price > max_payment:
        raise QuoteChanged("max_payment", f"The price is now {price} (you accepted up to {max_payment}); quote again.", quote)
    change = start_change(quoted=quoted_start, booked=quote.starts_at, now=quote.start)
    if change.moved > START_TOLERANCE_S:
        raise QuoteChanged("quoted_start", f"{change.notice} Review the new quote and book again.", quote)
    if quoted_finish is not None:
        # the clock's own move since the quoted start delays the finish by as much: the tenant's wait, not the market's
        slack = max(quote.start - quoted_start, 0.0) if quoted_start is not None else 0.0
        later = quote.finishes_by - (quoted_finish + slack)
        if later > START_TOLERANCE_S:
            raise QuoteChanged("quoted_finish", (
                f"The guaranteed finish moved from {quoted_finish + slack:.0f} s to {quote.finishes_by:.0f} s on the market "
                f"clock ({seconds_text(later)} later; the market moved since the quote). Review the new quote and book again."),
                quote)
    return change


@transaction.atomic
def deadline_book(
    *, tenant: Tenant, work: Sequence[WorkItem], deadline: object, alpha_err: object = 1.0, beta_err: object = 1.0,
    max_payment: Decimal | None = None, quoted_start: float | None = None, quoted_finish: float | None = None,
    name: str = "", user: object = None,
) -> tuple[Job, DeadlineQuote]:
    """Book the quote: a job holding one reservation per resource type from now to its
    deadline (the planned execution time and the guarantee interval after it), paid at a
    fixed price through the ledger.

    The quote is recomputed under the market lock (prices, promised capacity and the running
    tasks may have moved since the tenant saw it). The booking keeps the quote the tenant
    accepted or asks again: ``max_payment`` refuses a dearer price, ``quoted_start`` (the quote's
    ``starts_at``, simulated s) a later start and ``quoted_finish`` (its ``finishes_by``) a later
    guaranteed finish; a start that moves sooner is booked and said so: the booking stores the
    quoted and the booked start (``selectors.start_change`` compares them).

    Returns:
        (the job, the quote it was booked at).

    Raises:
        ValidationError: the quote's field errors; ``deadline`` when no whole-slot
            vector meets it; ``payment`` when the account cannot pay. Nothing is written then.
        QuoteChanged: (a ``StateConflict``) the price, the start or the guaranteed finish is worse
            than the accepted quote's, with the new quote; nothing is written.
    """
    market = Market.objects.select_for_update().defer("engine_state").get(pk=tenant.market_id)
    quote = deadline_quote(market=market, work=work, deadline=deadline, alpha_err=alpha_err, beta_err=beta_err, curve=False)
    if not quote.feasible:
        reason = quote.reason or (f"With every available slot the job takes {seconds_text(quote.fastest_time)} (planned with"
                                  f" D' = {quote.alpha_err:g} x D); choose a later deadline.")
        raise ValidationError({"deadline": f"No booking can meet this deadline. {reason}"})
    change = _check_promise(quote, max_payment, quoted_start, quoted_finish)
    price = quote.price
    types = adapters.resource_types(market)
    job = Job.objects.create(
        market=market, tenant=tenant, queue_id=tenant.default_queue_id, name=(name or "deadline booking")[:120], budget=price,
        external_id="deadline", sim_submit_time=market.sim_time,
    )
    works = JobWork.objects.bulk_create(
        JobWork(job=job, resource_type=t, tasks=n, task_duration=d, weight=1.0, pending=n)
        for t, n, d in zip(types, quote.tasks, [w / n if n else 1.0 for w, n in zip(quote.workload, quote.tasks, strict=True)], strict=True)
        if n > 0
    )
    try:
        job_hold(tenant_id=tenant.pk, job=job, amount=price, user=user)
    except ValidationError as exc:
        raise ValidationError({"payment": exc.message_dict.get("budget", exc.messages)}) from None
    job_charge(job=job, amount=price, memo=f"deadline booking of job {job.pk}: fixed price")
    Job.objects.filter(pk=job.pk).update(charged=job.charged)
    # The window runs to the deadline, not just T': it holds the whole guaranteed interval
    # [T'/beta, T'/alpha] (<= D), and the units may come free late (running shared tasks are
    # not pre-empted). Units are withheld only while the job has unfinished tasks, and other
    # quotes count them only while it is active, so the longer window costs nobody else.
    start, end = quote.start, quote.deadline
    DeadlineBooking.objects.create(
        job=job, market=market, sim_deadline=quote.deadline, sim_start=start, sim_end=end, alpha_err=quote.alpha_err,
        beta_err=quote.beta_err, planned_deadline=quote.planned_deadline, exec_time=quote.exec_time,
        guarantee_low=quote.guarantee[0], guarantee_high=quote.guarantee[1], slots=quote.slots, unit_prices=quote.unit_prices,
        price_source=quote.price_source, payment=price, continuous_payment=quote.continuous_payment, work=quote.work,
        quoted_start=change.quoted, booked_start=change.booked,
    )
    reservations = [Reservation(job.pk, j, units, start, end) for j, units in enumerate(quote.slots) if units > 0]
    _book_reservations(market, job, quote, reservations, float(price))
    transaction.on_commit(lambda: adapters.remember_bid(job, works))
    market_changed(market=market)
    return job, quote


def _book_reservations(market: Market, job: Job, quote: DeadlineQuote, reservations: list[Reservation], price: float) -> None:
    """Put the job and its reservations into the market engine (the caller holds the market
    lock): the same seam as ERA's booking (``MarketEngine.book``).

    The Plan in force is applied again with the new reservations, so the next tick
    dispatches the job through them even before the clearing this booking triggers.
    """
    context = engine_context(market)
    # A copy: the loaded engine may be this process's cached one, which must not change unless
    # this transaction commits (engine_store remembers the copy only on commit).
    engine = MarketEngine.from_state(context.tree_map.tree, engine_load(market=market, context=context).to_state())
    spec = JobSpec(
        job_id=job.pk, leaf=context.tree_map.leaf_position(job.queue_id), tasks=tuple(quote.tasks),
        task_duration=tuple(w / n if n else 1.0 for w, n in zip(quote.workload, quote.tasks, strict=True)),
        submit_time=market.sim_time,
    )
    engine.submit(spec, Bid(price, tuple(1.0 if n else 0.0 for n in quote.tasks)))
    for r in reservations:
        engine.book(r, price)
    latest = adapters.latest_plan(market.pk)
    if latest is not None and latest[0] == engine.plan_id:
        engine.apply_plan(latest[1], plan_id=latest[0])
    elif latest is None and engine.plan_id is None:
        engine.apply_plan(empty_plan(engine.m))
    engine_store(market=market, context=context, engine=engine)
    market.save(update_fields=ENGINE_FIELDS)


# what this module offered before the quote's market data moved to ``selectors`` (hooks, tests, other parts)
__all__ = ["PRICE_SOURCE_CURVE", "PRICE_SOURCE_FLOOR", "DeadlineQuote", "QuoteChanged", "booked_job_ids", "booking_promises",
           "deadline_book",
           "deadline_quote", "floor_unit_price", "reserved_units", "unit_prices", "workload_of"]
