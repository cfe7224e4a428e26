"""A hypothesis state machine over the money-moving services, across several tenants.

Rules: bid (affordable or not), cancel, tick (the cluster clock; jobs finish and are
charged), clear (a market clearing), complete (run everything to the end), and a
tenant reading another tenant's job through the API. After every step:

* every account's ledger reconciles to the cent (``ledger_reconcile``), and no balance is negative;
* every job's money is in exactly one state: active jobs hold their whole budget and have
  been neither charged nor released; finished and cancelled jobs hold nothing, and their
  charge plus release equals the budget (cancelled: all released);
* money is conserved: deposits = available + held + charged, over all tenants;
* a tenant's job lists hold only its own jobs, and another tenant's job is a 404.

The market and its tenants are created once; each example runs in a savepoint that is
rolled back at its end (and this process's engine copy is dropped), so every example
starts from the same fresh market.
``STATE_MACHINE_EXAMPLES`` sets the number of random sequences (1,000 in CI, 200 locally).
Reserve and accept steps join when reservations land.
"""

from __future__ import annotations

import os
from decimal import Decimal
from itertools import count

import pytest
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Sum
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, initialize, invariant, rule
from rest_framework.test import APIClient

from marketplace import adapters, selectors
from marketplace.models import Job, LedgerEntry, Market, Tenant
from marketplace.services.bids import WorkItem, bid_submit, job_cancel
from marketplace.services.clearing import market_clear
from marketplace.services.cluster import cluster_advance
from marketplace.services.ledger import ledger_reconcile
from marketplace.services.market import engine_forget
from tests.factories import MarketFactory, TenantFactory, leaf

# 1,000 random sequences in CI (about 100 s of CPU); 200 in a local run unless asked for more.
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
    market: Market
    tenants: list[Tenant]

    @classmethod
    def create_market(cls) -> None:
        n = next(_names)
        cls.market = MarketFactory(name=f"sm{n}")
        cls.tenants = [
            TenantFactory(market=cls.market, username=f"sm{n}-{k}", deposit=DEPOSIT, queue=leaf(cls.market, path))
            for k, path in enumerate(LEAVES)
        ]

    def __init__(self) -> None:
        super().__init__()
        self._atomic = transaction.atomic()
        self._atomic.__enter__()
        self._forget()
        self.apis = []
        for tenant in self.tenants:
            api = APIClient()
            api.force_authenticate(tenant.user)
            self.apis.append(api)

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
        sums: dict[tuple[int, str], Decimal] = {
            (r["job_id"], r["kind"]): r["s"]
            for r in LedgerEntry.objects.filter(job__market=self.market).values("job_id", "kind").annotate(s=Sum("amount"))
        }
        for job in Job.objects.filter(market=self.market):
            hold = sums.get((job.pk, "hold"), Decimal(0))
            charged = sums.get((job.pk, "charge"), Decimal(0))
            released = sums.get((job.pk, "release"), Decimal(0))
            assert hold == job.budget, (job.pk, hold, job.budget)
            if job.status in Job.ACTIVE:
                assert (charged, released) == (0, 0), (job.pk, job.status, charged, released)
            else:
                assert charged + released == job.budget, (job.pk, job.status, charged, released, job.budget)
                assert charged == job.charged
                if job.status == Job.Status.CANCELLED:
                    assert charged == 0

    @invariant()
    def money_is_conserved(self) -> None:
        total = Decimal(0)
        for tenant in self.tenants:
            tenant.account.refresh_from_db()
            total += tenant.account.available + tenant.account.held
        charged = LedgerEntry.objects.filter(job__market=self.market, kind="charge").aggregate(s=Sum("amount"))["s"] or 0
        assert total + charged == DEPOSIT * len(self.tenants)

    @invariant()
    def tenants_see_only_their_own_jobs(self) -> None:
        for tenant in self.tenants:
            assert set(selectors.tenant_jobs(tenant=tenant).values_list("tenant_id", flat=True)) <= {tenant.pk}


@pytest.mark.django_db
def test_money_state_machine(settings) -> None:  # type: ignore[no-untyped-def]
    settings.MARKET_SAMPLE_INTERVAL_S = 1000.0  # fairness samples are not under test: few of them
    MoneyMachine.create_market()
    MoneyMachine.TestCase.settings = hypothesis_settings(
        max_examples=EXAMPLES, stateful_step_count=8, deadline=None, database=None,
        suppress_health_check=list(HealthCheck),
    )
    MoneyMachine.TestCase().runTest()
