"""ERA reservations through the services: quote, accept, decline, one-shot request, booking,
field errors, expiry and re-pricing, the ledger, and the guarantee in the live market."""

from __future__ import annotations

from datetime import timedelta
from decimal import Decimal

import numpy as np
import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import engine_forget
from marketplace.reservations import adapters as ra
from marketplace.reservations.models import Reservation, ReservationQuote, ReservationSettings
from marketplace.reservations.services import (
    QuoteMoved,
    cluster_update,
    reservation_accept,
    reservation_book,
    reservation_decline,
    reservation_quote,
    reservation_request,
)

REQUEST = {"resource_type": "map", "units": 4, "duration": 600, "arrival": 0, "deadline": 3600}


def test_a_quote_prices_every_start_and_moves_no_money(market, alice):
    # given: no history, so the spreading predictor falls back to the reserve price 0.01 per unit-slot
    quote = reservation_quote(tenant=alice, **REQUEST)
    # then: 4 units x 10 slots x 0.01, at the earliest start; one price per start in [0, 3000]
    assert (quote.start, quote.price, quote.status) == (0.0, Decimal("0.4000"), "open")
    assert [o[0] for o in quote.offers] == [60.0 * k for k in range(51)]
    assert quote.expires_at > timezone.now()
    assert not LedgerEntry.objects.filter(account=alice.account).exclude(kind="deposit").exists()


def test_accepting_books_a_job_pays_at_once_and_the_ledger_reconciles(market, alice):
    quote = reservation_quote(tenant=alice, **REQUEST, value="5")
    r = reservation_accept(quote=quote, user=alice.user)
    # then: a job of 4 tasks of 600 s arriving at the window, its reservation [0, 600), paid 0.4 now
    job = r.job
    assert (r.units, r.start, r.end, r.price, r.value) == (4, 0.0, 600.0, Decimal("0.4000"), Decimal("5"))
    assert [(w.tasks, w.task_duration) for w in job.work.all()] == [(4, 600.0)]
    assert job.charged == Decimal("0.4000")
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("999.6000"), Decimal("0"))
    assert ledger_reconcile(account=alice.account) == []
    quote.refresh_from_db()
    assert quote.status == "accepted"
    with pytest.raises(ValidationError) as err:
        reservation_accept(quote=quote)
    assert "quote" in err.value.message_dict


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"units": 0}, "units"), ({"units": 11}, "units"), ({"units": "two"}, "units"),
        ({"duration": 0}, "duration"), ({"duration": 4000}, "duration"), ({"duration": "nan"}, "duration"),
        ({"deadline": 0}, "deadline"), ({"arrival": 500, "deadline": 100}, "deadline"),
        ({"deadline": 10 ** 9}, "deadline"), ({"resource_type": "gpu"}, "resource_type"),
        ({"value": "nan"}, "value"), ({"value": "-1"}, "value"), ({"value": "Infinity"}, "value"), ({"value": "0"}, "value"),
    ],
)
def test_bad_requests_get_field_errors_and_write_nothing(market, alice, change, field):
    with pytest.raises(ValidationError) as err:
        reservation_quote(tenant=alice, **(REQUEST | change))
    assert field in err.value.message_dict
    assert not ReservationQuote.objects.exists()


def test_a_window_in_the_past_is_refused(market, alice):
    Market.objects.filter(pk=market.pk).update(sim_time=5000.0)
    with pytest.raises(ValidationError) as err:
        reservation_quote(tenant=alice, **REQUEST)
    assert "past" in err.value.message_dict["deadline"][0]


