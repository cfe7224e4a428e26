"""What a deadline booking promises (paper 003 on the live market; docs/economy.md, sections 2 and 4).

* The price shown is the price paid: a quote states ``paid_rate``, what the booking pays per
  slot-second of the work (paper 003's ``(1/R) b . r T`` over the work), beside the unit prices
  ``b_k``, and the booking's payment over its work is that rate.
* A booking keeps or states its promise: a booking whose start or guaranteed finish is later
  than the quote the tenant accepted is refused with the new quote (409 in the API); a start that
  moved sooner is booked and said so; the job page shows the quoted, booked and actual starts.
"""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit, job_cancel
from marketplace.deadlines.models import DeadlineBooking
from marketplace.deadlines.services import QuoteChanged, deadline_book, deadline_quote
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.services.clock import cluster_advance

WORK = [WorkItem("map", 20, 30.0), WorkItem("reduce", 4, 60.0)]
API_WORK = [{"resource_type": "map", "tasks": 20, "task_duration": 30}, {"resource_type": "reduce", "tasks": 4, "task_duration": 60}]


def _post(client, path: str, body: dict):  # type: ignore[no-untyped-def]
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.fixture
def alice_client(client, alice):  # type: ignore[no-untyped-def]
    client.force_login(alice.user)
    return client


@pytest.fixture
def busy(market, bob) -> Job:  # type: ignore[no-untyped-def]
    """bob's auction job holds all 10 map slots from 0 s, its first wave ending at 300 s (the clock at 1 s)."""
    job = bid_submit(tenant=bob, budget="80", work=[WorkItem("map", 40, 300.0)])
    cluster_advance(market_id=market.pk, until=1.0)
    assert JobWork.objects.get(job=job, resource_type__name="map").running == 10
    market.refresh_from_db()
    return job


# --- the price shown is the price paid


def test_the_quote_s_paid_rate_is_the_paper_s_payment_over_the_work_not_a_unit_price(market):
    q = deadline_quote(market=market, work=WORK, deadline=400.0)
    work = 20 * 30.0 + 4 * 60.0
    # paper 003, Eq. 2: (1/R) sum_k b_k r_k T over R = 2 types, then per slot-second of the work
    paper = sum(b * r for b, r in zip(q.unit_prices, q.slots, strict=True)) * q.exec_time / 2
    assert q.payment == pytest.approx(paper)
    assert q.paid_rate == pytest.approx(float(q.price) / work)
    assert all(abs(q.paid_rate - b) > 1e-3 * b for b in q.unit_prices)  # what is paid is not what the unit prices say


def test_a_booking_s_payment_over_its_work_is_the_paid_rate_the_api_quoted(alice_api, market):
    quoted = _post(alice_api, "/api/deadline/quote/", {"work": API_WORK, "deadline": 400}).json()
    assert quoted["paid_rate"] is not None and [r["unit_price"] for r in quoted["resources"]]
    resp = _post(alice_api, "/api/deadline/book/", {"work": API_WORK, "deadline": 400, "max_payment": quoted["payment"]})
    assert resp.status_code == 201, resp.content
    job = Job.objects.get(pk=resp.json()["job"])
    work = sum(w.tasks * w.task_duration for w in job.work.all())
    assert float(job.charged) / work == pytest.approx(quoted["paid_rate"]) == pytest.approx(resp.json()["paid_rate"])
    assert DeadlineBooking.objects.get(job=job).paid_rate == pytest.approx(quoted["paid_rate"])


def test_the_quote_page_shows_the_paid_rate_beside_the_unit_prices(alice_client, market):
    form = {"deadline": "400", "alpha_err": "1", "beta_err": "1", "map_tasks": "20", "map_duration": "30",
            "reduce_tasks": "4", "reduce_duration": "60", "quote": ""}
    resp = alice_client.post("/deadline/", form)
    q = resp.context["quote"]
    html = resp.content.decode()
    assert 'id="quote-paid-rate"' in html and f"{q.paid_rate:.4g}" in html.split('id="quote-paid-rate"')[1][:200]


# --- a booking keeps or states its promise


def test_a_booking_whose_start_got_later_is_refused_with_the_new_quote(market, alice, bob):
    # given a quote on an idle cluster: the slots are free now
    q = deadline_quote(market=market, work=WORK, deadline=2000.0)
    assert q.start_delay == 0.0
    # when bob's auction job takes every map slot before alice books (its tasks run until 300 s)
    bid_submit(tenant=bob, budget="80", work=[WorkItem("map", 40, 300.0)])
    cluster_advance(market_id=market.pk, until=1.0)
    # then the booking re-quotes to a start at 300 s, later than quoted: refused, with the new quote
    with pytest.raises(QuoteChanged) as err:
        deadline_book(tenant=alice, work=WORK, deadline=2000.0, quoted_start=q.starts_at, quoted_finish=q.finishes_by)
    assert "quoted_start" in err.value.message_dict and err.value.quote.starts_at == pytest.approx(300.0)
    assert "300 s" in err.value.message_dict["quoted_start"][0]
    assert not DeadlineBooking.objects.exists() and not Job.objects.filter(tenant=alice).exists()


