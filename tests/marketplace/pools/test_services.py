"""VM pools services (paper 004): staff edits audited and validated; Cura jobs get the scheduler's configuration."""

from __future__ import annotations

from decimal import Decimal

import pytest
from django.core.exceptions import ValidationError

from marketplace.ledger.services import account_deposit
from marketplace.market.models.market import ConfigChange, Market
from marketplace.market.models.tenants import Tenant
from marketplace.pools.models import CuraJob, PoolReconfiguration, VMInstanceType
from marketplace.pools.services.jobs import cura_job_submit
from marketplace.pools.services.pools import pool_resize, pool_settings_of, pool_settings_update, pools_setup_paper, vm_type_save


@pytest.fixture
def pools(market: Market, alice: Tenant) -> list[VMInstanceType]:
    account_deposit(account=alice.account, amount=Decimal("100000"), memo="the paper's costs are in the thousands")
    return pools_setup_paper(market=market, at_level=False)  # the paper's prices: its costs


def test_paper_pools_are_created_and_audited(market: Market, pools: list[VMInstanceType]) -> None:
    assert [(t.name, t.vcpus, t.pool.size) for t in pools] == [("VM-1", 2, 40), ("VM-2", 4, 40), ("VM-3", 8, 40)]
    assert ConfigChange.objects.filter(market=market, field__startswith="pool[").count() == 3


def test_vm_type_validation_is_field_level_and_writes_nothing(market: Market, pools: list[VMInstanceType]) -> None:
    before = ConfigChange.objects.count()
    with pytest.raises(ValidationError) as info:
        vm_type_save(market=market, name="VM-1", vcpus=0, memory_gb=-1.0, price="free")
    assert set(info.value.message_dict) == {"name", "vcpus", "memory_gb", "price"}
    assert ConfigChange.objects.count() == before and VMInstanceType.objects.count() == 3


def test_changing_a_vm_type_audits_each_field(market: Market, pools: list[VMInstanceType]) -> None:
    vm_type_save(market=market, vm_type=pools[0], name="VM-1", vcpus=2, memory_gb=3.0, price=Decimal("0.2"), reason="new prices")
    fields = set(ConfigChange.objects.filter(reason="new prices").values_list("field", flat=True))
    assert fields == {"vm_type[VM-1].memory_gb", "vm_type[VM-1].price"}


def test_pool_resize_and_settings_validation(market: Market, pools: list[VMInstanceType]) -> None:
    with pytest.raises(ValidationError) as info:
        pool_resize(pool=pools[0].pool, size=-1)
    assert "size" in info.value.message_dict
    pool_resize(pool=pools[0].pool, size=60, reason="more small VMs")
    assert ConfigChange.objects.get(reason="more small VMs").new_value == "60"
    with pytest.raises(ValidationError) as info:
        pool_settings_update(market=market, beta=-1.0, reconf_window_s=0.0)
    assert set(info.value.message_dict) == {"beta", "reconf_window_s"}
    assert pool_settings_of(market=market).beta == 1.0
    changed = pool_settings_update(market=market, beta=2.5)
    assert [c.field for c in changed] == ["pools.beta"]


def _set_time(market: Market, t: float) -> None:
    Market.objects.filter(pk=market.pk).update(sim_time=t)


def test_cura_jobs_follow_appendix_a(market: Market, alice: Tenant, pools: list[VMInstanceType]) -> None:
    # Table VI's first jobs at t = 0 (no framework start, as the tables' times): job 1 (type 4,
    # deadline 270) -> 10 VM-1; job 2 (type 4, 150) -> 20 VM-1; job 3 (type 2, 275) -> 20 VM-2.
    pool_settings_update(market=market, framework_start_s=0.0)
    j1 = cura_job_submit(tenant=alice, job_type=4, deadline_in_s=270)
    j2 = cura_job_submit(tenant=alice, job_type=4, deadline_in_s=150)
    j3 = cura_job_submit(tenant=alice, job_type=2, deadline_in_s=275)
    got = [(j.vm_type.name, j.vms, j.start_s) for j in (j1, j2, j3)]
    assert got == [("VM-1", 10, 0.0), ("VM-1", 20, 0.0), ("VM-2", 20, 0.0)]
    assert j1.cost == Decimal("416.666667") and j1.end_s == pytest.approx(250.0)
    # VM-1 now has 10 free VMs until 131.57: a second type-4 job with deadline 150 must use another pool.
    j4 = cura_job_submit(tenant=alice, job_type=4, deadline_in_s=150)
    assert j4.vm_type.name != "VM-1" and j4.end_s <= 150.0


def test_a_deadline_no_configuration_meets_is_refused_with_the_earliest_one(
    market: Market, alice: Tenant, pools: list[VMInstanceType],
) -> None:
    with pytest.raises(ValidationError) as info:
        cura_job_submit(tenant=alice, job_type=3, deadline_in_s=100)
    (msg,) = info.value.message_dict["deadline_in_s"]
    assert "earliest deadline that works is 268 s" in msg  # 257.35 s on 40 VM-3 + 10 s framework start
    assert not CuraJob.objects.exists()


def test_busy_pools_refuse_with_the_earliest_deadline_on_the_bookings(market: Market, alice: Tenant, pools: list[VMInstanceType]) -> None:
    pool_settings_update(market=market, framework_start_s=0.0)
    for _ in range(3):
        for t in (1, 2, 3):
            cura_job_submit(tenant=alice, job_type=t, deadline_in_s=600 if t != 3 else 1100)
    with pytest.raises(ValidationError) as info:
        cura_job_submit(tenant=alice, job_type=3, deadline_in_s=300)
    assert "earliest deadline that works" in info.value.message_dict["deadline_in_s"][0]


def test_the_pool_manager_reconfigures_after_a_window(market: Market, alice: Tenant, pools: list[VMInstanceType]) -> None:
    # Type-4 jobs are optimal on VM-1; with VM-1 busy they land elsewhere at a higher cost.
    pool_settings_update(market=market, framework_start_s=0.0, reconf_window_s=100.0, beta=0.1, boot_s=30.0)
    for _ in range(6):
        cura_job_submit(tenant=alice, job_type=4, deadline_in_s=120)
    _set_time(market, 150.0)
    cura_job_submit(tenant=alice, job_type=4, deadline_in_s=400)
    rec = PoolReconfiguration.objects.get()
    assert rec.executed and rec.benefit > 0.1 * rec.cost
    assert rec.after["VM-1"] > rec.before["VM-1"]
    assert sum(rec.after[n] * c for n, c in (("VM-1", 2), ("VM-2", 4), ("VM-3", 8))) <= 40 * (2 + 4 + 8)
    assert VMInstanceType.objects.get(market=market, name="VM-1").pool.size == rec.after["VM-1"]


def test_a_core_budget_beyond_the_column_is_a_field_error(market: Market, pools: list[VMInstanceType]) -> None:
    # found by the schema fuzzer on PostgreSQL: 1.5e35 vCPUs overflowed the integer column (a 500)
    with pytest.raises(ValidationError) as info:
        pool_settings_update(market=market, core_budget=153328876742088052633355217482547200)
    assert "core_budget" in info.value.message_dict
    assert pool_settings_of(market=market).core_budget == 0
