"""One market step, shared by the live market and every offline run (README, "How the market runs").

:class:`MarketEngine` owns the cluster model (``simulator.cluster.model``), the bids
of its jobs and the Plan in force. Its four verbs are the whole market loop:

* :meth:`~MarketEngine.submit` / :meth:`~MarketEngine.cancel` /
  :meth:`~MarketEngine.set_capacity` -- events (arrivals, cancellations,
  capacity changes);
* :meth:`~MarketEngine.snapshot` -- the clearing's input (paper 000, Sec. 3:
  budgets, utility weights, demand; grouped by leaf queue, warm-started from
  the last Plan's sub-budgets), rows in arrival order;
* :meth:`~MarketEngine.apply_plan` -- a clearing's Plan becomes the
  cluster's dispatch (reservations, shares) and the jobs' payment rules;
  ``fixed`` rules are charged here, at acceptance;
* :meth:`~MarketEngine.step` -- advance simulated time; departures are
  settled by their payment rule (:func:`scheduler.payments.settle`) and reported
  as charges, with the fairness samples.

The offline runner calls these in a loop; the live market (Django) loads an
engine, calls the same verbs and stores what they report. Nothing outside the
mechanism's Plan decides what a job pays.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.abacus.utility import utility_of
from scheduler.fairshare.fairness import QueueTree
from scheduler.payments import PaymentKind, PaymentRule, PaymentTable, budget_payment, settle
from scheduler.plan import Plan, Reservation
from scheduler.registry import MECHANISMS
from scheduler.types import MarketSnapshot
from simulator.cluster.model import Cluster
from simulator.integrals import ShareIntegrals
from simulator.market import state as engine_state
from simulator.market.records import Bid, Charge, JobBooks, MarketConfig, ShareTable, StepReport
from simulator.market.snapshot import BidColumns, Columns, build_snapshot
from simulator.records import JobFinished, JobSpec, TaskLaunch

__all__ = ["Bid", "Charge", "MarketConfig", "MarketEngine", "StepReport"]  # the records live in simulator.market.records




class MarketEngine:
    """The market loop's state and verbs (module docstring).

    Args:
        cluster: the cluster model (its policy and dispatch must match
            ``config``'s fair-share and dispatch stages).
        config: the market's stages and parameters.

    Raises:
        ValueError: the cluster's stages differ from the config's.
    """

    def __init__(self, cluster: Cluster, config: MarketConfig) -> None:
        if (cluster.policy, cluster.dispatch, cluster.history) != (config.fairshare, config.dispatch, config.history):
            raise ValueError("the cluster's fair-share policy and dispatch must be the config's")
        self.cluster = cluster
        self.config = config
        self._books: dict[int, JobBooks] = {}
        self._shares = ShareIntegrals(cluster.m)
        self._bids = BidColumns(cluster.m)  # the bids of ``_books`` by row, for the snapshot
        self._booked: list[Reservation] = []
        self._booked_price: dict[int, float] = {}  # job id -> its fixed price
        self.plan_id: int | None = None  # the stored Plan in force (live market)
        self._ruled: PaymentTable | None = None  # the table whose rules the known jobs hold (None: unknown)
        self._touched: set[int] = set()  # jobs whose rule was set since, outside a Plan

    @classmethod
    def create(
        cls, capacity: Sequence[int], tree: QueueTree, config: MarketConfig, *, seed: int = 0, sample_interval: float = 60.0,
        now: float = 0.0, staged: bool = True, known_durations: bool = True, executor: str = "simulated",
    ) -> MarketEngine:
        """A new engine on a new cluster (arguments as for :class:`Cluster`; ``executor``: "simulated"
        or "external", who runs the tasks the Plan starts)."""
        cluster = Cluster(
            capacity, tree, policy=config.fairshare, t_wait=config.t_wait, dispatch=config.dispatch, staged=staged,
            history=config.history, history_length=config.history_length,
            seed=seed, sample_interval=sample_interval, now=now, known_durations=known_durations, executor=executor,
        )
        return cls(cluster, config)

    @property
    def now(self) -> float:
        return self.cluster.now

    @property
    def m(self) -> int:
        return self.cluster.m

    # ------------------------------------------------------------------ events

    def submit(self, spec: JobSpec, bid: Bid) -> None:
        """A job arrives (at ``spec.submit_time``) with its bid.

        Raises:
            ValueError: as ``Cluster.submit``, or weights of the wrong length.
        """
        if len(bid.weights) != self.m:
            raise ValueError(f"job {spec.job_id}: weights need {self.m} entries")
        self.cluster.submit(spec)
        price = self._booked_price.get(spec.job_id)
        rule = budget_payment(bid.budget, bid.min_utility) if price is None else PaymentRule.fixed(price)
        arrival = max(spec.submit_time, self.now)
        row = self._shares.add(self.now)
        self._books[spec.job_id] = JobBooks(bid, rule, arrival, row, accepted=price is not None)
        self._bids.put(spec.job_id, row, bid)
        self._touched.add(spec.job_id)

    def cancel(self, job_id: int) -> None:
        """Cancel a known job: its tasks stop now; it owes nothing more
        (``settle`` with ``completed=False``: a fixed price stays paid).

        Raises:
            KeyError: unknown or departed job.
        """
        self.cluster.cancel(job_id)
        self._forget(job_id)
        self._unbook({job_id})

    def _unbook(self, job_ids: set[int]) -> None:
        """Drop the bookings of departed or cancelled jobs (an early finish frees its units)."""
        if job_ids:
            self._booked = [r for r in self._booked if r.job_id not in job_ids]
            for job in job_ids:
                self._booked_price.pop(job, None)
            self.cluster.drop_reservations(job_ids)

    def _forget(self, job_id: int) -> None:
        """Drop a departed or cancelled job's records."""
        books = self._books.pop(job_id, None)
        if books is not None:
            self._shares.remove(books.row)
            self._bids.drop(job_id)

    def set_capacity(self, capacity: Sequence[int]) -> None:
        """Change the slot counts (see ``Cluster.set_capacity``)."""
        self.cluster.set_capacity(capacity)

    def configure(self, config: MarketConfig) -> None:
        """Switch stages or parameters; fair-share history is kept where it can be
        (``Cluster.set_policy``); a new dispatch mode starts with fresh credits."""
        self.cluster.set_policy(
            policy=config.fairshare, t_wait=config.t_wait, history=config.history, history_length=config.history_length
        )
        if config.dispatch != self.cluster.dispatch:
            self.cluster.set_dispatch(config.dispatch)
        self.config = config

    def book(self, reservation: Reservation, price: float) -> None:
        """Hold a reservation at a price fixed now (the plug for ERA, deadline
        bookings and Cura): it joins every Plan the engine applies, and the
        job's payment rule is ``fixed(price)`` from now on, whatever later
        Plans say (paper 001 Sec. 2.3.1: the payment is fixed at reservation
        time). The price is paid by whoever booked it, at acceptance (the live
        market through its ledger), so the engine reports no charge for it.
        The job may be submitted before or after the booking. ``price`` is the
        job's whole fixed price: a job with several reservations (one per
        resource type) is booked once per reservation with that same total.
        """
        self._booked.append(reservation)
        self._booked_price[reservation.job_id] = float(price)
        books = self._books.get(reservation.job_id)
        if books is not None:
            books.rule, books.accepted = PaymentRule.fixed(price), True
            self._touched.add(reservation.job_id)

    def booked(self) -> tuple[Reservation, ...]:
        """The reservations booked and not yet departed."""
        return tuple(self._booked)

    def knows(self, job_id: int) -> bool:
        """True for a job the engine holds (arrived or announced, not departed)."""
        return job_id in self._books

    def known_jobs(self) -> list[int]:
        return list(self._books)

    # ---------------------------------------------------------------- clearing

    def snapshot(
        self, extra: Iterable[tuple[JobSpec, Bid]] = (), exclude: Iterable[int] = (), warm: Plan | None = None, *,
        config: MarketConfig | None = None, capacity: Sequence[int] | None = None,
    ) -> MarketSnapshot:
        """The clearing's input: the active jobs in arrival order, then ``extra``.

        ``extra`` are jobs the caller knows but has not submitted yet (the
        live market's bids since the last tick); each demands the types it has
        tasks of. ``exclude`` are jobs to leave out (the live market's
        cancellations since the last tick); reserved jobs are left out too
        (their Plan entry is fixed). ``warm`` is a newer Plan than the one
        applied (the live market clears twice between two ticks): the
        auction starts from its sub-budgets, as the offline loop does.
        ``config`` and ``capacity`` are the market's parameters and slot counts
        when they are newer than the engine's (the live market's settings
        changed since the last tick; a clearing must use them, the tick applies
        them to the engine). Shapes and sources as ``MarketSnapshot`` (paper 000, Sec. 3).
        """
        reserved = {r.job_id for r in self._booked} | set(exclude)
        states, ids = self.cluster.active_states(), self.cluster.active_ids()
        if reserved:
            states = [job for job in states if job.job_id not in reserved]
            ids = [job for job in ids if job not in reserved]
        cols = Columns.of_jobs(states, ids, self._bids, self._shares)
        for spec, bid in extra:
            if spec.job_id not in reserved:
                cols.add(spec.job_id, spec.leaf, bid, tuple(t > 0 for t in spec.tasks), None)
        return self._snapshot(cols, warm, config or self.config, capacity)

    def _snapshot(self, cols: Columns, warm: Plan | None, c: MarketConfig, capacity: Sequence[int] | None) -> MarketSnapshot:
        """The snapshot of the rows gathered in ``cols`` (``simulator.market.snapshot.build``), selling the
        auction's capacity at ``capacity`` slots (None: the cluster's)."""
        return build_snapshot(cols, warm, c, self._auction_capacity(capacity))

    def _auction_capacity(self, slots: Sequence[int] | None = None) -> NDArray[np.float64]:
        """(m,) units the auction sells now: the capacity (``slots``, default the cluster's)
        less the units of bookings in force (paper 001: reserved units are taken out for
        their window), at least 1 per type (the implied price divides by it)."""
        capacity = (self.cluster.capacity if slots is None else np.asarray(slots)).astype(np.float64)
        now = self.now
        for r in self._booked:
            if r.start <= now < r.end and r.resource < capacity.shape[0]:
                capacity[r.resource] -= r.units
        return np.maximum(capacity, 1.0)

    def clear(self) -> tuple[Plan, list[Charge]]:
        """Clear the market now with its mechanism and apply the Plan (offline loop)."""
        plan = self.with_bookings(MECHANISMS.build(self.config.mechanism).clear(self.snapshot()))
        return plan, self.apply_plan(plan)

    def with_bookings(self, plan: Plan) -> Plan:
        """``plan`` listing the engine's bookings among its reservations (every admitted
        reservation is in the Plan; ``apply_plan`` adds them anyway, without duplicates)."""
        return _with_reservations(plan, tuple(self._booked)) if self._booked else plan

    def apply_plan(self, plan: Plan, plan_id: int | None = None) -> list[Charge]:
        """Make ``plan`` the one in force (its shares, reservations and payment
        rules); rows of jobs the engine does not know are ignored (a clearing
        may race a departure). Returns the ``fixed`` prices due at acceptance.

        Raises:
            ValueError: as ``Cluster.set_plan``.
        """
        booked = tuple(self._booked)
        self.cluster.set_plan(plan if not booked else _with_reservations(plan, booked))  # validates the shares
        self._shares.close(self.now)  # the share integrals end at the old shares
        self._take_rows(plan)
        self.plan_id = plan_id
        return self._take_rules(plan)

    def _take_rows(self, plan: Plan) -> None:
        """The Plan's shares and sub-budgets become the known jobs' (copies)."""
        get = self._books.get
        held = [get(job_id) for job_id in plan.job_ids.tolist()]
        ks = [k for k, books in enumerate(held) if books is not None]
        rows = [held[k].row for k in ks]  # type: ignore[union-attr]
        if len(ks) == len(held):
            self._shares.assign(rows, np.asarray(plan.shares, dtype=np.float64))
            self._shares.assign_subs(rows, np.asarray(plan.sub_budgets, dtype=np.float64).reshape(-1, self.m))
        else:
            self._shares.assign(rows, np.asarray(plan.shares, dtype=np.float64)[ks])
            self._shares.assign_subs(rows, np.asarray(plan.sub_budgets, dtype=np.float64).reshape(-1, self.m)[ks])

    def _take_rules(self, plan: Plan) -> list[Charge]:
        """The Plan's payment rules become the known jobs'; the ``fixed`` prices due now.
        A job whose rule is the one it holds keeps that object (rules are values): a
        :class:`~scheduler.payments.PaymentTable` builds a rule only for a job whose rule changed,
        and after a table, visits only the rows that differ from it, the jobs whose rule changed
        since outside a Plan (arrivals, bookings) and the fixed prices (one may still be due):
        ``PaymentTable.visit_rows``."""
        charges = []
        payments = plan.payments
        last, self._ruled = self._ruled, None  # unknown until every row is taken
        ruled: PaymentTable | None = None
        if isinstance(payments, PaymentTable) and not payments.extra:
            raw = payments.raw_items() if last is None else payments.visit_rows(last, self._touched)
            ruled = payments
        elif isinstance(payments, PaymentTable):
            raw = payments.raw_items()
        else:
            raw = [(job, r.kind, r.amount, r.min_utility) for job, r in payments.items()]
        self._touched.clear()
        for job_id, kind, amount, min_utility in raw:
            books = self._books.get(job_id)
            if books is None or job_id in self._booked_price:
                continue  # gone, or booked: its fixed price stands
            rule = books.rule
            if rule.kind != kind or rule.amount != amount or rule.min_utility != min_utility:
                rule = books.rule = PaymentRule(kind, amount, min_utility)  # type: ignore[arg-type]
            if rule.due_at_acceptance and not books.accepted and rule.amount > 0:
                books.accepted = True
                charges.append(Charge(job_id, rule.amount, rule.kind, self.now))
        self._ruled = ruled
        return charges

    # ------------------------------------------------------------- the executor

    @property
    def executor(self) -> str:
        """Who runs the tasks: "simulated" (the cluster model) or "external" (a real cluster)."""
        return self.cluster.executor

    def set_executor(self, kind: str) -> None:
        """Switch who runs the tasks from now on. Allowed only while no task runs under the other one.

        Raises:
            ValueError: an unknown kind, or tasks still running under the other executor.
        """
        if kind == self.cluster.executor:
            return
        if kind not in ("simulated", "external"):
            raise ValueError(f"unknown executor {kind!r}")
        if any(self.cluster.busy()):
            raise ValueError(f"cannot switch to the {kind} executor while tasks run under the {self.cluster.executor} one")
        self.cluster.executor = kind

    def complete(self, key: int, units: int, *, at: float) -> None:
        """``units`` tasks of the external batch ``key`` ended well at simulated time ``at``: reported as
        departures and charged by the next :meth:`step` that reaches ``at`` (``Cluster.complete``).
        Raises KeyError (unknown batch) or ValueError (bad units or time)."""
        self.cluster.complete(key, units, at)

    def fail(self, key: int, units: int, *, at: float) -> None:
        """``units`` tasks of the external batch ``key`` failed at ``at``: they run again; failed work is
        never service (``Cluster.fail``). Raises like :meth:`complete`."""
        self.cluster.fail(key, units, at)

    def take_launches(self) -> list[TaskLaunch]:
        """Batches started since the last call, for the external executor (``Cluster.take_launches``)."""
        return self.cluster.take_launches()

    def take_kills(self) -> list[int]:
        """Keys of external batches killed since the last call (``Cluster.take_kills``)."""
        return self.cluster.take_kills()

    def external_batches(self) -> list[TaskLaunch]:
        """The batches the external executor runs now."""
        return self.cluster.external_batches()

    # -------------------------------------------------------------------- time

    def step(self, until: float, *, stop_on_departure: bool = False) -> StepReport:
        """Advance to ``until`` (or the first departure) and settle departures.

        Raises:
            ValueError: ``until`` before now.
        """
        report = self.cluster.advance(until, stop_on_departure=stop_on_departure)
        charges, settled = [], []
        achieved: dict[int, float] = {}
        averages: dict[int, NDArray[np.float64]] = {}
        rules: dict[int, PaymentKind] = {}
        for done in report.finished:
            averages[done.job_id] = self.average_share(done.job_id, done.finish_time)
            rules[done.job_id] = self._books[done.job_id].rule.kind
            amount = self._settle(done, achieved)
            settled.append(done.job_id)
            if amount > 0:
                charges.append(Charge(done.job_id, amount, self._books[done.job_id].rule.kind, done.finish_time))
            self._forget(done.job_id)
        if self._booked:
            self._unbook({d.job_id for d in report.finished})
            if any(r.end <= self.now for r in self._booked):  # windows closed with work left
                self._booked = [r for r in self._booked if r.end > self.now]  # the fixed prices stand
                self.cluster.expire_reservations()
        return StepReport(
            report.now, report.finished, charges, settled, report.samples, report.progress,
            report.started_tasks, report.finished_tasks, report.first_starts, achieved, averages, rules,
        )

    def _settle(self, done: JobFinished, achieved: dict[int, float]) -> float:
        b = self._books[done.job_id]
        utility = None
        if b.rule.kind == "if_slo_met":
            utility = achieved[done.job_id] = self.achieved_utility(done.job_id, done.finish_time)
        return settle(b.rule, completed=True, achieved_utility=utility)

    def average_share(self, job_id: int, at: float) -> NDArray[np.float64]:
        """(m,) the job's time-averaged shares from arrival to ``at`` (paper 000,
        Sec. 5, Def. 1: the "average job resource")."""
        b = self._books[job_id]
        share = self._shares.share(b.row)
        area = self._shares.area(b.row) + (0.0 if share is None else share * (at - self._shares.mark(b.row)))
        span = at - b.arrival
        avg: NDArray[np.float64] = area / span if span > 0 else (share if share is not None else np.zeros(self.m))
        return avg

    def achieved_utility(self, job_id: int, at: float) -> float:
        """Utility of the job's time-averaged shares from arrival to ``at``
        (paper 000, Sec. 5: the "average job resource")."""
        b = self._books[job_id]
        avg = self.average_share(job_id, at)
        weights = np.array([b.bid.weights], dtype=np.float64)
        return float(utility_of(np.array([avg]), weights, [b.bid.utility])[0])

    def current_shares(self) -> dict[int, tuple[float, NDArray[np.float64]]]:
        """job id -> (arrival time, (m,) share in force) for known jobs the Plan covers."""
        out = {}
        for job, b in self._books.items():
            share = self._shares.share(b.row)
            if share is not None:
                out[job] = (b.arrival, share)
        return out

    def share_table(self) -> ShareTable:
        """:meth:`current_shares` as arrays (no dict, no array a job): the known jobs the Plan
        covers, in the books' order."""
        books = self._books
        n = len(books)
        rows = np.fromiter((b.row for b in books.values()), dtype=np.intp, count=n)
        has = self._shares._has[rows]
        ids = np.fromiter(books, dtype=np.int64, count=n)[has]
        arrival = np.fromiter((b.arrival for b in books.values()), dtype=np.float64, count=n)[has]
        return ShareTable(ids, arrival, self._shares._share[rows[has]])

    def rule_of(self, job_id: int) -> PaymentRule:
        """The payment rule in force for a known job. Raises KeyError."""
        return self._books[job_id].rule

    # ------------------------------------------------------------ serialisation

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable state (exact float round trip; ``simulator.market.state``); see :meth:`from_state`."""
        return engine_state.dump(self)

    @classmethod
    def from_state(cls, tree: QueueTree, state: Mapping[str, Any]) -> MarketEngine:
        """Rebuild an engine saved by :meth:`to_state` on the same tree (``simulator.market.state``).

        Raises:
            ValueError: unknown format, or a tree that does not match.
        """
        config, cluster = engine_state.config_and_cluster(tree, state)
        engine = cls(cluster, config)
        engine_state.restore(engine, state)
        return engine


def _with_reservations(plan: Plan, booked: tuple[Reservation, ...]) -> Plan:
    """``plan`` with ``booked`` added to its reservations, each reservation once."""
    return replace(plan, reservations=tuple(dict.fromkeys(tuple(plan.reservations) + booked)))
