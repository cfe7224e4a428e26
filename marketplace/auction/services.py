"""Bids: submitting and cancelling jobs (paper 000, Sec. 3: a budget and a utility).

Data flow: validate, then in one transaction lock the market row and bump its state
version (one statement: ``market.services.market.market_lock_and_bump``), write the job with
its work and place the budget hold; after commit, the clearing is enqueued.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace
from decimal import ROUND_DOWN, Decimal

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum

from marketplace.auction.models import AdoptedUtility, WorkItem
from marketplace.auction.selectors import class_training_data, reserve_minimum
from marketplace.infra import instances, rows
from marketplace.ledger.money import MONEY_PLACES, MONEY_QUANTUM, format_money
from marketplace.ledger.services import job_held_amount, job_hold, job_settle
from marketplace.market import adapters, hooks
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.market import engine_context, enqueue_clearing, market_lock_and_bump
from marketplace.market.services.rates import Served, rates_record
from marketplace.market.validation import StateConflict, parse_decimal_strict
from scheduler.abacus.fit import fit_utility

MAX_BUDGET = Decimal("1000000000")  # 1e9 money units: far above any account, far below the column's 18 digits
MAX_TASKS = 1_000_000
MAX_TASK_DURATION_S = 7 * 24 * 3600.0


def parse_budget(value: object) -> Decimal:
    """A positive, finite money amount with at most 4 decimals (``market.validation.parse_decimal_strict``).

    Raises:
        ValidationError: {"budget": ...} for non-numeric (including non-ASCII digits,
            ``_`` separators, surrounding spaces and exponents), NaN, infinite, zero,
            negative or absurd values.
    """
    try:
        budget = parse_decimal_strict(value)
    except ValidationError as exc:
        raise ValidationError({"budget": exc.messages}) from None
    if budget <= 0:
        raise ValidationError({"budget": "The budget must be greater than zero."})
    if budget > MAX_BUDGET:
        raise ValidationError({"budget": f"The budget may not exceed {MAX_BUDGET}."})
    # Kept and shown to MONEY_PLACES (marketplace.ledger.money): a finer budget would be shown rounded.
    if budget != budget.quantize(MONEY_QUANTUM):
        raise ValidationError({"budget": f"Use at most {MONEY_PLACES} decimal places (the smallest amount is {MONEY_QUANTUM})."})
    return budget


def _validate_work(resource_types: list[ResourceType], work: list[WorkItem]) -> dict[str, tuple[ResourceType, WorkItem]]:
    types = {t.name: t for t in resource_types}
    errors: list[str] = []
    chosen: dict[str, tuple[ResourceType, WorkItem]] = {}
    for item in work:
        if item.resource_type not in types:
            errors.append(f"Unknown resource type '{item.resource_type}' (known: {', '.join(sorted(types))}).")
        elif item.resource_type in chosen:
            errors.append(f"Resource type '{item.resource_type}' is given twice.")
        elif not isinstance(item.tasks, int) or isinstance(item.tasks, bool) or not 0 <= item.tasks <= MAX_TASKS:
            errors.append(f"{item.resource_type}: the number of tasks must be a whole number from 0 to {MAX_TASKS}.")
        elif not (math.isfinite(item.task_duration) and 0 < item.task_duration <= MAX_TASK_DURATION_S):
            errors.append(f"{item.resource_type}: the task duration must be a positive number of seconds up to {MAX_TASK_DURATION_S:.0f}.")
        elif not (math.isfinite(item.weight) and 0 <= item.weight <= 1e6):
            errors.append(f"{item.resource_type}: the utility weight must be a number from 0 to 1e6.")
        else:
            chosen[item.resource_type] = (types[item.resource_type], item)
    if not errors and sum(item.tasks for _, item in chosen.values()) == 0:
        errors.append("The job needs at least one task.")
    if not errors and all(item.weight == 0 for _, item in chosen.values() if item.tasks > 0):
        errors.append("At least one resource type with tasks needs a positive utility weight.")
    if errors:
        raise ValidationError({"work": errors})
    return chosen


def _leaf_queue(tenant: Tenant, queue: Queue | None, leaf_ids: tuple[int, ...]) -> int:
    """The id of the leaf queue the job goes to (the tenant's default unless given)."""
    if queue is not None and queue.market_id != tenant.market_id:
        raise ValidationError({"queue": "This queue belongs to another market."})
    queue_id = tenant.default_queue_id if queue is None else queue.pk
    if queue_id not in leaf_ids:
        raise ValidationError({"queue": "Jobs go to leaf queues; this queue has sub-queues."})
    return queue_id


def bid_work_errors(*, tenant: Tenant, work: list[WorkItem]) -> dict[str, list[str]]:
    """``{"work": [...]}`` when the work does not fit the tenant's market (unknown or repeated
    resource types, bad counts), else ``{}``: for answering every field error of a bid at once."""
    try:
        _validate_work(adapters.resource_types(tenant.market_id), work)
    except ValidationError as exc:
        return dict(exc.message_dict)
    return {}


def _check_bid(tenant: Tenant, budget: object, utility: str, min_utility: float | None, work: list[WorkItem], adopted: bool) -> Decimal:
    """The budget, once every field has been checked: all field errors at once (a bad budget
    does not hide a bad resource type). The work is read against the market's types here only
    when another field is wrong already (a query the good bid does not pay: it is checked under
    the market's lock in any case)."""
    errors: dict[str, list[str]] = {}
    amount = Decimal(0)
    try:
        amount = parse_budget(budget)
    except ValidationError as exc:
        errors.update(exc.message_dict)
    if utility not in Job.Utility.values:
        errors["utility"] = [f"Choose one of: {', '.join(Job.Utility.values)}."]
    if min_utility is not None and not math.isfinite(float(min_utility)):
        errors["min_utility"] = ["The SLO must be a finite number (or left empty)."]
    if errors and not adopted:
        errors.update(bid_work_errors(tenant=tenant, work=work))
    if errors:
        raise ValidationError(errors)
    return amount


def bid_submit(
    *,
    tenant: Tenant,
    budget: object,
    work: list[WorkItem],
    utility: str = Job.Utility.LINEAR,
    name: str = "",
    queue: Queue | None = None,
    external_id: str = "",
    user: object = None,
    min_utility: float | None = None,
    job_class: str = "",
    use_adopted_utility: bool = False,
    savepoint: bool = True,
) -> Job:
    """Place a bid: create the job, hold its budget, and trigger a clearing after commit.

    In a transaction of its own, or a savepoint of the caller's; with ``savepoint=False`` in the
    caller's transaction as it is (two statements fewer), for a caller that rolls all of it back
    on any error (the API's requests: ``api.idempotency``).

    Raises:
        ValidationError: a dict of field errors (budget, work, utility, queue); nothing is written.
    """
    with transaction.atomic(savepoint=savepoint):
        return _bid_place(tenant=tenant, budget=budget, work=work, utility=utility, name=name, queue=queue,
                          external_id=external_id, user=user, min_utility=min_utility, job_class=job_class,
                          use_adopted_utility=use_adopted_utility)


def _bid_place(*, tenant: Tenant, budget: object, work: list[WorkItem], utility: str, name: str, queue: Queue | None,
               external_id: str, user: object, min_utility: float | None, job_class: str, use_adopted_utility: bool) -> Job:
    """:func:`bid_submit`'s work, in the transaction it opened."""
    amount = _check_bid(tenant, budget, utility, min_utility, work, use_adopted_utility)
    job_class, work, utility = bid_terms(tenant=tenant, name=name, job_class=job_class, work=work, utility=utility,
                                         use_adopted_utility=use_adopted_utility)
    slo_check(min_utility=min_utility, utility=utility, work=work)
    # Lock order: market, then the account (inside job_hold). Every other writer queues on the
    # market row, so from here to the commit each round trip counts: the lock and the version
    # bump are one statement.
    market = market_lock_and_bump(market_id=tenant.market_id)
    context = engine_context(market)
    queue_id = _leaf_queue(tenant, queue, context.tree_map.leaf_queue_ids)
    chosen = _validate_work(context.types, work)
    reserve_check(budget=amount, chosen=chosen.values())
    job = Job(
        market=market, tenant=tenant, queue_id=queue_id, name=name[:120], budget=amount, utility=utility,
        external_id=external_id, sim_submit_time=market.sim_time,
        min_utility=None if min_utility is None else float(min_utility), job_class=job_class,
    )
    rows.insert_instances([job])  # as job.save() stores it, from a statement built once (a bid is the commonest write)
    works = [JobWork(job=job, resource_type=rt, tasks=it.tasks, task_duration=it.task_duration, weight=it.weight, pending=it.tasks)
             for rt, it in chosen.values()]
    rows.insert_instances(works)
    job._prefetched_objects_cache = {"work": works}  # job.work.all() without a query (the API's answer reads it)
    job_hold(tenant_id=tenant.pk, job=job, amount=amount, user=user)
    transaction.on_commit(lambda: adapters.remember_bid(job, works))  # before the clearing, which reads it
    enqueue_clearing(market_id=market.pk)
    return job


def reserve_check(*, budget: Decimal, chosen: Iterable[tuple[ResourceType, WorkItem]]) -> None:
    """Refuse a budget below :func:`reserve_minimum`.

    Raises:
        ValidationError: {"budget": ...} naming the minimum and the reserve prices behind it.
    """
    pairs = list(chosen)
    least = reserve_minimum(pairs)
    if budget < least:
        rates = ", ".join(f"{rt.name} {float(rt.reserve_price):g}" for rt, _ in pairs if rt.reserve_price > 0)
        raise ValidationError({"budget": [
            f"The budget must be at least {least} for this work: the reserve prices ({rates} credits per slot-second) "
            "times its slot-seconds. Below the reserve price the market sells no slot."]})


def slo_reachable(*, utility: str, work: list[WorkItem]) -> float:
    """The highest utility ``work`` can reach: every share at 1 on the types it uses (paper 000,
    Sec. 3: linear ``sum_j w_j``, logscale ``sum_j w_j log 1 = 0``)."""
    if utility == Job.Utility.LOG:
        return 0.0
    return float(sum(it.weight for it in work if it.tasks > 0))


def slo_check(*, min_utility: float | None, utility: str, work: list[WorkItem]) -> None:
    """Refuse an SLO that cannot be met (docs/economy.md, "SLOs"): an SLO job pays only if its
    utility reaches ``min_utility`` (paper 000, Sec. 6), so an SLO above what full service reaches
    would buy service for nothing.

    Raises:
        ValidationError: {"min_utility": ...} naming the highest reachable utility.
    """
    if min_utility is None:
        return
    top = slo_reachable(utility=utility, work=work)
    if float(min_utility) > top * (1 + 1e-9) + 1e-12:
        raise ValidationError({"min_utility": [
            f"This SLO cannot be met: the most this bid's {utility} utility reaches, with all of every type it uses, is {top:g}. "
            "An SLO job pays only when its SLO is met, so an SLO above that is refused."]})
def bid_terms(*, tenant: Tenant, name: str, job_class: str, work: list[WorkItem], utility: str,
              use_adopted_utility: bool) -> tuple[str, list[WorkItem], str]:
    """``(job class, work, utility kind)`` a bid is placed and previewed with: the one rule of the
    adopted utility (paper 000, Sec. 5), for the bid itself and for both previews (page and API).

    The job class is ``job_class``, else the bid's ``name`` (stripped, at most 120 characters). With
    ``use_adopted_utility`` the work's weights and the utility kind are the fit the tenant adopted
    for that class (:func:`adopted_work`); otherwise ``work`` and ``utility`` as given.

    Raises:
        ValidationError: {"use_adopted_utility": ...} when no fit was adopted for the class.
    """
    job_class = (job_class or name).strip()[:120]
    if use_adopted_utility:
        work, utility = adopted_work(tenant=tenant, job_class=job_class, work=work)
    return job_class, work, utility


def adopted_work(*, tenant: Tenant, job_class: str, work: list[WorkItem]) -> tuple[list[WorkItem], str]:
    """The work with the weights (and utility kind) the tenant adopted for ``job_class``
    (paper 000, Sec. 5): types the fit does not name get weight 0.

    Raises:
        ValidationError: {"use_adopted_utility": ...} when no fit was adopted for the class.
    """
    adopted = AdoptedUtility.objects.filter(tenant=tenant, job_class=job_class).first()
    if adopted is None:
        raise ValidationError({"use_adopted_utility": f"No adopted utility for job class {job_class!r}: adopt a fit first."})
    weights = {str(k): float(v) for k, v in adopted.weights.items()}
    return [replace(it, weight=weights.get(it.resource_type, 0.0)) for it in work], adopted.utility


@dataclass(frozen=True)
class CancellationCharge:
    """What a cancelled auction job pays (docs/economy.md, "Cancellations").

    Attributes:
        amount: money charged from the hold: ``budget x done / total`` rounded down to the
            money's places, at most the hold.
        done: (m,) slot-seconds of completed tasks per resource type (the service received).
        total: slot-seconds of the job's whole work.
    """

    amount: Decimal
    done: tuple[float, ...]
    total: float

    @property
    def fraction(self) -> float:
        return sum(self.done) / self.total if self.total > 0 else 0.0


def cancellation_charge(*, budget: Decimal, held: Decimal, work: list[tuple[int, float, int]]) -> CancellationCharge:
    """The charge of an auction job cancelled with ``work`` = [(tasks, seconds per task, tasks done)]
    per resource type (paper 000, Sec. 3, pays its budget at completion; a cancelled job pays the
    budget times the fraction of its work done, the completed tasks' slot-seconds over the whole
    work's; a killed task delivered nothing and is not counted). Bounded by ``held``."""
    done = tuple(float(n_done) * float(duration) for _, duration, n_done in work)
    total = float(sum(float(tasks) * float(duration) for tasks, duration, _ in work))
    if total <= 0 or sum(done) <= 0:
        return CancellationCharge(Decimal(0).quantize(MONEY_QUANTUM), done, total)
    # exact decimal arithmetic on each type's slot-seconds, so the rule gives the same cents everywhere
    fraction = sum(Decimal(repr(d)) for d in done) / sum(Decimal(repr(float(t) * float(w))) for t, w, _ in work)
    amount = min((budget * min(fraction, Decimal(1))).quantize(MONEY_QUANTUM, rounding=ROUND_DOWN), held)
    return CancellationCharge(amount, done, total)


def job_cancel(*, job: Job, user: object = None, savepoint: bool = True) -> Job:
    """Cancel an active job; the cluster drops its tasks at the next tick (its running tasks are killed).

    Money (docs/economy.md, "Cancellations"): a job at a price fixed at acceptance (an ERA
    reservation, a deadline booking: ``market.hooks.fixed_price_jobs``) keeps that
    price paid and gets the rest of its hold back; an auction job pays for the service it received,
    :func:`cancellation_charge` (its budget times the fraction of its work done, at most its hold),
    and gets the rest back. The ledger memo names what was paid for; the payment adds to the spot
    market's realised rate.

    The job returned carries its work rows as read under the lock (``job.work.all()`` without a
    query; a cancellation does not change them). In a transaction of its own, or a savepoint of the
    caller's; with ``savepoint=False`` in the caller's transaction as it is, for a caller that rolls
    all of it back on any error (as :func:`bid_submit`).

    Raises:
        StateConflict: {"status": ...} if the job has already finished or been cancelled (a ValidationError).
    """
    if job.status not in Job.ACTIVE:  # as the caller read it: an ended job never becomes active again
        raise _not_cancellable(job)  # so no lock is taken for it (a fifth of the cancellations under load)
    with transaction.atomic(savepoint=savepoint):
        return _cancel_locked(job, user)


def _cancel_locked(job: Job, user: object) -> Job:
    """:func:`job_cancel`'s work, in the transaction it opened."""
    market = market_lock_and_bump(market_id=job.market_id)  # lock order: market, then job
    job = instances.get_row(Job, job.pk, for_update=True)
    job.market = market  # the row just locked: the caller's answer reads it without another query
    if job.status not in Job.ACTIVE:  # ended meanwhile: the bump rolls back with the error
        raise _not_cancellable(job)
    held = job_held_amount(job=job)
    types = engine_context(market).types
    # with no task done nothing is owed whatever the payment rule: the rule and the level of demand are
    # read only when work was done (the cancellation holds the market row every writer waits for)
    by_id = {t.pk: t for t in types}
    works = instances.find_rows(JobWork, job=job.pk)  # the statement built once (the ORM's compiling cost more)
    for w in works:
        if w.resource_type_id in by_id:
            w.resource_type = by_id[w.resource_type_id]
    works.sort(key=lambda w: (w.resource_type.stage, w.resource_type_id))  # JobWork's ordering
    job._prefetched_objects_cache = {"work": works}  # the caller's answer reads them without a query
    charge, fixed = _cancellation(job, held, types, lazy=True, works=works)
    amount = Decimal(0) if fixed else charge.amount
    if held > 0:
        job_settle(job=job, amount=amount, held=held, memo=_cancel_memo(job, charge, amount))
    if not fixed and sum(charge.done) > 0:
        rates_record(market_id=market.pk, sim_time=market.sim_time, types=types,
                     served=[Served(job.pk, amount, charge.done, job.tenant_id)], utilisation=_utilisation(market, types))
    job.status = Job.Status.CANCELLED
    job.sim_finish_time = market.sim_time
    job.slot_seconds = float(sum(charge.done))
    rows.update_rows(Job, ("status", "sim_finish_time", "charged", "slot_seconds"), ("id",),
                     [(job.status, job.sim_finish_time, job.charged, job.slot_seconds, job.pk)])
    enqueue_clearing(market_id=market.pk)
    return job


def _cancellation(job: Job, held: Decimal, types: list[ResourceType], *, lazy: bool = False,
                  works: list[JobWork] | None = None) -> tuple[CancellationCharge, bool]:
    """The rule's charge for ``job`` now, and whether it holds a fixed price instead (with ``lazy``,
    asked only when some work was done: without, the charge is 0 either way). ``works``: the job's
    work rows when the caller has read them."""
    if works is None:
        works = list(JobWork.objects.filter(job_id=job.pk).only("resource_type_id", "tasks", "task_duration", "done"))
    by_type = {w.resource_type_id: w for w in works}
    work = [(w.tasks, w.task_duration, w.done) if (w := by_type.get(t.pk)) else (0, 1.0, 0) for t in types]
    charge = cancellation_charge(budget=job.budget, held=held, work=work)
    fixed = False if lazy and sum(charge.done) <= 0 else bool(hooks.fixed_price_jobs([job.pk]))
    return charge, fixed


def cancellation_preview(*, job: Job) -> tuple[Decimal, CancellationCharge, bool]:
    """What cancelling ``job`` now would cost (no write): (amount charged, the rule's figures,
    True if it holds a price fixed at acceptance, which stays paid and nothing more is charged)."""
    charge, fixed = _cancellation(job, job_held_amount(job=job), adapters.resource_types(job.market_id))
    return (Decimal(0) if fixed else charge.amount), charge, fixed


def _cancel_memo(job: Job, charge: CancellationCharge, amount: Decimal) -> str:
    if amount <= 0:
        return ""
    return (f"job {job.pk} cancelled: {charge.fraction:.1%} of its work done ({sum(charge.done):,.0f} of {charge.total:,.0f} "
            f"slot-seconds), paid that share of its budget of {format_money(job.budget)}")


def _utilisation(market: object, types: list[ResourceType]) -> list[float]:
    """(m,) busy slots / capacity of each type as of the last tick (the level of demand now)."""
    running = dict(JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE).values("resource_type_id")
                   .annotate(r=Sum("running")).values_list("resource_type_id", "r"))
    return [float(running.get(t.pk) or 0) / t.capacity if t.capacity else 0.0 for t in types]


