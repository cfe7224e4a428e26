"""A hypothesis state machine over the money-moving services, across several tenants.

Rules: bid (affordable or not), a Cura job on the VM pools (paper 004: the dearest
deadline-meeting configuration held at submission, the chosen one charged when it ends)
and its cancellation, reserve (an ERA quote, then accept or decline: the
price is held and charged at acceptance), cancel, tick (the cluster clock; jobs
finish and are charged), clear (a market clearing), complete (run everything to the
end), and a tenant reading another tenant's job through the API. After every step:

* every account's ledger reconciles to the cent (``ledger_reconcile``), and no balance is negative;
* every job's money is in exactly one state: active jobs hold their whole budget and have
  released nothing (charged nothing, unless a reservation's price was charged at
  acceptance); finished and cancelled jobs hold nothing, and their charge plus release
  equals the budget (a cancelled bid pays its budget times the fraction of its work done,
  at most its hold; a reservation keeps its price);
* every Cura job's money is in one state: live jobs hold what was held at submission;
  done ones are charged their configuration's cost and the rest released; missed ones, and
  ones cancelled before they ran, have everything released; ones cancelled while running pay
  the VM-seconds they held (at most their cost and hold) and get the rest back;
* money is conserved: deposits = available + held + charged, over all tenants;
* a tenant's job lists hold only its own jobs, and another tenant's job is a 404.

The market and its tenants are created once; each example runs in a savepoint that is
rolled back at its end (and this process's engine copy is dropped), so every example
starts from the same fresh market. The invariants' reads are compiled to SQL once per market
(:class:`Compiled`), one statement each, and the tenants' API clients are built once: both
used to cost more than the steps they checked.
``STATE_MACHINE_EXAMPLES`` sets the number of random sequences (1,000 in CI, 200 locally).
"""

from __future__ import annotations

import os
from decimal import ROUND_DOWN, Decimal
from itertools import count
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connections, transaction
from django.db.models import Q, QuerySet, Sum
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.models import Account, LedgerEntry
from marketplace.ledger.services import ledger_reconcile, money
from marketplace.market import adapters, selectors
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import engine_forget
from marketplace.pools.models import CuraJob, VMInstanceType
from marketplace.pools.services.jobs import cancellation_cost, cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import pool_resize, vm_type_save
from marketplace.reservations.models import Reservation, ReservationQuote
from marketplace.reservations.services import reservation_accept, reservation_decline, reservation_quote
from tests.factories import MarketFactory, TenantFactory, leaf

# 1,000 random sequences in CI (about 80 s of CPU where 10^7 Python additions take 0.4 s,
# bench.figures.python_additions_s); 200 in a local run unless asked for more.
EXAMPLES = int(os.environ.get("STATE_MACHINE_EXAMPLES") or (1000 if os.environ.get("CI") else 200))
DEPOSIT = Decimal("300")
LEAVES = ("root.orga.analytics", "root.orga.etl", "root.orgb.research")
_names = count()

budgets = st.decimals(min_value=Decimal("0.0001"), max_value=Decimal("400"), places=4)
work = st.lists(
    st.tuples(st.sampled_from(["map", "reduce"]), st.integers(1, 4), st.floats(1.0, 200.0)), min_size=1, max_size=2,
    unique_by=lambda w: w[0],
)


