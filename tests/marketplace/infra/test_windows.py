"""Window and history sums with their settled part from the cache equal the sums over every row.

``infra.windows`` cuts the market's history at multiples of a bucket width and keeps the sums of
the buckets that can no longer change. The oracle is the plain per-row sum. Random histories put
rows on bucket boundaries and on the window's start, the clock moves on between reads (so later
reads mix cached buckets, a cached total, and rows written since), and each read is compared."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
from django.db.models import Count, Sum

from marketplace.infra.windows import Buckets, history_sums, window_sums
from marketplace.market.models.allocation import SpotSettlement
from marketplace.market.models.jobs import Job
from marketplace.market.models.queues import ResourceType
from marketplace.market.prices import settlement_sums
from tests.factories import MarketFactory, TenantFactory

WIDTH, SETTLED = 100.0, 250.0


def _oracle(rows: list[tuple[float, int, float, float]], start: float) -> dict[tuple[int], list[float]]:
    out: dict[tuple[int], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for t, tenant, c, w in rows:
        if t >= start:
            s = out[(tenant,)]
            s[0] += c
            s[1] += w
            s[2] += 1
    return dict(out)


def _times(rng: np.random.Generator, lo: float, hi: float, n: int) -> list[float]:
    """Random times in [lo, hi), a third of them exactly on a bucket boundary."""
    out = []
    for _ in range(n):
        t = float(rng.uniform(lo, hi))
        out.append(float(np.floor(t / WIDTH) * WIDTH) if rng.random() < 0.33 else t)
    return out


@pytest.mark.parametrize("seed", range(4))
def test_window_sums_equal_the_sum_of_every_row_as_the_clock_moves(db, seed: int) -> None:
    rng = np.random.default_rng(seed)
    market = MarketFactory(name=f"win{seed}")
    tenants = [TenantFactory(market=market, username=f"w{seed}t{k}") for k in range(3)]
    rt = ResourceType.objects.get(market=market, name="map")
    written: list[tuple[float, int, float, float]] = []
    now, window = 0.0, 1000.0
    buckets = Buckets(key=f"test:{market.pk}:{seed}", width=WIDTH, settled=SETTLED)
    for _ in range(6):
        step = float(rng.choice([30.0, 100.0, 370.0, 900.0]))
        rows = []
        for t in _times(rng, now, now + step, int(rng.integers(0, 40))):  # written at the clock's time or later
            tenant = tenants[int(rng.integers(len(tenants)))].pk
            c, w = float(rng.uniform(0, 10)), float(rng.uniform(0, 100))
            rows.append(SpotSettlement(market=market, resource_type=rt, tenant_id=tenant, sim_time=t, charged=c, slot_seconds=w,
                                       utilisation=0.5))
            written.append((t, tenant, c, w))
        SpotSettlement.objects.bulk_create(rows)
        now += step
        for start in (now - window, float(np.floor((now - window) / WIDTH) * WIDTH)):  # inside a bucket and on its edge
            for _read in range(2):  # the second read comes from the cache
                got = window_sums(rows=SpotSettlement.objects.filter(market=market), time_field="sim_time", group=("tenant_id",),
                                  sums={"c": Sum("charged"), "w": Sum("slot_seconds"), "n": Count("id")}, start=start, now=now,
                                  buckets=buckets)
                want = _oracle(written, start)
                assert got.keys() == want.keys()
                for g, values in want.items():
                    assert got[g] == pytest.approx(values, rel=1e-9, abs=1e-9)
        total = history_sums(rows=SpotSettlement.objects.filter(market=market), time_field="sim_time", group=("tenant_id",),
                             sums={"n": Count("id")}, now=now, buckets=buckets)
        assert {g: v[0] for g, v in total.items()} == {g: v[2] for g, v in _oracle(written, -1.0).items()}


def test_the_settlement_sums_read_twice_at_a_late_clock_equal_every_row(db) -> None:
    """``market.prices.settlement_sums`` on a market two days old (settled buckets in the window and
    before it): the cached read equals the first and the per-row sums."""
    rng = np.random.default_rng(7)
    market = MarketFactory(name="late")
    tenant = TenantFactory(market=market, username="late-t")
    rt = ResourceType.objects.get(market=market, name="map")
    SpotSettlement.objects.bulk_create([
        SpotSettlement(market=market, resource_type=rt, tenant=tenant, sim_time=float(t), charged=float(rng.uniform(0, 5)),
                       slot_seconds=float(rng.uniform(1, 50)), utilisation=float(rng.choice([0.2, 0.9, 0.95, 1.3])))
        for t in rng.uniform(0, 2 * 86400, 400)])
    market.sim_time = 2 * 86400.0
    market.save(update_fields=["sim_time"])
    first, second = settlement_sums(market=market), settlement_sums(market=market)
    assert sorted(first, key=repr) == sorted(second, key=repr)
    recent = SpotSettlement.objects.filter(market=market, sim_time__gte=market.sim_time - 86400.0)
    assert sum(r.rows for r in first) == recent.count()
    contended = recent.filter(utilisation__gte=0.9).values_list("charged", flat=True)
    assert sum(r.charged for r in first if r.contended) == pytest.approx(sum(contended))


def test_job_counts_count_the_departed_jobs_through_the_cache(db) -> None:
    from marketplace.auction.services import WorkItem, bid_submit, job_cancel
    from marketplace.market import selectors

    market = MarketFactory(name="counts")
    tenant = TenantFactory(market=market, username="counts-t")
    jobs = [bid_submit(tenant=tenant, budget="10", work=[WorkItem("map", 1, 10.0)]) for _ in range(4)]
    for k, job in enumerate(jobs[:3]):
        job_cancel(job=job)
        Job.objects.filter(pk=job.pk).update(sim_finish_time=1000.0 * k)  # departed long ago and just now
    market.sim_time = 10_000.0
    market.save(update_fields=["sim_time"])
    for _read in range(2):
        counts = selectors.job_counts(market=market)
        assert counts == {s: Job.objects.filter(market=market, status=s).count() for s in Job.Status.values}
    assert counts["cancelled"] == 3 and counts["queued"] + counts["running"] == 1
