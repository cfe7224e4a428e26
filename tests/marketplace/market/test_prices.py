"""One unit of price, money per slot-second (market.prices; docs/economy.md, "One unit of price").

* the spot auction's realised rate is recorded per job (``Job.slot_seconds``) and per resource
  type over time (``RateSample``): charged / slot-seconds used, only for the auction's payments;
* it is served by the API (``/api/market/rates/`` and ``spot`` in ``/api/market/``);
* after a replayed slice of FB-2009 the spot, reservation and deadline prices of a slot sit
  within a small factor of each other (before the rules of docs/economy.md: 0.967, 0.005 and 0.000167).
"""

from __future__ import annotations

import io
from decimal import Decimal

import numpy as np
import pytest
from django.core.cache import cache
from django.core.management import call_command

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.deadlines.services import deadline_book, deadline_quote
from marketplace.market import adapters, selectors
from marketplace.market.models.allocation import RateSample, SpotSettlement
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import bidders_rate, one_unit_prices, price_level, realised_rates, reference_rate
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.reservations.services import reservation_accept, reservation_quote
from tests.factories import TenantFactory

TRACE = "data/traces/FB-2009_samples_24_times_1hr_0.tsv"


def test_departures_record_what_auction_jobs_paid_per_slot_second(market, alice, bob, settings):
    a = bid_submit(tenant=alice, budget="60", work=[WorkItem("map", 4, 10.0), WorkItem("reduce", 2, 10.0)])  # 60 slot-s
    b = bid_submit(tenant=bob, budget="20", work=[WorkItem("map", 2, 20.0)])  # 40 slot-s
    booked, _ = deadline_book(tenant=alice, work=[WorkItem("map", 2, 10.0)], deadline=500.0)  # a fixed price: not spot
    cluster_advance(market_id=market.pk, until=1000.0)
    assert set(Job.objects.values_list("status", flat=True)) == {"finished"}
    a.refresh_from_db()
    b.refresh_from_db()
    assert (a.slot_seconds, b.slot_seconds) == (60.0, 40.0) and (a.charged, b.charged) == (Decimal("60"), Decimal("20"))
    settled = SpotSettlement.objects.filter(market=market)
    # per job and type: a's charge split 40:20 over map and reduce by slot-seconds, b's all on map; each names its tenant
    rows = sorted((s.tenant_id, s.resource_type.name, round(s.charged, 6), s.slot_seconds) for s in settled)
    assert rows == sorted([(alice.pk, "map", 40.0, 40.0), (alice.pk, "reduce", 20.0, 20.0), (bob.pk, "map", 20.0, 40.0)])
    assert not RateSample.objects.exists()  # two tenants: publishing would tell each the other's payment
    market.refresh_from_db()
    types = adapters.resource_types(market)
    assert realised_rates(market=market, types=types) == {"map": None, "reduce": None}
    assert Job.objects.get(pk=booked.pk).slot_seconds == 20.0
    # a third tenant's job on map: map's pool now comes from three tenants and is published, reduce's is not
    carol = TenantFactory(market=market, username="carol", deposit=Decimal("1000"))
    bid_submit(tenant=carol, budget="90", work=[WorkItem("map", 3, 10.0)])  # 30 slot-s at 3 per slot-second
    cluster_advance(market_id=market.pk, until=2000.0)
    (row,) = RateSample.objects.filter(market=market)
    assert (row.resource_type.name, row.tenants, row.jobs) == ("map", 3, 3)
    assert (row.charged, row.slot_seconds) == (pytest.approx(40.0 + 20.0 + 90.0), pytest.approx(40.0 + 40.0 + 30.0))
    market.refresh_from_db()
    assert realised_rates(market=market, types=types) == {"map": pytest.approx(150 / 110), "reduce": None}
    # the price level: one vote per tenant (its charges over its slot-seconds) and one for the reference rate;
    # only sales in contention vote
    settings.MARKET_CONTENTION_LEVEL = 0.0  # every sale counts: alice 60/60, bob 0.5, carol 3, the reference 1.0
    assert price_level(market=market) == pytest.approx(np.median([60 / 60, 20 / 40, 90 / 30, 1.0]))
    carol_alone = SpotSettlement.objects.filter(tenant=carol)
    carol_alone.update(charged=0.0)  # carol's vote at nothing paid: the median of 1, 0.5, 0 and 1 is still 0.75
    cache.clear()  # no service changes a settlement: the window's sums kept for this state of the market are forgotten by hand
    selectors.forget_caches()  # and this process's copy of them
    assert price_level(market=market) == pytest.approx(0.75)
    settings.MARKET_CONTENTION_LEVEL = 1.01  # no sale counts: the reference rate alone
    assert price_level(market=market) == pytest.approx(reference_rate())