def test_the_api_answers_409_with_the_new_start(alice_api, market, bob):
    quoted = _post(alice_api, "/api/deadline/quote/", {"work": API_WORK, "deadline": 2000}).json()
    bid_submit(tenant=bob, budget="80", work=[WorkItem("map", 40, 300.0)])
    cluster_advance(market_id=market.pk, until=1.0)
    body = {"work": API_WORK, "deadline": 2000, "max_payment": quoted["payment"], "quoted_start": quoted["starts_at"],
            "quoted_finish": quoted["finishes_by"]}
    resp = _post(alice_api, "/api/deadline/book/", body)
    assert resp.status_code == 409, resp.content
    assert resp.json()["quote"]["starts_at"] == pytest.approx(300.0) and resp.json()["quote"]["start_delay"] == pytest.approx(299.0)
    assert "quoted_start" in resp.json() and not DeadlineBooking.objects.exists()
    # booking again with the new quote's promise goes through, and the answer says what it was promised
    again = resp.json()["quote"]
    body |= {"max_payment": again["payment"], "quoted_start": again["starts_at"], "quoted_finish": again["finishes_by"]}
    resp = _post(alice_api, "/api/deadline/book/", body)
    assert resp.status_code == 201, resp.content
    assert resp.json()["quoted_start"] == resp.json()["booked_start"] == pytest.approx(300.0)
    assert resp.json()["start_moved"] == 0.0 and resp.json()["notice"] == ""


def test_a_later_guaranteed_finish_is_refused_with_the_new_quote(market, alice, bob):
    # given a quote for 20 map tasks of 30 s by 100 s: all 10 map slots, two waves, done at 60 s
    work = [WorkItem("map", 20, 30.0)]
    q = deadline_quote(market=market, work=work, deadline=100.0)
    assert q.slots == [10, 0] and q.finishes_by == pytest.approx(60.0)
    # when bob books one map slot in the window first: nine are left, three waves, done at 90 s
    deadline_book(tenant=bob, work=[WorkItem("map", 1, 30.0)], deadline=31.0)
    with pytest.raises(QuoteChanged) as err:
        deadline_book(tenant=alice, work=work, deadline=100.0, quoted_start=q.starts_at, quoted_finish=q.finishes_by)
    # then the start is the same (now) but the guaranteed finish is later: asked again
    assert "quoted_finish" in err.value.message_dict and err.value.quote.finishes_by == pytest.approx(90.0)
    assert err.value.quote.starts_at == q.starts_at


def test_a_start_that_moved_sooner_is_booked_and_said_so(alice_api, market, busy):
    quoted = _post(alice_api, "/api/deadline/quote/", {"work": API_WORK, "deadline": 3000}).json()
    assert quoted["starts_at"] == pytest.approx(300.0)
    job_cancel(job=busy)  # the map slots free at the next tick
    cluster_advance(market_id=market.pk, until=2.0)
    market.refresh_from_db()
    body = {"work": API_WORK, "deadline": 3000, "quoted_start": quoted["starts_at"], "quoted_finish": quoted["finishes_by"]}
    resp = _post(alice_api, "/api/deadline/book/", body)
    assert resp.status_code == 201, resp.content
    answer = resp.json()
    assert answer["quoted_start"] == pytest.approx(300.0) and answer["booked_start"] == pytest.approx(market.sim_time)
    assert answer["start_moved"] == pytest.approx(market.sim_time - 300.0) and "sooner" in answer["notice"]
    booking = DeadlineBooking.objects.get(job_id=answer["job"])
    assert (booking.quoted_start, booking.booked_start) == (pytest.approx(300.0), pytest.approx(market.sim_time))


def test_a_quoted_start_the_clock_has_passed_counts_as_now(market, alice):
    # given a quote at 0 s that starts now; when the clock moves 50 s before the booking
    q = deadline_quote(market=market, work=WORK, deadline=2000.0)
    cluster_advance(market_id=market.pk, until=50.0)
    # then booking now is the same promise (nothing starts in the past), and its finish moved by the clock alone
    job, booked = deadline_book(tenant=alice, work=WORK, deadline=2000.0, quoted_start=q.starts_at, quoted_finish=q.finishes_by,
                                max_payment=q.price + Decimal("1"))
    b = job.deadline_booking
    assert b.booked_start == pytest.approx(50.0) and b.quoted_start == q.starts_at == 0.0
    assert booked.finishes_by == pytest.approx(q.finishes_by + 50.0)


def test_the_job_page_lists_the_quoted_booked_and_actual_starts(alice_client, alice, market, busy):
    q = deadline_quote(market=market, work=WORK, deadline=3000.0)
    job, _ = deadline_book(tenant=alice, work=WORK, deadline=3000.0, quoted_start=q.starts_at, quoted_finish=q.finishes_by)
    cluster_advance(market_id=market.pk, until=320.0)
    job.refresh_from_db()
    assert job.sim_start_time is not None and job.sim_start_time >= 300.0
    html = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    for key, value in (("quoted", q.starts_at), ("booked", q.starts_at), ("actual", job.sim_start_time)):
        cell = html.split(f'id="booking-{key}-start">')[1].split("</dd>")[0]
        assert cell.startswith(f"{value:.0f} s"), (key, cell)
