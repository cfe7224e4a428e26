"""Browser tests: Debian's Chromium (/usr/bin/chromium) through playwright's sync API.

Without Chromium the tests are skipped, unless the environment variable CI is set:
then a missing browser is a failure (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path

import pytest

from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
PASSWORD = "browser-pw-123"
TIMEOUT_MS = 20_000


@pytest.fixture
def chromium_path() -> str:
    """The browser's path; a missing one skips the test locally and fails it on CI."""
    if not CHROMIUM.exists():
        reason = f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) to run browser tests"
        if os.environ.get("CI"):
            pytest.fail(reason + " (CI is set, so this is a failure)")
        pytest.skip(reason)
    return str(CHROMIUM)


@pytest.fixture
def tenant(live_server) -> Tenant:  # type: ignore[no-untyped-def]
    """alice in root.orga of a small market. Rows are created before the browser starts:
    playwright's sync API runs an event loop in the test's thread, where Django refuses ORM calls."""
    market = market_create(name="browser", resources={"map": 10, "reduce": 5},
                           hierarchy={"root": 1.0, "root.orga": 1.0, "root.orgb": 1.0})
    queue = Queue.objects.get(market=market, name="orga")
    return tenant_create(market=market, username="alice", password=PASSWORD, queue=queue, deposit=Decimal("1000"))


def login(page, base_url: str, username: str, password: str = PASSWORD) -> None:  # type: ignore[no-untyped-def]
    """Log in through the login form."""
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
