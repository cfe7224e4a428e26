"""PostgreSQL row locks keep concurrent deadline bookings from promising more slots than exist."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from marketplace.auction.models import WorkItem
from marketplace.celery import app
from marketplace.deadlines.models import DeadlineBooking
from marketplace.deadlines.services import deadline_book
from marketplace.ledger.services import ledger_reconcile
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration


def test_concurrent_bookings_never_overbook(real_services):
    # given 10 map slots and six tenants booking at once 40 map tasks of 10 s by t = 100 s:
    # each needs 4 slots for the whole window, so only two bookings fit
    market = MarketFactory(name="deadline-race")
    tenants = [TenantFactory(market=market, username=f"booker{k}", deposit=Decimal("1000")) for k in range(6)]
    app.conf.task_always_eager = True  # clearing is not under test here
    barrier = threading.Barrier(len(tenants))
    outcomes: list[str] = []

    def book(tenant) -> None:  # type: ignore[no-untyped-def]
        barrier.wait()
        try:
            deadline_book(tenant=tenant, work=[WorkItem("map", 40, 10.0)], deadline=100.0)
            outcomes.append("ok")
        except Exception as exc:  # the test counts refusals
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=book, args=(t,)) for t in tenants]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        app.conf.task_always_eager = False
    # then exactly two were booked, the rest refused with a field error, and no slot is promised twice
    assert outcomes.count("ok") == 2 and outcomes.count("ValidationError") == 4, outcomes
    assert sum(b.slots[0] for b in DeadlineBooking.objects.filter(market=market)) <= 10
    for tenant in tenants:
        assert ledger_reconcile(account=tenant.account) == []
