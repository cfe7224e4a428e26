"""Bid submission and cancellation through the service layer."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from scheduler.plan import Plan
from tests.factories import leaf

WORK = [WorkItem("map", 4, 10.0, 1.0), WorkItem("reduce", 1, 20.0, 2.0)]

BAD_BUDGETS = {
    "negative": "-5",
    "zero": "0",
    "nan": "NaN",
    "infinity": "Infinity",
    "not a number": "abc",
    "absurdly large": "1e30",
    "too many decimals": "1.00001",
    "above balance": "1000.01",
}


@pytest.mark.parametrize("budget", BAD_BUDGETS.values(), ids=BAD_BUDGETS.keys())
def test_bad_budget_is_a_field_error_and_writes_nothing(alice, budget):
    entries, jobs = LedgerEntry.objects.count(), Job.objects.count()
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget=budget, work=WORK)
    assert "budget" in err.value.message_dict
    assert (LedgerEntry.objects.count(), Job.objects.count()) == (entries, jobs)
    assert ledger_reconcile(account=alice.account) == []


BAD_WORK = {
    "unknown type": [WorkItem("gpu", 1, 1.0)],
    "negative tasks": [WorkItem("map", -1, 1.0)],
    "no tasks": [WorkItem("map", 0, 1.0)],
    "zero duration": [WorkItem("map", 1, 0.0)],
    "nan duration": [WorkItem("map", 1, float("nan"))],
    "negative weight": [WorkItem("map", 1, 1.0, -1.0)],
    "type twice": [WorkItem("map", 1, 1.0), WorkItem("map", 2, 1.0)],
    "all weights zero": [WorkItem("map", 1, 1.0, 0.0)],
}


@pytest.mark.parametrize("work", BAD_WORK.values(), ids=BAD_WORK.keys())
def test_bad_work_is_a_field_error(alice, work):
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget="10", work=work)
    assert "work" in err.value.message_dict
    assert not Job.objects.exists()


def test_bid_holds_budget_bumps_version_and_clears(alice, market, django_capture_on_commit_callbacks):
    # given an empty market
    version = market.state_version
    # when a bid arrives (Celery eager: the clearing runs after commit)
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = bid_submit(tenant=alice, budget="100", work=WORK, utility="log")
    assert sum("enqueue_clearing" in cb.__qualname__ for cb in callbacks) == 1
    # then the job is queued in the tenant's leaf queue with its work ...
    assert job.status == Job.Status.QUEUED and job.queue.path == "root.orga.analytics"
    assert [(w.resource_type.name, w.pending) for w in job.work.all()] == [("map", 4), ("reduce", 1)]
    # ... the budget is held, and a clearing on the new version stored shares for it
    market.refresh_from_db()
    assert market.state_version == version + 1 == market.cleared_version
    snap = AllocationSnapshot.objects.get(market=market)
    plan = Plan.from_bytes(bytes(snap.plan))
    assert snap.n_jobs == 1 and plan.job_ids.tolist() == [job.pk] and plan.shares.tolist() == [[1.0, 1.0]]


def test_queue_must_be_a_leaf(alice, market):
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget="10", work=WORK, queue=leaf(market, "root.orga"))
    assert "queue" in err.value.message_dict


def test_cancel_releases_the_hold(alice, market):
    job = bid_submit(tenant=alice, budget="100", work=WORK)
    job_cancel(job=job)
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("1000"), Decimal("0"))
    assert Job.objects.get(pk=job.pk).status == Job.Status.CANCELLED
    with pytest.raises(ValidationError):
        job_cancel(job=job)
    assert ledger_reconcile(account=alice.account) == []


def test_each_bid_and_cancellation_raises_the_state_version_by_one(alice, market):
    # given a market at some version
    version = Market.objects.get().state_version
    # when a bid is placed and then cancelled
    job = bid_submit(tenant=alice, budget="10", work=WORK)
    after_bid = Market.objects.get().state_version
    job_cancel(job=job)
    # then each raised the version by exactly one (the lock and the bump are one statement)
    assert (after_bid, Market.objects.get().state_version) == (version + 1, version + 2)


def test_cancelling_an_ended_job_changes_nothing_whichever_copy_says_it_ended(alice, market):
    job = bid_submit(tenant=alice, budget="10", work=WORK)
    stale = Job.objects.get(pk=job.pk)  # read while active
    job_cancel(job=job)
    version, entries = Market.objects.get().state_version, LedgerEntry.objects.count()
    # the caller's copy says it ended: refused before any lock
    with pytest.raises(ValidationError) as err:
        job_cancel(job=Job.objects.get(pk=job.pk))
    assert "status" in err.value.message_dict
    # the caller's copy is stale (active): refused under the lock, and the version bump rolls back
    with pytest.raises(ValidationError):
        job_cancel(job=stale)
    assert (Market.objects.get().state_version, LedgerEntry.objects.count()) == (version, entries)
    assert ledger_reconcile(account=alice.account) == []


def test_utility_must_be_known(alice):
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget="10", work=WORK, utility="cubic")
    assert "utility" in err.value.message_dict
    assert Market.objects.get().state_version == 0