class MoneyMachine(RuleBasedStateMachine):
    jobs = Bundle("jobs")
    cura_jobs = Bundle("cura_jobs")
    market: Market
    tenants: list[Tenant]
    queries: SimpleNamespace
    apis: list[APIClient]

    @classmethod
    def create_market(cls) -> None:
        n = next(_names)
        cls.market = MarketFactory(name=f"sm{n}")
        cls.tenants = [
            TenantFactory(market=cls.market, username=f"sm{n}-{k}", deposit=DEPOSIT, queue=leaf(cls.market, path))
            for k, path in enumerate(LEAVES)
        ]
        # VM pools for Cura jobs, at prices these deposits afford (the paper's are 1/6..2/3 per VM-second)
        for name, vcpus in (("VM-1", 2), ("VM-2", 4), ("VM-3", 8)):
            vt = vm_type_save(market=cls.market, name=name, vcpus=vcpus, memory_gb=float(vcpus), price=Decimal("0.0002") * vcpus)
            pool_resize(pool=vt.pool, size=20)
        cls.queries = _invariant_queries(cls.market, cls.tenants)
        # one API client per tenant for all examples (a client's first request builds its handler's
        # middleware chain, and with it the static files' index: tens of ms)
        cls.apis = [APIClient() for _ in cls.tenants]
        for api, tenant in zip(cls.apis, cls.tenants, strict=True):
            api.force_authenticate(tenant.user)

    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self._forget()

    def teardown(self) -> None:
        transaction.set_rollback(True)
        self._atomic.__exit__(None, None, None)
        self._forget()

    def _forget(self) -> None:
        # The rollback restores the rows; this process's copies of them must go too.
        adapters.forget_bids()
        selectors.forget_caches()
        engine_forget(market_id=self.market.pk)

    @initialize()
    def start(self) -> None:
        pass

    @rule(target=jobs, who=st.integers(0, len(LEAVES) - 1), budget=budgets, items=work)
    def bid(self, who: int, budget: Decimal, items: list[tuple[str, int, float]]) -> object:
        tenant = self.tenants[who]
        tenant.account.refresh_from_db()
        before = (Job.objects.count(), LedgerEntry.objects.count())
        try:
            job = bid_submit(tenant=tenant, budget=budget, work=[WorkItem(r, n, d) for r, n, d in items])
        except ValidationError:
            assert budget > tenant.account.available  # refused only when unaffordable
            assert (Job.objects.count(), LedgerEntry.objects.count()) == before  # and nothing was written
            return None
        assert budget <= tenant.account.available
        return job.pk

    @rule(target=jobs, who=st.integers(0, len(LEAVES) - 1), units=st.integers(1, 12),
          duration=st.sampled_from([60.0, 300.0, 900.0]), lead=st.sampled_from([0.0, 60.0, 600.0]), accept=st.booleans())
    def reserve(self, who: int, units: int, duration: float, lead: float, accept: bool) -> object:
        tenant = self.tenants[who]
        now = Market.objects.values_list("sim_time", flat=True).get(pk=self.market.pk)
        start = (now // 60.0 + 1.0) * 60.0 + lead  # on the 60 s slot grid, after the clock
        money_before = LedgerEntry.objects.count()
        try:
            quote = reservation_quote(tenant=tenant, resource_type="map", units=units, duration=duration,
                                      arrival=start, deadline=start + 2 * duration + 600.0)
        except ValidationError:
            assert LedgerEntry.objects.count() == money_before  # a refused quote moves nothing
            return None
        assert LedgerEntry.objects.count() == money_before  # a quote holds no money
        if not accept:
            assert reservation_decline(quote=quote).status == ReservationQuote.Status.DECLINED
            assert LedgerEntry.objects.count() == money_before
            return None
        tenant.account.refresh_from_db()
        try:
            reservation = reservation_accept(quote=quote)
        except ValidationError:
            assert LedgerEntry.objects.count() == money_before  # unaffordable or moved: nothing booked, nothing paid
            return None
        assert reservation.price <= tenant.account.available + tenant.account.held
        return reservation.job_id

    @rule(target=cura_jobs, who=st.integers(0, len(LEAVES) - 1), job_type=st.integers(1, 4),
          deadline=st.sampled_from([100.0, 400.0, 1000.0, 3000.0]))
    def cura_submit(self, who: int, job_type: int, deadline: float) -> object:
        tenant = self.tenants[who]
        before = LedgerEntry.objects.count()
        try:
            job = cura_job_submit(tenant=tenant, job_type=job_type, deadline_in_s=deadline)
        except ValidationError:
            assert LedgerEntry.objects.count() == before  # refused (deadline or funds): nothing moved
            return None
        assert job.held > 0 and (job.cost is None or job.held >= money(float(job.cost)))
        return job.pk

    @rule(job_id=consumes(cura_jobs))
    def cura_cancel(self, job_id: int | None) -> None:
        if job_id is None:
            return
        job = CuraJob.objects.get(pk=job_id)
        try:
            cura_job_cancel(job=job)
        except ValidationError:
            assert job.status not in CuraJob.LIVE  # refused only once it has ended

    @rule(job_id=consumes(jobs))
    def cancel(self, job_id: int | None) -> None:
        if job_id is None:
            return
        job = Job.objects.get(pk=job_id)
        try:
            job_cancel(job=job)
        except ValidationError:
            assert job.status not in Job.ACTIVE  # refused only once it has finished

    @rule(seconds=st.floats(0.0, 300.0))
    def tick(self, seconds: float) -> None:
        cluster_advance(market_id=self.market.pk, seconds=seconds)

    @rule()
    def clear(self) -> None:
        assert market_clear(market_id=self.market.pk).status in ("cleared", "current")

    @rule()
    def complete(self) -> None:
        market_clear(market_id=self.market.pk)
        cluster_advance(market_id=self.market.pk, seconds=5_000.0)  # >> any job's work (4 tasks x 200 s per type)

    @rule(reader=st.integers(0, len(LEAVES) - 1), job_id=jobs)
    def read_other_tenants_job(self, reader: int, job_id: int | None) -> None:
        if job_id is None:
            return
        owner = Job.objects.values_list("tenant_id", flat=True).get(pk=job_id)
        resp = self.apis[reader].get(f"/api/jobs/{job_id}/")
        assert resp.status_code == (200 if owner == self.tenants[reader].pk else 404)

    @invariant()
    def ledgers_reconcile_and_balances_are_non_negative(self) -> None:
        for tenant in self.tenants:
            assert ledger_reconcile(account=tenant.account) == []
            assert tenant.account.available >= 0 and tenant.account.held >= 0

    @invariant()
    def each_jobs_money_is_in_exactly_one_state(self) -> None:
        reserved: dict[int, Decimal] = dict(self.queries.reserved.rows())  # job id -> its reservation's price
        cancelled_bids = []
        for pk, status, budget, job_charged, hold, charged, released in self.queries.jobs.rows():
            assert hold == budget, (pk, hold, budget)
            assert charged == job_charged, (pk, charged, job_charged)
            # a reservation's price is charged at acceptance (a fixed price), a bid's at completion
            assert charged == reserved[pk] if pk in reserved else True, (pk, charged, reserved.get(pk))
            if status in Job.ACTIVE:
                assert released == 0 and charged == (reserved.get(pk, Decimal(0))), (pk, status, charged, released)
            else:
                assert charged + released == budget, (pk, status, charged, released, budget)
                if status == Job.Status.CANCELLED and pk not in reserved:
                    cancelled_bids.append((pk, budget, hold, charged))
        if cancelled_bids:
            # they paid for the work done (docs/economy.md, "Cancellations"): the budget times the
            # fraction of its slot-seconds whose tasks completed, rounded down, never above the hold
            works: dict[int, list[tuple[int, float, int]]] = {}
            for job_id, tasks, duration, done in self.queries.cancelled_work.rows():
                works.setdefault(job_id, []).append((tasks, duration, done))
            for pk, budget, hold, charged in cancelled_bids:
                assert charged == _work_done_share(budget, works.get(pk, [])), (pk, charged, _work_done_share(budget, works.get(pk, [])))
                assert charged <= hold

    @invariant()
    def each_cura_jobs_money_is_in_exactly_one_state(self) -> None:
        for pk, status, held, job_charged, cost, start_s, finished_s, vms, vm_type_id, price, hold, charged, released in (
                self.queries.cura_jobs.rows()):
            assert hold > 0 and charged == job_charged, (pk, hold, charged, job_charged)
            if status in CuraJob.LIVE:
                assert charged == released == 0 and held == hold, (pk, status, charged, released)
            else:
                assert held == 0 and charged + released == hold, (pk, status, charged, released, hold)
                want = money(float(cost or 0)) if status == CuraJob.Status.DONE else Decimal(0)
                if status == CuraJob.Status.CANCELLED and finished_s is not None:  # cancelled while running
                    # the VM-seconds it held (docs/economy.md), of the job as its row stands
                    job = CuraJob(pk=pk, cost=cost, start_s=start_s, vms=vms,
                                  vm_type=None if vm_type_id is None else VMInstanceType(pk=vm_type_id, price=price))
                    want = cancellation_cost(job=job, now=finished_s)
                    assert want <= money(float(cost or 0)) and want <= hold
                assert charged == want, (pk, status, charged, want)

    @invariant()
    def money_is_conserved(self) -> None:
        total = sum((available + held for available, held in self.queries.balances.rows()), Decimal(0))
        charged = sum((amount for (amount,) in self.queries.charges.rows()), Decimal(0))
        assert total + charged == DEPOSIT * len(self.tenants)

    @invariant()
    def tenants_see_only_their_own_jobs(self) -> None:
        for tenant, own_jobs in zip(self.tenants, self.queries.own_jobs, strict=True):
            assert {tenant_id for (tenant_id,) in own_jobs.rows()} <= {tenant.pk}


class Compiled:
    """A read-only query compiled to SQL once and run as often as asked, its rows converted as the
    ORM converts them (decimals, floats): the invariants run after every step of every example,
    and compiling a query costs the ORM far more than these few rows cost the database.

    ``queryset`` is a ``values_list`` query; :meth:`rows` returns its rows as lists, columns in the
    order of its model fields, then its annotations (the order the ORM selects them in).
    """

    def __init__(self, queryset: QuerySet[Any, Any]) -> None:
        self.queryset = queryset
        self.compiler = queryset.query.get_compiler(using=queryset.db)
        self.sql, self.params = self.compiler.as_sql()
        self.converters = self.compiler.get_converters([col for col, _, _ in self.compiler.select[: self.compiler.col_count]])

    def rows(self) -> list[list[Any]]:
        with connections[self.queryset.db].cursor() as cursor:
            cursor.execute(self.sql, self.params)
            rows = cursor.fetchall()
        return [list(row) for row in self.compiler.apply_converters(rows, self.converters)] if self.converters else [
            list(row) for row in rows]


def _invariant_queries(market: Market, tenants: list[Tenant]) -> SimpleNamespace:
    """The invariants' reads, one query each: the jobs with their hold, charge and release sums, the
    reservations' prices, the cancelled jobs' work rows, the Cura jobs (with their VM type's price)
    and their sums, the accounts' balances, the charges, and what each tenant's job list selects."""
    def sums(path: str) -> dict[str, Sum]:
        return {kind: Sum(f"{path}amount", filter=Q(**{f"{path}kind": kind}), default=Decimal(0)) for kind in ("hold", "charge", "release")}

    return SimpleNamespace(
        jobs=Compiled(Job.objects.filter(market=market).annotate(**sums("ledger_entries__")).values_list(
            "pk", "status", "budget", "charged", "hold", "charge", "release")),
        reserved=Compiled(Reservation.objects.filter(job__market=market).values_list("job_id", "price")),
        cancelled_work=Compiled(JobWork.objects.filter(job__market=market, job__status=Job.Status.CANCELLED).values_list(
            "job_id", "tasks", "task_duration", "done").order_by("id")),
        cura_jobs=Compiled(CuraJob.objects.filter(market=market).annotate(**sums("ledger_links__entry__")).values_list(
            "pk", "status", "held", "charged", "cost", "start_s", "finished_s", "vms", "vm_type_id", "vm_type__price",
            "hold", "charge", "release")),
        balances=Compiled(Account.objects.filter(tenant__in=tenants).values_list("available", "held")),
        charges=Compiled(LedgerEntry.objects.filter(account__tenant__market=market, kind="charge").values_list("amount")),
        own_jobs=[Compiled(selectors.tenant_jobs(tenant=tenant).values_list("tenant_id")) for tenant in tenants],
    )


def _compiled_queries_read_what_the_orm_reads(queries: SimpleNamespace) -> None:
    """Each compiled invariant query's rows are the ORM's own, value for value (type and digits)."""
    for query in [*(q for q in vars(queries).values() if isinstance(q, Compiled)), *queries.own_jobs]:
        assert [[repr(v) for v in row] for row in query.rows()] == [[repr(v) for v in row] for row in query.queryset.all()], query.sql


def _work_done_share(budget: Decimal, works: list[tuple[int, float, int]]) -> Decimal:
    """The cancellation rule recomputed from a job's work rows ``(tasks, task_duration, done)``:
    budget x done / total slot-seconds."""
    total = sum(Decimal(repr(tasks * duration)) for tasks, duration, _ in works)
    done = sum(Decimal(repr(finished * duration)) for _, duration, finished in works)
    return (budget * done / total).quantize(Decimal("0.0001"), rounding=ROUND_DOWN) if total else Decimal(0)


@pytest.mark.django_db
def test_money_state_machine(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MARKET_SAMPLE_INTERVAL_S = 1000.0  # fairness samples are not under test: few of them
    MoneyMachine.create_market()
    MoneyMachine.TestCase.settings = hypothesis_settings(
        max_examples=EXAMPLES, stateful_step_count=8, deadline=None, database=None,
        suppress_health_check=list(HealthCheck),
    )
    MoneyMachine.TestCase().runTest()


@pytest.mark.django_db
def test_the_reserve_rule_books_and_pays_at_acceptance(settings) -> None:  # type: ignore[no-untyped-def]
    # the machine's reserve step, run once by hand: it must really book (not only be refused)
    MoneyMachine.create_market()
    machine = MoneyMachine()
    try:
        job_id = machine.reserve(who=0, units=2, duration=300.0, lead=0.0, accept=True)
        assert job_id is not None
        reservation = Reservation.objects.get(job_id=job_id)
        charge = LedgerEntry.objects.get(job_id=job_id, kind="charge")
        assert charge.amount == reservation.price > 0
        machine.each_jobs_money_is_in_exactly_one_state()
        machine.complete()
        machine.each_jobs_money_is_in_exactly_one_state()
        machine.money_is_conserved()
        _compiled_queries_read_what_the_orm_reads(machine.queries)
        assert Job.objects.get(pk=job_id).status == Job.Status.FINISHED
        assert machine.reserve(who=1, units=2, duration=300.0, lead=60.0, accept=False) is None
        machine.cancel(machine.bid(who=2, budget=Decimal("5"), items=[("map", 1, 10.0)]))  # a cancelled bid's work rows
        machine.each_jobs_money_is_in_exactly_one_state()
        _compiled_queries_read_what_the_orm_reads(machine.queries)
    finally:
        machine.teardown()


@pytest.mark.django_db
def test_the_cura_rules_hold_charge_and_release(settings) -> None:  # type: ignore[no-untyped-def]
    # the machine's Cura steps, run once by hand: a job really holds, runs and is charged; a cancel releases
    MoneyMachine.create_market()
    machine = MoneyMachine()
    try:
        ran = machine.cura_submit(who=0, job_type=4, deadline=1000.0)
        dropped = machine.cura_submit(who=1, job_type=3, deadline=3000.0)
        assert ran is not None and dropped is not None
        machine.each_cura_jobs_money_is_in_exactly_one_state()
        machine.cura_cancel(dropped)
        machine.complete()
        machine.each_cura_jobs_money_is_in_exactly_one_state()
        machine.money_is_conserved()
        machine.ledgers_reconcile_and_balances_are_non_negative()
        _compiled_queries_read_what_the_orm_reads(machine.queries)
        done = CuraJob.objects.get(pk=ran)
        assert done.status == CuraJob.Status.DONE and done.charged > 0
        assert LedgerEntry.objects.get(cura_link__cura_job_id=ran, kind="charge").amount == money(float(done.cost or 0))
        assert CuraJob.objects.get(pk=dropped).status == CuraJob.Status.CANCELLED
    finally:
        machine.teardown()
