"""Reservation pages: the quote flow in the browser's terms (forms, redirects, field errors),
my reservations, the public market page, and the figures they draw."""

from __future__ import annotations

import pytest
from django.test import Client

from marketplace.reservations import charts as rc
from marketplace.reservations.models import Reservation, ReservationQuote
from marketplace.web.charts import validated

FORM = {"resource_type": "map", "units": "4", "duration": "600", "arrival": "0", "deadline": "3600", "value": ""}


@pytest.fixture
def alice_web(alice) -> Client:
    client = Client()
    client.force_login(alice.user)
    return client


def test_quote_flow_from_form_to_booking(alice_web):
    assert alice_web.get("/reservations/new/").status_code == 200
    response = alice_web.post("/reservations/new/", FORM)
    quote = ReservationQuote.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/reservations/quotes/{quote.pk}/"
    page = alice_web.get(response["Location"])
    assert page.status_code == 200
    figure = page.context["figure"]
    assert [t["name"] for t in figure["data"]] == ["Price of this start", "Cheapest (quoted)", "Next cheapest"]
    assert b"Accept and pay 0.40 credits" in page.content
    done = alice_web.post(f"/reservations/quotes/{quote.pk}/accept/")
    assert done.status_code == 302 and done["Location"] == "/reservations/"
    listing = alice_web.get("/reservations/")
    assert Reservation.objects.count() == 1 and b"Reserved: 4 map units" in listing.content
    assert alice_web.post(f"/reservations/quotes/{quote.pk}/cancel/").status_code == 404


@pytest.mark.parametrize(("change", "field"), [({"deadline": "0"}, "deadline"), ({"units": "99"}, "units"),
                                               ({"duration": "9000"}, "duration"), ({"value": "nan"}, "value")])
def test_bad_requests_show_field_errors(alice_web, change, field):
    response = alice_web.post("/reservations/new/", FORM | change)
    assert response.status_code == 200 and field in response.context["form"].errors
    assert not ReservationQuote.objects.exists()


def test_decline_and_the_market_page(alice_web, bob):
    alice_web.post("/reservations/new/", FORM | {"value": "3"})
    quote = ReservationQuote.objects.get()
    assert alice_web.post(f"/reservations/quotes/{quote.pk}/decline/").status_code == 302
    quote.refresh_from_db()
    assert quote.status == "declined"
    market = alice_web.get("/reservations/market/?resource=reduce")
    assert market.status_code == 200 and market.context["resource"].name == "reduce"
    for figure in market.context["figures"].values():
        validated(figure)
    other = Client()
    other.force_login(bob.user)
    assert other.get(f"/reservations/quotes/{quote.pk}/").status_code == 404


def test_figures_are_valid_plotly_and_label_their_axes():
    curve = {"resource": "map", "slot_seconds": 60.0, "times": [0.0, 60.0, 120.0], "unit_price": [0.5, None, 0.2],
             "slot_second_price": [0.5 / 60, None, 0.2 / 60], "promised": [3, 10, 0], "busy": [2, 0, 0], "capacity": 10}
    for fig in (rc.price_curve_figure(curve), rc.capacity_figure(curve),
                rc.quote_figure([[0.0, 4.0], [60.0, 3.0], [120.0, 5.0]], start=60.0, alternatives=[[0.0, 4.0]], units=2, duration=60),
                rc.revenue_figure([{"time": 0.0, "revenue": 1.0, "welfare": 0.0}]), rc.revenue_figure([])):
        validated(fig)
        assert fig["layout"]["xaxis"]["title"]["text"] and fig["layout"]["yaxis"]["title"]["text"]
    assert rc.capacity_figure(curve)["data"][1]["y"] == [2, 0, 0]  # held by running tasks
    assert rc.capacity_figure(curve)["data"][2]["y"] == [5, 0, 10]  # available: capacity - promised - busy
    assert "per slot-second" in rc.price_curve_figure(curve)["layout"]["yaxis"]["title"]["text"]  # the market's one unit
    # prices, units and amounts are never negative: every axis of the market page starts at 0, an empty chart's too
    sold = [{"time": 0.0, "revenue": 1.0, "welfare": 0.0}]
    for fig in (rc.price_curve_figure(curve), rc.capacity_figure(curve), rc.revenue_figure(sold)):
        assert fig["layout"]["yaxis"]["rangemode"] == "tozero"
    empty = rc.revenue_figure([])["layout"]
    assert empty["xaxis"]["range"][0] == 0 and empty["yaxis"]["range"][0] == 0
    # the price chart names the one unit the dashboard's price chart uses
    from marketplace.dashboard.charts import unit_price_figure

    dashboard_unit = unit_price_figure({"spot": [{"sim_time": 0.0, "resource": "map", "rate": 1.0}]}, now=0.0)["layout"]["yaxis"]
    assert rc.price_curve_figure(curve)["layout"]["yaxis"]["title"]["text"] == dashboard_unit["title"]["text"]


def test_the_market_charts_count_units_as_the_dashboard_does_and_start_at_zero():
    from marketplace.dashboard.charts import queue_allocation_figure

    curve = {"resource": "reduce", "slot_seconds": 30.0, "times": [0.0, 30.0], "unit_price": [0.4, 0.1],
             "slot_second_price": [0.4 / 30, 0.1 / 30], "promised": [1, 0], "busy": [0, 1], "capacity": 5}
    # quantities: units of the named type, as the dashboard's allocation chart counts them (one quantity unit, not a third)
    held = queue_allocation_figure([{"sim_time": 0.0, "queue": "a", "running": 1.0}], resource="reduce", capacity=5)
    capacity = rc.capacity_figure(curve)["layout"]["yaxis"]
    assert held["layout"]["yaxis"]["title"]["text"].startswith("reduce units")
    assert capacity["title"]["text"].startswith("reduce units")
    # every market chart: the y axis starts at 0 (plotly's default range padded a stack of small counts to -0.5)
    sold = [{"time": 0.0, "revenue": 2.0, "welfare": 1.0}]
    for fig in (rc.price_curve_figure(curve), rc.capacity_figure(curve), rc.revenue_figure(sold)):
        yaxis = validated(fig)["layout"]["yaxis"]
        assert yaxis.get("rangemode") == "tozero" or yaxis["range"][0] >= 0
    # the price chart's detail is a subtitle, not a raised <sup> line run into the title
    title = rc.price_curve_figure(curve)["layout"]["title"]
    assert "<sup>" not in title["text"] and "slot = 30 s" in title["subtitle"]["text"]
