"""A real Celery worker on Redis clears the market after a bid and after a job completion,
and PostgreSQL row locks keep concurrent bids from overspending."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
from django.db import connection

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.celery import app
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration


def _wait_cleared(market_id: int, timeout: float = 60.0) -> Market:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        market = Market.objects.get(pk=market_id)
        if market.cleared_version == market.state_version:
            return market
        time.sleep(0.1)
    pytest.fail(f"the worker did not clear version {market.state_version} (cleared {market.cleared_version}) in {timeout}s")


def test_worker_clears_after_bid_and_after_completion(celery_worker_process):
    # given a market on PostgreSQL and a tenant; this process only publishes tasks
    assert not app.conf.task_always_eager
    market = MarketFactory(name="it")
    tenant = TenantFactory(market=market, username="it-alice")
    # when a bid is placed (clear_market is enqueued after commit)
    job = bid_submit(tenant=tenant, budget="40", work=[WorkItem("map", 3, 5.0), WorkItem("reduce", 1, 5.0)])
    # then the worker stores a clearing that includes the job
    market = _wait_cleared(market.pk)
    first = AllocationSnapshot.objects.filter(market=market).order_by("-id").first()
    assert first.n_jobs == 1 and first.state_version == market.state_version
    # when the cluster runs the job to completion (a departure)
    tick = cluster_advance(market_id=market.pk, until=100.0)
    assert tick.finished_jobs == 1
    # then the worker clears again, on the new version, without the job
    market = _wait_cleared(market.pk)
    last = AllocationSnapshot.objects.filter(market=market).order_by("-id").first()
    assert last.pk != first.pk and last.n_jobs == 0
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.charged == Decimal("40")
    assert ledger_reconcile(account=tenant.account) == []


def test_concurrent_bids_never_overspend(real_services):
    # given 100 available and ten concurrent bids of 15 (only six fit)
    market = MarketFactory(name="race")
    tenant = TenantFactory(market=market, username="racer", deposit=Decimal("100"))
    app.conf.task_always_eager = True  # clearing is not under test here
    barrier = threading.Barrier(10)
    outcomes: list[str] = []

    def bid() -> None:
        barrier.wait()
        try:
            bid_submit(tenant=tenant, budget="15", work=[WorkItem("map", 1, 1.0)])
            outcomes.append("ok")
        except Exception as exc:  # the test counts refusals
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=bid) for _ in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        app.conf.task_always_eager = False
    # then exactly six were accepted, the rest refused with a validation error, and the ledger adds up
    assert outcomes.count("ok") == 6 and outcomes.count("ValidationError") == 4, outcomes
    tenant.account.refresh_from_db()
    assert (tenant.account.available, tenant.account.held) == (Decimal("10"), Decimal("90"))
    assert ledger_reconcile(account=tenant.account) == []
