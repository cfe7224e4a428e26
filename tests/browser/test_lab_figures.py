"""The papers' box plot and histogram draw in a real browser (README, "Charts"): a staff user runs
Abacus Fig. 11 (one box per set-up and regressors) and ERA-Rayon (a histogram of start shifts)
from the Experiments page with small parameters, and plotly.js draws each figure: the run page
loads the full bundle, no console message says a trace type is not registered, no console
error or page error (a Content-Security-Policy violation is one), and the plot's SVG holds one
box per box trace and histogram bars."""

from __future__ import annotations

import re
import shutil

import pytest

from marketplace.web.plotly_bundle import FULL_BUNDLE
from tests.browser.conftest import SHOTS, TIMEOUT_MS, chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("experiments_in_thread")]

# The cheapest parameters that still give each figure: Fig. 11 with two seeds (a box needs
# several points), one reported ratio and two k; ERA-Rayon with one seed of 100 jobs on a
# cluster small enough that early start moves jobs (on the paper's 240 GB every shift is 0:
# one bar).
RUNS = {
    "abacus_fig11": {"seeds": "0, 1", "ratios": "6", "ks": "3, 5", "draws": "2", "k_scatter": "3"},
    "era_rayon": {"seeds": "0", "jobs": "100", "capacity_gb": "6", "window_s": "3600"},
}


def _run(page, base_url: str, name: str, params: dict[str, str]) -> None:  # type: ignore[no-untyped-def]
    """Start experiment ``name`` from the Experiments page and wait until its run page shows a drawn chart."""
    from playwright.sync_api import expect

    page.goto(f"{base_url}/lab/")
    card = page.locator(f"#exp-{name}")
    card.locator("summary", has_text="Parameters").click()
    for key, value in params.items():
        card.locator(f"#{name}-{key}").fill(value)
    card.get_by_role("button", name="Run").click()
    expect(page).to_have_url(re.compile(r"/lab/runs/\d+/$"))
    expect(page.locator("#run-status-label")).to_have_text("Done")  # the page reloads itself once the run has finished
    expect(page.locator('[data-figure="figure-0"].js-plotly-plot')).to_be_visible()
    expect(page.locator('[data-figure="figure-0"]')).not_to_have_attribute("aria-busy", "true")


def test_box_plot_and_histogram_draw(chromium_path, live_server, staff, tmp_path):  # type: ignore[no-untyped-def]
    # actions wait three times the suite's timeout, ``expect`` (in _run: a run finishing) the suite's
    with chromium_page(chromium_path, 1280, 900, timeout_ms=TIMEOUT_MS * 3, expect_timeout_ms=TIMEOUT_MS) as page:
        errors: list[str] = []
        unregistered: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)
        page.on("console", lambda msg: unregistered.append(msg.text) if "not registered" in msg.text else None)
        login(page, live_server.url, "ops")

        _run(page, live_server.url, "abacus_fig11", RUNS["abacus_fig11"])
        chart = page.locator('[data-figure="figure-0"]')
        expected = page.evaluate("() => JSON.parse(document.getElementById('figure-0').textContent).data.length")
        traces = chart.evaluate("el => el._fullData.map(t => [t.type, t.visible])")
        assert expected >= 2 and traces == [["box", True]] * expected, traces  # one per set-up and regressors
        assert chart.locator("svg.main-svg .boxlayer g.trace.boxes").count() == expected
        assert chart.locator("svg.main-svg .boxlayer g.trace.boxes path.box").count() == expected  # each drew its box
        chart.screenshot(path=str(tmp_path / "lab-abacus-fig11.png"))
        assert page.locator(f'script[src="/static/{FULL_BUNDLE}"]').count() == 1  # only this page loads the 4.8 MB bundle

        _run(page, live_server.url, "era_rayon", RUNS["era_rayon"])
        chart = page.locator('[data-figure="figure-0"]')
        traces = chart.evaluate("el => el._fullData.map(t => [t.type, t.visible])")
        assert traces == [["histogram", True]]
        assert chart.locator("svg.main-svg .barlayer g.trace.bars").count() == 1
        bins = chart.evaluate("el => el.calcdata[0].map(b => b.s)")  # jobs per bin, as plotly.js binned them
        assert sum(bins) == 100 and sum(1 for n in bins if n > 0) >= 3, bins
        assert chart.locator("svg.main-svg .barlayer g.trace.bars g.point path").count() == len(bins)
        chart.screenshot(path=str(tmp_path / "lab-era-rayon.png"))
        assert page.locator(f'script[src="/static/{FULL_BUNDLE}"]').count() == 1

        SHOTS.mkdir(parents=True, exist_ok=True)
        for png in tmp_path.glob("*.png"):
            assert png.stat().st_size > 5_000
            shutil.copy(png, SHOTS / png.name)
        assert unregistered == [], unregistered
        assert errors == [], errors


def test_a_runs_wide_tables_show_every_column_at_desktop_width(chromium_path, live_server, staff):  # type: ignore[no-untyped-def]
    from marketplace.lab.models import ExperimentRun

    # given a finished run with the published study's widest tables: 13 and 17 columns, long names and big numbers
    names = ["ERA reservations over H-LTRF", "Tiresias, three limits", "Themis (attained service)"]
    thirteen = {"title": "metrics", "columns": ["configuration", "inside a queue", "reads before a job runs",
                                                *[f"metric number {k} (sim s)" for k in range(10)]],
                "rows": [[n, "equal share (stride)", "task durations at start", *[f"{1234.5 * k:,.1f} ± 640" for k in range(10)]]
                         for n in names]}
    seventeen = {"title": "every run", "columns": ["trace", "seed", "configuration", "window start (h)", "jobs",
                                                   "capacity (units per type)", "arrival compression",
                                                   *[f"measured quantity {k} (fraction)" for k in range(10)]],
                 "rows": [["FB-2009", s, n, 14.014, 1265, "63, 32", 0.9405, *[15137.2 * (k + 1) for k in range(10)]]
                          for s in range(3) for n in names]}
    run = ExperimentRun.objects.create(name="published_schedulers", params={}, status=ExperimentRun.Status.DONE, progress=1.0,
                                       result={"figures": [], "tables": [thirteen, seventeen], "summary": "done"})
    with chromium_page(chromium_path, 1280, 900) as page:
        login(page, live_server.url, "ops")
        page.goto(f"{live_server.url}/lab/runs/{run.pk}/")
        tables = page.locator("table.many-columns")
        assert tables.count() == 2
        for k in range(2):  # then no column hides in a scroll box
            width, room = tables.nth(k).evaluate("t => [t.scrollWidth, t.parentElement.clientWidth]")
            assert width <= room + 1, (k, width, room)
        # and big numbers read as numbers, not in scientific notation
        cells = tables.nth(1).locator("td").all_inner_texts()
        assert "151,372" in cells and not [c for c in cells if "e+" in c]
