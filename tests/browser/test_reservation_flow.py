"""Browser: a tenant asks for a quote, reads the price chart, accepts, and finds the booking
(ERA, paper 001; the pattern and the skip/fail rule of ``test_bid_flow.py``)."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest

from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create
from marketplace.reservations.models import Reservation
from tests.browser.conftest import PASSWORD, chromium_page, expect_chart_drawn, login

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def tenant(live_server) -> Tenant:  # type: ignore[no-untyped-def]
    market = market_create(name="browser", resources={"map": 10, "reduce": 5}, hierarchy={"root": 1.0, "root.orga": 1.0})
    queue = Queue.objects.get(market=market, name="orga")
    return tenant_create(market=market, username="alice", password=PASSWORD, queue=queue, deposit=Decimal("1000"))


# WCAG contrast ratio of an element's text colour (part "text") or border colour (part "border") against the first
# opaque background at or above it (for the border: above its parent, the surface the element sits on).
CONTRAST_JS = """(el, part) => {
  const rgb = c => c.match(/[\\d.]+/g).map(Number);
  const lum = ([r, g, b]) => [r, g, b].map(v => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; })
      .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
  let node = part === "border" ? el.parentElement : el, bg = null;
  while (node && !bg) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.length < 4 || c[3] > 0) bg = c;
    node = node.parentElement;
  }
  const fg = getComputedStyle(el)[part === "border" ? "borderTopColor" : "color"];
  const [a, b] = [lum(rgb(fg)), lum(bg || [255, 255, 255])].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""

# The computed look of a button: its own, and that of a disabled copy of it put beside it.
LOOK_JS = """el => {
  const look = b => { const s = getComputedStyle(b); return [s.color, s.backgroundColor, s.borderTopColor, s.cursor, s.opacity]; };
  const copy = el.cloneNode(true);
  copy.disabled = true;
  el.after(copy);
  const out = {own: look(el), disabled: look(copy)};
  copy.remove();
  return out;
}"""



def test_quote_chart_accept_and_my_reservations(chromium_path, live_server, tenant, tmp_path):  # type: ignore[no-untyped-def]
    from playwright.sync_api import expect

    with chromium_page(chromium_path) as page:
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda msg: errors.append(msg.text) if msg.type == "error" else None)  # a CSP violation is one
        login(page, live_server.url, "alice")
        nav = page.get_by_role("navigation", name="Main")

        # A bad window first: a field error, nothing quoted.
        nav.get_by_role("link", name="Reserve", exact=True).click()
        page.get_by_label("Units (W)").fill("4")
        page.get_by_label("Duration T (s, market clock)").fill("600")
        page.get_by_label("Window end D (market clock)").fill("0")
        page.get_by_role("button", name="Get a quote").click()
        expect(page.locator(".errorlist")).to_contain_text("empty or inverted")

        # A good one: the quote page with its chart, the cheapest start starred.
        page.get_by_label("Window end D (market clock)").fill("3600")
        page.get_by_role("button", name="Get a quote").click()
        expect(page).to_have_url(re.compile(r"/reservations/quotes/\d+/$"))
        expect_chart_drawn(page, "[data-figure=fig-quote]")
        expect(page.locator(".legendtext", has_text="Cheapest (quoted)")).to_be_visible()
        page.screenshot(path=str(tmp_path / "quote.png"), full_page=True)
        # "Decline" reads as a button, not a disabled one: its text contrasts with its own background by >= 4.5:1
        # (WCAG AA), its border with the card by >= 3:1 (WCAG 1.4.11; the header's dark-theme style made it light grey
        # on white), it looks unlike a disabled copy of itself, and it answers hover and keyboard focus.
        decline = page.get_by_role("button", name="Decline")
        assert decline.is_enabled()
        assert decline.evaluate(CONTRAST_JS, "text") >= 4.5
        assert decline.evaluate("b => getComputedStyle(b).borderTopStyle") != "none"
        assert decline.evaluate(CONTRAST_JS, "border") >= 3
        look = decline.evaluate(LOOK_JS)
        color, background, border, cursor, opacity = look["own"]
        assert (cursor, opacity) == ("pointer", "1"), look
        assert color != look["disabled"][0] and border != look["disabled"][2] and look["disabled"][3] == "not-allowed", look
        decline.hover()
        assert decline.evaluate("b => getComputedStyle(b).backgroundColor") != background  # hover tints it
        page.get_by_role("button", name=re.compile("Accept and pay")).focus()
        page.keyboard.press("Tab")
        assert decline.evaluate("b => b.matches(':focus-visible') && getComputedStyle(b).outlineStyle") not in (False, "none")
        page.mouse.move(0, 0)

        # Accept: paid now, listed under My reservations.
        page.get_by_role("button", name=re.compile("Accept and pay")).click()
        expect(page).to_have_url(f"{live_server.url}/reservations/")
        expect(page.locator(".messages")).to_contain_text("Reserved: 4 map units")
        expect(page.locator("table").first).to_contain_text("[0, 3600)")

        # The public market page draws its three charts.
        nav.get_by_role("link", name="Reservation market").click()
        for fig in ("fig-prices", "fig-capacity", "fig-revenue"):
            expect_chart_drawn(page, f"[data-figure={fig}]")
            # as drawn: no axis below 0 (prices, units and amounts are never negative)
            assert page.locator(f"[data-figure={fig}]").evaluate("el => el._fullLayout.yaxis.range[0]") >= 0, fig
        assert errors == [], errors
    assert Reservation.objects.filter(tenant=tenant, units=4).exists()
