"""An account's entry count kept in the cache equals a count of its rows as entries are added."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
from django.contrib.auth import get_user_model

from marketplace.ledger.models import LedgerEntry
from marketplace.ledger.selectors import entry_count
from marketplace.ledger.services import account_adjust
from tests.factories import MarketFactory, TenantFactory


def test_the_kept_count_follows_every_new_entry_of_its_account_only(db) -> None:
    rng = np.random.default_rng(3)
    market = MarketFactory(name="counted")
    staff = get_user_model().objects.create_user("count-staff", password=None, is_staff=True)
    tenants = [TenantFactory(market=market, username=f"counted{k}") for k in range(2)]
    for _ in range(6):
        for _ in range(int(rng.integers(0, 5))):
            who = tenants[int(rng.integers(2))]
            account_adjust(tenant=who, direction="credit", amount=Decimal("1.5"), reason="a counted credit", user=staff)
        for t in tenants:
            for _read in range(2):  # the second from the cache
                assert entry_count(account_id=t.account.pk) == LedgerEntry.objects.filter(account=t.account).count()
