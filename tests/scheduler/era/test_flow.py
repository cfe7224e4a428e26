"""The allocation LP solved as a flow (scheduler.era.flow, paper 001 Sec. 3.2) against HiGHS.

The oracle is ``solve_allocation_lp`` (scipy's HiGHS on the windowed LP), itself checked
against a dense LP in test_era_predictors. The optimum's welfare is unique, the allocation
need not be: the tests compare welfare and check the flow's allocation is feasible.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.era.predictors import LPPredictor, LPSolution, PastRequest, solve_allocation_flow, solve_allocation_lp


def assert_feasible(sol: LPSolution, reqs: list[PastRequest], capacity: float, horizon: int) -> None:
    """Capacity per slot, W per slot, inside windows, and y_j W_j T_j unit-slots per request."""
    per_slot = np.bincount(sol.slot, weights=sol.units, minlength=horizon)
    assert per_slot.max(initial=0) <= capacity + 1e-7
    assert np.all(sol.units > 0)
    assert np.all((sol.accepted >= 0) & (sol.accepted <= 1))
    for j, r in enumerate(reqs):
        mine = sol.job == j
        assert np.all((sol.slot[mine] >= r.arrival) & (sol.slot[mine] < r.deadline))
        assert np.all(sol.units[mine] <= r.units + 1e-7)
        assert sol.units[mine].sum() == pytest.approx(sol.accepted[j] * r.units * r.duration, abs=1e-6)
    welfare = sum(r.value * y for r, y in zip(reqs, sol.accepted, strict=True))
    assert sol.welfare == pytest.approx(welfare, rel=1e-9, abs=1e-9)


def assert_same_optimum(reqs: list[PastRequest], capacity: float, horizon: int) -> LPSolution:
    flow = solve_allocation_flow(reqs, capacity, horizon)
    assert_feasible(flow, reqs, capacity, horizon)
    assert flow.welfare == pytest.approx(solve_allocation_lp(reqs, capacity, horizon).welfare, rel=1e-7, abs=1e-7)
    return flow


def random_requests(rng: np.random.Generator, n: int, horizon: int, max_units: int, values: str) -> list[PastRequest]:
    out = []
    for _ in range(n):
        a = int(rng.integers(0, horizon))
        d = int(rng.integers(a + 1, min(horizon, a + 12) + 1))
        t = int(rng.integers(1, d - a + 1))
        w = int(rng.integers(1, max_units + 1))
        # "ties": few distinct totals, so many requests share a value per unit-slot
        v = float(rng.integers(1, 4)) * w * t if values == "ties" else float(rng.uniform(0.5, 50.0))
        out.append(PastRequest(w, t, a, d, v))
    return out


@pytest.mark.parametrize("values", ["uniform", "ties"])
@pytest.mark.parametrize("seed", range(12))
def test_the_flow_reaches_the_highs_optimum_on_random_histories(seed: int, values: str) -> None:
    rng = np.random.default_rng(seed)
    horizon = int(rng.integers(4, 40))
    capacity = float(rng.choice([1.0, 3.0, 7.0, 2.5]))  # 1: every W >= C; 2.5: fractional
    reqs = random_requests(rng, int(rng.integers(1, 60)), horizon, 5, values)
    assert_same_optimum(reqs, capacity, horizon)


@pytest.mark.parametrize("seed", range(3))
def test_long_shifting_chains_on_an_oversubscribed_timeline(seed: int) -> None:
    """Many short windows over a long horizon, about 3x oversubscribed: a late request reaches
    room only by moving units of several earlier ones along the timeline (and the pruning
    of dead slots is exercised by the many refusals)."""
    rng = np.random.default_rng(100 + seed)
    horizon, capacity = 120, 10.0
    reqs = []
    for _ in range(300):
        a = int(rng.integers(0, horizon - 8))
        reqs.append(PastRequest(int(rng.integers(1, 6)), int(rng.integers(1, 5)), a, a + 8, float(rng.uniform(1, 100))))
    flow = assert_same_optimum(reqs, capacity, horizon)
    assert 0 < flow.accepted.sum() < len(reqs)  # the test needs refusals


def test_a_later_request_moves_an_earlier_one_to_fit() -> None:
    """Hand-computed: A (worth 10 per unit-slot, slot 0 or 1) is placed first, in slot 0;
    B (worth 5, slot 0 only) fits only if A moves to slot 1. Optimum: both, welfare 30 + 15."""
    a = PastRequest(3, 1, 0, 2, 30.0)
    b = PastRequest(3, 1, 0, 1, 15.0)
    flow = assert_same_optimum([a, b], 3.0, 2)
    np.testing.assert_allclose(flow.accepted, [1.0, 1.0])
    assert flow.welfare == 45.0
    assert dict(zip(flow.job.tolist(), flow.slot.tolist(), strict=True)) == {0: 1, 1: 0}


def test_the_value_per_unit_slot_decides_not_the_total_value() -> None:
    """Hand-computed: one slot of 4 units. X: 4 units worth 8 (2 per unit-slot); Y: 1 unit
    worth 3 (3 per unit-slot). The LP serves Y whole and 3/4 of X: 3 + 6 = 9."""
    flow = assert_same_optimum([PastRequest(4, 1, 0, 1, 8.0), PastRequest(1, 1, 0, 1, 3.0)], 4.0, 1)
    np.testing.assert_allclose(flow.accepted, [0.75, 1.0])
    assert flow.welfare == pytest.approx(9.0)


def test_degenerate_histories() -> None:
    empty = solve_allocation_flow([], 5.0, 3)
    assert empty.welfare == 0.0 and empty.job.size == 0
    # identical requests, all ties, the window exactly the duration
    same = [PastRequest(2, 3, 1, 4, 12.0)] * 5
    flow = assert_same_optimum(same, 5.0, 4)
    assert flow.accepted.sum() == pytest.approx(2.5)  # 5 units per slot, 2 per request
    # W above the capacity: at most C per slot
    assert_same_optimum([PastRequest(9, 2, 0, 3, 5.0), PastRequest(1, 1, 2, 3, 1.0)], 4.0, 3)
    with pytest.raises(ValueError):
        solve_allocation_flow([PastRequest(1, 1, 0, 5, 1.0)], 2.0, 4)
    with pytest.raises(ValueError):
        solve_allocation_flow([PastRequest(1, 1, 0, 1, 1.0)], 0.0, 4)
    with pytest.raises(ValueError):
        LPPredictor([PastRequest(1, 1, 0, 1, 1.0)], 1.0, 1, solver="simplex")


request = st.builds(
    lambda a, length, frac_t, w, v: PastRequest(w, max(1, round(frac_t * length)), a, a + length, v),
    st.integers(0, 10), st.integers(1, 6), st.floats(0.0, 1.0), st.integers(1, 4),
    st.sampled_from([1.0, 2.0, 6.0, 12.0, 0.5, 7.25]),  # few values: ties between values per unit-slot
)


@settings(max_examples=60, deadline=None)
@given(st.lists(request, min_size=1, max_size=25), st.sampled_from([1.0, 2.0, 3.0, 4.5, 8.0]))
def test_property_the_flow_optimum_equals_the_lp_optimum(reqs: list[PastRequest], capacity: float) -> None:
    assert_same_optimum(reqs, capacity, 16)


@pytest.mark.parametrize("solver", ["flow", "highs"])
def test_both_solvers_give_the_same_predictor_on_an_unambiguous_history(solver: str) -> None:
    """Where the optimal allocation is unique the demand curves are equal whatever the solver:
    the day/night history (paper 001, Sec. 3.2) with each class asking for the whole capacity."""
    history = [PastRequest(10, 1, 0, 1, 100.0), PastRequest(10, 1, 0, 2, 50.0), PastRequest(10, 1, 0, 2, 10.0)]
    pred = LPPredictor(history, 10.0, 2, solver=solver)
    np.testing.assert_allclose(pred.totals, [10.0, 10.0])
    assert float(pred.inverse_demand(0, 9)) == 10.0 and float(pred.inverse_demand(1, 9)) == 5.0
    np.testing.assert_allclose(pred.solution.accepted, [1.0, 1.0, 0.0])
