"""SLO jobs through the live market: the bid carries an SLO, the clearing builds the
prolific pool, the tenant sees in-pool / predicted / achieved, and only a met SLO is
charged (paper 000, Sec. 6)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from marketplace.auction.models import WorkItem
from marketplace.auction.selectors import slo_status
from marketplace.auction.services import bid_submit
from marketplace.ledger.selectors import job_money
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance


def _map_job(tenant: Tenant, budget: str, slo: float | None, name: str) -> Job:
    # map-only work, weight 1: utility = the job's average map share
    return bid_submit(tenant=tenant, budget=budget, name=name, min_utility=slo,
                      work=[WorkItem("map", 20, 60.0, 1.0), WorkItem("reduce", 0, 1.0, 0.0)])


def _run_to_completion(market: Market) -> None:
    for _ in range(20):
        market_clear(market_id=market.pk)
        cluster_advance(market_id=market.pk, seconds=3600)
        if not Job.objects.filter(market=market, status__in=Job.ACTIVE).exists():
            return
    raise AssertionError("jobs did not finish")


def test_pool_status_is_shown_and_only_a_met_slo_is_charged(market: Market, alice: Tenant,
                                                           alice_api: APIClient) -> None:
    Market.objects.filter(pk=market.pk).update(alpha=1.0)
    # given two SLO jobs in alice's queue: together (shares 2/3 and 1/3) job "rich" would miss 0.8
    rich = _map_job(alice, "100", 0.8, "rich")
    poor = _map_job(alice, "50", 0.6, "poor")
    # when the market clears
    assert market_clear(market_id=market.pk).status == "cleared"
    status = slo_status(market=market, jobs=[rich, poor])
    # then the richer job is in the pool with predicted utility 1, the other is out
    assert status[rich.pk].in_pool is True and status[rich.pk].predicted == pytest.approx(1.0)
    assert status[poor.pk].in_pool is False and status[poor.pk].predicted == pytest.approx(0.0)
    body = alice_api.get(f"/api/jobs/{poor.pk}/").json()
    assert body["min_utility"] == 0.6 and body["slo"]["in_pool"] is False
    client = Client()
    client.force_login(alice.user)
    page = client.get(reverse("job-detail", args=[poor.pk])).content.decode()
    assert "outside the pool" in page and 'id="slo-predicted"' in page
    # when both run to completion
    _run_to_completion(market)
    rich.refresh_from_db()
    poor.refresh_from_db()
    # then the rich job met its SLO and paid; the poor one waited, missed it and paid nothing
    assert rich.achieved_utility >= 0.8 and rich.charged == Decimal("100")
    assert poor.achieved_utility < 0.6 and poor.charged == Decimal("0")
    assert job_money(job_ids=[poor.pk])[poor.pk][0] == 0  # its hold was released
    body = alice_api.get(f"/api/jobs/{poor.pk}/").json()
    assert body["slo"]["met"] is False and body["achieved_utility"] == pytest.approx(poor.achieved_utility)
    page = client.get(reverse("job-detail", args=[poor.pk])).content.decode()
    assert "missed: nothing charged" in page


def test_an_infinite_slo_is_a_field_error(alice: Tenant, alice_api: APIClient) -> None:
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget="10", min_utility=float("inf"), work=[WorkItem("map", 1, 1.0)])
    assert "min_utility" in err.value.message_dict
    resp = alice_api.post("/api/jobs/", {"budget": "10", "min_utility": "abc", "work": [
        {"resource_type": "map", "tasks": 1, "task_duration": 1.0}]}, format="json")
    assert resp.status_code == 400 and "min_utility" in resp.json()
    assert not Job.objects.exists()


@pytest.mark.parametrize(("utility", "weights", "slo", "ok"), [
    ("linear", (1.0, 0.0), 1e6, False),  # the attack: free service with an SLO nobody can meet
    ("linear", (1.0, 0.5), 1.5, True),  # exactly full service on both types
    ("linear", (1.0, 0.5), 1.5001, False),
    ("log", (1.0, 1.0), 0.0, True),  # log 1 = 0 is the most a logscale utility reaches
    ("log", (1.0, 1.0), 0.01, False),
])
def test_an_slo_above_what_full_service_reaches_is_refused(alice: Tenant, alice_api: APIClient, utility: str,
                                                           weights: tuple[float, float], slo: float, ok: bool) -> None:
    work = [WorkItem("map", 2, 60.0, weights[0]), WorkItem("reduce", 1, 60.0, weights[1])]
    if ok:
        assert bid_submit(tenant=alice, budget="10", utility=utility, min_utility=slo, work=work).min_utility == slo
        return
    with pytest.raises(ValidationError) as err:
        bid_submit(tenant=alice, budget="10", utility=utility, min_utility=slo, work=work)
    assert "cannot be met" in err.value.message_dict["min_utility"][0]
    resp = alice_api.post("/api/jobs/", {"budget": "10", "utility": utility, "min_utility": slo, "work": [
        {"resource_type": "map", "tasks": 2, "task_duration": 60.0, "weight": weights[0]},
        {"resource_type": "reduce", "tasks": 1, "task_duration": 60.0, "weight": weights[1]}]}, format="json")
    assert resp.status_code == 400 and "min_utility" in resp.json()
    assert not Job.objects.exists()
