"""The deadline quote page and its chart (paper 003 through services.deadlines)."""

from __future__ import annotations

import pytest

from marketplace.deadlines.charts import deadline_payment_figure
from marketplace.deadlines.models import DeadlineBooking
from marketplace.ledger.money import currency, format_money
from marketplace.market.models.jobs import Job
from marketplace.web.charts import validated

FORM = {"name": "report", "deadline": "400", "alpha_err": "0.8", "beta_err": "1.25",
        "map_tasks": "20", "map_duration": "30", "reduce_tasks": "4", "reduce_duration": "60"}


@pytest.fixture
def alice_client(client, alice):
    client.force_login(alice.user)
    return client


def test_page_shows_the_form_with_a_default_deadline(alice_client, market):
    resp = alice_client.get("/deadline/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'name="deadline"' in html and 'value="in 15 min"' in html and "map tasks" in html


def test_the_default_deadline_counts_from_when_the_form_is_sent(alice_client, market):
    # given a form loaded at t=0 whose deadline reads "in 15 min", and a market clock that ran on 600 s
    from marketplace.market.services.clock import cluster_advance

    cluster_advance(market_id=market.pk, seconds=600.0)
    # when it is sent
    resp = alice_client.post("/deadline/", FORM | {"deadline": "in 15 min", "quote": ""})
    # then the deadline is 15 minutes after the clock at sending, not after the clock at loading
    q = resp.context["quote"]
    assert q is not None and q.relative_deadline == pytest.approx(900.0, abs=1.0)


@pytest.mark.parametrize(("typed", "relative"), [("+900 s", 900.0), ("in 2 h", 7200.0), ("+1h30m", 5400.0), ("0:25:00", 1500.0)])
def test_relative_and_clock_deadlines_are_read(alice_client, market, typed, relative):
    resp = alice_client.post("/deadline/", FORM | {"deadline": typed, "quote": ""})
    assert resp.context["quote"].relative_deadline == pytest.approx(relative, abs=1.0)


def test_a_deadline_that_is_not_a_time_is_a_field_error(alice_client, market):
    resp = alice_client.post("/deadline/", FORM | {"deadline": "tomorrow", "quote": ""})
    assert resp.status_code == 200 and "deadline" in resp.context["form"].errors and resp.context["quote"] is None


def test_quote_shows_vector_time_payment_guarantee_and_chart(alice_client, market):
    resp = alice_client.post("/deadline/", FORM | {"quote": ""})
    assert resp.status_code == 200
    q = resp.context["quote"]
    assert q.feasible and q.planned_deadline == pytest.approx(320.0)
    html = resp.content.decode()
    assert f"<strong>{format_money(q.price)}</strong>" in html and "Guaranteed real time" in html and 'id="deadline-figure"' in html
    assert f'name="max_payment" value="{q.price}"' in html  # "Book" accepts at most this price
    fig = resp.context["figure"]
    assert fig["data"][-1]["name"] == "Your quote" and len(fig["data"][0]["x"]) > 5
    assert not Job.objects.exists()


def test_book_from_the_page_redirects_to_the_job(alice_client, market):
    quoted = alice_client.post("/deadline/", FORM | {"quote": ""}).context["quote"]
    resp = alice_client.post("/deadline/", FORM | {"book": "", "max_payment": str(quoted.price)})
    assert resp.status_code == 302
    job = Job.objects.get()
    assert resp["Location"] == f"/jobs/{job.pk}/" and job.charged == quoted.price
    assert DeadlineBooking.objects.get(job=job).alpha_err == 0.8


@pytest.mark.parametrize(
    ("change", "text"),
    [
        ({"deadline": "now"}, "in the past"),
        ({"deadline": "-10"}, "Not a time"),
        ({"map_tasks": "0", "reduce_tasks": "0"}, "work must be positive"),
        ({"alpha_err": "1.5", "beta_err": "2"}, "must contain 1"),
        ({"alpha_err": "0", "beta_err": "2"}, "must be positive"),
        ({"deadline": "60"}, "No booking can meet this deadline"),
    ],
)
def test_errors_are_shown_and_nothing_is_booked(alice_client, market, change, text):
    resp = alice_client.post("/deadline/", FORM | change | {"book": ""})
    assert resp.status_code == 200
    assert text in resp.content.decode()
    assert not Job.objects.exists()


def test_a_moved_price_is_refused_and_the_new_quote_shown(alice_client, market):
    resp = alice_client.post("/deadline/", FORM | {"book": "", "max_payment": "0.0001"})
    assert resp.status_code == 200 and not Job.objects.exists()
    assert "quote again" in resp.content.decode() and resp.context["quote"].feasible


def test_figure_is_valid_plotly_with_units():
    fig = validated(deadline_payment_figure([(100.0, 5.0, 4.0), (200.0, 4.0, 4.0)], quoted=(150.0, 4.5), alpha_err=0.7))
    assert [t["name"] for t in fig["data"]] == ["Whole slots (booked)", "Divisible optimum (paper 003, Alg. 1)", "Your quote"]
    assert "market clock (min)" in fig["layout"]["xaxis"]["title"]["text"]
    assert fig["layout"]["yaxis"]["title"]["text"] == f"Payment ({currency()})"
    empty = validated(deadline_payment_figure([]))
    assert empty["data"] == () or list(empty["data"]) == []


def test_an_impossible_deadline_is_explained_in_the_quote(alice_client, market):
    resp = alice_client.post("/deadline/", FORM | {"deadline": "60", "alpha_err": "1", "quote": ""})
    assert not resp.context["quote"].feasible
    html = resp.content.decode()
    assert "this deadline cannot be met" in html and "takes 120 s" in html and "Book for" not in html


def test_job_detail_shows_the_booking(alice_client, market):
    quoted = alice_client.post("/deadline/", FORM | {"quote": ""}).context["quote"]
    alice_client.post("/deadline/", FORM | {"book": "", "max_payment": str(quoted.price)})
    job = Job.objects.get()
    html = alice_client.get(f"/jobs/{job.pk}/").content.decode()
    assert "Deadline booking" in html and " / ".join(str(x) for x in quoted.slots) in html
    other = alice_client.post("/bid/", {"budget": "5", "utility": "linear", "map_tasks": "1", "map_duration": "1", "map_weight": "1",
                                        "reduce_tasks": "0", "reduce_duration": "1", "reduce_weight": "1"})
    assert other.status_code == 302
    assert "Deadline booking" not in alice_client.get(other["Location"]).content.decode()


def test_rounding_up_that_misses_the_deadline_is_said_so(alice_client, market):
    # 20 map tasks of 30 s and 4 reduce tasks of 60 s by D' = 0.8 x 220 s: the divisible optimum
    # rounded up (6 map slots: 4 waves, 120 s; 4 reduce slots: 60 s) overshoots 176 s, while
    # 7 map slots (3 waves) fit
    resp = alice_client.post("/deadline/", FORM | {"deadline": "220", "quote": ""})
    q = resp.context["quote"]
    assert q.feasible and not q.rounded_up_meets and q.exec_time <= 176.0
    html = resp.content.decode()
    assert "misses the deadline (whole task waves)" in html and "would cost" not in html
    ok = alice_client.post("/deadline/", FORM | {"deadline": "7000", "quote": ""})
    assert ok.context["quote"].rounded_up_meets and "would cost" in ok.content.decode()
