"""No N+1: the queries a list page makes do not grow with the number of rows on it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.services.clearing import market_clear

WORK = [WorkItem("map", 2, 5.0), WorkItem("reduce", 1, 5.0)]


def _queries(fetch) -> int:  # type: ignore[no-untyped-def]
    with CaptureQueriesContext(connection) as ctx:
        resp = fetch()
    assert resp.status_code == 200, resp.content[:300]
    return len(ctx)


def _bids(tenant, n: int) -> None:  # type: ignore[no-untyped-def]
    from marketplace.market.services.clock import cluster_advance

    for _ in range(n):
        bid_submit(tenant=tenant, budget="1", work=WORK)
    cluster_advance(market_id=tenant.market_id, seconds=120.0)  # samples (fairness, series) for the series lists


@pytest.mark.parametrize("path", ["/api/jobs/", "/api/jobs/?status=queued", "/api/account/ledger/", "/api/market/allocation/",
                                  "/api/market/fairness/", "/api/market/series/", "/api/market/prices/", "/api/market/"])
def test_api_list_queries_are_constant_in_the_number_of_rows(alice_api, alice, market, path):
    _bids(alice, 3)
    market_clear(market_id=market.pk)
    alice_api.get(path)  # warm what is read once (the market's structure, the caller's role) ...
    _bids(alice, 1)  # ... and not what each clearing changes (the Plan's shares): both counts below follow a new clearing
    market_clear(market_id=market.pk)
    few = _queries(lambda: alice_api.get(path))
    _bids(alice, 30)
    market_clear(market_id=market.pk)
    many = _queries(lambda: alice_api.get(path))
    assert many == few, f"{path}: {few} queries with 4 jobs, {many} with 34"


@pytest.mark.parametrize("path", ["/jobs/", "/account/", "/"])
def test_page_queries_are_constant_in_the_number_of_rows(client, alice, market, path):
    client.force_login(alice.user)
    _bids(alice, 3)
    market_clear(market_id=market.pk)
    client.get(path)  # warm, as above
    _bids(alice, 1)
    market_clear(market_id=market.pk)
    few = _queries(lambda: client.get(path))
    _bids(alice, 20)
    market_clear(market_id=market.pk)
    many = _queries(lambda: client.get(path))
    assert many == few, f"{path}: {few} queries with 4 jobs, {many} with 24"


def test_dashboard_figures_are_computed_once_per_cleared_version(client, alice, bob, market):
    """The figures every viewer shares are computed once per cleared version (and newest sample), the share
    chart once per version and whose jobs it shows."""
    from unittest import mock

    from django.test import Client

    from marketplace.dashboard import figures
    from marketplace.market.models.market import Market

    client.force_login(alice.user)
    other = Client()
    other.force_login(bob.user)
    _bids(alice, 2)
    market_clear(market_id=market.pk)
    with mock.patch.object(figures, "shared_figures", wraps=figures.shared_figures) as shared, \
            mock.patch.object(figures, "jobs_figure", wraps=figures.jobs_figure) as jobs:
        first = client.get("/dashboard/data.json")
        assert first.status_code == 200 and set(first.json()["figures"]) >= {"jobs", "util", "prices", "unit-prices", "alloc-0"}
        Market.objects.filter(pk=market.pk).update(sim_time=5.0)  # the clock moves; no clearing, no sample
        again = client.get("/dashboard/data.json")
        assert again.status_code == 200 and (shared.call_count, jobs.call_count) == (1, 1)
        assert again.json()["headline"]["text"]["sim-clock"] == "0:00:05"  # the headline is fresh
        assert other.get("/dashboard/data.json").status_code == 200  # another tenant: its own share chart, the rest shared
        assert (shared.call_count, jobs.call_count) == (1, 2)
        _bids(alice, 1)
        market_clear(market_id=market.pk)  # a new cleared version: computed again
        assert client.get("/dashboard/data.json").status_code == 200 and (shared.call_count, jobs.call_count) == (2, 3)
