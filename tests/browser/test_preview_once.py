"""The bid form sends one submission at a time (``form[data-submit-once]``, static/js/forms.js): a second click on
"Preview price" while the first preview is computed sends nothing, and the page shows the first one, instead of
a second request that the server refuses (429) while the first holds the user's slot
(marketplace.auction.admission)."""

from __future__ import annotations

import time

import pytest

from marketplace.auction import selectors
from tests.browser.conftest import chromium_page, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_second_click_while_a_preview_is_computed_sends_nothing_and_the_first_is_shown(  # type: ignore[no-untyped-def]
        chromium_path, live_server, tenant, monkeypatch):
    from playwright.sync_api import expect

    computed = selectors.bid_preview

    def slow(**kwargs):  # type: ignore[no-untyped-def]  # a busy market's preview: the live server runs in this process
        time.sleep(2.0)
        return computed(**kwargs)

    monkeypatch.setattr("marketplace.auction.preview.bid_preview", slow)

    with chromium_page(chromium_path) as page:
        login(page, live_server.url, "alice")
        page.goto(f"{live_server.url}/bid/")
        page.get_by_label("Budget").fill("40")
        page.get_by_label("map tasks").fill("10")
        page.get_by_label("map seconds per task (market clock)").fill("60")
        posts: list[str] = []
        page.on("request", lambda r: posts.append(r.post_data or "") if r.method == "POST" else None)
        # the mouse, not the locator: a locator's click waits for the pending navigation and would land on the next page
        button = page.get_by_role("button", name="Preview price (estimate)")
        button.scroll_into_view_if_needed()
        box = button.bounding_box()
        x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
        page.mouse.click(x, y)
        page.wait_for_timeout(500)  # the first preview is being computed (2 s): the page still shows the form
        page.mouse.click(x, y)
        expect(page.locator("#preview-table")).to_be_visible()
        assert page.locator(".messages").count() == 0 or "still being computed" not in page.locator(".messages").inner_text()
        assert len(posts) == 1 and "action=preview" in posts[0], posts
        # the page came back: its form takes a submission again (the bid, this time)
        page.get_by_role("button", name="Place bid").click()
        expect(page.locator(".messages")).to_contain_text("Bid placed")
        assert len(posts) == 2 and "action=preview" not in posts[1]
