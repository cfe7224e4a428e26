"""Non-convergence of a clearing is shown on the staff settings page and logged
(paper 000, Alg. 1 with a round cap)."""

from __future__ import annotations

import logging

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from django.urls import reverse

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clearing import market_clear


def _two_rival_jobs(alice: Tenant) -> None:
    bid_submit(tenant=alice, budget="50", work=[WorkItem("map", 10, 60.0, 1.0), WorkItem("reduce", 2, 60.0, 5.0)])
    bid_submit(tenant=alice, budget="200", work=[WorkItem("map", 10, 60.0, 4.0), WorkItem("reduce", 2, 60.0, 1.0)])


@pytest.fixture
def staff(market: Market) -> Client:
    client = Client()
    client.force_login(get_user_model().objects.create_superuser("root", "root@localhost", "pw-for-tests-1"))
    return client


def test_capped_clearing_is_logged_and_counted(market: Market, alice: Tenant, staff: Client,
                                               caplog: pytest.LogCaptureFixture) -> None:
    # given a market whose auction may run a single round, and two rivals in one leaf queue
    Market.objects.filter(pk=market.pk).update(auction_max_rounds=1)
    _two_rival_jobs(alice)
    # when it clears
    with caplog.at_level(logging.WARNING):
        assert market_clear(market_id=market.pk).status == "cleared"
    # then the log and the settings page say it did not converge
    assert any("did not converge" in r.getMessage() for r in caplog.records)
    resp = staff.get(reverse("market-settings"))
    conv = resp.context["convergence"]
    assert conv["checked"] == 1 and conv["unconverged"] == 1 and conv["max_rounds"] == 1
    assert 'id="unconverged-clearings"' in resp.content.decode()


def test_converged_clearings_show_no_alarm(market: Market, alice: Tenant, staff: Client) -> None:
    _two_rival_jobs(alice)
    assert market_clear(market_id=market.pk).status == "cleared"
    resp = staff.get(reverse("market-settings"))
    assert resp.context["convergence"]["unconverged"] == 0
    assert 'id="unconverged-clearings"' not in resp.content.decode()
    assert "Auction convergence" in resp.content.decode()