def test_an_expired_quote_is_repriced_and_accepted_when_the_offer_stands(market, alice):
    quote = reservation_quote(tenant=alice, **REQUEST)
    ReservationQuote.objects.filter(pk=quote.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    r = reservation_accept(quote=quote)
    quote.refresh_from_db()
    assert quote.status == "expired" and quote.replaced_by == r.quote and r.quote.status == "accepted"
    assert r.price == quote.price


def test_a_quote_the_market_moved_books_the_next_feasible_start_at_no_more_than_its_price(market, alice, bob):
    # given: alice is quoted all 10 map units for 10 min in [0, 20 min): start 0
    mine = reservation_quote(tenant=alice, resource_type="map", units=10, duration=600, arrival=0, deadline=1200)
    assert mine.start == 0.0
    # when: bob books [0, 600) first, and alice accepts
    reservation_accept(quote=reservation_quote(tenant=bob, resource_type="map", units=3, duration=600, arrival=0, deadline=600))
    r = reservation_accept(quote=mine)
    # then: her request is re-priced and booked at the next feasible start of its window, at no more than she accepted
    mine.refresh_from_db()
    assert mine.status == "expired" and mine.replaced_by == r.quote and r.quote.status == "accepted"
    assert r.start == 600.0 and r.price <= mine.price
    assert ledger_reconcile(account=alice.account) == []


def test_a_quote_the_market_made_dearer_is_not_booked_and_the_new_quote_is_returned(market, alice, bob):
    mine = reservation_quote(tenant=alice, resource_type="map", units=10, duration=600, arrival=0, deadline=1200)
    reservation_accept(quote=reservation_quote(tenant=bob, resource_type="map", units=3, duration=600, arrival=0, deadline=600))
    ReservationSettings.objects.filter(market=market).update(reserve_price=0.02)  # every unit-slot now costs twice as much
    with pytest.raises(QuoteMoved) as err:
        reservation_accept(quote=mine)
    assert err.value.quote is not None and err.value.quote.start == 600.0 and err.value.quote.status == "open"
    assert err.value.quote.price > mine.price and "more than the" in err.value.messages[0]
    assert not Reservation.objects.filter(tenant=alice).exists()
    assert ledger_reconcile(account=alice.account) == []
    # and the new quote can be accepted
    assert reservation_accept(quote=err.value.quote).start == 600.0


def test_declining_closes_the_quote_and_moves_nothing(market, alice):
    quote = reservation_decline(quote=reservation_quote(tenant=alice, **REQUEST))
    assert quote.status == "declined"
    with pytest.raises(ValidationError):
        reservation_accept(quote=quote)
    with pytest.raises(ValidationError):
        reservation_decline(quote=quote)
    assert LedgerEntry.objects.filter(account=alice.account).count() == 1  # the opening deposit
    assert ledger_reconcile(account=alice.account) == []


def test_the_one_shot_request_accepts_iff_the_value_covers_the_price(market, alice):
    low = reservation_request(tenant=alice, **REQUEST, value="0.39")
    assert not low.accepted and low.reservation is None and low.quote.status == "declined"
    high = reservation_request(tenant=alice, **REQUEST, value="0.40")
    assert high.accepted and high.reservation is not None and high.reservation.price == Decimal("0.4000")
    with pytest.raises(ValidationError) as err:
        reservation_request(tenant=alice, **REQUEST, value=None)
    assert "value" in err.value.message_dict
    assert ledger_reconcile(account=alice.account) == []


def test_a_booking_beyond_the_funds_writes_nothing(market, alice):
    rt = ResourceType.objects.get(market=market, name="map")
    with pytest.raises(ValidationError) as err:
        reservation_book(tenant=alice, resource_type=rt, units=2, start=60.0, end=120.0, price=Decimal("5000"))
    assert "budget" in err.value.message_dict
    assert not Job.objects.exists() and not Reservation.objects.exists()
    assert ledger_reconcile(account=alice.account) == []


def test_capacity_is_never_over_promised_through_the_services(market, alice):
    rng = np.random.default_rng(7)
    for _ in range(30):
        a = float(rng.integers(0, 40)) * 60
        dur = float(rng.integers(1, 10)) * 60
        try:
            reservation_request(tenant=alice, resource_type="map", units=int(rng.integers(1, 8)), duration=dur, arrival=a,
                                deadline=a + dur + float(rng.integers(0, 600)), value="100")
        except ValidationError as exc:
            assert "window" in exc.message_dict
    mech, _ = ra.era_mechanism(market, ResourceType.objects.get(market=market, name="map"))
    assert mech.promised.max() <= 10
    assert Reservation.objects.count() >= 5


def test_prices_rise_where_capacity_is_promised_once_there_is_history(market, alice):
    # a history of valued requests gives the spreading predictor a demand curve
    for value in ("10", "20", "30", "40", "50"):  # 0.2 .. 1.0 per unit-slot, 2.5 units per slot each
        reservation_quote(tenant=alice, resource_type="map", units=5, duration=600, arrival=0, deadline=1200, value=value)
    before = reservation_quote(tenant=alice, resource_type="map", units=2, duration=60, arrival=0, deadline=600)
    reservation_accept(quote=reservation_quote(tenant=alice, resource_type="map", units=6, duration=300, arrival=0, deadline=300))
    after = reservation_quote(tenant=alice, resource_type="map", units=2, duration=60, arrival=0, deadline=600)
    first = dict(before.offers)
    second = dict(after.offers)
    # slot 0: units at q = 9, 8 cost 0.4 each; with 6 of 10 promised, q = 3, 2 cost 0.8 and 1.0
    assert (first[0.0], second[0.0]) == (pytest.approx(0.8), pytest.approx(1.8))
    assert after.start >= 300.0  # the cheapest start moved past the promised slots


def test_the_guarantee_holds_in_the_live_market_across_a_worker_restart(market, alice, bob, django_capture_on_commit_callbacks):
    # given: a saturated auction (bob's long map jobs) and alice's reservation of 6 map units in [600, 1200)
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(4):
            bid_submit(tenant=bob, budget="50", work=[WorkItem("map", 40, 170.0)])
        quote = reservation_quote(tenant=alice, resource_type="map", units=6, duration=600, arrival=600, deadline=1200)
        reservation = reservation_accept(quote=quote)
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, until=500.0)
    # when: the worker restarts (its in-memory engine and bids are gone)
    engine_forget(market_id=market.pk)
    from marketplace.market import adapters

    adapters.forget_bids()
    with django_capture_on_commit_callbacks(execute=True):
        for t in (700.0, 1300.0):
            cluster_advance(market_id=market.pk, until=t)
    # then: the reserved job ran inside its window and paid exactly its price once
    job = Job.objects.get(pk=reservation.job_id)
    assert job.status == Job.Status.FINISHED
    assert job.sim_start_time >= 600.0 - 1e-9 and job.sim_finish_time <= 1200.0 + 1e-9
    assert job.charged == reservation.price
    assert ledger_reconcile(account=alice.account) == [] and ledger_reconcile(account=bob.account) == []


