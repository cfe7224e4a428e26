"""ERA Basic-Econ (paper 001, Alg. 1) and its baselines: worked example, oracle, properties."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.era.mechanisms import BasicEcon, Decision, Greedy, Offer, OnDemand, check_request, window_sums
from scheduler.era.predictors import ConstantPrice, PastRequest, SpreadingPredictor


class LinearDemand:
    """demand_t(p) = a_t - b * p units, so the inverse demand is (a_t - q) / b (>= 0). Scalars only."""

    def __init__(self, a: list[float] | float, b: float = 1.0) -> None:
        self.a, self.b = a, b

    def inverse_demand(self, t: int, quantity: int) -> float:
        a = self.a if isinstance(self.a, float) else self.a[t]
        return max(a - quantity, 0.0) / self.b


def naive_prices(capacity: int, promised: np.ndarray, predictor: object, w: int, dur: int, a: int, d: int,
                 list_price: float | None = None, max_discount: float = 0.35) -> list[float]:
    """Algorithm 1 written as the paper writes it: loops over slots, units and starts (the
    predictor as seen at the arrival, paper 001 Sec. 3.2)."""
    at = getattr(predictor, "at", None)
    predictor = at(a) if callable(at) else predictor
    cost = {}
    for t in range(a, d):
        c = 0.0
        for i in range(1, w + 1):
            q = capacity - int(promised[t]) - i
            if q < 0:
                c = math.inf
                break
            p = float(predictor.inverse_demand(t, q))  # type: ignore[attr-defined]
            if list_price is not None:
                p = min(max(p, (1 - max_discount) * list_price), list_price)
            c += p
        cost[t] = c
    totals = []
    for start in range(a, d - dur + 1):
        s = 0.0
        for t in range(start, start + dur):
            s += cost[t]
        totals.append(s)
    return totals


# --- Algorithm 1 by hand ---------------------------------------------------------------------

def test_algorithm_1_on_a_linear_demand_curve_by_hand() -> None:
    # given: C = 10, demand_t(p) = 10 - p in every slot, 5 units promised in slot 0 and 3 in slot 3
    econ = BasicEcon(10, 5, LinearDemand(10.0), promised=np.array([5, 0, 0, 3, 0]))
    # unit prices of 2 units: slot 0: p(1) = 10 - 4 = 6, p(2) = 7 (cost 13); slots 1, 2, 4: 1 + 2 = 3;
    # slot 3: 4 + 5 = 9. Starts of T = 2: 0 -> 16, 1 -> 6, 2 -> 12, 3 -> 12
    np.testing.assert_allclose(econ.prices(2, 2, 0, 5), [16.0, 6.0, 12.0, 12.0])
    assert econ.quote(2, 2, 0, 5) == Offer(1, 6.0)
    # when: a tenant worth exactly the price asks; then: accepted at 6, slots 1-2 promised
    assert econ.reserve(2, 2, 0, 5, value=6.0) == Decision(True, 1, 6.0)
    np.testing.assert_array_equal(econ.promised, [5, 2, 2, 3, 0])
    # the same request again: slots 1, 2 now cost 3 + 4 = 7; starts 0 -> 20, 1 -> 14, 2 -> 16, 3 -> 12
    np.testing.assert_allclose(econ.prices(2, 2, 0, 5), [20.0, 14.0, 16.0, 12.0])
    assert econ.reserve(2, 2, 0, 5, value=11.99) == Decision(False)
    np.testing.assert_array_equal(econ.promised, [5, 2, 2, 3, 0])


def test_the_clamp_keeps_unit_prices_within_35_percent_of_the_list_price() -> None:
    # list price 5: unit prices clamped to [3.25, 5]. Slots (promised 5, 2, 2, 3, 0):
    # slot 0: 6, 7 -> 5 + 5 = 10; slots 1, 2: 3, 4 -> 3.25 + 4 = 7.25; slot 3: 4 + 5 = 9; slot 4: 1, 2 -> 6.5
    econ = BasicEcon(10, 5, LinearDemand(10.0), list_price=5.0, promised=np.array([5, 2, 2, 3, 0]))
    np.testing.assert_allclose(econ.prices(2, 2, 0, 5), [17.25, 14.5, 16.25, 15.5])
    assert econ.quote(2, 2, 0, 5) == Offer(1, 14.5)


def test_a_slot_without_room_is_infinite_and_a_full_window_has_no_quote() -> None:
    econ = BasicEcon(4, 3, ConstantPrice(1.0), promised=np.array([3, 0, 4]))
    np.testing.assert_array_equal(econ.prices(2, 1, 0, 3), [np.inf, 2.0, np.inf])
    assert econ.quote(2, 2, 0, 3) is None
    assert econ.reserve(2, 2, 0, 3, value=1e9) == Decision(False)


def test_the_late_penalty_moves_the_start_earlier_but_charges_the_plain_price() -> None:
    # slot 0 is dearer (promised 4 of 10) than slot 2, by a little
    plain = BasicEcon(10, 4, LinearDemand(10.0), promised=np.array([4, 4, 0, 0]))
    assert plain.quote(1, 1, 0, 4) == Offer(2, 1.0)
    penalised = BasicEcon(10, 4, LinearDemand(10.0), late_penalty=2.0, promised=np.array([1, 1, 0, 0]))
    # start 0 costs 2, start 2 costs 1 * e^4: the earlier start wins, charged 2
    assert penalised.quote(1, 1, 0, 4) == Offer(0, 2.0)


def test_a_huge_late_penalty_does_not_overflow() -> None:
    # exp(800 x 3) overflows a float; compared as logarithms the earliest start with room still wins
    with np.errstate(over="raise", invalid="raise"):
        huge = BasicEcon(10, 400, LinearDemand(10.0), late_penalty=800.0, promised=np.array([10] + [0] * 399))
        assert huge.quote(1, 1, 0, 400) == Offer(1, 1.0)  # slot 0 is full (infinite price): slot 1
        mild = BasicEcon(10, 4, LinearDemand(10.0), late_penalty=0.1, promised=np.array([4, 4, 0, 0]))
        assert mild.quote(1, 1, 0, 4) == Offer(2, 1.0)  # 1.4 at 0 against 1 x e^0.2 = 1.22 at 2: the penalty loses


@pytest.mark.parametrize(
    ("units", "duration", "arrival", "deadline", "message"),
    [
        (0, 1, 0, 5, "units"), (11, 1, 0, 5, "units"), (1, 0, 0, 5, "duration"),
        (1, 1, 3, 3, "empty"), (1, 1, 4, 2, "inverted"), (1, 1, -1, 3, "past"),
        (1, 4, 0, 3, "longer than the window"), (1, 1, 0, 50, "horizon"),
    ],
)
def test_bad_requests_are_refused_with_a_reason(units: int, duration: int, arrival: int, deadline: int, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_request(units, duration, arrival, deadline, 10, 20)
    with pytest.raises(ValueError):
        BasicEcon(10, 20, ConstantPrice(1.0)).quote(units, duration, arrival, deadline)


def test_window_sums_count_infinite_slots_apart() -> None:
    np.testing.assert_array_equal(window_sums(np.array([1.0, np.inf, 2.0, 3.0]), 2), [np.inf, np.inf, 5.0])


# --- oracle: the vectorised search against the paper's loops on random instances ----------------

def _spreading(rng: np.random.Generator, horizon: int) -> SpreadingPredictor:
    reqs = []
    for _ in range(int(rng.integers(1, 30))):
        a = int(rng.integers(0, horizon - 1))
        dl = int(rng.integers(a + 1, horizon + 1))
        reqs.append(PastRequest(int(rng.integers(1, 5)), int(rng.integers(1, dl - a + 1)), a, dl, float(rng.uniform(1, 100))))
    return SpreadingPredictor(reqs, horizon)


@pytest.mark.parametrize("seed", range(12))
def test_prices_equal_the_naive_double_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    capacity, horizon = int(rng.integers(3, 12)), int(rng.integers(6, 40))
    predictor = _spreading(rng, horizon) if seed % 2 else LinearDemand(list(rng.uniform(0, 20, horizon)), 0.7)
    promised = rng.integers(0, capacity + 1, horizon)
    list_price = None if seed % 3 else 4.0
    econ = BasicEcon(capacity, horizon, predictor, list_price=list_price, promised=promised)
    for _ in range(10):
        w = int(rng.integers(1, capacity + 1))
        a = int(rng.integers(0, horizon - 1))
        d = int(rng.integers(a + 1, horizon + 1))
        dur = int(rng.integers(1, d - a + 1))
        want = naive_prices(capacity, promised, predictor, w, dur, a, d, list_price)
        np.testing.assert_allclose(econ.prices(w, dur, a, d), want, rtol=1e-12)
        offer = econ.quote(w, dur, a, d)
        finite = [p for p in want if math.isfinite(p)]
        if not finite:
            assert offer is None
        else:
            assert offer is not None and offer.price == pytest.approx(min(finite))
            low = min(finite)
            first = next(k for k, p in enumerate(want) if p <= low + 1e-9 * max(1.0, low))
            assert offer.start == a + first  # the earliest cheapest start


# --- properties --------------------------------------------------------------------------------

request = st.tuples(st.integers(1, 6), st.integers(1, 8), st.integers(0, 30), st.integers(1, 20), st.floats(0.01, 500.0))


def _window(r: tuple[int, int, int, int, float], horizon: int = 40) -> tuple[int, int, int, int, float]:
    w, dur, a, slack, v = r
    return w, dur, a, min(a + dur + slack, horizon), v


@settings(max_examples=60, deadline=None)
@given(stream=st.lists(request, max_size=25), probe=request, values=st.lists(st.floats(0.01, 1e6), min_size=2, max_size=5))
def test_the_price_never_depends_on_the_value(stream: list, probe: tuple, values: list[float]) -> None:
    econ = BasicEcon(8, 40, LinearDemand(12.0, 0.5))
    for r in stream:
        econ.reserve(*_window(r))
    w, dur, a, d, _ = _window(probe)
    offer = econ.quote(w, dur, a, d)
    saved = econ.promised.copy()
    for v in values:
        econ.promised = saved.copy()
        decision = econ.reserve(w, dur, a, d, v)
        if offer is None:
            assert not decision.accepted
        else:
            assert decision.accepted == (v >= offer.price)
            if decision.accepted:
                assert (decision.start, decision.price) == (offer.start, offer.price)


@settings(max_examples=60, deadline=None)
@given(stream=st.lists(request, max_size=40), kind=st.sampled_from(["econ", "greedy", "spread"]))
def test_capacity_is_never_over_promised(stream: list, kind: str) -> None:
    capacity, horizon = 7, 40
    if kind == "econ":
        mech: BasicEcon | Greedy = BasicEcon(capacity, horizon, LinearDemand(9.0), list_price=6.0)
    elif kind == "spread":
        mech = BasicEcon(capacity, horizon, SpreadingPredictor([PastRequest(3, 4, 0, 20, 50.0)], horizon, period=20))
    else:
        mech = Greedy(capacity, horizon, 0.5)
    expected = np.zeros(horizon, dtype=np.int64)
    for r in stream:
        w, dur, a, d, v = _window(r)
        decision = mech.reserve(w, dur, a, d, v)
        if decision.accepted:
            assert decision.start is not None and a <= decision.start <= d - dur
            expected[decision.start : decision.start + dur] += w
        assert mech.promised.max() <= capacity
    np.testing.assert_array_equal(mech.promised, expected)


def test_greedy_takes_the_earliest_start_with_room_at_a_fixed_price() -> None:
    greedy = Greedy(4, 6, 0.65, promised=np.array([4, 2, 2, 0, 0, 0]))
    assert greedy.quote(3, 2, 0, 6) == Offer(3, pytest.approx(0.65 * 6))
    assert greedy.reserve(2, 2, 0, 6, value=1.0) == Decision(False)  # 2.6 > 1
    assert greedy.reserve(2, 2, 0, 6, value=3.0) == Decision(True, 1, pytest.approx(2.6))


def test_on_demand_checks_only_the_arrival_slot_and_may_over_promise() -> None:
    od = OnDemand(4, 6, 1.0, promised=np.array([0, 4, 4, 0, 0, 0]))
    assert od.quote(2, 3, 0, 6) == Offer(0, 6.0)  # slots 1-2 are full: not checked
    assert od.reserve(2, 3, 0, 6, value=10.0).accepted
    assert od.promised.max() == 6  # over-promised: its jobs will run late
    assert od.quote(2, 1, 1, 6) is None  # slot 1 itself has no room now


def test_release_gives_back_what_an_early_finish_frees() -> None:
    econ = BasicEcon(4, 10, ConstantPrice(1.0))
    assert econ.reserve(4, 5, 0, 10, value=100.0) == Decision(True, 0, 20.0)
    assert econ.quote(1, 1, 0, 5) is None
    econ.release(4, 2, 5)  # the job finished at slot 2
    assert econ.quote(1, 1, 0, 5) == Offer(2, 1.0)
    with pytest.raises(ValueError):
        econ.release(1, 2, 5)
