"""The plain-Python path of the Abacus auction against the numpy path (paper 000, Sec. 4.2):
on every small market it runs, it must give the numpy path's result bit for bit (the
offline replay's decisions must not depend on which path cleared a market)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.typing import NDArray

from scheduler.abacus import auction as numpy_path
from scheduler.abacus.auction import auction
from scheduler.abacus.kkt import kkt_residual
from scheduler.abacus.plain import KKT_MAX_JOBS, MAX_JOBS, TYPES, _sum_by_slot, iterate_market, small_auction, small_kkt_max
from scheduler.abacus.state import AuctionResult, _Market


def plain(market: dict[str, Any]) -> AuctionResult | None:
    return small_auction(**market, handover=numpy_path._handover)


def arrays(market: dict[str, Any]) -> AuctionResult:
    return numpy_path._array_auction(**market)


def assert_bitwise(got: AuctionResult, want: AuctionResult) -> None:
    for a, b in ((got.shares, want.shares), (got.sub_budgets, want.sub_budgets)):
        assert a.shape == b.shape and a.dtype == b.dtype
        assert np.array_equal(a, b) and np.array_equal(np.signbit(a), np.signbit(b))
    assert (got.rounds, got.converged) == (want.rounds, want.converged)


budget = st.one_of(st.floats(0.5, 500.0), st.floats(1e-3, 1e6), st.sampled_from([0.0, 1e-300, 1.0]))
weight = st.one_of(st.just(0.0), st.floats(0.05, 5.0))


@st.composite
def small_markets(draw: st.DrawFn, max_n: int = MAX_JOBS + 2, min_n: int = 1) -> dict[str, Any]:
    """Markets the plain path takes: zero budgets and weights, partial demand, groups,
    mixed utilities, warm starts with new (NaN) rows, zeros and off-support entries."""
    n = draw(st.integers(min_n, max_n))
    m = draw(st.sampled_from([TYPES, TYPES, TYPES, 1, 3]))  # other m: left to numpy
    utility = draw(st.one_of(st.sampled_from(["linear", "log"]),
                             st.lists(st.sampled_from(["linear", "log"]), min_size=n, max_size=n)))
    market: dict[str, Any] = {
        "budgets": draw(hnp.arrays(np.float64, n, elements=budget)),
        "weights": draw(hnp.arrays(np.float64, (n, m), elements=weight)),
        "utility": utility,
        "alpha": draw(st.sampled_from([0.0, 0.3, 0.5, 0.9, 1.0])),
        "tol": draw(st.sampled_from([1e-6, 1e-9])),
        "max_rounds": draw(st.sampled_from([1, 5, 1000])),
        "groups": draw(st.none() | hnp.arrays(np.int64, n, elements=st.integers(-2, 3))),
        "demand": draw(st.none() | hnp.arrays(np.bool_, (n, m), elements=st.booleans())),
        "warm_start": None,
    }
    if draw(st.booleans()):
        scale = draw(hnp.arrays(np.float64, (n, m), elements=st.sampled_from([0.0, 0.5, 1.0, 1.3, np.nan])))
        with np.errstate(all="ignore"):
            warm: NDArray[np.float64] = arrays(dict(market, warm_start=None)).sub_budgets * scale
        market["warm_start"] = warm
    return market


@settings(max_examples=600, deadline=None)
@given(small_markets())
def test_plain_path_equals_numpy_path(market: dict[str, Any]) -> None:
    with np.errstate(all="ignore"):  # the numpy path's own warnings on corner markets
        want = arrays(market)
    got = plain(market)
    event("plain path" if got is not None else "left to the numpy path")  # scheduler.abacus.plain's module doc
    if got is not None:
        assert_bitwise(got, want)


def _replay_market(rng: np.random.Generator, n: int) -> dict[str, Any]:
    """A replay's market of ``n`` jobs (log utilities, alpha = 1/2, eight groups), warm from its own
    clearing but for one newcomer (its row NaN)."""
    market: dict[str, Any] = {"budgets": rng.uniform(50, 200, n), "weights": rng.uniform(0.5, 2, (n, 2)), "utility": "log",
                              "alpha": 0.5, "tol": 1e-6, "max_rounds": 1000, "groups": rng.integers(0, 8, n), "demand": None,
                              "warm_start": None}
    warm = arrays(market).sub_budgets
    warm[-1] = np.nan
    market["warm_start"] = warm
    return market


def test_plain_path_runs_the_replay_markets() -> None:
    """The markets it exists for (log utilities, alpha = 1/2, one newcomer) are not left to numpy."""
    rng = np.random.default_rng(3)
    for n in (1, 2, 7, 20, MAX_JOBS):
        market = _replay_market(rng, n)
        got = plain(market)
        assert got is not None
        assert_bitwise(got, arrays(market))
        assert_bitwise(auction(**market), got)


def test_plain_path_leaves_large_and_invalid_markets() -> None:
    ok = {"budgets": [1.0, 2.0], "weights": [[1.0, 1.0], [1.0, 2.0]], "utility": "log", "alpha": 0.5, "tol": 1e-6,
          "max_rounds": 1000, "groups": None, "demand": None, "warm_start": None}
    assert plain(ok) is not None
    for bad in ({"budgets": [1.0, np.nan]}, {"alpha": 1.5}, {"utility": "cubic"}, {"max_rounds": 0},
                {"weights": [[1.0, 1.0, 1.0], [1.0, 2.0, 1.0]]}, {"budgets": np.ones(MAX_JOBS + 1),
                                                                 "weights": np.ones((MAX_JOBS + 1, 2))}):
        assert plain(dict(ok, **bad)) is None


def test_one_group_column_sum_is_numpys() -> None:
    """numpy sums an (n, 2) array over its rows from 0.0, row after row (not pairwise), bit for bit."""
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 17, 64, 130):
        values = rng.choice([1e16, -1e16, 1.0, 3.3, 1e-17, -0.0], (n, 2)) * rng.uniform(0.5, 2.0, (n, 2))
        want = values.sum(axis=0)
        got = _sum_by_slot(values.ravel().tolist(), 1, [0, 1] * n)[:2]
        assert got == want.tolist() and np.signbit(got).tolist() == np.signbit(want).tolist()


@settings(max_examples=400, deadline=None)
@given(small_markets(KKT_MAX_JOBS + 2), st.sampled_from([0.0, 1e-9, 1e-3]), st.integers(0, 2**32 - 1))
def test_plain_kkt_equals_numpy_kkt(market: dict[str, Any], noise: float, seed: int) -> None:
    """The largest KKT residual of a clearing (as AbacusPolicy reports it), at the auction's
    point and off it (sub-budgets moved by ``noise`` relative)."""
    with np.errstate(all="ignore"):
        result = arrays(market)
    moved = result.sub_budgets * np.random.default_rng(seed).uniform(1.0 - noise, 1.0 + noise, result.sub_budgets.shape)
    for point in (result, AuctionResult(result.shares, moved, result.rounds, result.converged)):
        args = (point, market["weights"], market["utility"], market["demand"], market["groups"])
        with np.errstate(all="ignore"):
            want = float(np.max(kkt_residual(*args), initial=0.0))
        got = small_kkt_max(*args)
        event("plain path" if got is not None else "left to the numpy path")
        if got is not None:
            assert got.hex() == want.hex()


@st.composite
def large_markets_with_newcomers(draw: st.DrawFn) -> dict[str, Any]:
    """Markets past MAX_JOBS (the numpy path's) whose warm start has a few new (NaN) rows."""
    market = draw(small_markets(MAX_JOBS + 30, MAX_JOBS + 1))
    n = market["weights"].shape[0]
    with np.errstate(all="ignore"):
        warm = arrays(dict(market, warm_start=None)).sub_budgets
    warm[draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True))] = np.nan
    market["warm_start"] = warm
    return market


