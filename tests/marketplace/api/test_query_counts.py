"""Ceilings on the queries of the main API lists and details, as a client with a token sends
them to a running server: what a process reads once (the market's structure) is read by a first
request, then a new bid and a clearing change what the answers show (no cached answer), and the
remembered tokens are forgotten (the token's read is counted)."""

from __future__ import annotations

import uuid

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from marketplace.api.authentication import forget_tokens
from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance

WORK = [WorkItem("map", 2, 5.0), WorkItem("reduce", 1, 5.0)]
BID = {"budget": "9", "work": [{"resource_type": "map", "tasks": 2, "task_duration": 5.0}]}


@pytest.fixture
def token_api(alice):  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=alice.user).key}")
    return client


@pytest.fixture
def jobs(alice, market):  # type: ignore[no-untyped-def]
    """20 of alice's jobs, cleared, and a tick (samples for the series)."""
    placed = [bid_submit(tenant=alice, budget="1", work=WORK) for _ in range(20)]
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=60.0)
    market_clear(market_id=market.pk)
    return placed


# path -> at most this many queries: the token with its user, tenant and role (1), the market's
# versions (1), then the view's own reads; a changed answer must not cost more.
CEILINGS = {
    "/api/jobs/": 6,
    "/api/jobs/?status=queued": 9,
    "/api/account/": 2,
    "/api/account/ledger/": 4,
    "/api/market/": 8,
    "/api/market/allocation/": 7,
}


def _changed(alice, market, token_api, path: str) -> None:  # type: ignore[no-untyped-def]
    """Warm ``path`` once, then move the market on (a bid, a clearing) and forget the tokens."""
    assert token_api.get(path).status_code == 200
    bid_submit(tenant=alice, budget="1", work=WORK)
    market_clear(market_id=market.pk)
    forget_tokens()


@pytest.mark.parametrize("path", list(CEILINGS))
def test_the_main_lists_stay_under_their_query_ceiling(token_api, alice, market, jobs, path, django_assert_max_num_queries):
    _changed(alice, market, token_api, path)
    with django_assert_max_num_queries(CEILINGS[path]):
        resp = token_api.get(path)
    assert resp.status_code == 200, resp.content[:300]
    assert resp.json(), path  # an answer with content, not an empty one


def test_a_job_detail_stays_under_its_query_ceiling(token_api, alice, market, jobs, django_assert_max_num_queries):
    _changed(alice, market, token_api, f"/api/jobs/{jobs[0].pk}/")
    with django_assert_max_num_queries(6):
        resp = token_api.get(f"/api/jobs/{jobs[0].pk}/")
    assert resp.status_code == 200 and resp.json()["id"] == jobs[0].pk


def test_a_bid_and_its_cancel_stay_under_their_query_ceilings(token_api, alice, market, jobs, django_assert_max_num_queries):
    _changed(alice, market, token_api, "/api/jobs/")
    with django_assert_max_num_queries(10):
        placed = token_api.post("/api/jobs/", BID, format="json", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)
    assert placed.status_code == 201, placed.content[:300]
    with django_assert_max_num_queries(13):
        cancelled = token_api.post(f"/api/jobs/{placed.json()['id']}/cancel/", HTTP_IDEMPOTENCY_KEY=uuid.uuid4().hex)
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"


# the time series as pollers read them, after a tick (a new version: no cached answer): the token (1),
# the market's versions (1), the count and the page (2); the resource filter reads no market row
SERIES_CEILINGS = {"/api/market/fairness/?resource=map": 4, "/api/market/series/?resource=map": 4,
                   "/api/market/prices/?resource=map": 4}


@pytest.mark.parametrize("path", list(SERIES_CEILINGS))
def test_the_time_series_stay_under_their_query_ceiling(token_api, alice, market, jobs, path, django_assert_max_num_queries):
    assert token_api.get(path).status_code == 200
    cluster_advance(market_id=market.pk, seconds=60.0)
    market_clear(market_id=market.pk)
    forget_tokens()
    with django_assert_max_num_queries(SERIES_CEILINGS[path]):
        resp = token_api.get(path)
    assert resp.status_code == 200, resp.content[:300]
    assert resp.json()["results"], path  # samples of the new tick, not an empty page