def test_before_any_sale_the_price_level_is_the_reference_rate(market, settings):
    settings.MARKET_REFERENCE_RATE = 2.5
    assert reference_rate() == 2.5 and price_level(market=market) == 2.5
    assert realised_rates(market=market, types=adapters.resource_types(market)) == {"map": None, "reduce": None}


def test_the_bidders_rate_is_their_money_per_slot_second_of_remaining_work(market, alice, bob):
    bid_submit(tenant=alice, budget="90", work=[WorkItem("map", 30, 10.0), WorkItem("reduce", 2, 50.0)])
    bid_submit(tenant=bob, budget="30", work=[WorkItem("map", 10, 20.0)])
    market_clear(market_id=market.pk)
    plan = adapters.latest_plan(market.pk)[1]
    rates = bidders_rate(market=market, types=adapters.resource_types(market))
    spent = plan.sub_budgets.sum(axis=0)
    assert [rates["map"], rates["reduce"]] == pytest.approx(spent / np.array([30 * 10.0 + 10 * 20.0, 2 * 50.0]))


def test_the_api_serves_the_realised_rate_pooled_over_three_tenants(market, alice, bob, alice_api):
    bid_submit(tenant=alice, budget="50", work=[WorkItem("map", 5, 10.0)])
    cluster_advance(market_id=market.pk, until=100.0)
    assert alice_api.get("/api/market/rates/?resource=map").json()["results"] == []  # one tenant's payment: never shown
    bid_submit(tenant=bob, budget="25", work=[WorkItem("map", 5, 10.0)])
    carol = TenantFactory(market=market, username="carol", deposit=Decimal("1000"))
    bid_submit(tenant=carol, budget="75", work=[WorkItem("map", 5, 10.0)])
    cluster_advance(market_id=market.pk, until=200.0)
    rows = alice_api.get("/api/market/rates/?resource=map").json()["results"]
    assert len(rows) == 1 and rows[0]["rate"] == pytest.approx(150 / 150.0) and (rows[0]["jobs"], rows[0]["tenants"]) == (3, 3)
    spot = alice_api.get("/api/market/").json()["spot"]
    assert spot["realised_rate"]["map"] == pytest.approx(1.0) and spot["realised_rate"]["reduce"] is None
    assert spot["unit"] == "credits per slot-second" and spot["reserve_price"] == {"map": 0.0, "reduce": 0.0}
    assert spot["reference_rate"]["map"] >= 0.5 and spot["price_level"] >= 0.5  # at most halved by any one vote


def test_after_a_replayed_slice_the_three_prices_sit_within_a_small_factor(db, settings, tmp_path):
    # the measurement: a fresh demo market, half an hour of FB-2009, then the price of a map slot three ways
    settings.VAR_DIR = tmp_path  # the demo's credentials file
    call_command("seed_demo", stdout=io.StringIO())
    call_command("replay_trace", TRACE, "--hours", "0.5", "--seed", "0", "--drain", stdout=io.StringIO())
    market = Market.objects.get()
    types = adapters.resource_types(market)
    spot = realised_rates(market=market, types=types)["map"]
    deadline = deadline_quote(market=market, work=[WorkItem("map", 10, 60.0)], deadline=market.sim_time + 3600).unit_prices[0]
    alice = Tenant.objects.get(name="alice")
    quote = reservation_quote(tenant=alice, resource_type="map", units=5, duration=600, arrival=market.sim_time + 60,
                              deadline=market.sim_time + 3600)
    prices = {"spot": spot, "deadline": deadline, "reservation": quote.unit_rate}
    assert spot is not None and max(prices.values()) / min(prices.values()) < 3.0, prices
    reservation_accept(quote=quote)
    chart = one_unit_prices(market=market, types=types)
    assert chart["spot"] and chart["curve"] and any(r["source"] == "reservation" for r in chart["offered"])


