"""The bid flow in a real browser: log in, bid through the form, see the job, watch the dashboard draw.

Drives Debian's Chromium (/usr/bin/chromium) through playwright's sync API against
pytest-django's ``live_server``. Without Chromium the test is skipped, unless the
environment variable CI is set: then a missing browser is a failure.
"""

from __future__ import annotations

import re

import pytest

from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_advance
from tests.browser.conftest import chromium_page, expect_chart_drawn, in_thread, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_bid_flow_and_live_dashboard(chromium_path, live_server, tenant, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium_page(chromium_path) as page:  # the suite's timeouts: the first dashboard load parses 4.6 MB of plotly.js
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))

        # Log in.
        login(page, live_server.url, "alice")
        expect(page).to_have_url(f"{live_server.url}/")

        nav = page.get_by_role("navigation", name="Main")

        # Submit a bid through the form.
        nav.get_by_role("link", name="Submit bid").click()
        expect(page.locator("#balance-available")).to_have_text("1,000.00 credits")
        page.get_by_label("Job name").fill("browser-wordcount")
        page.get_by_label("Budget").fill("120")
        page.get_by_label("map tasks").fill("30")
        page.get_by_label("map seconds per task (market clock)").fill("120")
        page.get_by_label("reduce tasks").fill("3")
        page.get_by_label("reduce seconds per task (market clock)").fill("60")
        page.get_by_label("Log-scale").check()
        page.get_by_role("button", name="Place bid").click()
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator(".messages")).to_contain_text("Bid placed")
        page.screenshot(path=str(tmp_path / "job-detail.png"), full_page=True)

        # The job is in My jobs.
        nav.get_by_role("link", name="My jobs").click()
        expect(page.locator("table.jobs")).to_contain_text("browser-wordcount")
        expect(page.locator("table.jobs")).to_contain_text("root.orga")

        # Let the simulated cluster run ten minutes, then open the dashboard.
        in_thread(lambda: cluster_advance(market_id=tenant.market_id, seconds=600))
        nav.get_by_role("link", name="Dashboard").click()
        for chart in ["#chart-alloc-0", "#chart-util", "#chart-jobs", "#chart-prices", "#chart-sharing"]:
            expect_chart_drawn(page, chart)
        expect(page.locator("#live-status")).to_contain_text("updated")
        expect(page.locator("#sim-clock")).to_have_text("0:10:00")
        expect(page.locator("#chart-alloc-0 .legendtext", has_text="root.orga")).to_be_visible()

        # The charts move: another ten simulated minutes reach the open page through its polling.
        last_x = "() => { const d = document.getElementById('chart-util').data; return Math.max(...d[0].x); }"
        before = page.evaluate(last_x)
        page.evaluate("() => window.MarketDashboard.pause()")  # no request while this thread's worker writes
        in_thread(lambda: cluster_advance(market_id=tenant.market_id, seconds=600))
        page.evaluate("() => window.MarketDashboard.resume()")
        expect(page.locator("#sim-clock")).to_have_text("0:20:00")
        page.wait_for_function(f"() => ({last_x})() > {before}")
        shot = tmp_path / "dashboard.png"
        page.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert errors == [], errors

    assert Market.objects.get(pk=tenant.market_id).jobs.filter(name="browser-wordcount").exists()
