"""Creating markets, queue hierarchies and tenants (used by seeding, tests and admin)."""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.db import transaction

from marketplace.ledger.models import Account
from marketplace.ledger.services import account_deposit
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.market import new_structure_version

DEFAULT_RESOURCES: Mapping[str, int] = {"map": 100, "reduce": 50}  # Abacus on Hadoop: map and reduce slots


@transaction.atomic
def market_create(
    *, name: str, resources: Mapping[str, int] = DEFAULT_RESOURCES, hierarchy: Mapping[str, float] | None = None, **params: object
) -> Market:
    """A market with resource types (in stage order) and a queue tree.

    Args:
        hierarchy: queue path -> weight, e.g. {"root.alpha": 2, "root.alpha.ml": 1};
            parents must come before children; default a root with one leaf "default".

    Raises:
        ValidationError: bad capacities, weights or paths.
    """
    market = Market.objects.create(name=name, **params)
    for stage, (rname, capacity) in enumerate(resources.items()):
        if not isinstance(capacity, int) or capacity <= 0:
            raise ValidationError({"capacity": f"{rname}: capacity must be a positive whole number."})
        ResourceType.objects.create(market=market, name=rname, capacity=capacity, stage=stage)
    queue_tree_create(market=market, hierarchy=hierarchy or {"root": 1.0, "root.default": 1.0})
    market.structure_version = new_structure_version()
    market.save(update_fields=["structure_version"])
    return market


def queue_tree_create(*, market: Market, hierarchy: Mapping[str, float]) -> dict[str, Queue]:
    """Create queues from dotted paths; returns path -> Queue."""
    made: dict[str, Queue] = {}
    for path, weight in hierarchy.items():
        parent_path, _, leaf = path.rpartition(".")
        if parent_path and parent_path not in made:
            raise ValidationError({"hierarchy": f"'{path}': its parent '{parent_path}' must be listed first."})
        if weight <= 0:
            raise ValidationError({"hierarchy": f"'{path}': the weight must be positive."})
        made[path] = Queue.objects.create(market=market, name=leaf, parent=made.get(parent_path), weight=weight)
    roots = [q for q in made.values() if q.parent_id is None]
    if len(roots) != 1:
        raise ValidationError({"hierarchy": "The queue tree needs exactly one root."})
    return made


@transaction.atomic
def tenant_create(
    *, market: Market, username: str, password: str | None, queue: Queue, deposit: Decimal = Decimal("0"), email: str = ""
) -> Tenant:
    """A login, a tenant in a leaf queue, an account and an opening deposit through the ledger."""
    if queue.children.exists():
        raise ValidationError({"queue": "Tenants go in leaf queues."})
    user = get_user_model().objects.create_user(username=username, password=password, email=email)
    tenant = Tenant.objects.create(user=user, market=market, name=username, default_queue=queue)
    account = Account.objects.create(tenant=tenant)
    if deposit > 0:
        account_deposit(account=account, amount=deposit, memo="opening deposit")
    return tenant
