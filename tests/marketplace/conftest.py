"""Named actors for service, API and permission tests (healthchecks-style)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from rest_framework.test import APIClient

from marketplace.models import Market, Tenant
from tests.factories import MarketFactory, TenantFactory, leaf


@pytest.fixture
def market(db) -> Market:  # type: ignore[no-untyped-def]
    return MarketFactory(name="test")


@pytest.fixture
def alice(market: Market) -> Tenant:
    return TenantFactory(market=market, username="alice", deposit=Decimal("1000"))


@pytest.fixture
def bob(market: Market) -> Tenant:
    return TenantFactory(market=market, username="bob", deposit=Decimal("500"), queue=leaf(market, "root.orgb.research"))


@pytest.fixture
def alice_api(alice: Tenant) -> APIClient:
    client = APIClient()
    client.force_authenticate(alice.user)
    return client


@pytest.fixture
def bob_api(bob: Tenant) -> APIClient:
    client = APIClient()
    client.force_authenticate(bob.user)
    return client
