"""In a real browser: the pages on a 390 x 844 phone (no sideways scrolling of the
page, a compact menu), the cancel confirmation (with and without JavaScript), and the
charts' loading state while plotly.js is still on its way."""

from __future__ import annotations

import re

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.jobs import Job
from tests.browser.conftest import PAGE_OVERFLOW, chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PHONE = {"width": 390, "height": 844}
LONG_NAME = "a-very-long-job-name-without-any-spaces-nightly-etl-pipeline-for-the-analytics-warehouse"


@pytest.fixture
def jobs(tenant):  # type: ignore[no-untyped-def]
    """Two active jobs of alice (one with a long name), made before the browser starts."""
    long = bid_submit(tenant=tenant, budget="120.5", name=LONG_NAME, work=[WorkItem("map", 40, 300.0), WorkItem("reduce", 2, 60.0)])
    tiny = bid_submit(tenant=tenant, budget="0.0001", name="tiny", work=[WorkItem("map", 2, 30.0)])
    return long, tiny


def test_phone_pages_do_not_scroll_sideways(chromium_path, live_server, tenant, jobs, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    long, _ = jobs
    with chromium_page(chromium_path, **PHONE) as page:
        login(page, live_server.url, "alice")
        # the navigation is one "Menu" toggle: its links show only once it is opened
        nav = page.get_by_role("navigation", name="Main")
        expect(nav).to_be_hidden()
        page.get_by_text("Menu", exact=True).click()
        expect(nav.get_by_role("link", name="My jobs")).to_be_visible()
        for url in ["/bid/", "/jobs/", f"/jobs/{long.pk}/", "/account/", "/"]:
            page.goto(live_server.url + url)
            page.wait_for_load_state("load")
            assert page.evaluate(PAGE_OVERFLOW) <= 0, url
        # the bid form is usable: every work input is on screen, and a bid goes through
        page.goto(live_server.url + "/bid/")
        for label in ["map tasks", "map seconds per task (market clock)", "reduce utility weight"]:
            box = page.get_by_label(label).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"], label
        page.get_by_label("Job name").fill("phone-bid")
        page.get_by_label("Budget").fill("12.5")
        page.get_by_role("button", name="Place bid").click()
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#job-budget")).to_have_text("12.50 credits")
        assert page.evaluate(PAGE_OVERFLOW) <= 0
        # the job table scrolls inside its own box, and the long name wraps
        page.goto(live_server.url + "/jobs/")
        name = page.get_by_role("link", name=LONG_NAME)
        box = name.bounding_box()
        assert box is not None and box["height"] > 30  # more than one line
        expect(page.locator("table.jobs")).to_contain_text("< 0.01")  # the tiny budget: under a cent on a page (4 places in the API)
        page.screenshot(path=str(tmp_path / "jobs-phone.png"), full_page=True)


@pytest.mark.parametrize("javascript", [True, False], ids=["js", "no-js"])
def test_cancel_asks_for_confirmation(chromium_path, live_server, tenant, jobs, javascript):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    long, _ = jobs
    with chromium_page(chromium_path, **PHONE, java_script_enabled=javascript) as page:
        login(page, live_server.url, "alice")
        page.goto(f"{live_server.url}/jobs/{long.pk}/")
        # the page's scripts ran or not, as asked (the header's clock script marks its element when it runs)
        if javascript:
            expect(page.locator("#sim-clock")).to_have_attribute("data-sim-now", re.compile(r"^\d+\.\d$"))
        else:
            assert page.locator("#sim-clock").get_attribute("data-sim-now") is None
        # the first click only asks
        page.get_by_role("link", name="Cancel job…").click()
        expect(page.get_by_role("heading", level=1)).to_contain_text(f"Cancel job #{long.pk}")
        expect(page.locator("body")).to_contain_text("120.50 credits")
        # "No" keeps the job
        page.get_by_role("link", name="No, keep it").click()
        expect(page).to_have_url(f"{live_server.url}/jobs/{long.pk}/")
        expect(page.locator("h1 .badge")).not_to_have_text("Cancelled")
        # "Yes" cancels it, and the page then says cancelled, with no response time
        page.get_by_role("link", name="Cancel job…").click()
        page.get_by_role("button", name=f"Yes, cancel job #{long.pk}").click()
        expect(page).to_have_url(f"{live_server.url}/jobs/{long.pk}/")
        expect(page.locator("h1 .badge")).to_have_text("Cancelled")
        expect(page.locator("#job-cancelled")).to_be_visible()
        expect(page.locator("#job-response")).to_have_count(0)
    assert Job.objects.get(pk=long.pk).status == Job.Status.CANCELLED


def test_charts_show_a_loading_state_until_plotly_draws(chromium_path, live_server, tenant, jobs):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    long, _ = jobs
    held = []
    with chromium_page(chromium_path, 1280, 900) as page:
        login(page, live_server.url, "alice")
        # hold plotly.js back, as a slow network would
        page.route(re.compile(r".*/plotly-basic\.min\.js$"), lambda route: held.append(route))
        # (a deferred script holds back DOMContentLoaded: wait for the element itself)
        page.goto(f"{live_server.url}/jobs/{long.pk}/", wait_until="commit")
        chart = page.locator("#chart-job")
        chart.wait_for(state="visible")
        label = "el => getComputedStyle(el, '::after').content"
        assert chart.evaluate(label) == '"Drawing chart…"'
        expect(chart.locator(".main-svg")).to_have_count(0)
        for _ in range(200):  # the route handler runs while playwright waits
            if held:
                break
            page.wait_for_timeout(50)
        assert held, "the page asked for the plotly bundle"
        # once it arrives the chart is drawn and the message is gone
        held[0].continue_()
        expect(chart.locator(".main-svg").first).to_be_visible()
        assert chart.evaluate(label) in ("none", "normal")
        assert chart.get_attribute("aria-busy") is None
