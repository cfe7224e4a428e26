"""Idempotency-Key under real concurrency (PostgreSQL): 20 simultaneous identical submissions
with one key make one job and one hold; a request the client gave up on (timed out) and
retried with its key makes one hold."""

from __future__ import annotations

import json
import threading
from decimal import Decimal

import httpx
import pytest
from django.db import connection, transaction
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from marketplace.ledger.models import IdempotencyKey, LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from tests.factories import MarketFactory, TenantFactory

pytestmark = pytest.mark.integration

BID = {"name": "retry", "budget": "25", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0}]}


def test_twenty_concurrent_submissions_with_one_key_make_one_hold(postgres):
    # given a tenant and twenty clients that will send the same bid with the same key at once
    market = MarketFactory(name="idem")
    tenant = TenantFactory(market=market, username="idem-alice", deposit=Decimal("1000"))
    barrier = threading.Barrier(20)
    answers: list[tuple[int, dict, bool]] = []

    def submit() -> None:
        client = APIClient()
        client.force_authenticate(tenant.user)
        barrier.wait()
        try:
            resp = client.post("/api/jobs/", json.dumps(BID), content_type="application/json", HTTP_IDEMPOTENCY_KEY="same-key")
            answers.append((resp.status_code, resp.json(), resp.get("Idempotent-Replayed") == "true"))
        finally:
            connection.close()

    threads = [threading.Thread(target=submit) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # then all twenty got the same 201 answer, nineteen of them replayed, and one hold was made
    assert [a[0] for a in answers] == [201] * 20
    assert len({json.dumps(a[1], sort_keys=True) for a in answers}) == 1
    assert sum(a[2] for a in answers) == 19
    assert Job.objects.filter(tenant=tenant).count() == 1
    assert LedgerEntry.objects.filter(account__tenant=tenant, kind=LedgerEntry.Kind.HOLD).count() == 1
    tenant.account.refresh_from_db()
    assert tenant.account.available == Decimal("975") and ledger_reconcile(account=tenant.account) == []


def test_a_timed_out_request_retried_with_its_key_makes_one_hold(postgres, live_server):
    # given a tenant with a token, and the market row locked so that the first request stalls
    market = MarketFactory(name="idem-timeout")
    tenant = TenantFactory(market=market, username="idem-bob", deposit=Decimal("1000"))
    token = Token.objects.create(user=tenant.user).key
    headers = {"Authorization": f"Token {token}", "Idempotency-Key": "pay-once", "Content-Type": "application/json"}
    locked, release = threading.Event(), threading.Event()

    def hold_market_lock() -> None:
        try:
            with transaction.atomic():
                Market.objects.select_for_update().get(pk=market.pk)
                locked.set()
                release.wait(30)
        finally:
            connection.close()

    holder = threading.Thread(target=hold_market_lock)
    holder.start()
    assert locked.wait(10)
    # when the client gives up on its first request after 0.5 s
    with pytest.raises(httpx.TimeoutException):
        httpx.post(f"{live_server.url}/api/jobs/", content=json.dumps(BID), headers=headers, timeout=0.5)
    # and retries with the same key while the first is still running on the server
    retry: dict[str, httpx.Response] = {}

    def send_again() -> None:
        retry["r"] = httpx.post(f"{live_server.url}/api/jobs/", content=json.dumps(BID), headers=headers, timeout=30)

    retrier = threading.Thread(target=send_again)
    retrier.start()
    release.set()
    holder.join()
    retrier.join()
    # then the retry answers the first request's 201, and exactly one hold was made
    assert retry["r"].status_code == 201, retry["r"].text
    assert retry["r"].headers.get("Idempotent-Replayed") == "true"
    assert Job.objects.filter(tenant=tenant).count() == 1
    assert LedgerEntry.objects.filter(account__tenant=tenant, kind=LedgerEntry.Kind.HOLD).count() == 1
    assert IdempotencyKey.objects.get(key="pay-once").status_code == 201
    tenant.account.refresh_from_db()
    assert ledger_reconcile(account=tenant.account) == []
