"""Privacy in a real browser: the dashboard data a tenant's page fetches carries its own job
names and no other tenant's (marketplace.market.visibility), whichever scope it picks."""

from __future__ import annotations

from decimal import Decimal

import pytest

from marketplace.auction.models import WorkItem
from marketplace.auction.services import bid_submit
from marketplace.market.models.queues import Queue
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.setup import tenant_create
from tests.browser.conftest import PASSWORD, chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OWN = "alice-own-pipeline"
OTHER = "bob-confidential-training"


def test_the_dashboard_data_carries_no_other_tenants_job_names(chromium_path, live_server, tenant):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    # given alice's job and bob's job in another queue, both in the latest clearing
    market = tenant.market
    bob = tenant_create(market=market, username="bob", password=PASSWORD, queue=Queue.objects.get(market=market, name="orgb"),
                        deposit=Decimal("1000"))
    for who, name in ((tenant, OWN), (bob, OTHER)):
        bid_submit(tenant=who, budget=Decimal("20"), work=[WorkItem("map", 4, 60.0, 1.0)], utility="linear", name=name, user=who.user)
    market_clear(market_id=market.pk)

    with chromium_page(chromium_path, 1280, 900) as page:
        login(page, live_server.url, "alice")
        # when alice's dashboard fetches its data (the scope selector offers only her jobs)
        # (each body is read as soon as its answer arrives: the browser does not keep a body for later, and
        # under CI's load the first one had gone by the time it was read after the second request)
        with page.expect_response(lambda r: "/dashboard/data.json" in r.url) as first:
            page.goto(f"{live_server.url}/")
        bodies = [first.value.text()]
        expect(page.locator("#chart-jobs .main-svg").first).to_be_attached()
        options = page.locator("#jobs-scope option").all_inner_texts()
        with page.expect_response(lambda r: "/dashboard/data.json?jobs=all" in r.url) as forced:
            page.evaluate("fetch('/dashboard/data.json?jobs=all')")  # the other scope, asked by hand
        bodies.append(forced.value.text())
        html = page.content()
    # then every answer it received names her job and none names bob's
    assert bodies and all(OWN in b for b in bodies)
    assert not any(OTHER in b or "bob" in b for b in bodies)
    assert OTHER not in html
    assert options == ["My jobs"]
