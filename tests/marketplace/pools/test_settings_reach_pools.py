"""VM pools (paper 004): a pool or pool-manager change reaches Cura's next planning (docs/economy.md, "Settings
reach the next clearing").

Cura's "clearing" is Alg. 1's planning on the clock's tick (``pools.services.jobs.cura_advance``):
the driver stored between ticks is rebuilt on the new settings (or re-sized) at the next tick.
"""

from __future__ import annotations

from decimal import Decimal

from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from marketplace.ledger.services import account_deposit
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.models import PoolSettings, VMPool
from marketplace.pools.services.jobs import cura_job_submit
from marketplace.pools.services.pools import pool_resize, pools_setup_paper
from simulator.cura.live import CuraDriver


def _driver(market) -> CuraDriver:  # type: ignore[no-untyped-def]
    return CuraDriver.from_state(PoolSettings.objects.get(market=market).engine_state["driver"])


def test_pool_settings_and_sizes_reach_the_next_tick(market, alice):
    account_deposit(account=alice.account, amount=Decimal("1000000"), memo="the paper's costs are in the thousands")
    pools_setup_paper(market=market, size=20)
    cura_job_submit(tenant=alice, job_type=3, deadline_in_s=20000)  # a live job: every tick plans the pools
    staff = APIClient()
    staff.force_authenticate(get_user_model().objects.create_user("ops", password="pw-ops-123", is_staff=True))
    assert staff.patch("/api/pools/", {"framework_start_s": 25.0}, format="json").status_code == 200
    cluster_advance(market_id=market.pk, seconds=1.0)
    assert _driver(market).sched.framework_start == 25.0
    pool = VMPool.objects.order_by("id").first()
    pool_resize(pool=pool, size=7)
    cluster_advance(market_id=market.pk, seconds=1.0)
    assert _driver(market).sched.pool_sizes[0] == 7
