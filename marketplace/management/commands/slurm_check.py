"""List every difference between the market's view (running tasks, reservations, capacities) and
Slurm's, as ColdFront's ``slurm_check`` does for accounts; ``--fix`` repairs what it can and says
what it could not. Exit status 0 when nothing differs (after ``--fix``: when nothing is left)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from marketplace.market.models.market import Market
from marketplace.slurm.client import SlurmUnavailable
from marketplace.slurm.selectors import differences
from marketplace.slurm.services.backend import slurm_client
from marketplace.slurm.services.repair import slurm_fix


class Command(BaseCommand):
    help = "Compare the market's view of its tasks, reservations and capacities with Slurm's (--fix repairs)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--market", type=int, default=None, help="Market id (default: every market).")
        parser.add_argument("--fix", action="store_true", help="Repair what can be repaired, then check again.")

    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        markets = Market.objects.all() if opts["market"] is None else Market.objects.filter(pk=opts["market"])
        client = slurm_client()
        left = 0
        try:
            for market in markets:
                if opts["fix"]:
                    done, failed = slurm_fix(market_id=market.pk)
                    for line in done:
                        self.stdout.write(f"market {market.pk}: fixed: {line}")
                    for line in failed:
                        self.stdout.write(f"market {market.pk}: could not fix: {line}")
                found = differences(market=market, client=client)
                for d in found:
                    self.stdout.write(f"market {market.pk}: {d}")
                if not found:
                    self.stdout.write(f"market {market.pk}: no difference between the market and Slurm")
                left += len(found)
        except SlurmUnavailable as exc:
            raise CommandError(f"Slurm is unreachable: {exc}") from None
        if left:
            raise CommandError(f"{left} difference(s) between the market and Slurm")
