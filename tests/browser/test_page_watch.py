"""The browser tests' page watch (conftest ``page_errors_fail_the_test``) sees what it is meant to see."""

from __future__ import annotations

import pytest

from tests.browser.conftest import chromium_page

pytestmark = pytest.mark.browser


@pytest.mark.page_errors("this test provokes them to check that the watch records them")
def test_a_console_error_and_an_uncaught_exception_are_recorded_and_a_refused_form_page_is_not(
        chromium_path, live_server, page_errors_fail_the_test) -> None:  # type: ignore[no-untyped-def]
    # playwright's default page: a 1280 x 720 viewport, actions waiting 30 s
    with chromium_page(chromium_path, 1280, 720, timeout_ms=None) as page:
        page.goto(f"{live_server.url}/login/")
        page.get_by_label("Username").fill("nobody")
        page.get_by_label("Password").fill("wrong-password")
        with page.expect_response(lambda r: r.request.method == "POST") as answer:
            page.get_by_role("button", name="Log in").click()  # answered with the form and its error
        page.wait_for_load_state()
        status = answer.value.status
        assert page_errors_fail_the_test == [], (status, page_errors_fail_the_test)
        page.evaluate("() => { console.error('a script failed'); setTimeout(() => { throw new Error('nobody caught this'); }); }")
        page.wait_for_timeout(300)
    assert 400 <= status < 500  # a page refused as a whole (the login form with its error): the case the watch must not count
    assert any("a script failed" in m for m in page_errors_fail_the_test), page_errors_fail_the_test
    assert any("nobody caught this" in m for m in page_errors_fail_the_test), page_errors_fail_the_test