def test_booking_an_existing_job_moves_it_from_the_auction_to_its_reservation(market, alice, bob, django_capture_on_commit_callbacks):
    # given: alice's bid (auction job, budget 50) and a booking of 3 map units for it in [600, 1200) at 2
    with django_capture_on_commit_callbacks(execute=True):
        job = bid_submit(tenant=alice, budget="50", work=[WorkItem("map", 3, 300.0)])
    market.refresh_from_db()
    rt = ResourceType.objects.get(market=market, name="map")
    with pytest.raises(ValidationError) as err:
        reservation_book(tenant=bob, resource_type=rt, units=3, start=600.0, end=1200.0, price=Decimal("2"), job=job)
    assert "job" in err.value.message_dict
    with django_capture_on_commit_callbacks(execute=True):
        reservation_book(tenant=alice, resource_type=rt, units=3, start=600.0, end=1200.0, price=Decimal("2"), job=job)
    with pytest.raises(ValidationError) as err:
        reservation_book(tenant=alice, resource_type=rt, units=1, start=1200.0, end=1800.0, price=Decimal("1"), job=job)
    assert "job" in err.value.message_dict
    # when the clock runs: the idle cluster lets it run ahead of its window (Rayon); it pays only the reservation's price
    with django_capture_on_commit_callbacks(execute=True):
        for t in (300.0, 1300.0):
            cluster_advance(market_id=market.pk, until=t)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.sim_finish_time <= 1200.0
    assert job.charged == Decimal("2")
    alice.account.refresh_from_db()
    assert (alice.account.available, alice.account.held) == (Decimal("998"), Decimal("0"))
    assert ledger_reconcile(account=alice.account) == []


def test_era_and_deadline_bookings_see_each_others_units(market, alice, bob, django_capture_on_commit_callbacks):
    from marketplace.deadlines.models import DeadlineBooking
    from marketplace.deadlines.services import deadline_quote

    rt = ResourceType.objects.get(market=market, name="map")
    # given: an ERA reservation of 7 of the 10 map units in [0, 600)
    reservation_book(tenant=alice, resource_type=rt, units=7, start=0.0, end=600.0, price=Decimal("1"))
    # then: a deadline quote in that window sees only 3 map units
    q = deadline_quote(market=market, work=[WorkItem("map", 6, 60.0)], deadline=600.0)
    assert q.available[0] == 3
    # and a deadline booking's units count in ERA's promised capacity
    from marketplace.deadlines.services import deadline_book

    with django_capture_on_commit_callbacks(execute=True):
        job, _ = deadline_book(tenant=bob, work=[WorkItem("map", 3, 60.0)], deadline=600.0)
    slots = DeadlineBooking.objects.get(job=job).slots
    mech, _ = ra.era_mechanism(market, rt)
    assert mech.promised[:10].tolist() == [7 + slots[0]] * 10


def test_a_cluster_update_is_applied_whole_and_always_replans(market):
    capacity = ResourceType.objects.get(market=market, name="map").capacity
    with pytest.raises(ValidationError) as refused:
        cluster_update(market=market, capacity={"map": capacity + 3, "gpu": 2}, terminated=[])
    assert "capacity" in refused.value.message_dict
    assert ResourceType.objects.get(market=market, name="map").capacity == capacity  # nothing written
    version = Market.objects.get(pk=market.pk).state_version
    done = cluster_update(market=market, capacity={}, terminated=[10**9])  # no such job: nothing ended
    assert done.terminated == [] and done.capacity == {}
    assert Market.objects.get(pk=market.pk).state_version > version  # a re-plan on request
