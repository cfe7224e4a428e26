"""The Experiments page says how long a run will take before it starts, for the parameters in its form: changing
the published study's windows or its trace boxes changes the estimate shown above the form, the way the model
scales (``simulator.experiments.published.study.estimate``), and an invalid field says there is no estimate."""

from __future__ import annotations

import re

import pytest

from tests.browser.conftest import chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _windows(basis: str) -> int:
    m = re.match(r"\((\d+) windows", basis)
    assert m, basis
    return int(m[1])


def test_the_estimate_follows_the_form(chromium_path, live_server, staff):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium_page(chromium_path, 1280, 900) as page:
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        login(page, live_server.url, "ops")
        page.goto(f"{live_server.url}/lab/")
        card = page.locator("#exp-published_schedulers")
        box = page.locator("#estimate-published_schedulers")
        basis = box.locator(".estimate-basis")
        assert _windows(basis.inner_text()) == 30  # the defaults: 3 traces x 10 windows
        card.locator("summary", has_text="Parameters").click()
        card.locator("#published_schedulers-seeds").fill("4")
        expect(basis).to_have_text(re.compile(r"^\(12 windows"))
        expect(box.locator(".estimate-which")).to_have_text("the parameters below")
        card.get_by_label("kth").uncheck()
        expect(basis).to_have_text(re.compile(r"^\(8 windows"))
        card.locator("#published_schedulers-seeds").fill("0")
        expect(box.locator(".estimate-text")).to_have_text("no estimate")
        expect(box.locator(".estimate-which")).to_contain_text("seeds")
        expect(basis).to_have_text("")
        assert errors == [], errors
