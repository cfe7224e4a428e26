"""ERA demand predictors (paper 001, Sec. 3.2): curves against a loop, the LP against a dense oracle,
and the day/night case where the LP predictor beats spreading."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.optimize import linprog

from scheduler.era.mechanisms import BasicEcon
from scheduler.era.predictors import ConstantPrice, DemandCurves, LPPredictor, PastRequest, SpreadingPredictor, solve_allocation_lp


def naive_inverse(entries: list[tuple[int, float, float]], t: int, q: float, floor: float) -> float:
    """Highest p with demand_t(p) > q, by sorting slot t's entries by value and walking them."""
    cum = 0.0
    for _, v, qty in sorted((e for e in entries if e[0] == t and e[2] > 0), key=lambda e: -e[1]):
        cum += qty
        if cum > q + 1e-9:
            return max(v, floor)
    return floor


@pytest.mark.parametrize("seed", range(8))
def test_demand_curves_equal_a_walk_down_the_sorted_entries(seed: int) -> None:
    rng = np.random.default_rng(seed)
    horizon = int(rng.integers(1, 12))
    entries = [(int(rng.integers(0, horizon)), float(rng.integers(0, 6)), float(rng.integers(0, 5))) for _ in range(rng.integers(0, 25))]
    floor = float(rng.choice([0.0, 0.5]))
    curves = DemandCurves(horizon, [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries], floor=floor)
    ts = rng.integers(0, horizon, 50)
    qs = rng.integers(-1, 20, 50).astype(float)
    got = curves.inverse_demand(ts, qs)
    want = [naive_inverse(entries, int(t), float(q), floor) for t, q in zip(ts, qs, strict=True)]
    np.testing.assert_allclose(got, want)
    assert float(curves.inverse_demand(int(ts[0]), float(qs[0]))) == want[0]  # scalars too


@pytest.mark.parametrize("seed", range(8))
def test_at_now_counts_only_the_demand_arriving_from_now_on(seed: int) -> None:
    # paper 001, Sec. 3.2: "the demand that arrives from the current time till t"
    rng = np.random.default_rng(seed)
    horizon = int(rng.integers(2, 12))
    entries = []
    for _ in range(int(rng.integers(0, 25))):
        slot = int(rng.integers(0, horizon))
        entries.append((slot, float(rng.integers(0, 6)), float(rng.integers(0, 5)), int(rng.integers(0, slot + 1))))
    curves = DemandCurves(horizon, [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries],
                          arrivals=[e[3] for e in entries], floor=0.5)
    old = DemandCurves(horizon, [e[0] for e in entries], [e[1] for e in entries], [e[2] for e in entries],
                       arrivals=[e[3] for e in entries], floor=0.5, rule="covering")
    for now in range(horizon):
        ts = rng.integers(now, horizon, 20)
        qs = rng.integers(-1, 12, 20).astype(float)
        kept = [(s, v, q) for s, v, q, a in entries if a >= now]
        want = [naive_inverse(kept, int(t), float(q), 0.5) for t, q in zip(ts, qs, strict=True)]
        np.testing.assert_allclose(curves.at(now).inverse_demand(ts, qs), want)
        every = [naive_inverse([e[:3] for e in entries], int(t), float(q), 0.5) for t, q in zip(ts, qs, strict=True)]
        np.testing.assert_allclose(old.at(now).inverse_demand(ts, qs), every)  # the old rule ignores now


def test_at_now_on_a_cycle_counts_requests_arriving_between_now_and_the_slot() -> None:
    # a 4-slot cycle: a request arriving at slot 1 with demand in slot 3 (worth 7), one arriving at 3 for slot 3 (worth 5)
    curves = DemandCurves(4, [3, 3], [7.0, 5.0], [2.0, 2.0], arrivals=[1, 3], period=4, floor=0.0)
    assert float(curves.at(0).inverse_demand(3, 3.0)) == 5.0  # both arrive in [0, 3]: 4 units
    assert float(curves.at(2).inverse_demand(3, 1.0)) == 5.0  # only the one arriving at 3
    assert float(curves.at(2).inverse_demand(3, 3.0)) == 0.0
    assert float(curves.at(2).inverse_demand(7, 3.0)) == 5.0  # next cycle's slot 3: all of it arrives after now
    assert float(curves.at(6).inverse_demand(7, 1.0)) == 5.0  # slot 6 is slot 2 of the cycle
    with pytest.raises(ValueError, match="rule"):
        DemandCurves(4, [3], [1.0], [1.0], rule="sometimes")


def test_a_periodic_curve_repeats_and_slots_past_an_aperiodic_horizon_cost_the_floor() -> None:
    curves = DemandCurves(2, [0, 1], [7.0, 3.0], [5.0, 5.0], floor=1.0, period=2)
    np.testing.assert_array_equal(curves.inverse_demand(np.array([0, 1, 2, 3, 10]), 0), [7.0, 3.0, 7.0, 3.0, 7.0])
    flat = DemandCurves(2, [0, 1], [7.0, 3.0], [5.0, 5.0], floor=1.0)
    np.testing.assert_array_equal(flat.inverse_demand(np.array([1, 2, 5]), 0), [3.0, 1.0, 1.0])


def test_spreading_puts_w_t_over_the_window_in_each_slot_at_the_value_per_unit_slot() -> None:
    # 10 cores for 5 slots over a 50-slot window: 1 core in each slot, worth 100 / 50 = 2 per unit-slot
    pred = SpreadingPredictor([PastRequest(10, 5, 0, 50, 100.0)], 60)
    np.testing.assert_allclose(pred.totals[:50], 1.0)
    assert pred.totals[50:].sum() == 0
    assert float(pred.inverse_demand(7, 0.5)) == 2.0 and float(pred.inverse_demand(7, 1.0)) == 0.0


