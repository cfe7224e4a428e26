"""Labels say what happened. A deadline-booked job's page does not show its
deadline as an "estimated start"; an upfront charge is not labelled "Charge on completion"; no
message says "inf s"; the utility functions and the prolific pool have a plain sentence beside
their symbols."""

from __future__ import annotations

import math
import re
from dataclasses import replace

import pytest
from django.core.exceptions import ValidationError
from django.test import Client

from marketplace.auction.services import WorkItem
from marketplace.deadlines import services as deadlines
from marketplace.deadlines.services import deadline_book, deadline_quote

WORK = [WorkItem("map", 20, 30.0), WorkItem("reduce", 4, 60.0)]


def _client(user) -> Client:  # type: ignore[no-untyped-def]
    client = Client()
    client.force_login(user)
    return client


def test_a_booked_jobs_page_shows_its_reserved_start_and_an_upfront_charge(market, alice, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        job, _ = deadline_book(tenant=alice, work=WORK, deadline=400.0, name="report")
    html = _client(alice.user).get(f"/jobs/{job.pk}/").content.decode()
    assert not re.search(r"Estimated start: <strong>at simulated 400 s", html)
    assert "Charge on completion" not in html
    assert "Charge</td>" in html and "fixed price" in html  # the memo says when it was charged
    account = _client(alice.user).get("/account/").content.decode()
    assert "Charge on completion" not in account


def test_no_message_says_inf_seconds(market, alice, monkeypatch):
    real = deadlines.deadline_quote

    def never(**kw):  # type: ignore[no-untyped-def]
        return replace(real(**kw), feasible=False, fastest_time=math.inf)

    monkeypatch.setattr(deadlines, "deadline_quote", never)
    with pytest.raises(ValidationError) as err:
        deadline_book(tenant=alice, work=WORK, deadline=400.0)
    text = " ".join(err.value.messages)
    assert "inf" not in text and "no free slot" in text


def test_the_quote_page_never_shows_inf(market, alice, monkeypatch):
    real = deadline_quote
    monkeypatch.setattr("marketplace.deadlines.views.deadline_quote",
                        lambda **kw: replace(real(**kw), feasible=False, fastest_time=math.inf))
    html = _client(alice.user).post("/deadline/", {"map_tasks": "20", "map_duration": "30", "reduce_tasks": "4",
                                                   "reduce_duration": "60", "deadline": "400", "alpha_err": "1",
                                                   "beta_err": "1"}).content.decode()
    assert 'id="quote"' in html
    assert not re.search(r"\binf\b", html)


def test_jargon_has_a_plain_sentence_beside_it(market, alice):
    html = _client(alice.user).get("/bid/").content.decode()
    assert "w_j s_j" in html  # the symbols stay, for those who know them
    assert "in proportion to" in html and "diminishing returns" in html
    assert "prolific pool" in html and "the jobs the auction serves" in html
