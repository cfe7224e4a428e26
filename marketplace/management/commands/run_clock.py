"""Keep the live market clocks running: a tick every ``--tick`` wall seconds, forever.

Each tick advances every market by its ``clock_speed`` x the wall time since its
last tick (``services.cluster.cluster_tick``, the service Celery beat's
``cluster_tick_task`` runs in a deployment). ``make run`` starts it after the
trace replay, so simulated time never stops while the server runs: a bid placed at
any time runs and finishes.
"""

from __future__ import annotations

import logging
import time

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError

from marketplace.models import Market
from marketplace.services.cluster import cluster_tick

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = "Advance every market's live clock every --tick seconds until interrupted."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--tick", type=float, default=0.5, help="Wall seconds between ticks.")
        parser.add_argument("--ticks", type=int, default=None, help="Stop after this many ticks (default: never).")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        if not opts["tick"] > 0:
            raise CommandError("--tick must be positive.")
        n = 0
        while opts["ticks"] is None or n < opts["ticks"]:
            for pk in Market.objects.values_list("pk", flat=True):
                try:
                    result = cluster_tick(market_id=pk)
                except OperationalError as exc:  # e.g. SQLite busy: the next tick catches up
                    log.warning("market %s: tick skipped: %s", pk, exc)
                    continue
                if opts["verbosity"] > 1:
                    self.stdout.write(f"market {pk}: t={result.sim_time:.0f}s active_jobs={result.active_jobs}")
            n += 1
            time.sleep(opts["tick"])
