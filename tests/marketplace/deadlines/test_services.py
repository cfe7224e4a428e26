"""Deadline quotes and bookings in the live market (paper 003 through services.deadlines)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.deadlines.models import DeadlineBooking
from marketplace.deadlines.selectors import PRICE_SOURCE_CURVE
from marketplace.deadlines.services import deadline_book, deadline_quote, unit_prices
from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.services import ledger_reconcile
from marketplace.market.models.jobs import Job
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.market import engine_context, engine_load
from marketplace.reservations.adapters import era_settings
from marketplace.reservations.models import ReservationSettings
from scheduler.deadline.slots import min_payment_slots

# 20 map tasks of 30 s, then 4 reduce tasks of 60 s, on the test market's 10 map and 5 reduce slots.
WORK = [WorkItem("map", 20, 30.0), WorkItem("reduce", 4, 60.0)]


def test_quote_on_an_idle_market_is_paper_003_at_the_curve_s_reserve_price(market):
    # given no sale yet: the market's price curve (ERA's) is its reserve price per unit-slot, per slot-second
    q = deadline_quote(market=market, work=WORK, deadline=400.0)
    s = era_settings(market)
    floor = s.reserve_price / s.slot_seconds
    assert q.price_source == PRICE_SOURCE_CURVE and q.unit_prices == pytest.approx([floor, floor])
    assert q.available == [10, 5] and q.feasible and q.start_delay == 0.0 and q.busy_now == [0, 0]
    # then it is the whole-slot optimum with waves of whole tasks, theta = 1
    oracle = min_payment_slots([600.0, 240.0], 400.0, [floor, floor], [10, 5], tasks=[20, 4])
    assert q.slots == oracle.slots.tolist() and q.payment == pytest.approx(oracle.payment)
    assert q.exec_time <= 400.0 and q.guarantee == (q.exec_time, q.exec_time)
    assert q.continuous_payment <= q.payment <= q.rounded_up_payment
    assert q.curve and all(p >= c - 1e-9 for _, p, c in q.curve)
    # the curve is the cost of urgency: a later deadline never costs more (whole slots: nearly)
    pays = [p for _, p, _ in q.curve]
    assert pays[0] >= pays[-1]


def test_error_tolerance_plans_for_the_stricter_deadline(market):
    loose = deadline_quote(market=market, work=WORK, deadline=400.0)
    q = deadline_quote(market=market, work=WORK, deadline=400.0, alpha_err=0.7, beta_err=1.3)
    assert q.planned_deadline == pytest.approx(280.0) and q.exec_time <= 280.0
    assert q.guarantee[1] == pytest.approx(q.exec_time / 0.7) and q.guarantee[1] <= 400.0 + 1e-9
    assert q.paper_guarantee == pytest.approx((280.0 / 1.3, 400.0))
    assert q.nominal_payment == pytest.approx(loose.payment)
    assert q.extra_cost == pytest.approx(q.payment - loose.payment)


BAD_REQUESTS = {
    "deadline in the past": ({"deadline": -1.0}, "deadline"),
    "deadline now": ({"deadline": 0.0}, "deadline"),
    "deadline not a number": ({"deadline": "soon"}, "deadline"),
    "deadline at the float limit": ({"deadline": 1.7976931348623157e308}, "deadline"),
    "no work": ({"work": [WorkItem("map", 0, 30.0)]}, "work"),
    "zero duration": ({"work": [WorkItem("map", 3, 0.0)]}, "work"),
    "unknown type": ({"work": [WorkItem("gpu", 3, 1.0)]}, "work"),
    "range without 1": ({"alpha_err": 0.5, "beta_err": 0.9}, "alpha_err"),
    "range above 1": ({"alpha_err": 1.2, "beta_err": 1.5}, "alpha_err"),
    "non-positive range": ({"alpha_err": 0.0, "beta_err": 1.5}, "alpha_err"),
}


@pytest.mark.parametrize(("change", "field"), BAD_REQUESTS.values(), ids=BAD_REQUESTS.keys())
def test_bad_requests_are_field_errors_and_book_nothing(market, alice, change, field):
    args = {"work": WORK, "deadline": 400.0, "alpha_err": 1.0, "beta_err": 1.0} | change
    with pytest.raises(ValidationError) as err:
        deadline_quote(market=market, **args)
    assert field in err.value.message_dict
    with pytest.raises(ValidationError):
        deadline_book(tenant=alice, **args)
    assert not Job.objects.exists() and not LedgerEntry.objects.filter(job__isnull=False).exists()


def test_infeasible_deadline_is_refused_with_the_fastest_time(market, alice):
    q = deadline_quote(market=market, work=WORK, deadline=50.0)
    assert not q.feasible and q.fastest_time == pytest.approx(2 * 30.0 + 60.0)
    with pytest.raises(ValidationError) as err:
        deadline_book(tenant=alice, work=WORK, deadline=50.0)
    assert "deadline" in err.value.message_dict and "120 s" in err.value.message_dict["deadline"][0]


def test_booking_charges_the_fixed_price_and_the_job_meets_its_deadline(market, alice, django_capture_on_commit_callbacks):
    # given a booking with a deadline at t = 400 s
    with django_capture_on_commit_callbacks(execute=True):
        job, q = deadline_book(tenant=alice, work=WORK, deadline=400.0, name="report")
    # then the price is charged at once through the ledger, and nothing stays held
    job.refresh_from_db()
    alice.account.refresh_from_db()
    assert job.charged == q.price == job.budget
    assert alice.account.available == Decimal("1000") - q.price and alice.account.held == 0
    assert ledger_reconcile(account=alice.account) == []
    booking = DeadlineBooking.objects.get(job=job)
    assert booking.slots == q.slots and booking.sim_end == pytest.approx(400.0)
    # and the engine holds one reservation per type with work, for the planned time
    m = Market.objects.get(pk=market.pk)
    engine = engine_load(market=m, context=engine_context(m))
    assert engine.rule_of(job.pk).kind == "fixed"
    # when the clock runs past the deadline
    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, until=1000.0)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED
    assert job.sim_finish_time - job.sim_submit_time == pytest.approx(q.exec_time)  # the planned waves, exactly
    assert job.sim_finish_time <= 400.0
    assert job.charged == q.price  # no second charge at completion
    alice.account.refresh_from_db()
    assert alice.account.held == 0 and ledger_reconcile(account=alice.account) == []


def test_a_booking_beside_running_shared_work_starts_at_once_and_meets_its_deadline(
    market, alice, bob, django_capture_on_commit_callbacks,
):
    # given bob's shared job running 8 of the 10 map slots for 100 s
    with django_capture_on_commit_callbacks(execute=True):
        bid_submit(tenant=bob, budget="50", work=[WorkItem("map", 8, 100.0)])
    cluster_advance(market_id=market.pk, until=1.0)
    # then a quote offers only the 2 free map slots (running tasks are never pre-empted)
    q = deadline_quote(market=market, work=WORK, deadline=600.0)
    assert q.available == [2, 5] and q.feasible
    # and the booking, made now, finishes by its deadline
    with django_capture_on_commit_callbacks(execute=True):
        job, q = deadline_book(tenant=alice, work=WORK, deadline=600.0)
    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, until=2000.0)
    job.refresh_from_db()
    assert job.status == Job.Status.FINISHED and job.sim_finish_time <= 600.0
    assert job.sim_finish_time - 1.0 == pytest.approx(q.exec_time)


def test_booked_slots_are_not_offered_again(market, alice, bob):
    _, first = deadline_book(tenant=alice, work=[WorkItem("map", 20, 30.0)], deadline=200.0)
    assert 0 < first.slots[0] < 10
    second = deadline_quote(market=market, work=[WorkItem("map", 10, 30.0)], deadline=150.0)
    assert second.available[0] == 10 - first.slots[0]
    later = deadline_quote(market=market, work=[WorkItem("map", 10, 30.0)], deadline=1000.0)
    assert later.available[0] == 10 - first.slots[0]  # the windows overlap: [0, T) and [0, 1000)
    # all map slots promised: no deadline can be met, and the quote says so
    deadline_book(tenant=bob, work=[WorkItem("map", 10 - first.slots[0], 30.0)], deadline=31.0)
    full = deadline_quote(market=market, work=[WorkItem("map", 1, 30.0)], deadline=1000.0)
    assert full.available[0] == 0 and not full.feasible and full.curve == []


def test_a_price_above_the_accepted_one_is_refused(market, alice):
    q = deadline_quote(market=market, work=WORK, deadline=400.0)
    with pytest.raises(ValidationError) as err:
        deadline_book(tenant=alice, work=WORK, deadline=400.0, max_payment=q.price - Decimal("0.0001"))
    assert "max_payment" in err.value.message_dict and not Job.objects.exists()
    job, _ = deadline_book(tenant=alice, work=WORK, deadline=400.0, max_payment=q.price)
    assert job.pk


def test_not_enough_funds_is_a_payment_error_and_writes_nothing(market, alice):
    ReservationSettings.objects.filter(pk=era_settings(market).pk).update(reserve_price=600.0)  # 10 per slot-second
    with pytest.raises(ValidationError) as err:
        deadline_book(tenant=alice, work=WORK, deadline=400.0)
    assert "payment" in err.value.message_dict
    assert not Job.objects.exists() and not DeadlineBooking.objects.exists()
    assert ledger_reconcile(account=alice.account) == []


def test_prices_are_the_market_s_one_curve_averaged_over_the_window(market):
    # the deadline quote's b_j is the mean, over the window's slots, of the curve ERA quotes from
    from marketplace.market import hooks
    from marketplace.market.adapters import resource_types

    types = resource_types(market)
    times, curve = hooks.price_curve(market, types, 0.0, 600.0)
    prices, source = unit_prices(market=market, types=types, start=0.0, end=600.0)
    assert len(times) == 10 and times[0] == 0.0  # ten 60 s slots
    assert source == PRICE_SOURCE_CURVE and prices == pytest.approx(curve.mean(axis=1))


# --- the REST API


def _api(client, path: str, body: dict | str):
    import json

    raw = body if isinstance(body, str) else json.dumps(body)
    return client.post(path, raw, content_type="application/json")


API_WORK = [{"resource_type": "map", "tasks": 20, "task_duration": 30}, {"resource_type": "reduce", "tasks": 4, "task_duration": 60}]


def test_api_quote_then_book(alice_api, alice, market):
    resp = _api(alice_api, "/api/deadline/quote/", {"work": API_WORK, "deadline": 400, "alpha_err": 0.8, "beta_err": 1.2})
    assert resp.status_code == 200, resp.content
    q = resp.json()
    assert q["feasible"] and q["planned_deadline"] == pytest.approx(320.0)
    assert [r["resource_type"] for r in q["resources"]] == ["map", "reduce"]
    assert q["exec_time"] <= 320.0 and q["guarantee"][1] <= 400.0 + 1e-9 and len(q["curve"]) > 5
    assert not Job.objects.exists()  # a quote writes nothing
    body = {"work": API_WORK, "deadline": 400, "alpha_err": 0.8, "beta_err": 1.2, "max_payment": q["payment"], "name": "nightly"}
    resp = _api(alice_api, "/api/deadline/book/", body)
    assert resp.status_code == 201, resp.content
    job = Job.objects.get(pk=resp.json()["job"])
    assert str(job.charged) == q["payment"] == resp.json()["payment"]
    assert DeadlineBooking.objects.get(job=job).slots == [r["slots"] for r in q["resources"]]


def test_api_booking_over_max_payment_is_a_conflict(alice_api, alice, market):
    # given a quote's price, and a caller that accepts a little less
    q = _api(alice_api, "/api/deadline/quote/", {"work": API_WORK, "deadline": 400}).json()
    body = {"work": API_WORK, "deadline": 400, "max_payment": str(Decimal(q["payment"]) - Decimal("0.0001"))}
    # when it books
    resp = _api(alice_api, "/api/deadline/book/", body)
    # then the state (the price now) refuses it: 409 with the field that says why, and nothing is booked
    assert resp.status_code == 409, resp.content
    assert "max_payment" in resp.json() and not Job.objects.exists()


API_ERRORS = {
    "past deadline": ({"deadline": -5}, "deadline"),
    "nan deadline": ('{"work": %s, "deadline": NaN}', "deadline"),
    "no work": ({"work": [{"resource_type": "map", "tasks": 0, "task_duration": 3}]}, "work"),
    "empty work": ({"work": []}, "work"),
    "range without 1": ({"alpha_err": 1.5, "beta_err": 2}, "alpha_err"),
    "negative range": ({"alpha_err": -0.5}, "alpha_err"),
}


@pytest.mark.parametrize(("change", "field"), API_ERRORS.values(), ids=API_ERRORS.keys())
def test_api_errors_are_field_errors(alice_api, market, change, field):
    import json

    for path in ("/api/deadline/quote/", "/api/deadline/book/"):
        body = change % json.dumps(API_WORK) if isinstance(change, str) else {"work": API_WORK, "deadline": 400} | change
        resp = _api(alice_api, path, body)
        assert resp.status_code == 400, resp.content
        assert field in resp.json(), resp.json()
    assert not Job.objects.exists()


def test_api_needs_a_tenant(client, db, market):
    from django.contrib.auth import get_user_model
    from rest_framework.test import APIClient

    staff = APIClient()
    staff.force_authenticate(get_user_model().objects.create_user("ops", password="x-123456"))
    assert _api(staff, "/api/deadline/quote/", {"work": API_WORK, "deadline": 400}).status_code == 403
    assert _api(APIClient(), "/api/deadline/quote/", {"work": API_WORK, "deadline": 400}).status_code in (401, 403)


def test_a_rolled_back_booking_leaves_the_cached_engine_untouched(market, alice, monkeypatch, django_capture_on_commit_callbacks):
    from marketplace.deadlines import services as deadlines

    with django_capture_on_commit_callbacks(execute=True):
        cluster_advance(market_id=market.pk, until=1.0)  # this process now caches the stored engine
    m = Market.objects.get(pk=market.pk)
    before = engine_load(market=m, context=engine_context(m)).known_jobs()

    def fail(*, market):  # the last write of the booking fails: the transaction rolls back
        raise RuntimeError("boom")

    monkeypatch.setattr(deadlines, "market_changed", fail)
    with pytest.raises(RuntimeError):
        deadline_book(tenant=alice, work=WORK, deadline=400.0)
    m = Market.objects.get(pk=market.pk)
    assert engine_load(market=m, context=engine_context(m)).known_jobs() == before
    assert not Job.objects.exists()
