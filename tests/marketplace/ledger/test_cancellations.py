"""A cancellation pays for the service received (docs/economy.md, "Cancellations pay for the service received").

* an auction job (pay at completion, paper 000) pays its budget times the fraction of its work
  done (completed tasks' slot-seconds over its whole work), rounded down, at most its hold; the
  rest is released, the memo says what was paid for, and the payment joins the realised rate;
* a job at a price fixed at acceptance (an ERA reservation, a deadline booking) keeps that price
  paid and pays nothing more;
* a Cura job cancelled while it runs pays its VMs' price for the seconds it ran (at most its
  configuration's cost and its hold); one that never ran pays nothing.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, Decimal

import pytest
from django.db.models import Sum

from marketplace.auction.services import WorkItem, bid_submit, job_cancel
from marketplace.deadlines.services import deadline_book
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import account_deposit, ledger_reconcile
from marketplace.market.models.allocation import RateSample, SpotSettlement
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.models import CuraJob
from marketplace.pools.services.jobs import cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import pool_resize, vm_type_save
from marketplace.reservations.services import reservation_accept, reservation_quote


def _sums(job_id: int) -> dict[str, Decimal]:
    return dict(LedgerEntry.objects.filter(job_id=job_id).values_list("kind").annotate(s=Sum("amount")))


def test_a_job_cancelled_at_80_percent_of_its_work_pays_80_percent_of_its_budget(market: Market, alice: Tenant):
    # given one job of 50 map tasks of 10 s on the market's 10 map slots: 10 tasks end every 10 s
    job = bid_submit(tenant=alice, budget="250", work=[WorkItem("map", 50, 10.0)])
    cluster_advance(market_id=market.pk, seconds=45.0)
    assert JobWork.objects.get(job=job).done == 40  # 80 % of its work done, 10 tasks running
    # when it is cancelled
    job = job_cancel(job=Job.objects.get(pk=job.pk))
    # then it pays 0.8 x its budget: more than 0, at most its hold; the rest is released
    sums = _sums(job.pk)
    assert sums["charge"] == Decimal("200.0000") == job.charged
    assert 0 < sums["charge"] <= sums["hold"] == Decimal("250") and sums["release"] == Decimal("50.0000")
    memo = LedgerEntry.objects.get(job=job, kind="charge").memo
    assert "80.0% of its work done" in memo and "400 of 500 slot-seconds" in memo
    # the job's served slot-seconds and the spot market's realised rate record the payment
    assert job.slot_seconds == pytest.approx(400.0)
    settled = SpotSettlement.objects.get(market=market)
    assert (settled.charged, settled.slot_seconds, settled.tenant_id) == (pytest.approx(200.0), pytest.approx(400.0), alice.pk)
    assert not RateSample.objects.exists()  # one tenant's payment is never published alone
    alice.account.refresh_from_db()
    assert alice.account.held == 0 and ledger_reconcile(account=alice.account) == []


def test_the_issue_s_case_44_of_400_tasks_is_paid_for(market: Market, alice: Tenant):
    # the issue's job: cancelled after 44 of its 400 tasks had run paid 0 (its whole hold was released)
    account_deposit(account=alice.account, amount=Decimal("1000"), memo="top-up")
    job = bid_submit(tenant=alice, budget="400", work=[WorkItem("map", 400, 100.0)])
    cluster_advance(market_id=market.pk, seconds=450.0)  # 10 slots: 4 waves of 10 tasks done, the 5th running
    works = JobWork.objects.get(job=job)
    works.done = 44  # as the issue's run had it (7 slots for 612 s ran 44 tasks): set by hand, not by the clock
    works.save(update_fields=["done"])
    job = job_cancel(job=Job.objects.get(pk=job.pk))
    assert job.charged == (Decimal("400") * Decimal(44) / Decimal(400)).quantize(Decimal("0.0001")) == Decimal("44.0000")


def test_a_job_cancelled_before_any_task_ended_pays_nothing(market: Market, alice: Tenant):
    job = bid_submit(tenant=alice, budget="90", work=[WorkItem("map", 20, 100.0), WorkItem("reduce", 3, 50.0)])
    cluster_advance(market_id=market.pk, seconds=30.0)  # tasks running, none ended
    job = job_cancel(job=Job.objects.get(pk=job.pk))
    sums = _sums(job.pk)
    assert "charge" not in sums and sums["release"] == sums["hold"] == Decimal("90")
    assert job.charged == 0 and not SpotSettlement.objects.exists()  # nothing used: no rate to learn


def test_the_charge_rounds_down_and_never_exceeds_the_hold(market: Market, alice: Tenant):
    # 3 tasks of 7 s (map) and 2 of 11 s (reduce): 1 map task done is 7 / 43 of the work
    job = bid_submit(tenant=alice, budget="10.0001", work=[WorkItem("map", 3, 7.0), WorkItem("reduce", 2, 11.0)])
    JobWork.objects.filter(job=job, resource_type__name="map").update(done=1, pending=2)
    job = job_cancel(job=Job.objects.get(pk=job.pk))
    exact = Decimal("10.0001") * Decimal(7) / Decimal(43)
    assert job.charged == exact.quantize(Decimal("0.0001"), rounding=ROUND_DOWN) <= exact


def test_a_reserved_job_keeps_its_price_paid_and_pays_nothing_more(market: Market, alice: Tenant):
    start = (market.sim_time // 60 + 1) * 60
    quote = reservation_quote(tenant=alice, resource_type="map", units=2, duration=300, arrival=start, deadline=start + 3600)
    reservation = reservation_accept(quote=quote)
    job = job_cancel(job=reservation.job)
    sums = _sums(job.pk)
    assert sums.get("charge", Decimal(0)) == reservation.price == job.charged  # paid at acceptance, kept
    assert sums["hold"] == sums.get("charge", Decimal(0)) + sums.get("release", Decimal(0))
    assert not SpotSettlement.objects.exists()  # a fixed price is not a spot price


def test_a_booked_job_keeps_its_price_paid_and_pays_nothing_more(market: Market, alice: Tenant):
    job, quote = deadline_book(tenant=alice, work=[WorkItem("map", 4, 60.0)], deadline=market.sim_time + 3600)
    cluster_advance(market_id=market.pk, seconds=90.0)  # its first tasks are done
    assert JobWork.objects.get(job=job).done > 0
    job = job_cancel(job=Job.objects.get(pk=job.pk))
    sums = _sums(job.pk)
    assert sums["charge"] == quote.price == job.charged and "release" not in sums  # the hold was the price
    assert not SpotSettlement.objects.exists()


@pytest.fixture
def pools(market: Market, alice: Tenant) -> Tenant:
    for name, vcpus in (("VM-1", 2), ("VM-2", 4)):
        vt = vm_type_save(market=market, name=name, vcpus=vcpus, memory_gb=float(vcpus), price=Decimal("0.0002") * vcpus)
        pool_resize(pool=vt.pool, size=20)
    return alice


def test_a_cura_job_cancelled_while_running_pays_the_vm_seconds_it_held(market: Market, pools: Tenant):
    job = cura_job_submit(tenant=pools, job_type=3, deadline_in_s=3000)
    cluster_advance(market_id=market.pk, until=float(job.start_s or 0.0) + 100.0)
    job.refresh_from_db()
    assert job.status == CuraJob.Status.RUNNING
    held = job.held
    job = cura_job_cancel(job=job)
    ran = job.finished_s - job.start_s
    want = (Decimal(job.vms) * job.vm_type.price * Decimal(repr(ran))).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    assert ran == pytest.approx(100.0) and 0 < job.charged == want <= held
    assert job.held == 0
    entry = LedgerEntry.objects.get(cura_link__cura_job=job, kind="charge")
    assert f"{job.vms} VMs" in entry.memo and "100 s of its run" in entry.memo


def test_a_cura_job_cancelled_before_it_ran_pays_nothing(market: Market, pools: Tenant):
    # a job reserved for later (or started this very instant): no VM-second has been used yet
    job = cura_job_cancel(job=cura_job_submit(tenant=pools, job_type=3, deadline_in_s=20000))
    assert job.status == CuraJob.Status.CANCELLED and job.charged == 0 and job.held == 0
    assert not LedgerEntry.objects.filter(cura_link__cura_job=job, kind="charge").exists()