def test_the_demo_economy_is_sized_from_the_price_level(db, settings, tmp_path):
    # seed_demo: each tenant's deposit buys a day of its fair share at the price level (the reference rate before any sale)
    settings.VAR_DIR = tmp_path
    settings.MARKET_REFERENCE_RATE = 0.5
    call_command("seed_demo", stdout=io.StringIO())
    market = Market.objects.get()
    tree_map = adapters.queue_tree(market)
    fractions = dict(zip(tree_map.leaf_queue_ids, tree_map.tree.leaf_fraction().tolist(), strict=True))
    for tenant in Tenant.objects.select_related("account"):
        day = 0.5 * fractions[tenant.default_queue_id] * (40 + 20) * 86400
        assert tenant.account.available == Decimal(round(day)), tenant.name  # alice: 0.5 x 1/3 x 60 x 86400 = 864,000
    # replay_trace: a bid's budget pays the price level for its work, with paper 000's U[50, 200] / 125 spread around it
    call_command("replay_trace", TRACE, "--hours", "0.25", "--seed", "1", "--drain", stdout=io.StringIO())
    jobs = list(Job.objects.filter(market=market).prefetch_related("work"))
    ratios = [float(j.budget) / (0.5 * sum(w.tasks * w.task_duration for w in j.work.all())) for j in jobs]
    assert jobs and all(0.4 - 0.01 <= r <= 1.6 + 0.01 for r in ratios), ratios


def test_the_window_s_sums_are_kept_across_bids_and_read_again_after_a_settlement(market, alice, bob, settings):
    from unittest import mock

    from marketplace.auction.services import job_cancel
    from marketplace.market import prices

    def oracle() -> list[tuple[int, int | None, bool, float, float, int]]:
        """The window's settlements summed in Python, row by row."""
        level, start = prices.contention_level(), market.sim_time - prices.window_s()
        out: dict[tuple[int, int | None, bool], list[float]] = {}
        for s in SpotSettlement.objects.filter(market=market, sim_time__gte=start):
            into = out.setdefault((s.resource_type_id, s.tenant_id, s.utilisation >= level), [0.0, 0.0, 0])
            into[0] += s.charged
            into[1] += s.slot_seconds
            into[2] += 1
        return sorted((t, tenant, c, pytest.approx(v[0]), pytest.approx(v[1]), v[2]) for (t, tenant, c), v in out.items())

    def read() -> list[tuple[int, int | None, bool, float, float, int]]:
        out: dict[tuple[int, int | None, bool], list[float]] = {}
        for r in prices.settlement_sums(market=market):
            into = out.setdefault((r.resource_type_id, r.tenant_id, r.contended), [0.0, 0.0, 0])
            into[0] += r.charged
            into[1] += r.slot_seconds
            into[2] += r.rows
        return sorted((t, tenant, c, v[0], v[1], v[2]) for (t, tenant, c), v in out.items())

    settings.MARKET_CONTENTION_LEVEL = 0.0
    bid_submit(tenant=alice, budget="60", work=[WorkItem("map", 4, 10.0)])
    cluster_advance(market_id=market.pk, until=100.0)  # settled
    running = bid_submit(tenant=bob, budget="500", work=[WorkItem("map", 200, 30.0)])
    cluster_advance(market_id=market.pk, until=150.0)  # bob's job runs: some of its tasks done
    market.refresh_from_db()
    assert read() == oracle() and len(oracle()) == 1
    with mock.patch.object(prices, "window_sums", wraps=prices.window_sums) as summed:
        bid_submit(tenant=alice, budget="5", work=[WorkItem("map", 1, 1.0)])  # a bid: the market's state moves ...
        market.refresh_from_db()
        assert read() == oracle() and summed.call_count == 0  # ... the settlements do not: the kept sums answer
        job_cancel(job=running)  # a cancellation at the same clock time settles what bob's job used
        market.refresh_from_db()
        assert read() == oracle() and summed.call_count == 1  # read again, with bob's settlement
    assert Job.objects.get(pk=running.pk).status == "cancelled" and {t for _, t, *_ in oracle()} == {alice.pk, bob.pk}
