"""The simulation lab in a real browser, as a new user would try it: create a study from the
FB-2009 trace comparing three fair-share policies, watch the runs progress, read the
comparison (system charts above economic ones, one trace per configuration on the same
axes) and the summary table; a bad capacity is shown at its field."""

from __future__ import annotations

import re
import shutil

import pytest

from marketplace.lab.services import runs
from tests.browser.conftest import SHOTS, TIMEOUT_MS, chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("experiments_in_thread")]


def test_create_watch_and_compare_three_configurations(chromium_path, live_server, staff, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    try:
        with chromium_page(chromium_path, 1280, 1000, timeout_ms=TIMEOUT_MS * 3, expect_timeout_ms=TIMEOUT_MS * 3) as page:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            login(page, live_server.url, "ops")
            page.get_by_role("navigation", name="Main").get_by_role("link", name="Simulation lab").click()

            form = page.locator("#study-form")
            form.get_by_label("Title").fill("three policies")
            form.get_by_label("Hours").fill("0.5")
            form.get_by_label("Tenants").fill("4")
            form.get_by_label("Capacity").fill("20")  # one count for two resource types: refused at the field
            form.get_by_label("Vary").select_option("fairshare")
            form.get_by_label("Values").fill("fifo, ltrf, hltrf")
            form.get_by_label("Seeds").fill("0")
            form.get_by_role("button", name="Start study").click()
            expect(page.locator("#capacity-err")).to_contain_text("2 resource type")
            page.locator("#study-form").get_by_label("Capacity").fill("20, 10")
            page.locator("#study-form").get_by_role("button", name="Start study").click()
            expect(page).to_have_url(re.compile(r"/lab/simulations/\d+/$"))
            expect(page.locator("tr[data-run]")).to_have_count(3)
            page.screenshot(path=str(tmp_path / "study-running.png"), full_page=True)

            # the page reloads itself when the last run has finished
            expect(page.locator("#summary-table")).to_be_visible()
            # one column per configuration, one row per metric: every column fits the page at 1280 px
            expect(page.locator("#summary-table thead th")).to_have_count(4)
            for policy in ("fifo", "ltrf", "hltrf"):
                expect(page.locator("#summary-table thead")).to_contain_text(f"fairshare={policy}")
            assert page.locator("#summary-table tbody tr").count() > 10
            for table in page.locator("table").all():  # no table of the page hides columns in a scroll box
                assert table.evaluate("t => t.scrollWidth <= t.parentElement.clientWidth + 1"), table.get_attribute("id")
            charts = page.locator(".chart.js-plotly-plot")
            expect(charts.first).to_be_visible()
            util = page.evaluate("() => document.querySelector('[data-figure=\"system-0\"]').data.map(t => t.name)")
            assert util == ["fairshare=fifo", "fairshare=ltrf", "fairshare=hltrf"]
            system_y = page.locator("h2", has_text="System: load and latency").bounding_box()["y"]
            economic_y = page.locator("h2", has_text="Economic: prices and revenue").bounding_box()["y"]
            assert system_y < economic_y
            shot = tmp_path / "study-compare.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
            SHOTS.mkdir(parents=True, exist_ok=True)
            pngs = list(tmp_path.glob("*.png"))
            assert shot in pngs  # the copy below copies what was just taken
            for png in pngs:
                shutil.copy(png, SHOTS / png.name)
            assert errors == [], errors
    finally:
        for thread in runs._threads:
            thread.join(timeout=60)


def test_a_synthetic_workload_on_vm_pools_shows_welfare_and_deadlines(chromium_path, live_server, staff, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    try:
        with chromium_page(chromium_path, timeout_ms=TIMEOUT_MS * 3, expect_timeout_ms=TIMEOUT_MS * 3) as page:
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            login(page, live_server.url, "ops")
            page.goto(f"{live_server.url}/lab/simulations/")
            form = page.locator("#study-form")
            form.get_by_label("Title").fill("ERA classes, two predictors")
            form.get_by_label("Hours").fill("1")
            form.get_by_label("Generator").select_option("era_classes")
            form.get_by_label("VM pools").fill("c8:2, c4:2")  # 24 units, ERA's one resource type
            form.get_by_label("Vary").select_option("predictor")
            form.get_by_label("Values").fill("exact, none")
            form.get_by_label("Seeds").fill("0")
            form.get_by_role("button", name="Start study").click()
            expect(page).to_have_url(re.compile(r"/lab/simulations/\d+/$"))
            expect(page.locator("tr[data-run] .run-attempts").first).to_contain_text("of 3")
            expect(page.locator("#summary-table")).to_be_visible()
            for text in ("predictor=exact", "predictor=none", "welfare (money)", "deadlines met (fraction)"):
                expect(page.locator("#summary-table")).to_contain_text(text)
            expect(page.locator('[aria-label^="Welfare, cumulative"]')).to_be_visible()
            page.screenshot(path=str(tmp_path / "study-era-welfare.png"), full_page=True)
            SHOTS.mkdir(parents=True, exist_ok=True)
            shutil.copy(tmp_path / "study-era-welfare.png", SHOTS / "study-era-welfare.png")
            assert errors == [], errors
    finally:
        for thread in runs._threads:
            thread.join(timeout=60)
