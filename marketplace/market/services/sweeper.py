"""The market sweeper: no market stays uncleared for longer than ``MARKET_STALENESS_BOUND_S``.

A clearing is normally triggered by the change itself (``services.market.
market_changed`` enqueues ``clear_market_task`` after commit). Two failures
lose that trigger: the broker was down when it was published (the write still
committed and answered success), or the worker that took the clearing lease
died (its lease blocks every other trigger until it expires, and each of those
triggers returns "busy" and is dropped). The sweeper closes both holes by
polling the database, never the broker, every ``MARKET_SWEEP_S`` seconds:

* a market whose ``cleared_version`` is still below the ``state_version`` it had
  at the previous sweep (so it has been behind for at least one sweep period,
  and a healthy worker has had that long to clear it) is cleared here, in this
  process, through the same ``market_clear``. Its lease guard takes over an
  expired lease; an unexpired one means a live clearing ("busy"), retried at the
  next sweep.

Staleness bound (wall time from a committed change until a clearing that
includes it is stored), with period P = ``MARKET_SWEEP_S`` and lease L =
``MARKET_LEASE_S``: a lost trigger is seen at the next sweep and cleared at the
one after, <= 2P; a dead worker's lease expires L after its last renewal and is
taken over at the next sweep, <= L + P; plus one clearing's time. With P = 1.5 s
and L = 4 s: 5.5 s + clearing time, documented as 10 s
(``settings.MARKET_STALENESS_BOUND_S``; the integration tests assert it).

Run by ``manage.py run_clock`` (in-process: works while the broker is down) and
by Celery beat's ``sweep_markets_task``. It also runs the sweep work registered in
``market.hooks`` (the ledger purges expired idempotency keys; the lab publishes experiment and
simulation runs that are queued but not with the broker: their publication failed
while the broker was down, or a failed attempt's retry is due).
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from django.db.models import F

from marketplace.market import hooks
from marketplace.market.models.market import Market
from marketplace.market.services.clearing import market_clear

log = logging.getLogger(__name__)

_SEEN: dict[int, int] = {}  # market id -> state_version it was behind at, at this process's previous sweep
_LOCK = threading.Lock()


@dataclass
class SweepResult:
    """What one sweep did: markets behind now, and what clearing each of the overdue ones returned."""

    behind: dict[int, int] = field(default_factory=dict)  # market id -> state_version
    outcomes: dict[int, str] = field(default_factory=dict)  # market id -> ClearingResult.status
    requeued: list[int] = field(default_factory=list)  # what the parts' sweep work acted on (the lab: runs published again)

    @property
    def cleared(self) -> int:
        return sum(status == "cleared" for status in self.outcomes.values())


def market_sweep(*, grace: bool = True) -> SweepResult:
    """Clear every market that has been behind since the previous sweep (all behind ones
    when ``grace`` is False).

    Returns:
        SweepResult. Errors of one market's clearing are logged and do not stop the others.
    """
    behind = dict(Market.objects.filter(cleared_version__lt=F("state_version")).values_list("pk", "state_version"))
    result = SweepResult(behind=behind)
    with _LOCK:
        previous = dict(_SEEN)
        _SEEN.clear()
        _SEEN.update(behind)
    for pk in sorted(behind):
        if grace and pk not in previous:
            continue  # first seen behind now: the worker's own trigger gets one sweep period
        try:
            outcome = market_clear(market_id=pk)
        except Exception:  # one market's failure (a solver error) must not stop the sweep of the others
            log.exception("market %s: sweeper clearing failed", pk)
            continue
        result.outcomes[pk] = outcome.status
        if outcome.status == "cleared":
            log.warning("market %s: cleared by the sweeper (version %s; trigger lost or lease expired)", pk, outcome.state_version)
    result.requeued = hooks.run_sweep_work()  # the ledger's key purge, the parts' own (the lab: runs whose publication failed)
    return result


def sweeper_forget() -> None:
    """Forget what previous sweeps saw (tests; a new process starts empty)."""
    with _LOCK:
        _SEEN.clear()
