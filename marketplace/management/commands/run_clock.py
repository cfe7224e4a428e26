"""Keep the live market clocks running: a tick every ``--tick`` wall seconds, forever.

Each tick advances every market by its ``clock_speed`` x the wall time since its
last tick (``market.services.clock.cluster_tick``, the service Celery beat's
``cluster_tick_task`` runs in a deployment). ``make run`` starts it after the
trace replay, so simulated time never stops while the server runs: a bid placed at
any time runs and finishes.

Every ``--sweep`` seconds it also runs the market sweeper in this process
(``market.services.sweeper.market_sweep``): a market whose clearing trigger was lost
(broker down) or whose clearing worker died is cleared here, without the broker.
"""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError

from marketplace.market import hooks
from marketplace.market.models.market import Market
from marketplace.market.services.clock import cluster_tick
from marketplace.market.services.sweeper import market_sweep

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Advance every market's live clock every --tick seconds until interrupted."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--tick", type=float, default=0.5, help="Wall seconds between ticks.")
        parser.add_argument("--ticks", type=int, default=None, help="Stop after this many ticks (default: never).")
        parser.add_argument("--sweep", type=float, default=settings.MARKET_SWEEP_S,
                            help="Wall seconds between market sweeps (0: never; default MARKET_SWEEP_S).")
        parser.add_argument("--no-tick", action="store_true", help="Only sweep (the clock is driven elsewhere, e.g. by beat).")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        if not opts["tick"] > 0:
            raise CommandError("--tick must be positive.")
        try:
            self._run(opts)
        except KeyboardInterrupt:  # Ctrl-C: a tick is one transaction, so nothing is left half done
            raise SystemExit(130) from None

    def _run(self, opts: dict) -> None:
        n = 0
        next_sweep = time.monotonic()
        while opts["ticks"] is None or n < opts["ticks"]:
            if not opts["no_tick"]:
                self._tick_all(opts["verbosity"])
            if opts["sweep"] > 0 and time.monotonic() >= next_sweep:
                next_sweep = time.monotonic() + opts["sweep"]
                try:
                    market_sweep()
                except OperationalError as exc:  # the database is away: the next sweep catches up
                    log.warning("sweep skipped: %s", exc)
            n += 1
            time.sleep(opts["tick"])

    def _tick_all(self, verbosity: int) -> None:
        for pk in Market.objects.values_list("pk", flat=True):
            t0 = time.perf_counter()
            try:
                result = cluster_tick(market_id=pk)
            except OperationalError as exc:  # e.g. SQLite busy: the next tick catches up
                log.warning("market %s: tick skipped: %s", pk, exc)
                continue
            hooks.after_tick(pk)  # committed: the parts' work after it (the dashboard's figures for its viewers)
            if verbosity > 1:
                self.stdout.write(f"market {pk}: t={result.sim_time:.0f}s active_jobs={result.active_jobs} "
                                  f"finished_jobs={result.finished_jobs} tick={1000 * (time.perf_counter() - t0):.1f}ms")
