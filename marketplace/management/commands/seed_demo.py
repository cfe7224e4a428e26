"""Create the demo market: an administrator and tenants in a two-level hierarchy.

Idempotent: a second run changes nothing and prints the same credentials.
"""

from __future__ import annotations

import secrets
from decimal import Decimal
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from marketplace.models import Market, Queue
from marketplace.services.setup import market_create, tenant_create

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
DEMO_DEPOSIT = Decimal("1000000")


def credentials_file() -> Path:
    return settings.VAR_DIR / "demo-credentials.txt"


def demo_password() -> str:
    """One generated password for the demo logins, kept in var/ (never committed)."""
    path = credentials_file()
    if path.exists():
        return path.read_text().split("password:", 1)[1].split()[0]
    password = secrets.token_urlsafe(9)
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"users: admin (staff), {', '.join(DEMO_TENANTS)} (tenants)\npassword: {password}\n")
    return password


class Command(BaseCommand):
    help = "Create the demo market, an administrator and demo tenants (idempotent)."

    def add_arguments(self, parser):  # type: ignore[no-untyped-def]
        parser.add_argument("--map-slots", type=int, default=40)
        parser.add_argument("--reduce-slots", type=int, default=20)

    @transaction.atomic
    def handle(self, *args, **opts):  # type: ignore[no-untyped-def]
        password = demo_password()
        market = Market.objects.order_by("id").first()
        if market is None:
            market = market_create(
                name="default", resources={"map": opts["map_slots"], "reduce": opts["reduce_slots"]}, hierarchy=DEMO_HIERARCHY
            )
        User = get_user_model()
        if not User.objects.filter(username="admin").exists():
            User.objects.create_superuser("admin", "admin@localhost", password)
        for name, path in DEMO_TENANTS.items():
            if User.objects.filter(username=name).exists():
                continue
            queue = _queue_by_path(market, path)
            tenant_create(market=market, username=name, password=password, queue=queue, deposit=DEMO_DEPOSIT)
        self.stdout.write(f"Demo market '{market.name}' ready. Log in as admin or {', '.join(DEMO_TENANTS)} with password: {password}")


def _queue_by_path(market: Market, path: str) -> Queue:
    for q in Queue.objects.filter(market=market):
        if q.path == path:
            return q
    # The market was created by hand: put the tenant in its first leaf.
    return next(q for q in Queue.objects.filter(market=market) if not q.children.exists())
