"""Waiting for what another process (a real worker) does."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")


def wait_for(pred: Callable[[], T], timeout: float, what: str, every: float = 0.1) -> T:
    """``pred()``'s first truthy value, polled every ``every`` s; fails the test after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = pred()
        if value:
            return value
        time.sleep(every)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")
