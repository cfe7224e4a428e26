"""A waiting Cura job whose deadline can no longer be met is missed and its hold released at that
instant, on the clock alone (the finding: one sat 3,721 s past its deadline holding 6,568.67 until
the next Cura submission made the scheduler look again)."""

from __future__ import annotations

import contextlib
from decimal import Decimal

from django.core.exceptions import ValidationError

from marketplace.ledger.services import account_deposit, ledger_reconcile
from marketplace.market.models.market import Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.models import CuraJob
from marketplace.pools.services.jobs import cura_job_submit
from marketplace.pools.services.pools import pool_settings_update, pools_setup_paper


def test_no_waiting_job_holds_money_past_its_deadline_without_a_new_submission(market: Market, alice: Tenant) -> None:
    # given a busy pool set with many jobs waiting for a window, and no submission after them
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="the paper's costs are in the thousands")
    pools_setup_paper(market=market, size=20)
    pool_settings_update(market=market, beta=1e9)
    for k in range(40):
        with contextlib.suppress(ValidationError):  # no configuration fits this one: refused at submission, nothing held
            cura_job_submit(tenant=alice, job_type=(k % 4) + 1, deadline_in_s=700 + 50 * k)
    assert CuraJob.objects.filter(status=CuraJob.Status.WAITING).count() >= 10
    # when only the clock moves
    for t in range(200, 5001, 200):
        cluster_advance(market_id=market.pk, until=float(t))
        # then no job still waits (holding its money) past its deadline
        late = CuraJob.objects.filter(status=CuraJob.Status.WAITING, deadline_s__lt=t)
        assert not late.exists(), [(j.pk, j.deadline_s, j.held) for j in late]
    # and every missed job's hold came back; the account reconciles
    assert all(j.held == 0 and j.charged == 0 for j in CuraJob.objects.filter(status=CuraJob.Status.MISSED))
    alice.account.refresh_from_db()
    assert ledger_reconcile(account=alice.account) == []