@settings(max_examples=150, deadline=None)
@given(large_markets_with_newcomers())
def test_newcomers_warm_up_on_lists_equals_numpys(market: dict[str, Any]) -> None:
    """A large market's newcomers answer the others' warm bids on float lists (plain.iterate_market)
    with numpy's sub-budgets, so the whole clearing is the one the numpy warm-up gave, bit for bit."""
    with np.errstate(all="ignore"):
        want = numpy_path._array_auction(**market, plain_newcomers=False)
        got = numpy_path._array_auction(**market)
    assert_bitwise(got, want)


def test_newcomers_of_a_replay_market_warm_up_on_lists(monkeypatch: Any) -> None:
    """The markets it exists for (the replay's: log utilities, alpha = 1/2, one newcomer among
    dozens of jobs) take the list path, with the numpy warm-up's result."""
    from scheduler.abacus import plain as plain_module
    taken: list[bool] = []
    real = plain_module.iterate_market

    def counted(*args: Any) -> Any:
        out = real(*args)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(numpy_path, "iterate_market", counted)
    rng = np.random.default_rng(4)
    for n in (MAX_JOBS + 1, 48, 90):
        market = _replay_market(rng, n)
        assert_bitwise(arrays(market), numpy_path._array_auction(**market, plain_newcomers=False))
    assert taken == [True, True, True]


