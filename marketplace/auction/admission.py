"""Admission of price previews: at most one per user at a time, and at most ``PREVIEW_CONCURRENCY`` at once on the site.

A preview (``selectors.bid_preview``) runs the market's auction at 8-10 budgets and, for each, a copy
of the market until the bid would depart: seconds of CPU in a busy market (``bench/bench_preview.py``
measured 7.2 s for a 1,000-task bid at about 300 active jobs), inside the web request. The write
limit (``THROTTLE_WRITES``, 120 a minute) counts requests, not their cost: one tenant sending
previews back to back could keep a web worker busy for good, and a few tenants every worker. So a
preview first takes two slots:

* **its user's**: one key per user in the shared cache, taken with ``add`` (Redis ``SET NX EX``,
  atomic across processes). A second preview of the same user while the first runs is refused
  with 429 and ``Retry-After`` (:class:`PreviewBusy`, ``mine=True``): a browser's double click, or
  a client firing previews in parallel, waits for its own work.
* **one of the site's** ``PREVIEW_CONCURRENCY`` (default 2, one per core of the machine the limits
  were measured on): keys ``0 .. N-1`` tried in turn. When all are taken the preview is refused with
  503 and ``Retry-After`` (``mine=False``): the web workers stay free for everything else.

Both are released when the preview ends, also on an error, each only by the holder that took it
(its random token is compared first, on Redis in the same atomic step as the delete:
``infra.cache.SharedClientRedisCache.delete_if``). A crashed process's keys expire after ``PREVIEW_SLOT_TTL_S``
(300 s, far above a preview's time). While the cache is down the slots are taken in this process's
memory (:data:`LOCAL_SLOTS`, as ``web.throttling`` counts request rates then): a limit of N then
allows N per web process, never none.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.core.cache import cache
from django.core.cache.backends.locmem import LocMemCache

from marketplace.infra.resilience import CACHE

__all__ = ["LOCAL_SLOTS", "PreviewBusy", "preview_slot"]

RETRY_AFTER_S = 5
"""Seconds a refused preview is told to wait (``Retry-After``): about one preview's time in a busy market."""

LOCAL_SLOTS = LocMemCache("preview-slots-fallback", {"MAX_ENTRIES": 100_000})
"""Where the slots are taken while the shared cache is down: this process's memory."""


class PreviewBusy(Exception):
    """A preview was not admitted. ``mine``: the user's own previous preview is still running (429);
    else every site slot is taken (503). ``wait``: seconds to wait before trying again."""

    def __init__(self, *, mine: bool, wait: int = RETRY_AFTER_S) -> None:
        self.mine, self.wait = mine, wait
        super().__init__(
            "Your previous preview is still being computed; try again when it has finished." if mine
            else "The market is computing other previews; try again in a few seconds."
        )


def _take(key: str, token: str) -> bool:
    """``add(key, token)`` in the shared cache, or in :data:`LOCAL_SLOTS` while it is down."""
    ttl = int(settings.PREVIEW_SLOT_TTL_S)
    if CACHE.allows():
        try:
            return bool(cache.add(key, token, ttl))
        except Exception as exc:  # Redis down: trip the breaker, take the slot locally
            CACHE.trip(exc)
    return bool(LOCAL_SLOTS.add(key, token, ttl))


def _give_back(key: str, token: str) -> None:
    """Delete ``key`` where it was taken if it still holds ``token`` (an expired slot taken by
    another preview since is left to it): one atomic compare-and-delete where the store has one
    (Redis), else a read then a delete (this process's memory: only another thread of this process
    could retake an expired slot between the two)."""
    for store in (LOCAL_SLOTS, cache):
        if store is cache and not CACHE.allows():
            continue
        try:
            delete_if = getattr(store, "delete_if", None)
            if delete_if is not None:
                delete_if(key, token)
            elif store.get(key) == token:
                store.delete(key)
        except Exception as exc:
            CACHE.trip(exc)


@contextmanager
def preview_slot(user_id: int) -> Iterator[None]:
    """Hold the user's preview slot and one of the site's for the ``with`` block.

    Raises:
        PreviewBusy: the user's slot or every site slot is taken; nothing is held then.
    """
    token = secrets.token_hex(16)
    mine = f"preview-slot:user:{int(user_id)}"
    if not _take(mine, token):
        raise PreviewBusy(mine=True)
    try:
        site = next((key for i in range(int(settings.PREVIEW_CONCURRENCY))
                     if _take(key := f"preview-slot:site:{i}", token)), None)
        if site is None:
            raise PreviewBusy(mine=False)
        try:
            yield
        finally:
            _give_back(site, token)
    finally:
        _give_back(mine, token)
