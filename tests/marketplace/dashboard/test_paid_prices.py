"""The dashboard's "Prices in one unit" plots what tenants paid per slot-second of their work (each
deadline booking, reservation and pool job), with the unit prices as their own labelled traces."""

from __future__ import annotations

from decimal import Decimal

from marketplace.auction.models import WorkItem
from marketplace.dashboard.charts import unit_price_figure
from marketplace.deadlines.services import deadline_book
from marketplace.ledger.services import account_deposit
from marketplace.market import adapters
from marketplace.market.prices import one_unit_prices
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.services.jobs import cura_job_submit
from marketplace.pools.services.pools import pools_setup_paper
from marketplace.reservations.services import reservation_accept, reservation_quote


def test_the_one_unit_chart_plots_paid_prices(market, alice):
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="pools at the level")
    # given a deadline booking, a reservation and a pool job that ran
    job, q = deadline_book(tenant=alice, work=[WorkItem("map", 20, 30.0), WorkItem("reduce", 4, 60.0)], deadline=400.0)
    quote = reservation_quote(tenant=alice, resource_type="map", units=2, duration=600, arrival=0, deadline=3600)
    reservation = reservation_accept(quote=quote)
    pools_setup_paper(market=market, size=20)
    cura = cura_job_submit(tenant=alice, job_type=1, deadline_in_s=900.0)
    cluster_advance(market_id=market.pk, until=cura.deadline_s + 1)
    market.refresh_from_db()
    cura.refresh_from_db()
    # then each is drawn at what it paid per slot-second of its work, not at a unit price
    types = adapters.resource_types(market)
    offered = one_unit_prices(market=market, types=types)["offered"]
    by_source: dict[str, set[float]] = {}
    for r in offered:
        by_source.setdefault(str(r["source"]), set()).add(round(float(r["price"]), 9))
    work = 20 * 30.0 + 4 * 60.0
    assert by_source["deadline booking"] == {round(float(job.charged) / work, 9)}
    assert all(abs(float(job.charged) / work - b) > 1e-3 * b for b in q.unit_prices)
    assert by_source["reservation"] == {round(reservation.paid_rate, 9)}
    assert by_source["pool job"] == {round(cura.paid_rate, 9)}
    # and the figure names them as paid, the unit prices as unit prices
    names = [t["name"] for t in unit_price_figure(one_unit_prices(market=market, types=types), now=market.sim_time)["data"]]
    assert "deadline bookings, paid (map)" in names and "reservations, paid (map)" in names and "pool jobs, paid (map)" in names
    assert any(n.startswith("unit price curve") for n in names)


def test_the_one_unit_chart_labels_its_log_axis_in_full(market, alice):
    # given a market whose prices span a reserve of 0.05 up to about 1 (the demo's)
    data = {"spot": [{"sim_time": 0.0, "resource": "map", "rate": 0.9}, {"sim_time": 600.0, "resource": "map", "rate": 1.3}],
            "reserve": {"map": 0.05}, "reference": {"map": 1.0}}
    axis = unit_price_figure(data, now=600.0)["layout"]["yaxis"]
    # then every tick is written out in full, one label per value (plotly's own minor labels read "5" for 0.05 and 0.5)
    assert axis["type"] == "log"
    assert len(set(axis["ticktext"])) == len(axis["ticktext"]) == len(axis["tickvals"])
    assert [float(t) for t in axis["ticktext"]] == axis["tickvals"]
    # and the ticks span every plotted price: the reserve and the highest rate lie between the outer ticks
    assert min(axis["tickvals"]) <= 0.05 and max(axis["tickvals"]) >= 1.3
    assert "0.05" in axis["ticktext"] and "1" in axis["ticktext"]
