"""ERA's quotes on the whole live market (docs/economy.md, "Quotes priced from the same market" and "Quotes on a
busy cluster").

* capacity is promised from the times slots actually free: the units the auction's running
  tasks hold count as promised until the tasks end, so a quote on a full cluster starts when
  they free (and the reserved job gets them before the auction does);
* the demand ERA prices with includes the auction: once the spot market has sold, a unit-slot
  costs about what the spot market has charged per slot-second at that level of demand;
* accepting a quote whose start has begun (the reservation form's default window starts at the
  next slot) re-prices it to the next feasible start, or says exactly why not.
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from django.test import Client

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.ledger.services import account_deposit, ledger_reconcile
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import engine_forget
from marketplace.reservations import adapters as ra
from marketplace.reservations.models import Reservation, ReservationQuote
from marketplace.reservations.services import QuoteMoved, reservation_accept, reservation_quote
from tests.factories import TenantFactory


def _fill_the_map_slots(market: Market, bob, tasks: int = 30, seconds: float = 100.0) -> Job:  # type: ignore[no-untyped-def]
    """bob's auction job holds all 10 map slots: 3 waves of 10 tasks ending at 101, 201, 301 s."""
    job = bid_submit(tenant=bob, budget="50", work=[WorkItem("map", tasks, seconds)])
    cluster_advance(market_id=market.pk, until=1.0)
    assert JobWork.objects.get(job=job).running == 10
    return job


def test_running_tasks_hold_their_units_until_they_end(market, alice, bob):
    _fill_the_map_slots(market, bob)
    market.refresh_from_db()
    state = ra.era_state(market, market.resource_types.get(name="map"))
    # slot 0 is [60, 120): the first wave ends at 101, so its units are busy in slot 0 and free from 120 s
    assert state.origin == 1 and state.busy[0] == 10 and state.busy[1] == 0
    assert state.promised.sum() == 0 and state.fill[1] == pytest.approx(10.0)  # the queued waves would take slot 1
    quote = reservation_quote(tenant=alice, resource_type="map", units=4, duration=300, arrival=60, deadline=3600)
    assert quote.start == 120.0  # the first slot whose 4 units are free: no promise of a busy unit


def test_the_room_a_booking_checks_is_what_era_promises_from(market, alice, bob):
    """``era_taken`` (what accepting and booking check their room against) is ``era_state``'s promised
    capacity, running tasks and bookings both, array for array."""
    _fill_the_map_slots(market, bob)
    reservation_accept(quote=reservation_quote(tenant=alice, resource_type="map", units=4, duration=300, arrival=60,
                                               deadline=3600))
    market.refresh_from_db()
    for rt in market.resource_types.all():
        state = ra.era_state(market, rt)
        taken, origin = ra.era_taken(market, rt)
        assert origin == state.origin and taken.dtype == state.mech.promised.dtype
        np.testing.assert_array_equal(taken, state.mech.promised)
        assert taken.shape == (state.mech.horizon,)
    map_taken, _ = ra.era_taken(market, market.resource_types.get(name="map"))
    assert map_taken[0] == 10 and map_taken[1] == 4  # bob's running wave, then alice's booking from 120 s
    assert ra.has_room(map_taken, 10, 1, 3, 6) and not ra.has_room(map_taken, 10, 1, 3, 7)
    assert not ra.has_room(map_taken, 10, 0, 1, 1)  # slot 0 is full
    assert not ra.has_room(map_taken, 10, -1, 1, 0) and not ra.has_room(map_taken, 10, 2, map_taken.size + 1, 0)
    assert not ra.has_room(map_taken, 10, 2, 2, 0)  # an empty window has no room


def test_freed_slots_go_to_the_reservation_before_the_auction(market, alice, bob):
    auction_job = _fill_the_map_slots(market, bob)
    r = reservation_accept(quote=reservation_quote(tenant=alice, resource_type="map", units=4, duration=300, arrival=60,
                                                   deadline=3600))
    assert r.start == 120.0
    cluster_advance(market_id=market.pk, until=130.0)
    reserved = JobWork.objects.get(job=r.job)
    assert reserved.running == 4  # its 4 units from its start on
    assert JobWork.objects.get(job=auction_job).running == 6  # the auction got the rest of the freed wave
    cluster_advance(market_id=market.pk, until=r.end + 1)
    assert Job.objects.get(pk=r.job_id).status == Job.Status.FINISHED
    assert Job.objects.get(pk=r.job_id).sim_finish_time <= r.end


