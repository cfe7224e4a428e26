"""Every column of the lab's tables shows at a desktop width (1280 px): the published study's own tables, built by
its report from rows of all its configurations on all its traces (the widest the lab shows: 13 and 17 columns, the
longest configuration names, numbers in the tens of thousands), on a run's page; and the Experiments page. No table
is wider than its box (scrollWidth <= clientWidth: no column hides in a horizontal scroll box), and every header
cell lies inside the window."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.browser.conftest import chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("LAB_SHOTS", "")  # a folder to keep screenshots in, for a person to look at


def _published_result() -> dict[str, Any]:
    """The published study's result for every configuration on every trace, two windows each, with numbers of the
    sizes its full run gives (JCT up to ~17,000 s, max rho up to ~27,000, capacities like '63, 32')."""
    from simulator.experiments.published.report import METRICS, build
    from simulator.experiments.published.setup import LABELS, TRACES

    rows = []
    for t, trace in enumerate(TRACES):
        for seed in range(2):
            for k, policy in enumerate(LABELS):
                scale = 1 + 0.05 * k + 0.1 * seed
                metrics = {"mean_response_s": 524.3 * (1 + 30 * t) * scale, "p95_response_s": 2210.7 * (1 + 20 * t) * scale,
                           "mean_slowdown": 12.6 * scale, "rho_max": 1411.2 * (1 + 18 * t) * scale, "rho_above_1": 0.534 * scale / 2,
                           "sharing_benefit": 0.0123 * scale, "sharing_loss": -5.61 * scale, "utilisation": 0.73 + 0.01 * k,
                           "welfare_share": 0.613, "payments": 15137.2 * scale}
                rows.append({"trace": trace, "seed": seed, "policy": policy, "metrics": {key: metrics[key] for key, _, _ in METRICS},
                             "cell": {"jobs": 1265 + 10 * t, "capacity": [63, 32] if trace == "fb2009" else [329], "start_h": 14.014 + seed,
                                      "time_scale": 0.9405}})
    return build(rows, list(LABELS))


def _check_tables(page: Any, where: str) -> int:
    """Assert no table on the page overflows its box and every header is inside the window; the number of tables."""
    tables = page.locator("main table")
    for k in range(tables.count()):
        width, room, name = tables.nth(k).evaluate(
            "t => [t.scrollWidth, t.parentElement.clientWidth, (t.closest('section') || t).querySelector('h2, caption')?.textContent]")
        assert width <= room + 1, (where, k, name, width, room)
        right = tables.nth(k).evaluate("t => Math.max(...[...t.querySelectorAll('th')].map(th => th.getBoundingClientRect().right))")
        assert right <= 1280, (where, k, name, right)
    return tables.count()


def test_every_lab_table_shows_every_column_at_1280_px(chromium_path, live_server, staff):  # type: ignore[no-untyped-def]
    from marketplace.lab.models import ExperimentRun

    result = _published_result()
    widest = max(len(t["columns"]) for t in result["tables"])
    assert widest >= 17  # the report's widest table is in the test
    run = ExperimentRun.objects.create(name="published_schedulers", params={}, status=ExperimentRun.Status.DONE, progress=1.0,
                                       result=result, created_by=staff)
    with chromium_page(chromium_path, 1280, 900) as page:
        login(page, live_server.url, "ops")
        page.goto(f"{live_server.url}/lab/runs/{run.pk}/")
        assert _check_tables(page, "run") == len(result["tables"])
        if SHOTS:  # the 13-column metrics table and the 17-column "Every run" table
            sections = page.locator("main section.card", has=page.locator("table"))
            sections.nth(1).screenshot(path=str(Path(SHOTS) / "lab-run-metrics-table.png"))
            sections.last.screenshot(path=str(Path(SHOTS) / "lab-run-every-run-table.png"))
        page.goto(f"{live_server.url}/lab/")
        assert _check_tables(page, "experiments") >= 1
