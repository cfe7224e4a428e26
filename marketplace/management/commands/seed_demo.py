"""Create the demo market: an administrator and tenants in a two-level hierarchy.

Idempotent: a second run changes nothing and prints the same credentials.
Each login has its own generated password, the administrator's included
(``var/demo-credentials.txt``). Compose runs it as a one-off step, never on
every start.
"""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue
from marketplace.market.prices import fair_share_deposit
from marketplace.market.services.config import reserve_prices_set
from marketplace.market.services.setup import market_create, tenant_create

# Two organisations contributed capacity 2:1; each has two teams (leaf queues).
DEMO_HIERARCHY = {
    "root": 1.0,
    "root.orga": 2.0,
    "root.orga.analytics": 1.0,
    "root.orga.etl": 1.0,
    "root.orgb": 1.0,
    "root.orgb.research": 1.0,
    "root.orgb.web": 1.0,
}
DEMO_TENANTS = {"alice": "root.orga.analytics", "bob": "root.orga.etl", "carol": "root.orgb.research", "dave": "root.orgb.web"}
# A tenant's opening deposit buys about a day of its fair share at the market's price level
# (market.prices.fair_share_deposit; docs/economy.md): 1,728,000 credits for alice's third of 60 slots at 1 per slot-second.


def credentials_file() -> Path:
    return settings.VAR_DIR / "demo-credentials.txt"


def demo_passwords() -> dict[str, str]:
    """A distinct generated password per demo login (the administrator's as well), kept in
    ``var/demo-credentials.txt`` (never committed; readable by its owner only).

    Existing entries are kept, so a second run prints the same credentials; a login
    missing from the file (a new checkout, or the old one-password format) gets a new one.
    """
    path = credentials_file()
    known: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            name, sep, password = line.partition(":")
            if sep and name.strip() in ("admin", *DEMO_TENANTS) and password.strip():
                known[name.strip()] = password.strip()
    passwords = {name: known.get(name) or secrets.token_urlsafe(12) for name in ("admin", *DEMO_TENANTS)}
    if passwords != known:
        path.parent.mkdir(exist_ok=True)
        path.write_text("".join(f"{name}: {pw}\n" for name, pw in passwords.items()))
        path.chmod(0o600)
    return passwords


DEMO_RESERVE = 0.05  # credits per slot-second


class Command(BaseCommand):
    help = "Create the demo market, an administrator and demo tenants (idempotent)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--map-slots", type=int, default=40)
        parser.add_argument("--reduce-slots", type=int, default=20)

    @transaction.atomic
    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        passwords = demo_passwords()
        market = Market.objects.order_by("id").first()
        if market is None:
            market = market_create(
                name="default", resources={"map": opts["map_slots"], "reduce": opts["reduce_slots"]}, hierarchy=DEMO_HIERARCHY
            )
            # a twentieth of the reference rate: below it no bid is served, and no quote prices (docs/economy.md)
            reserve_prices_set(market=market, prices={"map": DEMO_RESERVE, "reduce": DEMO_RESERVE}, reason="seed_demo")
        User = get_user_model()
        admin = User.objects.filter(username="admin").first()
        if admin is None:
            User.objects.create_superuser("admin", "admin@localhost", passwords["admin"])
        elif not admin.check_password(passwords["admin"]):  # an older seed's shared password: replace it
            admin.set_password(passwords["admin"])
            admin.save(update_fields=["password"])
        for name, path in DEMO_TENANTS.items():
            user = User.objects.filter(username=name).first()
            if user is None:
                queue = _queue_by_path(market, path)
                tenant_create(market=market, username=name, password=passwords[name], queue=queue,
                              deposit=fair_share_deposit(market=market, queue_id=queue.pk))
            elif not user.check_password(passwords[name]):
                user.set_password(passwords[name])
                user.save(update_fields=["password"])
        seed_pools(market)
        logins = ", ".join(f"{name} / {pw}" for name, pw in passwords.items())
        self.stdout.write(f"Demo market '{market.name}' ready. Logins (admin is staff; the others are tenants): {logins}")


def _queue_by_path(market: Market, path: str) -> Queue:
    for q in Queue.objects.filter(market=market):
        if q.path == path:
            return q
    # The market was created by hand: put the tenant in its first leaf.
    return next(q for q in Queue.objects.filter(market=market) if not q.children.exists())


DEMO_POOL_SIZE = 10  # VMs of each of paper 004's three types: the Cura page has pools to serve jobs


def seed_pools(market: Market) -> None:
    """Paper 004's VM types with ``DEMO_POOL_SIZE`` VMs each (``pools_setup_paper``), once: a
    market that has VM types already keeps them."""
    from marketplace.pools.models import VMInstanceType
    from marketplace.pools.services.pools import pools_setup_paper

    if not VMInstanceType.objects.filter(market=market).exists():
        pools_setup_paper(market=market, size=DEMO_POOL_SIZE)
