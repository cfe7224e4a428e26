"""ERA's spot curve, the price level and the reference rates from sums the database computes equal
the same rules over every settlement.

``reservations.adapters.spot_curve`` asks PostgreSQL (or SQLite) for each tenant's charges and
slot-seconds per level bin instead of reading every settlement of the window; the oracle below is
the per-settlement computation it replaced (``SpotCurve.fit`` with one voter per settlement and the
reference rate from the settlements in contention). Random windows with bin edges, levels above
1, unnamed tenants and settlements of no slot-seconds must give the same curve."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from marketplace.market.models.allocation import SpotSettlement
from marketplace.market.models.market import Market
from marketplace.market.models.queues import ResourceType
from marketplace.market.prices import contention_level, price_level, recent_settlements, reference_of, reference_rates
from marketplace.reservations.adapters import spot_curve
from scheduler.era.spot import SpotCurve
from tests.factories import MarketFactory, TenantFactory


def _per_settlement(market: Market, rt: ResourceType) -> SpotCurve | None:
    rows = list(recent_settlements(market=market).filter(resource_type=rt).values_list("utilisation", "charged", "slot_seconds",
                                                                                         "tenant_id"))
    reserve = float(rt.reserve_price)
    if not rows:
        return SpotCurve.flat(reserve) if reserve > 0 else None
    u, c, w = (np.array(col, dtype=np.float64) for col in list(zip(*rows, strict=True))[:3])
    voters = np.array([t if t is not None else -1 for *_, t in rows], dtype=np.int64)
    prior = reference_of([(t, cc, ww) for uu, cc, ww, t in rows if uu >= contention_level()], floor=reserve)
    curve = SpotCurve.fit(u, c, w, voters=voters, prior=prior)
    return curve.floored(reserve) if curve is not None else None


@pytest.mark.parametrize("seed", range(6))
def test_the_database_sums_give_the_curve_of_every_settlement(db, seed: int) -> None:
    rng = np.random.default_rng(seed)
    market = MarketFactory(name=f"sums{seed}", resources={"map": 40, "reduce": 20})
    tenants = [TenantFactory(market=market, username=f"s{seed}t{k}") for k in range(int(rng.integers(1, 6)))]
    rt = ResourceType.objects.get(market=market, name="map")
    rt.reserve_price = Decimal(str([0, 0.05, 2.0][seed % 3]))  # none, below the rates, above them
    rt.save(update_fields=["reserve_price"])
    edges = [0.0, 0.1, 0.3, 0.9, 0.95, 1.0, 1.2]  # bin edges, the contention level, above capacity
    rows = []
    for _ in range(int(rng.integers(5, 120))):
        u = float(rng.choice(edges)) if rng.random() < 0.4 else float(rng.random())
        w = 0.0 if rng.random() < 0.1 else float(rng.uniform(1, 5000))
        owner = None if rng.random() < 0.1 else tenants[int(rng.integers(len(tenants)))]
        rows.append(SpotSettlement(market=market, resource_type=rt, tenant=owner, sim_time=float(rng.uniform(0, 100)),
                                   charged=float(w * rng.lognormal(0, 0.5)), slot_seconds=w, utilisation=u))
    SpotSettlement.objects.bulk_create(rows)
    # the price level and the reference rates from the database's per-tenant sums equal those from every row
    raw = list(recent_settlements(market=market).filter(utilisation__gte=contention_level())
               .values_list("resource_type_id", "tenant_id", "charged", "slot_seconds"))
    types = list(ResourceType.objects.filter(market=market))
    assert price_level(market=market) == pytest.approx(price_level(market=market, contended=raw), rel=1e-12)
    assert reference_rates(market=market, types=types) == pytest.approx(reference_rates(market=market, types=types, contended=raw),
                                                                         rel=1e-12)
    want, got = _per_settlement(market, rt), spot_curve(market=market, resource_type=rt)
    assert (want is None) == (got is None)
    if want is not None and got is not None:
        np.testing.assert_allclose(got.levels, want.levels, rtol=0, atol=1e-12)
        np.testing.assert_allclose(got.rates, want.rates, rtol=1e-9)
        np.testing.assert_allclose(got.slot_seconds, want.slot_seconds, rtol=1e-9)


def test_an_empty_window_is_the_reserve_price_or_nothing(db) -> None:
    market = MarketFactory(name="empty", resources={"map": 40, "reduce": 20})
    rt = ResourceType.objects.get(market=market, name="map")
    assert spot_curve(market=market, resource_type=rt) is None
    rt.reserve_price = Decimal("0.05")
    rt.save(update_fields=["reserve_price"])
    flat = spot_curve(market=market, resource_type=rt)
    assert flat is not None and list(flat.rates) == [0.05]
