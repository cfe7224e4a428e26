"""factory_boy factories that build through the services (so invariants hold)."""

from __future__ import annotations

from decimal import Decimal

import factory

from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.setup import market_create, tenant_create

TWO_LEVEL = {
    "root": 1.0,
    "root.orga": 2.0,
    "root.orga.analytics": 1.0,
    "root.orga.etl": 1.0,
    "root.orgb": 1.0,
    "root.orgb.research": 1.0,
}


class MarketFactory(factory.Factory):
    class Meta:
        model = Market

    name = factory.Sequence(lambda n: f"market{n}")
    resources = factory.LazyFunction(lambda: {"map": 10, "reduce": 5})
    hierarchy = factory.LazyFunction(lambda: dict(TWO_LEVEL))

    @classmethod
    def _create(cls, model_class, *args, **kwargs):  # type: ignore[no-untyped-def]
        return market_create(**kwargs)


def leaf(market: Market, path: str) -> Queue:
    return next(q for q in Queue.objects.filter(market=market) if q.path == path)


class TenantFactory(factory.Factory):
    class Meta:
        model = Tenant

    market = factory.SubFactory(MarketFactory)
    username = factory.Sequence(lambda n: f"tenant{n}")
    password = "pw-for-tests-1"
    deposit = Decimal("1000")
    queue = factory.LazyAttribute(lambda o: leaf(o.market, "root.orga.analytics"))

    @classmethod
    def _create(cls, model_class, *args, **kwargs):  # type: ignore[no-untyped-def]
        return tenant_create(**kwargs)
