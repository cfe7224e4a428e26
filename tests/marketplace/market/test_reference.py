"""A price nobody moves alone (docs/economy.md): the reserve price and the robust reference rate.

* the two manipulation cases: a newcomer's two cheap jobs of 540,000 slot-seconds, and an attacker's six
  bids at 0.0001 credits, move the price level and the quotes anchored to it by no more than the
  stated bound (``scheduler.era.spot.robust_bounds``), where the old rule (everything charged over
  every slot-second) moved them by a factor of 3;
* sales while slots were idle do not vote;
* a bid below the reserve price times its work is refused with the minimum named (service, API, form);
  no quote prices below the reserve; staff set it, audited.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db.models import Sum
from rest_framework.test import APIClient

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.deadlines.services import deadline_quote
from marketplace.ledger.services import account_deposit
from marketplace.market import adapters
from marketplace.market.models.allocation import SpotSettlement
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.prices import price_level, reference_rate, reference_rates
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.config import reserve_prices_set
from marketplace.reservations.services import reservation_quote
from scheduler.era.spot import robust_bounds
from tests.factories import MarketFactory, TenantFactory


@pytest.fixture
def admin_api(market) -> APIClient:  # type: ignore[no-untyped-def]
    user = get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True)
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def big(db) -> Market:  # type: ignore[no-untyped-def]
    return MarketFactory(name="big", resources={"map": 1000, "reduce": 100})


def _honest(market: Market, settings) -> list[float]:  # type: ignore[no-untyped-def]
    """Three tenants buy map work at about the reference rate; returns their votes (rates)."""
    rates = []
    for k, budget in enumerate(("1000", "1050", "950")):
        tenant = TenantFactory(market=market, username=f"honest{k}", deposit=Decimal("100000"))
        bid_submit(tenant=tenant, budget=budget, work=[WorkItem("map", 100, 10.0)])  # 1,000 slot-seconds each
        rates.append(float(budget) / 1000.0)
    cluster_advance(market_id=market.pk, until=100.0)
    return rates


def _old_rule(market: Market) -> float:
    """The level as it was computed before: everything charged over every slot-second sold."""
    sums = SpotSettlement.objects.filter(market=market).aggregate(c=Sum("charged"), w=Sum("slot_seconds"))
    return float(sums["c"]) / float(sums["w"])


def test_a_newcomer_s_two_cheap_big_jobs_move_the_level_only_within_the_bound(big, settings):
    settings.MARKET_CONTENTION_LEVEL = 0.0  # every sale votes: the strictest case for the bound
    honest = _honest(big, settings)
    big.refresh_from_db()
    before = price_level(market=big)
    newcomer = TenantFactory(market=big, username="newcomer", deposit=Decimal("50000"))
    for _ in range(2):  # 540 tasks x 1,000 s = 540,000 slot-seconds for 20,000 credits: 0.037 per slot-second
        bid_submit(tenant=newcomer, budget="20000", work=[WorkItem("map", 540, 1000.0)])
    cluster_advance(market_id=big.pk, until=5000.0)
    assert SpotSettlement.objects.filter(tenant=newcomer).aggregate(w=Sum("slot_seconds"))["w"] == pytest.approx(1_080_000.0)
    big.refresh_from_db()
    after = price_level(market=big)
    low, high = robust_bounds([*honest, reference_rate()])
    assert low <= after <= high and low <= before <= high
    assert after >= 0.95 * before  # the four other votes sit at 0.95 to 1.05
    assert _old_rule(big) < 0.1 < low  # the old rule fell to what the newcomer paid


def test_six_bids_at_a_ten_thousandth_move_the_level_and_the_quotes_only_within_the_bound(big, settings):
    settings.MARKET_CONTENTION_LEVEL = 0.0
    honest = _honest(big, settings)
    big.refresh_from_db()
    alice = TenantFactory(market=big, username="alice", deposit=Decimal("100000"))
    work = [WorkItem("map", 4, 600.0)]
    quote_before = deadline_quote(market=big, work=work, deadline=big.sim_time + 3600)
    era_before = reservation_quote(tenant=alice, resource_type="map", units=5, duration=600, arrival=big.sim_time + 60,
                                   deadline=big.sim_time + 3600)
    attacker = TenantFactory(market=big, username="attacker", deposit=Decimal("1"))
    for _ in range(6):
        bid_submit(tenant=attacker, budget="0.0001", work=[WorkItem("map", 40, 400.0)])
    cluster_advance(market_id=big.pk, until=1000.0)
    assert SpotSettlement.objects.filter(tenant=attacker).count() == 6
    big.refresh_from_db()
    low, high = robust_bounds([*honest, reference_rate()])
    assert low <= price_level(market=big) <= high
    assert low <= reference_rates(market=big, types=adapters.resource_types(big))["map"] <= high
    quote_after = deadline_quote(market=big, work=work, deadline=big.sim_time + 3600)
    era_after = reservation_quote(tenant=alice, resource_type="map", units=5, duration=600, arrival=big.sim_time + 60,
                                  deadline=big.sim_time + 3600)
    # the quotes anchored to it: the attack moved them from 19.76 to 5.59 and 39.52 to 11.88 before
    assert float(quote_after.price) >= 0.9 * float(quote_before.price)
    assert float(era_after.price) >= 0.9 * float(era_before.price)


def test_sales_on_idle_slots_do_not_vote(market, settings):
    cheap = TenantFactory(market=market, username="cheap", deposit=Decimal("10"))
    bid_submit(tenant=cheap, budget="0.01", work=[WorkItem("map", 2, 10.0)])  # 2 of 10 slots: no contention
    cluster_advance(market_id=market.pk, until=100.0)
    (settled,) = SpotSettlement.objects.filter(tenant=cheap)
    assert settled.utilisation < 0.9
    market.refresh_from_db()
    assert price_level(market=market) == reference_rate()


def test_a_bid_below_the_reserve_is_refused_with_the_minimum(market, alice, alice_api):
    reserve_prices_set(market=market, prices={"map": 0.05, "reduce": 0.1})
    with pytest.raises(ValidationError) as refused:
        bid_submit(tenant=alice, budget="0.0001", work=[WorkItem("map", 40, 400.0)])
    assert "at least 800.0000" in str(refused.value)  # 0.05 x 16,000 slot-seconds
    assert alice.account.entries.count() == 1  # the deposit only: nothing held
    answer = alice_api.post("/api/jobs/", {"budget": "10", "work": [{"resource_type": "map", "tasks": 10, "task_duration": 30},
                                                                     {"resource_type": "reduce", "tasks": 2, "task_duration": 50}]},
                            format="json")
    assert answer.status_code == 400 and "at least 25.0000" in str(answer.json()["budget"])  # 0.05 x 300 + 0.1 x 100
    ok = alice_api.post("/api/jobs/", {"budget": "25", "work": [{"resource_type": "map", "tasks": 10, "task_duration": 30},
                                                                 {"resource_type": "reduce", "tasks": 2, "task_duration": 50}]},
                        format="json")
    assert ok.status_code == 201


def test_no_quote_prices_below_the_reserve(market, alice):
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="top-up")
    before = deadline_quote(market=market, work=[WorkItem("map", 4, 600.0)], deadline=market.sim_time + 3600)
    reserve_prices_set(market=market, prices={"map": 5.0})
    market.refresh_from_db()
    after = deadline_quote(market=market, work=[WorkItem("map", 4, 600.0)], deadline=market.sim_time + 3600)
    assert min(before.unit_prices) < 5.0 <= after.unit_prices[0]
    era = reservation_quote(tenant=alice, resource_type="map", units=2, duration=600, arrival=market.sim_time + 60,
                            deadline=market.sim_time + 3600)
    assert era.unit_rate >= 5.0 * (1 - 1e-9)


def test_staff_set_the_reserve_prices_audited_and_checked(market, admin_api, alice_api):
    answer = admin_api.patch("/api/market/", {"reserve_prices": {"map": 0.05}, "reason": "floor"}, format="json")
    assert answer.status_code == 200 and answer.json()["spot"]["reserve_price"]["map"] == 0.05
    change = ConfigChange.objects.get(field="reserve_price[map]")
    assert (change.old_value, change.new_value, change.reason) == ("0.0", "0.05", "floor")
    bad = admin_api.patch("/api/market/", {"reserve_prices": {"gpu": 1.0}, "alpha": 0.3}, format="json")
    assert bad.status_code == 400 and "gpu" in str(bad.json())
    market.refresh_from_db()
    assert market.alpha != 0.3  # the request is applied whole or not at all
    assert admin_api.patch("/api/market/", {"reserve_prices": {"map": -1}}, format="json").status_code == 400
    assert alice_api.patch("/api/market/", {"reserve_prices": {"map": 0}}, format="json").status_code == 403


def test_staff_set_the_reserve_prices_on_the_settings_page(market, client):
    staff = get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True)
    client.force_login(staff)
    page = client.get("/market/settings/")
    assert page.status_code == 200 and 'name="reserve_map"' in page.content.decode()
    bad = client.post("/market/settings/", {"reserve_prices": "1", "reserve_map": "-2", "reserve_reduce": "0"})
    assert bad.status_code == 200 and "greater than or equal to 0" in bad.content.decode()
    assert not ConfigChange.objects.filter(field__startswith="reserve_price").exists()
    ok = client.post("/market/settings/", {"reserve_prices": "1", "reserve_map": "0.05", "reserve_reduce": "0.1",
                                           "reserve_reason": "floor"})
    assert ok.status_code == 302
    assert sorted(ConfigChange.objects.filter(reason="floor").values_list("field", "new_value")) == [
        ("reserve_price[map]", "0.05"), ("reserve_price[reduce]", "0.1")]


def test_the_preview_names_the_reserve_minimum_and_never_suggests_less(market, alice, alice_api):
    reserve_prices_set(market=market, prices={"map": 2.0})  # above the reference rate 1.0
    body = alice_api.post("/api/bids/preview/", {"budget": "10", "work": [{"resource_type": "map", "tasks": 10, "task_duration": 30}]},
                          format="json").json()
    assert body["suggested"]["minimum"] == "600.0000"  # 2.0 x 300 slot-seconds
    assert float(body["suggested"]["budget"]) >= 600.0  # the level alone (1.0 x 300) would suggest 300
