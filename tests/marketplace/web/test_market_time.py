"""Times on the market clock as users type them, and the header clock every page shows."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from marketplace.market import selectors
from marketplace.market.models.market import Market
from marketplace.market.selectors import CLOCK_STALE_S
from marketplace.web.forms import market_time_parse

CASES = {
    "now": ("now", 100.0),
    "in hours": ("in 2 h", 7300.0),
    "plus seconds": ("+900 s", 1000.0),
    "plus bare number": ("+900", 1000.0),
    "compact sum": ("+1h30m", 5500.0),
    "long units": ("in 1 hour 30 minutes", 5500.0),
    "h:mm:ss on the clock": ("1:30:00", 5400.0),
    "h:mm on the clock": ("1:30", 5400.0),
    "seconds on the clock": ("5400", 5400.0),
    "seconds with unit on the clock": ("5400 s", 5400.0),
    "upper case": ("IN 15 MIN", 1000.0),
}


@pytest.mark.parametrize(("text", "expected"), CASES.values(), ids=CASES.keys())
def test_market_time_parse(text, expected):
    assert market_time_parse(text, now=100.0) == pytest.approx(expected)


@pytest.mark.parametrize("text", ["tomorrow", "in", "+", "1:99", "-5", "in 2 weeks", "", "9" * 400 + " h"])
def test_market_time_parse_refuses_what_is_not_a_time(text):
    with pytest.raises(ValidationError):
        market_time_parse(text, now=100.0)


def test_market_clock_runs_only_while_ticked(market):
    market.sim_time, market.clock_speed = 600.0, 30.0
    market.clock_wall_at = timezone.now() - dt.timedelta(seconds=2)
    clock = selectors.market_clock(market=market)
    assert clock["running"] and clock["speed"] == 30.0
    assert clock["sim_time"] == pytest.approx(660.0, abs=3.0)  # two wall seconds since the last tick
    market.clock_wall_at = timezone.now() - dt.timedelta(seconds=60)  # no tick for a minute: stopped
    clock = selectors.market_clock(market=market)
    assert not clock["running"] and clock["speed"] == 0.0 and clock["sim_time"] == 600.0


def test_clock_json_is_for_logged_in_users(client, alice, market):
    assert client.get("/clock.json").status_code == 401
    client.force_login(alice.user)
    Market.objects.filter(pk=market.pk).update(sim_time=42.0)
    body = client.get("/clock.json").json()
    assert body == {"sim_time": 42.0, "speed": 0.0, "running": False}


def test_every_page_carries_the_clock_for_the_browser_to_run(client, alice, market):
    client.force_login(alice.user)
    Market.objects.filter(pk=market.pk).update(sim_time=3725.0, clock_speed=30.0, clock_wall_at=timezone.now())
    for url in ("/jobs/", "/account/", "/deadline/", "/reservations/new/"):
        html = client.get(url).content.decode()
        assert 'id="sim-clock" data-url="/clock.json"' in html, url
        assert 'data-speed="30"' in html, url
        shown = float(re.search(r'data-sim-time="([0-9.]+)"', html).group(1))
        assert 3725.0 <= shown <= 3725.0 + 30 * CLOCK_STALE_S, url  # the clock at the tick plus the wall time since