def test_after_spot_sales_a_unit_slot_costs_the_tenants_median_spot_rate(market, alice, bob, settings):
    # given the spot market sold: three tenants' jobs finished and paid their budgets, at three rates
    settings.MARKET_REFERENCE_RATE = 0.2  # the reference rate's vote, near theirs
    carol = TenantFactory(market=market, username="carol", deposit=Decimal("1000"))
    for tenant, budget in ((bob, "120"), (carol, "60"), (bob, "120")):
        bid_submit(tenant=tenant, budget=budget, work=[WorkItem("map", 10, 30.0), WorkItem("reduce", 5, 20.0)])
    cluster_advance(market_id=market.pk, until=2000.0)
    assert not Job.objects.filter(status__in=Job.ACTIVE).exists()
    votes = [240 / 800, 60 / 400, 0.2]  # bob's rate over both his jobs, carol's, the reference rate's
    # when alice asks for a reservation on the idle market
    account_deposit(account=alice.account, amount=Decimal("100000"), memo="top-up")
    quote = reservation_quote(tenant=alice, resource_type="map", units=2, duration=600, arrival=2040, deadline=6000)
    # then its price per slot-second is the median of one vote per tenant (and the reference rate's) at that level
    # of demand: bob's two jobs are one vote, however much he bought (docs/economy.md, "A price nobody moves alone")
    assert quote.unit_rate == pytest.approx(float(np.median(votes)), rel=0.05)
    assert quote.unit_rate > 0.1  # far above ERA's reserve price of 0.01 per 60 s slot


def test_the_form_s_default_window_can_be_accepted_after_its_start_has_begun(market, alice):
    client = Client()
    client.force_login(alice.user)
    page = client.get("/reservations/new/")
    form = page.context["form"]
    data = {name: form[name].value() for name in ("resource_type", "units", "duration", "arrival", "deadline")}
    data["resource_type"] = data["resource_type"] or form.fields["resource_type"].choices[0][0]  # a browser sends the first option
    data["value"] = ""
    answer = client.post("/reservations/new/", data)
    assert answer.status_code == 302
    quote = ReservationQuote.objects.get(tenant=alice)
    # the demo's clock runs 30 simulated seconds a wall second: by the time the tenant clicks, the start has begun
    cluster_advance(market_id=market.pk, until=quote.start + 90.0)
    engine_forget(market_id=market.pk)
    answer = client.post(f"/reservations/quotes/{quote.pk}/accept/", follow=True)
    reservation = Reservation.objects.get(tenant=alice)
    assert reservation.start >= quote.start + 90.0 and reservation.price <= quote.price  # the next feasible start
    assert "Reserved" in answer.content.decode()
    assert ledger_reconcile(account=alice.account) == []


def test_an_accept_that_cannot_be_booked_says_exactly_why(market, alice, bob):
    quote = reservation_quote(tenant=alice, resource_type="map", units=10, duration=600, arrival=60, deadline=660)
    # the only start of its window has begun and gone: the window no longer holds its duration
    cluster_advance(market_id=market.pk, until=200.0)
    with pytest.raises(QuoteMoved) as err:
        reservation_accept(quote=quote)
    assert err.value.quote is None and "cannot be booked any more" in err.value.messages[0]
    # a window whose every start is taken by running tasks: the message names the busy units
    quote2 = reservation_quote(tenant=alice, resource_type="map", units=10, duration=600, arrival=240, deadline=1800)
    bid_submit(tenant=bob, budget="50", work=[WorkItem("map", 10, 5000.0)])
    cluster_advance(market_id=market.pk, until=230.0)  # the auction's 10 tasks now hold every map unit for 5000 s
    with pytest.raises(QuoteMoved) as err:
        reservation_accept(quote=quote2)
    assert err.value.quote is None and "held by running tasks" in err.value.messages[0]
    assert not Reservation.objects.filter(tenant=alice).exists() and ledger_reconcile(account=alice.account) == []
