"""ERA's demand joined to the spot auction (scheduler.era.spot; docs/economy.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import ConstantPrice
from scheduler.era.spot import SpotAnchored, SpotCurve, backlog_fill, occupancy, robust_bounds, robust_rate


def test_the_curve_pools_each_level_and_keeps_what_it_paid_per_slot_second():
    # two settlements at 20 % busy (rates 1 and 3), one at 80 % (rate 4)
    curve = SpotCurve.fit([0.21, 0.25, 0.85], [10.0, 30.0, 40.0], [10.0, 10.0, 10.0])
    assert curve is not None
    assert curve.levels.tolist() == pytest.approx([0.25, 0.85]) and curve.rates.tolist() == pytest.approx([2.0, 4.0])
    assert curve.mean_rate == pytest.approx(80.0 / 30.0)
    assert curve.rate(0.0) == pytest.approx(2.0) and curve.rate(1.0) == pytest.approx(4.0)  # flat beyond: no extrapolation
    assert curve.rate(0.55) == pytest.approx(3.0)  # linear between levels


def test_a_busier_level_never_costs_less_and_the_fit_keeps_the_mean():
    # the raw rates fall with the level (noise, or an odd mix of jobs): the fit pools them into one
    curve = SpotCurve.fit([0.1, 0.5, 0.9], [30.0, 20.0, 10.0], [10.0, 10.0, 10.0])
    assert curve is not None
    assert np.all(np.diff(curve.rates) >= 0) and curve.rates.tolist() == pytest.approx([2.0, 2.0, 2.0])
    assert curve.mean_rate == pytest.approx(60.0 / 30.0)


def test_nothing_sold_is_no_curve_and_bad_input_is_refused():
    assert SpotCurve.fit([], [], []) is None
    assert SpotCurve.fit([0.5], [0.0], [0.0]) is None
    with pytest.raises(ValueError):
        SpotCurve.fit([0.5], [-1.0], [2.0])
    with pytest.raises(ValueError):
        SpotCurve.fit([0.5, 0.2], [1.0], [2.0])


@given(st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1e4), st.floats(1e-3, 1e4)), min_size=1, max_size=40))
@settings(max_examples=200, deadline=None)
def test_the_fit_is_monotone_and_preserves_the_total_paid(rows):  # type: ignore[no-untyped-def]
    u, c, w = (np.array(col) for col in zip(*rows, strict=True))
    curve = SpotCurve.fit(u, c, w)
    assert curve is not None
    assert np.all(np.diff(curve.rates) >= -1e-9 * max(1.0, float(curve.rates.max())))
    assert float(np.dot(curve.rates, curve.slot_seconds)) == pytest.approx(float(c.sum()), rel=1e-6, abs=1e-6)


OCCUPANCY = {
    # finish times, units, origin, slot, horizon -> units held at each slot start
    "ends mid-slot: holds that slot": ([101.0], [10], 60.0, 60.0, 3, [10, 0, 0]),
    "ends on a boundary: frees it": ([120.0], [4], 60.0, 60.0, 3, [4, 0, 0]),
    "ended already": ([30.0], [5], 60.0, 60.0, 2, [0, 0]),
    "beyond the horizon": ([1e9, 150.0], [2, 3], 60.0, 60.0, 3, [5, 5, 2]),
    "nothing runs": ([], [], 0.0, 60.0, 2, [0, 0]),
}


@pytest.mark.parametrize(("finish", "units", "origin", "slot", "horizon", "held"), OCCUPANCY.values(), ids=OCCUPANCY.keys())
def test_running_tasks_hold_their_units_until_they_end(finish, units, origin, slot, horizon, held):  # type: ignore[no-untyped-def]
    assert occupancy(finish, units, origin=origin, slot=slot, horizon=horizon).tolist() == held


def test_queued_work_takes_the_free_units_from_now_on():
    fill = backlog_fill([2, 5, 5, 5], 60.0 * 9, slot=60.0)  # 9 unit-slots of queued work
    assert fill.tolist() == pytest.approx([2.0, 5.0, 2.0, 0.0])
    assert backlog_fill([3, 3], 0.0, slot=60.0).tolist() == [0.0, 0.0]


def test_a_unit_slot_costs_the_spot_rate_at_the_level_of_demand_it_would_reach():
    curve = SpotCurve.fit([0.05, 0.95], [10.0, 40.0], [10.0, 10.0])  # 1 per slot-second idle, 4 when full
    assert curve is not None
    anchored = SpotAnchored(ConstantPrice(0.01), curve, capacity=10, slot=60.0, fill=[8.0, 0.0])
    # slot 0: 8 units of queued auction work; one more unit sold makes it (1 + 8) / 10 busy
    assert anchored.inverse_demand(0, 9) == pytest.approx(60.0 * float(curve.rate(0.9)))
    assert anchored.inverse_demand(1, 9) == pytest.approx(60.0 * float(curve.rate(0.1)))  # an idle slot
    # the paper's predictor still prices above the spot anchor where its demand is dearer
    dear = SpotAnchored(ConstantPrice(1000.0), curve, capacity=10, slot=60.0, fill=[0.0])
    assert dear.inverse_demand(0, 5) == pytest.approx(1000.0)


@given(st.lists(st.floats(0, 10), min_size=1, max_size=5), st.integers(0, 4), st.integers(-1, 10), st.integers(-1, 10))
@settings(max_examples=200, deadline=None)
def test_the_anchored_inverse_demand_never_rises_with_the_quantity(fill, t, q1, q2):  # type: ignore[no-untyped-def]
    curve = SpotCurve.fit([0.1, 0.5, 0.9], [1.0, 5.0, 9.0], [1.0, 1.0, 1.0])
    assert curve is not None
    anchored = SpotAnchored(ConstantPrice(0.5), curve, capacity=10, slot=60.0, fill=fill)
    lo, hi = sorted((q1, q2))
    assert float(anchored.inverse_demand(t, lo)) >= float(anchored.inverse_demand(t, hi)) - 1e-12


def test_basic_econ_unchanged_prices_with_the_anchored_demand():
    # an idle market whose spot sales paid 1.5 per slot-second: W units for T slots cost W * T * slot * 1.5
    curve = SpotCurve.fit([0.1], [15.0], [10.0])
    assert curve is not None
    mech = BasicEcon(10, 60, SpotAnchored(ConstantPrice(0.01), curve, capacity=10, slot=60.0, fill=np.zeros(60)))
    offer = mech.quote(3, 5, 0, 30)
    assert offer is not None and offer.start == 0 and offer.price == pytest.approx(3 * 5 * 60.0 * 1.5)


def test_anchored_demand_seen_at_now_counts_only_demand_arriving_from_now_on():
    """Paper 001, Sec. 3.2: the demand for slot t is the requests arriving in [now, t]. The anchor
    forwards ``at(now)`` to its predictor, so Basic-Econ (which asks ``at``) prices with it."""
    from scheduler.era.predictors import DemandCurves

    # slot 5: a value-9 unit requested at slot 0, a value-2 unit requested at slot 4
    base = DemandCurves(8, [5, 5], [9.0, 2.0], [1.0, 1.0], arrivals=[0, 4])
    curve = SpotCurve.fit([0.05, 0.95], [0.0001, 0.0001], [10.0, 10.0])
    assert curve is not None
    anchored = SpotAnchored(base, curve, capacity=2, slot=1.0, fill=[0.0] * 8)
    # at slot 3 only the value-2 request is still to arrive: the top of slot 5's demand is 2, not 9
    assert float(anchored.at(3).inverse_demand(5, 0)) == pytest.approx(2.0)
    assert float(anchored.inverse_demand(5, 0)) == pytest.approx(9.0)  # every request (the covering rule)
    mech = BasicEcon(2, 8, anchored)  # one unit of two left: inverse demand at quantity 2 - 0 - 1 = 1
    assert mech.unit_prices(1, 5, 6, now=0)[0, 0] == pytest.approx(float(base.at(0).inverse_demand(5, 1)))
    assert mech.unit_prices(1, 5, 6, now=3)[0, 0] == pytest.approx(1e-5)  # nothing arriving is left: the spot floor
    assert float(base.at(3).inverse_demand(5, 1)) == 0.0
    plain = SpotAnchored(ConstantPrice(1.0), curve, capacity=2, slot=1.0, fill=[0.0])
    assert plain.at(3) is plain  # a predictor without ``at`` is seen the same at every slot


# -- the robust reference rate: one vote per tenant and one for the prior ----------------------------------------

_settlement = st.tuples(st.floats(0, 1e6), st.floats(1e-3, 1e6))  # (charged, slot-seconds)


@given(honest=st.lists(st.lists(_settlement, min_size=1, max_size=4), min_size=0, max_size=6),
       attacker=st.lists(_settlement, min_size=1, max_size=8), prior=st.floats(1e-3, 10.0))
@settings(max_examples=300, deadline=None)
def test_one_tenant_moves_the_reference_only_within_the_stated_bound(honest, attacker, prior):  # type: ignore[no-untyped-def]
    rows = [(c, w, k) for k, jobs in enumerate(honest) for c, w in jobs]
    c, w, who = (list(col) for col in zip(*rows, strict=True)) if rows else ([], [], [])
    others = [sum(cc for cc, _ in jobs) / sum(ww for _, ww in jobs) for jobs in honest] + [prior]
    low, high = robust_bounds(others)
    before = robust_rate(c, w, who, prior=prior)
    assert low <= before <= high  # the others alone lie inside too
    ac, aw = zip(*attacker, strict=True)
    after = robust_rate(c + list(ac), w + list(aw), who + ["attacker"] * len(attacker), prior=prior)
    assert low - 1e-9 * max(1.0, high if np.isfinite(high) else low) <= after
    assert after <= high * (1 + 1e-9) if np.isfinite(high) else True  # an unbounded high end only for the prior alone
    # however many jobs, the tenant is one vote: its settlements merged into one move nothing
    merged = robust_rate([*c, sum(ac)], [*w, sum(aw)], [*who, "attacker"], prior=prior)
    assert after == pytest.approx(merged)


def test_the_newcomer_and_the_attacker_cases():
    prior = 1.0
    # a new market: only the prior. Two cheap jobs of 540,000 slot-seconds each (a 20,000-credit budget)
    # under the old rule (charged / slot-seconds over everything) pulled 1.04 to 0.39; here at most halved
    newcomer = robust_rate([20_000.0, 20_000.0], [540_000.0, 540_000.0], ["new", "new"], prior=prior)
    assert newcomer == pytest.approx((prior + 20_000 / 540_000) / 2) and newcomer >= robust_bounds([prior])[0]
    # three honest tenants at about 0.0165: six bids at 0.0001 for 40 x 400 slot-seconds each move nothing past
    # the honest votes next to their median
    honest = ([0.0165 * 1e5, 0.016 * 1e5, 0.017 * 1e5], [1e5, 1e5, 1e5], ["a", "b", "c"])
    low, high = robust_bounds([0.0165, 0.016, 0.017, prior])
    cheap = robust_rate(honest[0] + [1e-4] * 6, honest[1] + [16_000.0] * 6, honest[2] + ["x"] * 6, prior=prior)
    assert low <= cheap <= high and cheap >= 0.016
    assert robust_rate(*honest, prior=prior) == pytest.approx((0.0165 + 0.017) / 2)


def test_the_robust_curve_gives_each_tenant_one_vote_per_level():
    # one tenant buys ten times the slot-seconds at a tenth of the price: the weighted fit follows it,
    # the robust fit takes the median of (tenant a, tenant b, prior)
    u, c, w, who = [0.95, 0.95], [1.0e4 * 0.1, 1.0e3 * 2.0], [1.0e4, 1.0e3], ["cheap", "honest"]
    weighted = SpotCurve.fit(u, c, w)
    robust = SpotCurve.fit(u, c, w, voters=who, prior=1.5)
    assert weighted is not None and robust is not None
    assert weighted.rate(0.95) == pytest.approx(3000.0 / 11000.0)
    assert robust.rate(0.95) == pytest.approx(1.5)  # median of 0.1, 2.0 and the prior 1.5
    with pytest.raises(ValueError):
        SpotCurve.fit(u, c, w, voters=["one"], prior=1.0)
