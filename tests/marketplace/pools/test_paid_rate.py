"""VM pools priced from the market's level (docs/economy.md, section 2): a pool vCPU-second sells at
the price level a slot-second of the cluster does (it sold at 1/12 = 0.083, 12 times below the
level of 1.0), Cura's choices are the paper's, and what a Cura job pays per slot-second of its work
is shown and charged."""

from __future__ import annotations

from decimal import Decimal

import pytest

from marketplace.ledger.services import account_deposit
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.tenants import Tenant
from marketplace.market.prices import price_level
from marketplace.market.services.clock import cluster_advance
from marketplace.pools.models import CuraJob
from marketplace.pools.selectors import pool_rows, slot_rate
from marketplace.pools.services.jobs import cura_job_cancel, cura_job_submit
from marketplace.pools.services.pools import pool_settings_update, pools_price_at_level, pools_setup_paper


@pytest.fixture
def rich(alice: Tenant) -> Tenant:
    account_deposit(account=alice.account, amount=Decimal("10000000"), memo="a day of pools at the level")
    return alice


def test_the_paper_s_pools_sell_a_slot_second_at_the_market_s_level(market: Market) -> None:
    types = pools_setup_paper(market=market, size=10)
    level = price_level(market=market)
    assert [slot_rate(t) for t in types] == pytest.approx([level] * 3)  # was 1/12 each: 12x below a level of 1
    assert [float(t.price) for t in types] == pytest.approx([2 * level, 4 * level, 8 * level])  # the paper's ratios kept
    assert all(r["level_ratio"] == pytest.approx(1.0) for r in pool_rows(market=market))


def test_re_pricing_follows_the_level_and_is_audited(market: Market, settings) -> None:
    pools_setup_paper(market=market, size=10, at_level=False)
    settings.MARKET_REFERENCE_RATE = 0.5  # the level before any sale
    types = pools_price_at_level(market=market, reason="the level moved")
    assert [slot_rate(t) for t in types] == pytest.approx([0.5] * 3)
    assert ConfigChange.objects.filter(field__endswith=".price", reason="the level moved").count() == 3


def test_cura_chooses_as_with_the_paper_s_prices_and_charges_the_level(market: Market, rich: Tenant) -> None:
    # given the same job on the paper's prices and on the level's
    pools_setup_paper(market=market, size=20, at_level=False)
    pool_settings_update(market=market, beta=1e9)
    paper = cura_job_submit(tenant=rich, job_type=1, deadline_in_s=900.0)
    cura_job_cancel(job=paper)  # it had not started: the pools are as before
    factor = price_level(market=market) * 12  # the paper prices a vCPU-second at 1/12
    pools_price_at_level(market=market)
    job = cura_job_submit(tenant=rich, job_type=1, deadline_in_s=900.0)
    # then Cura picks the same configuration (one factor on every price), and its cost is the level's
    assert (job.vm_type.name, job.vms, job.start_s) == (paper.vm_type.name, paper.vms, paper.start_s)
    assert float(job.cost) == pytest.approx(float(paper.cost) * factor, rel=1e-6)
    # and what it shows before the run is what it pays per slot-second of its work after it
    shown = job.paid_rate
    assert shown == pytest.approx(price_level(market=market))
    cluster_advance(market_id=market.pk, until=job.deadline_s + 1)
    job.refresh_from_db()
    assert job.status == CuraJob.Status.DONE and job.charged > 0
    ran = job.vms * job.vm_type.vcpus * (job.finished_s - job.start_s)
    assert float(job.charged) / ran == pytest.approx(job.paid_rate)
    assert job.paid_rate == pytest.approx(shown, rel=1e-3)  # the run took its planned time (runtime_scale 1)


def test_the_api_and_the_page_show_the_paid_rate_and_the_level(market: Market, rich: Tenant, alice_api, client) -> None:
    pools_setup_paper(market=market, size=20)
    created = alice_api.post("/api/cura/jobs/", {"job_type": 2, "deadline_in_s": 1200}, format="json")
    assert created.status_code == 201, created.data
    assert created.data["paid_rate"] == pytest.approx(price_level(market=market))
    pools = alice_api.get("/api/pools/").data
    assert pools["price_level"] == pytest.approx(1.0) and all(p["level_ratio"] == pytest.approx(1.0) for p in pools["pools"])
    client.force_login(rich.user)
    html = client.get("/cura/jobs/").content.decode()
    assert 'id="pool-level"' in html and "Paid per slot-second" in html
