"""Logs: expected refusals are one line; the replay's progress never
interleaves with a line-based log (plain whole lines off a terminal, a tqdm bar on one)."""

from __future__ import annotations

import io
import logging
import sys

from django.test import Client
from django.urls import reverse

from marketplace.management.progress import Progress
from marketplace.web.logs import ExpectedRefusals


def _console() -> logging.Handler:
    handlers = [h for h in logging.getLogger().handlers if any(isinstance(f, ExpectedRefusals) for f in h.filters)]
    assert handlers, "the console handler of settings.LOGGING carries the ExpectedRefusals filter"
    return handlers[0]


def test_a_permission_denied_is_logged_as_one_line(market, alice):
    # given the console handler writing to a buffer
    handler, buf = _console(), io.StringIO()
    old = handler.setStream(buf)  # type: ignore[attr-defined]
    try:
        client = Client()
        client.force_login(alice.user)
        # when a tenant opens a staff page (PermissionDenied) and a staff API route (DRF 403)
        assert client.get(reverse("market-settings")).status_code == 403
    finally:
        handler.setStream(old)  # type: ignore[attr-defined]
    # then one line, no traceback
    lines = [line for line in buf.getvalue().splitlines() if line.strip()]
    assert lines == ["Forbidden (Permission denied): /market/settings/"]


def test_a_server_error_keeps_its_traceback():
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        record = logging.LogRecord("django.request", logging.ERROR, __file__, 1, "Internal Server Error: /x", None, sys.exc_info())
    record.status_code = 500
    assert ExpectedRefusals().filter(record) and record.exc_info is not None
    formatted = logging.Formatter().format(record)
    assert "Traceback" in formatted


def test_anonymous_api_refusal_is_one_line(db):
    handler, buf = _console(), io.StringIO()
    old = handler.setStream(buf)  # type: ignore[attr-defined]
    try:
        status = Client().get("/api/account/").status_code
    finally:
        handler.setStream(old)  # type: ignore[attr-defined]
    assert status in (401, 403)
    assert "Traceback" not in buf.getvalue() and len(buf.getvalue().strip().splitlines()) <= 1


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def test_progress_off_a_terminal_is_whole_lines_at_most_every_interval():
    out, clock = io.StringIO(), _Clock()
    with Progress(100, stream=out, every_s=10.0, clock=clock, tty=False) as bar:
        for k in range(1, 101):
            clock.t = k * 0.5  # 50 s in all: lines at 0.5, 10.5, 20.5, 30.5, 40.5 s, then the final one
            bar.update(k, sim_t=f"{k}s")
    text = out.getvalue()
    assert "\r" not in text and text.endswith("\n")
    lines = text.splitlines()
    assert len(lines) == 6
    assert lines[-1] == "replay: 100/100 bids submitted, sim_t=100s"


def test_progress_on_a_terminal_is_a_redrawn_bar():
    out = io.StringIO()
    with Progress(10, stream=out, tty=True) as bar:
        for k in range(1, 11):
            bar.update(k, sim_t=f"{k}s")
    text = out.getvalue()
    assert "\r" in text and "10/10" in text
