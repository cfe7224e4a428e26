"""The header's market clock runs on every page, and a relative time shows the time it names.

Same rules as ``test_bid_flow``: Debian's Chromium through playwright against ``live_server``;
skipped without Chromium unless CI is set.
"""

from __future__ import annotations

import pytest
from django.utils import timezone

from marketplace.market.models.market import Market
from tests.browser.conftest import chromium_page, in_thread, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_clock_ticks_off_the_dashboard_and_times_show_their_clock_time(chromium_path, live_server, tenant):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    def ticked() -> None:  # a market clock ticked a moment ago, running 60 simulated s a wall s
        Market.objects.filter(pk=tenant.market_id).update(sim_time=600.0, clock_speed=60.0, clock_wall_at=timezone.now())

    with chromium_page(chromium_path, 1300, 1000) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        login(page, live_server.url, "alice")
        in_thread(ticked)
        page.goto(f"{live_server.url}/deadline/")
        clock = page.locator("#sim-clock")
        first = float(clock.get_attribute("data-sim-now") or "0")
        # then the header clock moves on a page that is not the dashboard
        page.wait_for_function(f"() => parseFloat(document.getElementById('sim-clock').dataset.simNow) > {first} + 100")
        # and the default deadline, "in 15 min", shows the market-clock time it names, 900 s after the clock
        preview = page.locator("#id_deadline-preview")
        expect(preview).to_contain_text("on the market clock")
        expect(preview).to_contain_text("in 15 min 0 s")
        page.get_by_label("Finish by").fill("+2h")
        expect(preview).to_contain_text("in 2 h 0 min 0 s")
        page.get_by_label("Finish by").fill("0:05:00")
        expect(preview).to_contain_text("in the past")
        assert errors == [], errors
