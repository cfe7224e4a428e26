"""HTTP revalidation for the pages' pollers (ETag and If-None-Match on what
pollers read).

The dashboard and the lab pages poll JSON every few seconds (``static/js/dashboard.js``,
``static/js/lab.js``). Their answers carry an ETag of their content (Django's
``conditional_page``) and ``Cache-Control: private, no-cache``, so the browser keeps the last
answer and asks again with ``If-None-Match``; an unchanged answer comes back as a body-less
304, which ``fetch`` resolves to the cached body. The API's polled reads have their own
version-keyed ETags (``marketplace.api.conditional``), which also spare the server the work.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.views.decorators.cache import cache_control
from django.views.decorators.http import conditional_page

View = TypeVar("View", bound=Callable[..., Any])


def poller_revalidates(view: View) -> View:
    """Decorate a polled JSON view: content ETag, 304 on a matching ``If-None-Match``, and
    ``Cache-Control: private, no-cache`` (kept by the browser, revalidated on every poll)."""
    return cache_control(private=True, no_cache=True)(conditional_page(view))  # type: ignore[return-value]
