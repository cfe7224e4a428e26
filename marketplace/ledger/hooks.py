"""The ledger's sweep work (``market.hooks``' ``SweepWork``): the market sweeper purges expired
idempotency keys (``idempotency.idempotency_purge``), at most once every ``PURGE_EVERY_S``.

The ledger sits below the core and imports none of it, so the Django glue
(``MarketplaceConfig.ready``) registers :func:`sweep_work` with the core's hooks.
"""

from __future__ import annotations

import threading
import time

from marketplace.ledger.idempotency import idempotency_purge

PURGE_EVERY_S = 600.0

# time.monotonic() of this process's last purge (-inf: none yet, the first sweep purges). Not 0: the monotonic
# clock counts from the machine's boot, so in a machine's first PURGE_EVERY_S seconds 0 would read as a recent purge.
_LAST_PURGE = [float("-inf")]
_LOCK = threading.Lock()


def sweep_work() -> list[int]:
    """Purge expired idempotency keys when ``PURGE_EVERY_S`` has passed since the last purge.

    Returns:
        [] (the purge acts on no market or run id). Raises what the purge raises; the core's
        sweeper logs it and goes on (``market.hooks.run_sweep_work``)."""
    now = time.monotonic()
    with _LOCK:
        if now - _LAST_PURGE[0] < PURGE_EVERY_S:
            return []
        _LAST_PURGE[0] = now
    idempotency_purge()
    return []


def forget() -> None:
    """Forget the last purge (tests; a new process starts empty)."""
    _LAST_PURGE[0] = float("-inf")