def _not_cancellable(job: Job) -> StateConflict:
    return StateConflict({"status": f"A {job.status} job cannot be cancelled."})


@transaction.atomic
def utility_fit_adopt(*, tenant: Tenant, job_class: str, user: object = None) -> AdoptedUtility:
    """Fit the class's weights now (k >= m completed jobs) and adopt them for new bids.

    Raises:
        ValidationError: {"job_class": ...} for an empty class or fewer than m completed jobs.
    """
    job_class = job_class.strip()
    if not job_class:
        raise ValidationError({"job_class": "Name the job class to adopt a fit for."})
    types = [t.name for t in adapters.resource_types(tenant.market_id)]
    kind, points = class_training_data(tenant=tenant, job_class=job_class, types=types)
    if len(points) < len(types):
        raise ValidationError({"job_class": f"{len(points)} completed job(s) of class {job_class!r}; a fit needs at least {len(types)}."})
    fit = fit_utility([p[0] for p in points], [p[1] for p in points], kind)
    adopted, _ = AdoptedUtility.objects.update_or_create(
        tenant=tenant, job_class=job_class,
        defaults={
            "utility": kind, "jobs": fit.jobs,
            "weights": dict(zip(types, fit.weights.tolist(), strict=True)),
            "spread": dict(zip(types, fit.spread.tolist(), strict=True)),
            "adopted_by": user if getattr(user, "pk", None) else None,
        },
    )
    return adopted
