"""Price preview before bidding: the API dry run and the bid form's
preview compute with the real auction on a copy of the market and write nothing."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import LedgerEntry
from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance

BID = {"budget": "40", "utility": "linear", "work": [
    {"resource_type": "map", "tasks": 10, "task_duration": 60.0, "weight": 2.0},
    {"resource_type": "reduce", "tasks": 2, "task_duration": 30.0, "weight": 1.0}]}


@pytest.fixture
def busy(market: Market, alice: Tenant) -> Market:
    bid_submit(tenant=alice, budget="100", name="rival", work=[WorkItem("map", 40, 60.0, 1.0), WorkItem("reduce", 4, 60.0, 1.0)])
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=120)
    market.refresh_from_db()
    return market


def _stored(market: Market) -> tuple[object, ...]:
    m = Market.objects.get(pk=market.pk)
    return (Job.objects.count(), LedgerEntry.objects.count(), AllocationSnapshot.objects.count(), m.state_version,
            m.engine_version, m.sim_time, m.engine_state)


def test_api_preview_is_a_dry_run_that_matches_placing_the_bid(busy: Market, alice: Tenant, alice_api: APIClient) -> None:
    before = _stored(busy)
    resp = alice_api.post("/api/bids/preview/", BID, format="json")
    assert resp.status_code == 200, resp.json()
    body = resp.json()
    assert _stored(busy) == before  # nothing written
    assert body["estimate"] is True and "estimate" in body["note"]
    # 1/8 .. 8 times the budget, and the suggested one: the price level (no sale yet: the reference rate,
    # 1 per slot-second) times the work, 10 x 60 + 2 x 30 = 660 slot-seconds
    assert body["suggested"]["budget"] == "660.0000" and body["suggested"]["work"] == 660.0
    assert body["suggested"]["price_level"] == 1.0 and body["suggested"]["finish_s"] > 0
    assert [Decimal(r["budget"]) for r in body["curve"]] == [5, 10, 20, 40, 80, 160, 320, 660]
    assert all(r["budget"].endswith(".0000") for r in body["curve"])  # the API's money format
    maps = [r["shares"]["map"] for r in body["curve"]]
    assert maps == sorted(maps) and 0 < body["shares"]["map"] < 1
    assert body["finish_s"] is not None and body["finish_s"] > 0
    # placing the same bid and clearing gives the previewed shares
    resp = alice_api.post("/api/jobs/", BID, format="json")
    assert resp.status_code == 201
    market_clear(market_id=busy.pk)
    placed = alice_api.get(f"/api/jobs/{resp.json()['id']}/").json()["shares"]
    np.testing.assert_allclose([placed["map"], placed["reduce"]], [body["shares"]["map"], body["shares"]["reduce"]], atol=1e-4)


def test_api_preview_field_errors(alice_api: APIClient, market: Market) -> None:
    resp = alice_api.post("/api/bids/preview/", {**BID, "budget": "-1"}, format="json")
    assert resp.status_code == 400 and "budget" in resp.json()
    resp = alice_api.post("/api/bids/preview/", {**BID, "work": [{"resource_type": "gpu", "tasks": 1, "task_duration": 1.0}]},
                          format="json")
    assert resp.status_code == 400 and "work" in resp.json()


def test_form_preview_shows_the_estimate_and_places_nothing(busy: Market, alice: Tenant) -> None:
    client = Client()
    client.force_login(alice.user)
    form = {"name": "etl", "budget": "40", "utility": "linear", "map_tasks": "10", "map_duration": "60", "map_weight": "2",
            "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "1", "action": "preview"}
    before = _stored(busy)
    resp = client.post(reverse("bid-new"), form)
    body = resp.content.decode()
    assert resp.status_code == 200 and _stored(busy) == before
    assert "Price preview — an estimate" in body and 'id="preview-table"' in body and "preview-figure" in body
    assert resp.context["preview"]["at"]["budget"] == 40.0
    assert "Suggested budget: about" in body and "660.00" in body  # price level x work: "about N finishes in about T s"
    assert 'id="preview-flat"' not in body  # a rival in the queue: the budget buys a different share
    # the same form without "action" places the bid
    resp = client.post(reverse("bid-new"), {k: v for k, v in form.items() if k != "action"})
    assert resp.status_code == 302 and Job.objects.filter(name="etl").exists()


def test_a_preview_below_the_reserve_says_the_bid_would_be_refused(market: Market, alice: Tenant, alice_api: APIClient) -> None:
    from marketplace.market.models.queues import ResourceType

    # given reserve prices of 0.05 per slot-second: this work's minimum is 0.05 x 660 = 33
    ResourceType.objects.filter(market=market).update(reserve_price=Decimal("0.05"))
    body = alice_api.post("/api/bids/preview/", {**BID, "budget": "20"}, format="json").json()
    assert body["suggested"]["minimum"] == "33.0000"
    # the entered budget is below it: the answer says it would be refused, and no other budget below it is tried
    assert body["refused"] is True
    below = [r for r in body["curve"] if Decimal(r["budget"]) < 33]
    assert [r["budget"] for r in below] == ["20.0000"] and below[0]["refused"] is True
    assert all(r["refused"] is False for r in body["curve"] if Decimal(r["budget"]) >= 33)
    # beside it, what the least budget allowed would buy: the cheapest bid that would be placed
    assert [r["budget"] for r in body["curve"]] == ["20.0000", "33.0000", "40.0000", "80.0000", "160.0000", "660.0000"]
    # and a bid at that budget is refused indeed, while one at the minimum is placed
    assert alice_api.post("/api/jobs/", {**BID, "budget": "20"}, format="json").status_code == 400
    assert alice_api.post("/api/jobs/", {**BID, "budget": "33"}, format="json").status_code == 201
    # the form says so above its estimate
    client = Client()
    client.force_login(alice.user)
    form = {"name": "etl", "budget": "20", "utility": "linear", "map_tasks": "10", "map_duration": "60", "map_weight": "2",
            "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "1", "action": "preview"}
    page = client.post(reverse("bid-new"), form).content.decode()
    assert 'id="preview-refused"' in page and "would be\n    refused" in page and "33.00" in page


def test_a_bid_alone_in_its_queue_is_told_that_a_larger_budget_buys_nothing_more(market: Market, bob: Tenant,
                                                                                  alice: Tenant) -> None:
    """With no rival bid in its queue, every budget gets the whole queue's share and the same finish: the page
    says so (the queues share the cluster by fair share, not by budget); a rival in the queue ends it."""
    assert bob.default_queue_id != alice.default_queue_id
    bid_submit(tenant=bob, budget="100", name="other-queue", work=[WorkItem("map", 40, 60.0, 1.0)])
    market_clear(market_id=market.pk)
    client = Client()
    client.force_login(alice.user)
    form = {"name": "etl", "budget": "40", "utility": "linear", "map_tasks": "10", "map_duration": "60", "map_weight": "2",
            "reduce_tasks": "2", "reduce_duration": "30", "reduce_weight": "1", "action": "preview"}
    resp = client.post(reverse("bid-new"), form)
    preview = resp.context["preview"]["preview"]
    assert len(preview.points) > 1 and preview.flat
    assert all(p.shares.tolist() == [1.0, 1.0] for p in preview.points)
    assert len({p.finish_s for p in preview.points}) == 1
    assert 'id="preview-flat"' in resp.content.decode()
    bid_submit(tenant=alice, budget="100", name="rival", work=[WorkItem("map", 40, 60.0, 1.0)])
    market_clear(market_id=market.pk)
    resp = client.post(reverse("bid-new"), form)
    assert not resp.context["preview"]["preview"].flat and 'id="preview-flat"' not in resp.content.decode()
