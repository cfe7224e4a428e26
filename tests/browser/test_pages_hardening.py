"""In a real browser: chart labels are text, not markup; the job page and the job list follow the
job without a reload; tables fit 1400 px and show every column on a phone; the lab's default study
shows its configurations apart. Every page here runs under the Content-Security-Policy with no
violation."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model

from marketplace.auction.services import WorkItem, bid_submit
from marketplace.lab.forms import StudyForm
from marketplace.lab.models import ExperimentRun
from marketplace.lab.services.simulations import simulation_start
from marketplace.market.services.clearing import market_clear
from marketplace.market.services.clock import cluster_advance
from tests.browser.conftest import PAGE_OVERFLOW, PASSWORD, chromium, in_thread, login, new_page

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

EVIL = '<a href="//e.vil/p">PAY</a><b>bold</b>'
CSP_WATCH = "window.__csp=[];document.addEventListener('securitypolicyviolation',e=>window.__csp.push(e.violatedDirective))"


def _page(browser, width: int):  # type: ignore[no-untyped-def]
    page = new_page(browser, width, 900)
    page.add_init_script(CSP_WATCH)
    return page


def test_chart_labels_are_text_not_markup(chromium_path, live_server, tenant):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    # two resource types: two traces, so plotly draws a legend
    bid_submit(tenant=tenant, budget=Decimal("20"), work=[WorkItem("map", 4, 60.0, 1.0), WorkItem("reduce", 2, 60.0, 1.0)],
               name=EVIL, user=tenant.user)
    market_clear(market_id=tenant.market_id)
    get_user_model().objects.create_user("root", password=PASSWORD, is_staff=True)
    with chromium(chromium_path) as browser:
        for who in ("root", "alice"):
            page = _page(browser, 1400)
            login(page, live_server.url, who)
            page.goto(f"{live_server.url}/")
            legend = page.locator("#chart-jobs .legend")
            expect(legend).to_contain_text('<a href="//e.vil/p">PAY</a>')  # shown as the characters typed
            assert page.locator('#chart-jobs a[href*="e.vil"]').count() == 0  # no live link
            assert page.locator("#chart-jobs .legend text").evaluate_all(
                "els => els.some(e => e.querySelector('tspan[style*=\"bold\"]'))") is False  # <b> not applied
            assert page.evaluate("window.__csp") == []
            page.close()


def test_the_job_page_and_the_job_list_follow_the_job(chromium_path, live_server, tenant):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    job = bid_submit(tenant=tenant, budget=Decimal("20"), work=[WorkItem("map", 1, 10.0, 1.0)], name="quick", user=tenant.user)
    market_clear(market_id=tenant.market_id)
    with chromium(chromium_path) as browser:
        page = _page(browser, 1400)
        login(page, live_server.url, "alice")
        page.goto(f"{live_server.url}/jobs/{job.pk}/")
        expect(page.locator("h1 .badge")).to_have_text("Queued")
        listing = _page(browser, 1400)
        login(listing, live_server.url, "alice")
        listing.goto(f"{live_server.url}/jobs/")
        expect(listing.locator("table.jobs tbody .badge").first).to_have_text("Queued")
        page.evaluate("window.__marker = 1")  # a full reload would lose it... unless the status changed
        # when the clock runs the job to its end (another process would; here another thread)
        in_thread(lambda: cluster_advance(market_id=tenant.market_id, until=200.0))
        # then both pages show it finished within a few polls, without the user reloading
        expect(page.locator("h1 .badge")).to_have_text("Finished", timeout=15_000)
        expect(page.locator("#job-finish")).not_to_have_text("—")
        expect(listing.locator("table.jobs tbody .badge").first).to_have_text("Finished", timeout=15_000)
        assert listing.evaluate("document.querySelector('[data-live-status]').textContent").startswith("Live: updated")
        assert page.evaluate("window.__csp") == [] and listing.evaluate("window.__csp") == []


def test_tables_fit_1400_px_and_show_every_column_on_a_phone(chromium_path, live_server, tenant):  # type: ignore[no-untyped-def]
    for k in range(3):
        bid_submit(tenant=tenant, budget=Decimal("20.5"), work=[WorkItem("map", 2, 30.0), WorkItem("reduce", 1, 30.0)],
                   name=f"a-long-job-name-of-the-nightly-etl-{k}", user=tenant.user)
    market_clear(market_id=tenant.market_id)
    with chromium(chromium_path) as browser:
        wide = _page(browser, 1400)
        login(wide, live_server.url, "alice")
        for url, table in (("/jobs/", "table.jobs"), ("/account/", "table.table")):
            wide.goto(live_server.url + url)
            box = wide.locator(table).first.bounding_box()
            last = wide.locator(f"{table} thead th").last.bounding_box()
            assert box and last and last["x"] + last["width"] <= 1400 and box["x"] + box["width"] <= 1400, url
            scroll = wide.locator(table).first.evaluate("t => t.parentElement.scrollWidth - t.parentElement.clientWidth")
            assert scroll <= 0, (url, scroll)  # nothing hidden to the right of the table's box
        phone = _page(browser, 390)
        login(phone, live_server.url, "alice")
        for url, label in (("/jobs/", "Budget"), ("/account/", "Amount")):
            phone.goto(live_server.url + url)
            cell = phone.locator(f'td[data-label^="{label}"]').first
            box = cell.bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 390, (url, box)
            assert phone.evaluate(PAGE_OVERFLOW) <= 0, url
            assert cell.evaluate("c => getComputedStyle(c, '::before').content").strip('"').startswith(label)
        assert wide.evaluate("window.__csp") == [] and phone.evaluate("window.__csp") == []


def test_the_labs_default_study_shows_its_configurations_apart(chromium_path, live_server, settings):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    settings.EXPERIMENTS_IN_THREAD = False  # the runs run at commit, before the browser starts
    staff = get_user_model().objects.create_user("root", password=PASSWORD, is_staff=True)
    form = StudyForm({name: field.initial for name, field in StudyForm().fields.items() if field.initial is not None}
                     | {"trace": "fb2009", "seeds": "0"})
    assert form.is_valid(), form.errors
    study = simulation_start(**form.study_kwargs(), user=staff)
    assert set(ExperimentRun.objects.filter(study=study).values_list("status", flat=True)) == {"done"}
    with chromium(chromium_path) as browser:
        page = _page(browser, 1400)
        login(page, live_server.url, "root")
        page.goto(f"{live_server.url}/lab/simulations/{study.pk}/")
        chart = page.locator(".chart").first
        expect(chart.locator(".main-svg").first).to_be_attached()
        expect(chart.locator(".gtitle")).to_have_text("Utilisation, map")
        assert chart.locator(".legend .traces").count() == 2
        paths = chart.locator(".scatterlayer .trace path.js-line").evaluate_all("ps => ps.map(p => p.getAttribute('d'))")
        assert len(set(paths)) == 2, "FIFO and stride dispatch draw two different lines"
        for axis in (".g-xtitle", ".g-ytitle"):
            title, frame = chart.locator(axis).bounding_box(), chart.bounding_box()
            assert title and frame and title["x"] >= frame["x"] and title["y"] >= frame["y"], axis
            assert title["x"] + title["width"] <= frame["x"] + frame["width"] + 1
            assert title["y"] + title["height"] <= frame["y"] + frame["height"] + 1, axis
        cells = page.locator("#summary-table td").all_inner_texts()
        assert cells and not [c for c in cells if "e+" in c or "e-0" in c]
        assert "utilisation map" in page.locator("#summary-table tbody th").all_inner_texts()
        assert page.evaluate("window.__csp") == []