def dense_welfare(requests: list[PastRequest], capacity: float, horizon: int) -> float:
    """The same LP with a dense job x slot matrix (bounds 0 outside each window): the oracle."""
    n = len(requests)
    nx = n * horizon
    c = np.concatenate([np.zeros(nx), -np.array([r.value for r in requests])])
    a_eq = np.zeros((n, nx + n))
    a_ub = np.zeros((horizon, nx + n))
    bounds = []
    for j, r in enumerate(requests):
        for t in range(horizon):
            a_eq[j, j * horizon + t] = 1.0
            a_ub[t, j * horizon + t] = 1.0
            bounds.append((0.0, float(r.units) if r.arrival <= t < r.deadline else 0.0))
        a_eq[j, nx + j] = -r.units * r.duration
    bounds += [(0.0, 1.0)] * n
    res = linprog(c, A_ub=a_ub, b_ub=np.full(horizon, capacity), A_eq=a_eq, b_eq=np.zeros(n), bounds=bounds, method="highs")
    return float(-res.fun)


@pytest.mark.parametrize("seed", range(6))
def test_the_windowed_lp_reaches_the_dense_lp_optimum(seed: int) -> None:
    rng = np.random.default_rng(seed)
    horizon, capacity = 16, float(rng.integers(2, 8))
    reqs = []
    for _ in range(int(rng.integers(1, 15))):
        a = int(rng.integers(0, horizon - 1))
        d = int(rng.integers(a + 1, horizon + 1))
        reqs.append(PastRequest(int(rng.integers(1, 4)), int(rng.integers(1, d - a + 1)), a, d, float(rng.uniform(1, 50))))
    sol = solve_allocation_lp(reqs, capacity, horizon)
    assert sol.welfare == pytest.approx(dense_welfare(reqs, capacity, horizon), rel=1e-7, abs=1e-7)
    # the allocation is feasible: capacity per slot, W per slot, inside windows, y_j W_j T_j unit-slots
    per_slot = np.bincount(sol.slot, weights=sol.units, minlength=horizon)
    assert per_slot.max(initial=0) <= capacity + 1e-7
    for j, r in enumerate(reqs):
        mine = sol.job == j
        assert np.all((sol.slot[mine] >= r.arrival) & (sol.slot[mine] < r.deadline))
        assert np.all(sol.units[mine] <= r.units + 1e-7)
        assert sol.units[mine].sum() == pytest.approx(sol.accepted[j] * r.units * r.duration, abs=1e-6)


def day_night_history(copies: int = 1) -> list[PastRequest]:
    """Paper 001, Sec. 3.2: high-value jobs only by day (slot 0); medium and low
    ones by day or night (slots 0-1); each class asks for the whole capacity (10)."""
    out = []
    for _ in range(copies):
        out += [PastRequest(10, 1, 0, 1, 100.0), PastRequest(10, 1, 0, 2, 50.0), PastRequest(10, 1, 0, 2, 10.0)]
    return out


def test_day_night_the_lp_prices_the_night_at_the_medium_value_and_spreading_too_low() -> None:
    history = day_night_history()
    lp, spread = LPPredictor(history, 10.0, 2, period=2), SpreadingPredictor(history, 2, period=2)
    # the first unit of an empty night (q = C - 1 = 9): LP 5 (medium), spreading 1 (low)
    assert float(lp.inverse_demand(1, 9)) == 5.0
    assert float(spread.inverse_demand(1, 9)) == 1.0
    # tonight (slot 3): at the start of the day (slot 2), as the history's requests arrive, 10
    # low-value 1-unit jobs (1 per unit) ask first, then 10 medium ones (5)
    welfare = {}
    for name, pred in (("lp", lp), ("spread", spread)):
        econ = BasicEcon(10, 4, pred)
        won = [econ.reserve(1, 1, 3, 4, v, now=2).accepted for v in [1.0] * 10 + [5.0] * 10]
        welfare[name] = sum(v for v, ok in zip([1.0] * 10 + [5.0] * 10, won, strict=True) if ok)
    assert welfare["lp"] == 50.0  # only medium jobs: the night's best use
    assert welfare["spread"] < welfare["lp"]  # low jobs took night slots from medium ones


def test_constant_price_and_empty_history() -> None:
    assert float(ConstantPrice(2.5).inverse_demand(3, 7)) == 2.5
    np.testing.assert_array_equal(ConstantPrice(1.0).inverse_demand(np.arange(3)[:, None], np.arange(2)[None, :]), np.ones((3, 2)))
    empty = LPPredictor([], 5.0, 4, floor=0.25)
    assert float(empty.inverse_demand(2, 0)) == 0.25
    with pytest.raises(ValueError):
        PastRequest(1, 5, 0, 3, 1.0)
    with pytest.raises(ValueError):
        PastRequest(1, 1, 0, 3, math.nan)


def test_a_periodic_history_folds_onto_one_average_cycle() -> None:
    # the same request on day 0 and day 1 (period 4 slots): one cycle with the demand of one day
    days = [PastRequest(2, 1, 1, 2, 10.0), PastRequest(2, 1, 5, 6, 10.0)]
    pred = SpreadingPredictor(days, 8, period=4)
    np.testing.assert_allclose(pred.totals, [0.0, 2.0, 0.0, 0.0])
    assert float(pred.inverse_demand(9, 1.0)) == 5.0 and float(pred.inverse_demand(10, 0.0)) == 0.0
