"""A new tenant's Abacus flow in a real browser: preview the price of a bid,
place it with an SLO, see its pool status on the job page, and open the utility fits.

Same pattern and skip/fail rule as ``test_bid_flow.py`` (Debian's Chromium through playwright).
"""

from __future__ import annotations

import re

import pytest

from marketplace.market.models.jobs import Job
from tests.browser.conftest import chromium_page, expect_chart_drawn, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_preview_then_bid_with_an_slo(chromium_path, live_server, tenant, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium_page(chromium_path) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        login(page, live_server.url, "alice")
        nav = page.get_by_role("navigation", name="Main")

        # Preview: an estimate with a chart and a table; nothing placed.
        nav.get_by_role("link", name="Submit bid").click()
        page.get_by_label("Job name").fill("etl")
        page.get_by_label("Budget").fill("80")
        page.get_by_label("map tasks").fill("20")
        page.get_by_label("reduce tasks").fill("2")
        page.get_by_label("SLO: minimum utility").fill("0.5")
        page.get_by_role("button", name="Preview price (estimate)").click()
        expect(page.locator("#price-preview")).to_contain_text("an estimate")
        expect_chart_drawn(page, "#chart-preview")
        expect(page.locator("#preview-table tbody tr")).to_have_count(8)  # 1/8 .. 8 times the budget, and the suggested one
        expect(page.locator("#preview-finish")).to_contain_text("s on the market clock")
        page.screenshot(path=str(tmp_path / "preview.png"), full_page=True)
        assert page.locator("#id_budget").input_value() == "80"  # the form keeps its values

        # Place it: the job page shows the SLO and the pool.
        page.get_by_role("button", name="Place bid").click()
        expect(page).to_have_url(re.compile(r"/jobs/\d+/$"))
        expect(page.locator("#slo")).to_contain_text("Service level objective")
        expect(page.locator("#slo")).to_contain_text("0.5")

        # The utility fits page opens (no completed jobs yet).
        nav.get_by_role("link", name="Utility fits").click()
        expect(page.locator("h1")).to_have_text("Utility learnt from your jobs")
        assert errors == [], errors
    assert Job.objects.filter(name="etl").count() == 1  # the preview placed nothing
