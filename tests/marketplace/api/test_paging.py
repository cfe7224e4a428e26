"""The jobs list's plain page (the page and the count in one statement, ``Pagination.counted_page``)
answers as DRF's pagination over the ORM's query: the same status and the same bytes for any page
and page size, in range or past the end, of a tenant with jobs and of one with none."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.test import APIClient

from marketplace.auction.api import JobViewSet
from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.infra import instances
from marketplace.market.models.jobs import Job
from marketplace.market.services.clearing import market_clear
from marketplace.web import throttling


@pytest.fixture
def clients(market, alice, bob, monkeypatch):  # type: ignore[no-untyped-def]
    """alice with 13 jobs of mixed budgets (some cleared, one cancelled), bob with none."""
    for cls in (throttling.UserRateThrottle, throttling.AnonRateThrottle, throttling.WriteRateThrottle):
        monkeypatch.setattr(cls, "THROTTLE_RATES", {"user": "100000/min", "anon": "100000/min", "writes": "100000/min"})
    for k in range(13):
        bid_submit(tenant=alice, budget=Decimal(3 + k) / 4, work=[WorkItem("map", 1 + k % 3, 30.0 + k)], name=f"j{k}",
                   min_utility=0.5 if k % 4 == 0 else None)
        if k % 5 == 4:
            market_clear(market_id=market.pk)
    out = {}
    for tenant in (alice, bob):
        client = APIClient()
        client.force_authenticate(tenant.user)
        out[tenant.user.username] = client
    return out


def _answer(client: APIClient, query: str, plain: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[int, bytes]:
    with monkeypatch.context() as m:
        if not plain:
            m.setattr(JobViewSet, "_plain_page", lambda self, request, tenant: None)
        resp = client.get(f"/api/jobs/{query}")
    return resp.status_code, resp.content


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(who=st.sampled_from(["alice", "bob"]), page=st.one_of(st.none(), st.integers(1, 16), st.sampled_from(["", "0", "01", "last", "x"])),
       size=st.one_of(st.none(), st.integers(0, 15)))
def test_a_plain_page_answers_as_the_orm_pagination(clients, monkeypatch, who, page, size):  # type: ignore[no-untyped-def]
    params = [p for p in (None if page is None else f"page={page}", None if size is None else f"page_size={size}") if p]
    query = "?" + "&".join(params) if params else ""
    plain = _answer(clients[who], query, True, monkeypatch)
    orm = _answer(clients[who], query, False, monkeypatch)
    assert plain == orm, query


@pytest.mark.django_db
def test_newest_page_reads_as_the_orm(market, alice, bob):  # type: ignore[no-untyped-def]
    for k in range(7):
        bid_submit(tenant=alice, budget=Decimal("1.5") + k, work=[WorkItem("map", 2, 30.0)], name=f"j{k}")
    names = ("id", "name", "budget", "status", "submitted_at", "sim_finish_time", "queue_id")
    for tenant in (alice, bob):
        jobs = Job.objects.filter(tenant=tenant).order_by("-pk")
        for limit, offset in ((3, 0), (3, 3), (3, 6), (10, 0), (2, 7)):
            rows, count = instances.newest_page(Job, names, limit=limit, offset=offset, tenant=tenant.pk)
            expected = list(jobs.values(*names)[offset:offset + limit])
            assert rows == expected
            assert [type(v) for r in rows for v in r.values()] == [type(v) for r in expected for v in r.values()]
            assert count == (jobs.count() if expected else 0)