def newcomers_market(market: dict[str, Any], rows: NDArray[np.bool_], scale: NDArray[np.float64]) -> tuple[_Market, NDArray[np.float64]]:
    """``auction._newcomers_market`` of ``rows`` against the other jobs frozen at their equal split
    times ``scale``, and the newcomers' equal split (their usual start)."""
    mk = numpy_path._prepare(market["budgets"], market["weights"], market["utility"], market["alpha"],
                             market["groups"], market["demand"])
    start = mk.fallback * scale
    return numpy_path._newcomers_market(mk, rows, start), start[rows]


@st.composite
def warm_ups(draw: st.DrawFn) -> tuple[_Market, NDArray[np.float64], dict[str, Any]]:
    """A newcomers' market (one to four newcomers among up to a dozen jobs, the rivals' power
    frozen) and a start of the newcomers' rounds: their equal split with entries at exactly 0,
    at a negligible bid (below NEGLIGIBLE b_i) or scaled, as the rounds reach them."""
    market = draw(small_markets(12, 2))
    n, m = market["weights"].shape
    if m != TYPES:
        market["weights"] = np.resize(market["weights"], (n, TYPES))
        market["demand"] = None if market["demand"] is None else np.resize(market["demand"], (n, TYPES))
    rows = np.zeros(n, dtype=np.bool_)
    rows[draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=4, unique=True))] = True
    scale = draw(hnp.arrays(np.float64, (n, TYPES), elements=st.sampled_from([1.0, 1.0, 0.3, 1.7])))
    mk, start = newcomers_market(market, rows, scale)
    factor = draw(hnp.arrays(np.float64, start.shape, elements=st.sampled_from([1.0, 1.0, 0.0, 1e-14, 0.5])))
    return mk, start * factor, market


def assert_warm_up_is_numpys(mk: _Market, start: NDArray[np.float64], tol: float, max_rounds: int) -> bool:
    """plain.iterate_market gives numpy's rounds' sub-budgets bit for bit, or None; True if it gave them."""
    with np.errstate(all="ignore"):
        want = numpy_path._iterate(mk, start.copy(), tol, max_rounds)[0]
        got = iterate_market(mk, start.copy(), tol, max_rounds, numpy_path._handover)
    if got is not None:
        assert got.shape == want.shape and np.array_equal(got, want) and np.array_equal(np.signbit(got), np.signbit(want))
    return got is not None


