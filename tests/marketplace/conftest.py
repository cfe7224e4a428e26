"""Named actors for service, API and permission tests (healthchecks-style)."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
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


@pytest.fixture
def staff(db):  # type: ignore[no-untyped-def]
    """A staff member (no tenant); files that need a client or another name define their own."""
    return get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True)
