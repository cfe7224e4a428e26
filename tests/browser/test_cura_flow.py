"""Cura in a real browser: staff create the VM pools, a tenant submits jobs with a deadline only
and sees the configuration chosen, a deadline no configuration meets is refused with the earliest
one that works, and the pools page draws its charts.

Same pattern and skip/fail rule as ``test_bid_flow`` (Debian's Chromium through playwright).
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth.models import User

from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create
from tests.browser.conftest import PASSWORD, chromium, expect_chart_drawn, login, new_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def people(live_server) -> Tenant:  # type: ignore[no-untyped-def]
    market = market_create(name="cura", resources={"map": 10, "reduce": 5}, hierarchy={"root": 1.0, "root.orga": 1.0})
    queue = Queue.objects.get(market=market, name="orga")
    User.objects.create_user("ops", password=PASSWORD, is_staff=True)
    return tenant_create(market=market, username="alice", password=PASSWORD, queue=queue, deposit=Decimal("100000"))


def test_cura_flow(chromium_path, live_server, people, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium(chromium_path) as browser:  # two pages; their actions keep playwright's default timeout (30 s)
        staff = new_page(browser, 1300, 1000, timeout_ms=None)
        errors: list[str] = []
        staff.on("pageerror", lambda exc: errors.append(str(exc)))
        login(staff, live_server.url, "ops")
        staff.get_by_role("navigation", name="Main").get_by_role("link", name="VM pools").click()
        staff.get_by_role("button", name="Create the pools of paper 004").click()
        expect(staff.locator("#pools-table")).to_contain_text("VM-3")
        staff.get_by_label("Framework start (s)").fill("0")
        staff.get_by_role("button", name="Save (audited)").click()
        expect(staff.locator(".messages")).to_contain_text("pools.framework_start_s 10.0 → 0.0")

        tenant = new_page(browser, 1300, 1000, timeout_ms=None)
        login(tenant, live_server.url, "alice")
        tenant.get_by_role("navigation", name="Main").get_by_role("link", name="Cura jobs").click()
        tenant.get_by_label("Job (profiled)").select_option("4")
        tenant.get_by_label("Deadline (s from now, market clock)").fill("270")
        tenant.get_by_role("button", name="Submit").click()
        # the paper's 416.6667 at the market's level: a vCPU-second at 1.0 before any sale, 12 x the paper's 1/12
        expect(tenant.locator(".messages")).to_contain_text(
            "10 \N{MULTIPLICATION SIGN} VM-1 from 0 s to 250 s (market clock), cost 5,000.00 credits"
        )
        expect(tenant.locator(".messages")).to_contain_text("held until it ends")  # the hold on the account
        expect(tenant.locator("#cura-jobs")).to_contain_text("VM-1")
        expect(tenant.locator("#cura-jobs")).to_contain_text("Running")
        tenant.get_by_label("Job (profiled)").select_option("3")
        tenant.get_by_label("Deadline (s from now, market clock)").fill("100")
        tenant.get_by_role("button", name="Submit").click()
        expect(tenant.get_by_role("form", name="Submit a job")).to_contain_text("the earliest deadline that works is 258 s from now")
        tenant.screenshot(path=str(tmp_path / "cura-jobs.png"), full_page=True)
        tenant.get_by_label("Job (profiled)").select_option("2")
        tenant.get_by_label("Deadline (s from now, market clock)").fill("3000")
        tenant.get_by_role("button", name="Submit").click()
        expect(tenant.locator(".messages")).to_contain_text("held")
        tenant.locator("#cura-jobs button").first.click()  # the newest job first: cancel it
        expect(tenant.locator(".messages")).to_contain_text("cancelled; its hold was released")
        expect(tenant.locator("#cura-jobs")).to_contain_text("Cancelled")

        staff.reload()
        expect(staff.locator("#pools-table")).to_contain_text("10")  # VM-1 busy now
        for fig in ("fig-sizes", "fig-util"):
            expect_chart_drawn(staff, f"[data-figure={fig}]")
        shot = tmp_path / "pools.png"
        staff.screenshot(path=str(shot), full_page=True)
        assert shot.stat().st_size > 10_000
        assert errors == [], errors
