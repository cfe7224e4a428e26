"""On a phone (390 x 844 CSS px, device scale 3, touch), every page with charts or tables:
no number (an amount, a price, a time, a count) is broken across lines, the page never scrolls
sideways (a wide table scrolls inside its own box), and in each plotly chart the legend stays
off the x axis' title and inside the chart, and the chart's and the axes' titles lie inside the chart.

Same skip/fail rule as the other browser tests (tests/browser/conftest.py).
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.deadlines.services import deadline_book
from marketplace.lab.forms import StudyForm
from marketplace.lab.services.simulations import simulation_start
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from marketplace.market.services.setup import market_create, tenant_create
from marketplace.pools.services.pools import pools_setup_paper
from marketplace.reservations.services import reservation_quote, reservation_request
from tests.browser.conftest import PASSWORD, chromium, login, new_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE: dict[str, Any] = {"width": 390, "height": 844, "device_scale_factor": 3, "is_mobile": True, "has_touch": True}

# Every run of digits (with its separators: 1,234.56, 21:45:57) outside the charts' SVG, and every td.num cell of text alone,
# must sit on one line: a Range over it has client rects on one line (headings, th.num, may wrap). Hidden text has no rects.
BROKEN_NUMBERS = r"""() => {
  const lines = range => new Set([...range.getClientRects()].filter(r => r.width > 0).map(r => Math.round(r.top))).size;
  const found = [];
  let checked = 0;
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement || node.parentElement.closest("svg, script, style, option, select, textarea")) continue;
    for (const m of node.data.matchAll(/\d[\d,.:]*\d/g)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const n = lines(range);
      if (n > 0) checked += 1;
      if (n > 1) found.push(m[0] + " in <" + node.parentElement.tagName.toLowerCase() + " class='" + node.parentElement.className + "'>");
    }
  }
  for (const cell of document.querySelectorAll("td.num")) {
    if (!cell.textContent.trim() || cell.children.length) continue;  // a cell of text alone (a meter beside its count is two lines)
    const range = document.createRange();
    range.selectNodeContents(cell);
    if (lines(range) > 1) found.push("cell " + JSON.stringify(cell.textContent.trim()));
  }
  return {checked, found};
}"""

OVERFLOW = "() => document.documentElement.scrollWidth"

# Per drawn chart: its box, the legend's, the axis titles' and the chart title's (null when absent).
CHART_BOXES = """() => [...document.querySelectorAll('.js-plotly-plot')].filter(el => el.getClientRects().length).map(el => {
  const box = node => {
    if (!node) return null;
    const r = node.getBoundingClientRect();
    return {l: r.left, r: r.right, t: r.top, b: r.bottom};
  };
  const at = selector => box(el.querySelector(selector));
  return {name: el.id || el.dataset.figure, chart: box(el), legend: at('g.legend rect.bg'),
          xtitle: at('text.xtitle'), ytitle: at('text.ytitle'), title: at('text.gtitle'), subtitle: at('text.gtitle-subtitle')};
})"""

ALL_DRAWN = """() => [...document.querySelectorAll('.chart')].every(el => !el.getClientRects().length || el.querySelector('.main-svg'))
  && !document.querySelector('[aria-busy=true]')"""


def _inside(inner: dict[str, float], outer: dict[str, float]) -> bool:
    return (inner["l"] >= outer["l"] - 1 and inner["r"] <= outer["r"] + 1
            and inner["t"] >= outer["t"] - 1 and inner["b"] <= outer["b"] + 1)


def _meet(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["l"] < b["r"] and b["l"] < a["r"] and a["t"] < b["b"] and b["t"] < a["b"]


@pytest.fixture
def busy_market(live_server, settings) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    """A market with something on every page: jobs with long names and budgets in the tens of thousands,
    clearings over ten minutes of market clock, a booked reservation and an open quote, a deadline booking,
    the VM pools, a finished simulation study; and a staff login. Made before the browser starts (playwright's loop refuses ORM calls)."""
    market = market_create(name="phone", resources={"map": 40, "reduce": 20},
                           hierarchy={"root": 1.0, "root.orga": 2.0, "root.orgb": 1.0})
    alice = tenant_create(market=market, username="alice", password=PASSWORD, queue=Queue.objects.get(market=market, name="orga"),
                          deposit=Decimal("12345678.9"))
    bob = tenant_create(market=market, username="bob", password=PASSWORD, queue=Queue.objects.get(market=market, name="orgb"),
                        deposit=Decimal("5000000"))
    staff = get_user_model().objects.create_user("ops", password=PASSWORD, is_staff=True)
    jobs = [bid_submit(tenant=who, budget=Decimal("98765.4321"), name=f"nightly-etl-{who.user.username}-{i}-warehouse-refresh",
                       work=[WorkItem("map", 30, 900.0), WorkItem("reduce", 4, 300.0)]) for i in range(3) for who in (alice, bob)]
    market_clear(market_id=market.pk)
    cluster_advance(market_id=market.pk, seconds=600)
    now = Market.objects.get(pk=market.pk).sim_time
    reservation_request(tenant=alice, resource_type="map", units=4, duration=1200, arrival=now, deadline=now + 7200, value="1000000")
    quote = reservation_quote(tenant=alice, resource_type="reduce", units=3, duration=900, arrival=now, deadline=now + 5400)
    deadline_book(tenant=alice, work=[WorkItem("map", 6, 300.0)], deadline=now + 3600, name="deadline-report")
    pools_setup_paper(market=Market.objects.get(pk=market.pk))
    settings.EXPERIMENTS_IN_THREAD = False  # the study's runs finish at commit
    form = StudyForm({name: field.initial for name, field in StudyForm().fields.items() if field.initial is not None}
                     | {"trace": "fb2009", "seeds": "0"})
    assert form.is_valid(), form.errors
    study = simulation_start(**form.study_kwargs(), user=staff)
    return {"job": jobs[0].pk, "quote": quote.pk, "study": study.pk}


def _check(page, url: str) -> dict[str, int]:  # type: ignore[no-untyped-def]
    page.wait_for_function(ALL_DRAWN)
    numbers = page.evaluate(BROKEN_NUMBERS)
    assert numbers["found"] == [], (url, numbers["found"])
    assert page.evaluate(OVERFLOW) <= PHONE["width"] + 1, url
    charts = page.evaluate(CHART_BOXES)
    legends = 0
    for c in charts:
        if c["title"]:
            assert _inside(c["title"], c["chart"]), (url, c["name"], "title outside the chart", c["title"], c["chart"])
        if c["subtitle"]:
            assert _inside(c["subtitle"], c["chart"]) and not _meet(c["subtitle"], c["title"]), (url, c["name"], "subtitle", c)
        for axis in ("xtitle", "ytitle"):
            if c[axis]:
                assert _inside(c[axis], c["chart"]), (url, c["name"], f"{axis} outside the chart", c[axis], c["chart"])
        if c["title"] and c["ytitle"]:
            assert not _meet(c["title"], c["ytitle"]), (url, c["name"], "the y axis title runs into the chart title", c)
        if c["legend"]:
            legends += 1
            assert _inside(c["legend"], c["chart"]), (url, c["name"], "legend outside the chart", c)
            if c["xtitle"]:
                assert not _meet(c["legend"], c["xtitle"]), (url, c["name"], "legend over the x axis title", c)
    return {"numbers": numbers["checked"], "charts": len(charts), "legends": legends}


def test_phone_pages_keep_numbers_whole_and_charts_legible(chromium_path, live_server, busy_market, tmp_path):  # type: ignore[no-untyped-def]
    tenant_pages = ["/", "/jobs/", f"/jobs/{busy_market['job']}/", "/account/", "/reservations/",
                    f"/reservations/quotes/{busy_market['quote']}/", "/reservations/market/", "/fairshare/", "/utility/",
                    "/cura/jobs/", "/lab/"]
    staff_pages = ["/pools/", "/market/settings/", "/staff/jobs/", f"/lab/simulations/{busy_market['study']}/"]
    seen: dict[str, dict[str, int]] = {}
    with chromium(chromium_path) as browser:
        for user, urls in (("alice", tenant_pages), ("ops", staff_pages)):
            page = new_page(browser, **PHONE)  # in a context of its own, closed with the page
            errors: list[str] = []
            page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
            login(page, live_server.url, user)
            for url in urls:
                page.goto(live_server.url + url)
                seen[url] = _check(page, url)
                page.screenshot(path=str(tmp_path / (re.sub(r"\W+", "-", url).strip("-") or "dashboard")) + ".png", full_page=True)
            if user == "alice":  # the deadline page draws its chart once quoted
                page.goto(live_server.url + "/deadline/")
                page.get_by_label("Finish by").fill("3000")
                page.get_by_label("map tasks").fill("12")
                page.get_by_role("button", name="Get quote").click()
                page.locator("#chart-deadline .main-svg").first.wait_for()
                seen["/deadline/"] = _check(page, "/deadline/")
            assert errors == [], errors
            page.close()
    # the checks saw what they were meant to: numbers on every page, the charts of each page that has them, legends among them
    assert all(s["numbers"] > 0 for s in seen.values()), seen
    for url in ("/", f"/jobs/{busy_market['job']}/", f"/reservations/quotes/{busy_market['quote']}/", "/reservations/market/",
                "/pools/", "/market/settings/", "/deadline/", f"/lab/simulations/{busy_market['study']}/"):
        assert seen[url]["charts"] > 0, url
    assert seen["/"]["charts"] >= 6 and seen["/"]["legends"] >= 4, seen["/"]
    assert sum(s["legends"] for s in seen.values()) >= 10, seen