@settings(max_examples=300, deadline=None)
@given(warm_ups())
def test_warm_up_rounds_on_lists_equal_numpys_from_any_start(case: tuple[_Market, NDArray[np.float64], dict[str, Any]]) -> None:
    """The newcomers' rounds on float lists against numpy's, from the starts the rounds pass through
    (bids at 0 on a type only the newcomer competes on in its group: the equal split of Eq. 1's
    empty denominator; negligible bids on contested types: the KKT corner check)."""
    mk, start, market = case
    event("lists" if assert_warm_up_is_numpys(mk, start, market["tol"], market["max_rounds"]) else "left to numpy")


def lone_bidder_market(utility: str, alpha: float) -> dict[str, Any]:
    """Group 0: three frozen jobs bidding only on type 0, the last job (the newcomer) on both; a
    fourth frozen job demands type 1 with weight 0. The newcomer alone competes on type 1 of its
    group (one competitor, two demanders there), against the others on type 0."""
    return {"budgets": np.array([40.0, 25.0, 60.0, 30.0, 50.0]),
            "weights": np.array([[1.0, 0.0], [2.0, 0.0], [0.5, 0.0], [1.0, 0.0], [1.5, 0.8]]),
            "utility": utility, "alpha": alpha, "tol": 1e-6, "max_rounds": 1000, "groups": None,
            "demand": np.array([[True, False], [True, False], [True, False], [True, True], [True, True]]),
            "warm_start": None}


@pytest.mark.parametrize("utility", ["linear", "log"])
@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_warm_up_of_a_lone_bidder_at_zero_takes_the_equal_split(utility: str, alpha: float) -> None:
    """A newcomer whose bid on the type only it competes on reached 0: that type's power sums to 0,
    so its share is the equal split over the group's competitors (1: it has the type to itself and
    gains nothing by bidding there). On lists, numpy's sub-budgets bit for bit."""
    market = lone_bidder_market(utility, alpha)
    rows = np.array([False, False, False, False, True])
    mk, start = newcomers_market(market, rows, np.ones((5, TYPES)))
    assert mk.active[0].tolist() == [True, True] and mk.contested[0].tolist() == [True, False]
    assert mk.n_active[0, 1] == 1.0 and mk.n_demand[0, 1] == 2.0 and mk.rival_power is not None
    assert mk.rival_power[0, 1] == 0.0
    for moved in (np.array([[50.0, 0.0]]), np.array([[20.0, 0.0]]), start):
        assert assert_warm_up_is_numpys(mk, moved, 1e-6, 1000)


@pytest.mark.parametrize("alpha", [0.5, 1.0])
def test_warm_up_at_a_negligible_contested_bid_is_numpys(alpha: float) -> None:
    """A linear newcomer whose bid on a contested type it values most is negligible (below NEGLIGIBLE
    b_i): Algorithm 2 maps such a bid to ~0+, so the convergence test must ask whether it sits at a
    KKT corner (it does not: du/db there beats lambda_i). The list path leaves it to numpy's check
    (None) or gives numpy's sub-budgets."""
    market = {"budgets": np.array([40.0, 25.0, 50.0]), "weights": np.array([[1.0, 1.0], [1.0, 1.0], [0.2, 3.0]]),
              "utility": "linear", "alpha": alpha, "tol": 1e-6, "max_rounds": 1000, "groups": None, "demand": None,
              "warm_start": None}
    mk, _ = newcomers_market(market, np.array([False, False, True]), np.ones((3, TYPES)))
    assert mk.contested[0].tolist() == [True, True]
    corner = np.array([[50.0 * (1.0 - 1e-15), 50.0 * 1e-15]])
    assert_warm_up_is_numpys(mk, corner, 1e-6, 1000)
    with np.errstate(all="ignore"):
        moved = numpy_path._iterate(mk, corner.copy(), 1e-6, 1000)
    assert moved[1] > 1 and moved[0][0, 1] > 1.0  # numpy's rounds leave the corner: it was no KKT point
