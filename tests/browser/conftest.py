"""Browser tests: Debian's Chromium (/usr/bin/chromium) through playwright's sync API.

Without Chromium the tests are skipped, unless the environment variable CI is set:
then a missing browser is a failure (``.ci/run`` installs it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.db import connections

from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update"]
PASSWORD = "browser-pw-123"
TIMEOUT_MS = 20_000
# how many CSS px the page is wider than its window (> 0: it scrolls sideways), for page.evaluate
PAGE_OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
SHOTS = Path(__file__).resolve().parents[2] / "var" / "screens"  # screenshots kept for a person to look at


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


@pytest.fixture
def staff(live_server):  # type: ignore[no-untyped-def]
    """ops, a staff user, made before the browser starts (as ``tenant``)."""
    return get_user_model().objects.create_user("ops", password=PASSWORD, is_staff=True)


@pytest.fixture
def experiments_in_thread(settings) -> None:  # type: ignore[no-untyped-def]
    """The lab's runs go in a background thread of the live server (the test's browser watches them progress)."""
    settings.EXPERIMENTS_IN_THREAD = True


@contextmanager
def chromium(chromium_path: str, *, expect_timeout_ms: int = TIMEOUT_MS) -> Iterator[Any]:
    """Debian's Chromium launched with the suite's flags (``CHROMIUM_ARGS``), as a playwright ``Browser``; ``expect``
    waits ``expect_timeout_ms`` (ms). The browser is closed when the block ends. Open its pages with ``new_page``."""
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=expect_timeout_ms)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium_path, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def new_page(browser: Any, width: int = 1400, height: int = 1000, *, timeout_ms: int | None = TIMEOUT_MS,
             **context_options: Any) -> Any:
    """A page of ``browser`` in a context of its own (closing the page closes it), with a ``width`` x ``height`` CSS px
    viewport; its actions wait ``timeout_ms`` (ms; None: playwright's default, 30 s). ``context_options`` are
    playwright's other context options (``device_scale_factor``, ``is_mobile``, ``has_touch``, ``java_script_enabled``)."""
    page = browser.new_page(viewport={"width": width, "height": height}, **context_options)
    if timeout_ms is not None:
        page.set_default_timeout(timeout_ms)
    return page


@contextmanager
def chromium_page(chromium_path: str, width: int = 1400, height: int = 1000, *, timeout_ms: int | None = TIMEOUT_MS,
                  expect_timeout_ms: int = TIMEOUT_MS, **context_options: Any) -> Iterator[Any]:
    """One page (``new_page``) of a browser (``chromium``), the common case; the browser is closed when the block ends.
    A test that needs several pages opens them with ``new_page`` in a ``chromium`` block."""
    with chromium(chromium_path, expect_timeout_ms=expect_timeout_ms) as browser:
        yield new_page(browser, width, height, timeout_ms=timeout_ms, **context_options)


def login(page, base_url: str, username: str, password: str = PASSWORD) -> None:  # type: ignore[no-untyped-def]
    """Log in through the login form."""
    page.goto(f"{base_url}/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


def expect_chart_drawn(page, selector: str) -> None:  # type: ignore[no-untyped-def]
    """Wait (``expect``'s timeout) until plotly.js has drawn the chart at CSS ``selector`` of ``page``: the element
    carries plotly's class and its SVG is visible; AssertionError if it does not in time."""
    from playwright.sync_api import expect

    expect(page.locator(f"{selector}.js-plotly-plot .main-svg").first).to_be_visible()


def in_thread(fn: Callable[[], object]) -> None:
    """Run ``fn`` in a worker thread that closes its database connections when done.

    Playwright's sync API runs an event loop in the test's thread, where Django refuses ORM
    calls; a plain thread has no loop, and closing its connections leaves no session open
    on the test database when pytest-django drops it.
    """
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)
        finally:
            connections.close_all()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if errors:
        raise errors[0]


@pytest.fixture(autouse=True)
def page_errors_fail_the_test(request, monkeypatch):  # type: ignore[no-untyped-def]
    """Every page a browser test opens is watched: an error on the console (a failed script, a refused
    resource, a Content-Security-Policy violation) or an exception no script caught fails the test when
    it ends, with the messages. Not an error: a page answered 4xx as a whole (a form sent back with its
    field errors is a 400 page; Chromium logs it as a resource that failed to load). A test that provokes
    errors on purpose says so with ``@pytest.mark.page_errors("why")`` and checks the messages itself."""
    from playwright.sync_api import Browser, BrowserContext

    seen: list[str] = []
    refused_pages: set[str] = set()  # documents answered 4xx: forms with their errors

    def on_response(response) -> None:  # type: ignore[no-untyped-def]
        if response.request.resource_type == "document" and 400 <= response.status < 500:
            refused_pages.add(response.url)

    def on_console(message) -> None:  # type: ignore[no-untyped-def]
        url = message.location.get("url", "")
        if message.type == "error" and not (url in refused_pages and message.text.startswith("Failed to load resource")):
            seen.append(f"console error: {message.text} ({url})")

    def watched(page):  # type: ignore[no-untyped-def]
        page.on("response", on_response)
        page.on("console", on_console)
        page.on("pageerror", lambda e: seen.append(f"uncaught exception: {e}"))
        return page

    for cls in (Browser, BrowserContext):
        monkeypatch.setattr(cls, "new_page", lambda self, *a, _new=cls.new_page, **k: watched(_new(self, *a, **k)))
    yield seen
    if seen and request.node.get_closest_marker("page_errors") is None:
        pytest.fail("the page reported errors:\n" + "\n".join(dict.fromkeys(seen)))
