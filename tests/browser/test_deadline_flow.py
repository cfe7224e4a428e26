"""The deadline quote in a real browser: quote, see the chart with the quote marked, book, see the job.

Same rules as ``test_bid_flow``: Debian's Chromium through playwright against ``live_server``;
skipped without Chromium unless CI is set.
"""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import chromium_page, expect_chart_drawn, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_quote_chart_and_booking(chromium_path, live_server, tenant, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium_page(chromium_path, 1300, 1000) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        login(page, live_server.url, "alice")

        page.get_by_role("navigation", name="Main").get_by_role("link", name="Deadline quote").click()
        page.get_by_label("Finish by").fill("now")
        page.get_by_role("button", name="Get quote").click()
        expect(page.locator(".errorlist")).to_contain_text("in the past")

        page.get_by_label("Finish by").fill("600")
        page.get_by_label("map tasks").fill("20")
        page.get_by_label("reduce tasks").fill("4")
        page.get_by_label("Estimate range: lowest").fill("0.8")
        page.get_by_label("Highest estimate").fill("1.25")
        page.get_by_role("button", name="Get quote").click()
        expect(page.locator("#quote-guarantee")).to_contain_text("s,")
        expect_chart_drawn(page, "#chart-deadline")
        expect(page.locator("#chart-deadline .legendtext", has_text="Your quote")).to_be_visible()
        price = page.locator("#quote-price").inner_text()
        page.screenshot(path=str(tmp_path / "quote.png"), full_page=True)

        page.get_by_role("button", name=re.compile(r"^Book for")).click()
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator(".messages")).to_contain_text(f"charged {price}")
        expect(page.locator("#booking-title")).to_be_visible()
        assert errors == [], errors
