"""ERA reservations under concurrency on PostgreSQL: concurrent one-shot requests never
over-promise capacity, and the ledger adds up (SQLite ignores select_for_update)."""

from __future__ import annotations

import threading
from decimal import Decimal

import pytest
from django.db import connection

from marketplace.celery import app
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.queues import ResourceType
from marketplace.reservations.adapters import era_mechanism
from marketplace.reservations.models import Reservation
from marketplace.reservations.services import reservation_request
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration


def test_concurrent_requests_never_over_promise(real_services):
    # given 10 map units and ten tenants racing for 4 units each in the same 10-minute window (two fit)
    market = MarketFactory(name="era-race")
    tenants = [TenantFactory(market=market, username=f"r{k}", deposit=Decimal("100")) for k in range(10)]
    app.conf.task_always_eager = True  # clearing is not under test here
    barrier = threading.Barrier(10)
    outcomes: list[str] = []

    def request(k: int) -> None:
        barrier.wait()
        try:
            result = reservation_request(tenant=tenants[k], resource_type="map", units=4, duration=600, arrival=0,
                                         deadline=600, value="50")
            outcomes.append("ok" if result.accepted else "declined")
        except Exception as exc:  # the test counts refusals
            outcomes.append(type(exc).__name__)
        finally:
            connection.close()

    try:
        threads = [threading.Thread(target=request, args=(k,)) for k in range(10)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        app.conf.task_always_eager = False
    # then exactly two were booked; the others found no room (a field error), and nothing is over-promised
    assert outcomes.count("ok") == 2 and outcomes.count("ValidationError") == 8, outcomes
    mech, _ = era_mechanism(market, ResourceType.objects.get(market=market, name="map"))
    assert mech.promised.max() == 8 and Reservation.objects.count() == 2
    for tenant in tenants:
        assert ledger_reconcile(account=tenant.account) == []
