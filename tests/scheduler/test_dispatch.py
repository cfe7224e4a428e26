"""Tests of share-based dispatch (paper 000, Sec. 3; docs/mechanisms.md, "Dispatch")."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.typing import NDArray

from scheduler.dispatch import DispatchMode, ShareDispatcher

IDS = np.array([42, 7, 19, 3], dtype=np.int64)
SHARES = np.array([0.4, 0.3, 0.2, 0.1])
ALL = np.ones(4, dtype=np.bool_)


def run(dispatcher: ShareDispatcher, shares: NDArray[np.float64], units: int,
        eligible: NDArray[np.bool_] = ALL, resource: int = 0) -> NDArray[np.int64]:
    """Positions chosen for ``units`` consecutive free units."""
    return np.array([dispatcher.choose(IDS, shares, eligible, resource) for _ in range(units)])


def max_deviation(positions: NDArray[np.int64], shares: NDArray[np.float64]) -> float:
    """max over time and jobs of |units served - share * units so far|."""
    counts = np.cumsum(np.eye(len(shares))[positions], axis=0)
    ideal = np.arange(1, len(positions) + 1)[:, None] * shares[None, :]
    return float(np.abs(counts - ideal).max())


@pytest.mark.parametrize("mode", ["stride", "lottery"])
def test_empirical_fractions_converge_to_shares(mode: DispatchMode) -> None:
    units = 20_000
    positions = run(ShareDispatcher(mode, seed=11), SHARES, units)
    fractions = np.bincount(positions, minlength=4) / units
    sigma = np.sqrt(SHARES * (1 - SHARES) / units)
    assert np.all(np.abs(fractions - SHARES) < 4 * sigma)


def test_stride_tracks_shares_with_less_variance_than_lottery() -> None:
    """Measured: stride stays within 0.6 units of share * count, lottery drifts 59 units."""
    stride = max_deviation(run(ShareDispatcher("stride"), SHARES, 5000), SHARES)
    lottery = max_deviation(run(ShareDispatcher("lottery", seed=3), SHARES, 5000), SHARES)
    assert stride <= 2.0
    assert lottery > 2 * stride


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 10.0), min_size=2, max_size=12).filter(lambda w: sum(w) > 0))
def test_stride_deviation_stays_bounded(raw: list[float]) -> None:
    shares = np.array(raw) / sum(raw)
    ids = np.arange(len(raw), dtype=np.int64) * 5 + 1
    dispatcher = ShareDispatcher("stride")
    eligible = np.ones(len(raw), dtype=np.bool_)
    positions = np.array([dispatcher.choose(ids, shares, eligible, 0) for _ in range(600)])
    assert max_deviation(positions, shares) <= 2.0


@pytest.mark.parametrize("mode", ["stride", "lottery"])
def test_only_eligible_jobs_are_chosen(mode: DispatchMode) -> None:
    eligible = np.array([False, True, False, True])
    positions = run(ShareDispatcher(mode, seed=5), SHARES, 2000, eligible)
    assert set(positions.tolist()) == {1, 3}
    # renormalised over the eligible jobs: 0.3 / 0.4 and 0.1 / 0.4
    assert np.mean(positions == 1) == pytest.approx(0.75, abs=0.04)


@pytest.mark.parametrize("mode", ["stride", "lottery"])
def test_no_eligible_job_returns_minus_one(mode: DispatchMode) -> None:
    dispatcher = ShareDispatcher(mode)
    assert dispatcher.choose(IDS, SHARES, np.zeros(4, dtype=np.bool_), 0) == -1
    assert dispatcher.choose(IDS[:0], SHARES[:0], ALL[:0], 0) == -1


@pytest.mark.parametrize("mode", ["stride", "lottery"])
def test_eligible_jobs_with_zero_share_are_served_uniformly(mode: DispatchMode) -> None:
    shares = np.array([0.0, 0.0, 1.0, 0.0])
    eligible = np.array([True, True, False, True])
    positions = run(ShareDispatcher(mode, seed=9), shares, 3000, eligible)
    assert set(positions.tolist()) == {0, 1, 3}
    assert np.abs(np.bincount(positions, minlength=4)[[0, 1, 3]] / 3000 - 1 / 3).max() < 0.04


def test_stride_ties_go_to_lowest_job_id() -> None:
    equal = np.full(4, 0.25)
    first_four = run(ShareDispatcher("stride"), equal, 4)
    assert IDS[first_four].tolist() == sorted(IDS.tolist())


def test_stride_resources_keep_separate_counters() -> None:
    alone = run(ShareDispatcher("stride"), SHARES, 50)
    mixed = ShareDispatcher("stride")
    interleaved = []
    for _ in range(50):
        mixed.choose(IDS, SHARES[::-1], ALL, resource=1)
        interleaved.append(mixed.choose(IDS, SHARES, ALL, resource=0))
    np.testing.assert_array_equal(alone, interleaved)


def test_stride_share_change_causes_no_catch_up_burst() -> None:
    """After 1000 units at (0.9, 0.1) the shares become (0.5, 0.5): job 1 gets about half."""
    dispatcher = ShareDispatcher("stride")
    two = IDS[:2], np.ones(2, dtype=np.bool_)
    for _ in range(1000):
        dispatcher.choose(two[0], np.array([0.9, 0.1]), two[1], 0)
    after = [dispatcher.choose(two[0], np.array([0.5, 0.5]), two[1], 0) for _ in range(20)]
    assert abs(sum(after) - 10) <= 2


def test_stride_ineligible_job_earns_no_credit() -> None:
    dispatcher = ShareDispatcher("stride")
    run(dispatcher, SHARES, 500, np.array([True, True, True, False]))
    back = run(dispatcher, SHARES, 40)
    assert abs(np.sum(back == 3) - 0.1 * 40) <= 2


@pytest.mark.parametrize("mode", ["stride", "lottery"])
def test_state_round_trip_gives_identical_future_choices(mode: DispatchMode) -> None:
    original = ShareDispatcher(mode, seed=2024)
    run(original, SHARES, 137, np.array([True, False, True, True]))
    state = json.loads(json.dumps(original.to_state()))
    restored = ShareDispatcher.from_state(state)
    np.testing.assert_array_equal(run(original, SHARES, 500), run(restored, SHARES, 500))
    assert restored.served(IDS[0], 0) == original.served(IDS[0], 0) > 0


def test_forget_drops_a_finished_job() -> None:
    dispatcher = ShareDispatcher("stride")
    run(dispatcher, SHARES, 100)
    assert dispatcher.served(IDS[0], 0) == 40
    dispatcher.forget(int(IDS[0]))
    assert dispatcher.served(IDS[0], 0) == 0
    assert all(row[0] != IDS[0] for row in dispatcher.to_state()["counters"])
    assert dispatcher.served(IDS[1], 0) == 30  # others keep their history


BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("shares_shape", {"shares": SHARES[:3]}),
    ("eligible_shape", {"eligible": ALL[:2]}),
    ("duplicate_ids", {"job_ids": np.array([1, 1, 2, 3], dtype=np.int64)}),
    ("negative_share", {"shares": np.array([0.5, -0.1, 0.3, 0.3])}),
    ("nan_share", {"shares": np.array([0.5, np.nan, 0.3, 0.2])}),
    ("negative_resource", {"resource": -1}),
]


@pytest.mark.parametrize("override", [c[1] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_invalid_calls_raise(override: dict[str, Any]) -> None:
    kwargs: dict[str, Any] = {"job_ids": IDS, "shares": SHARES, "eligible": ALL, "resource": 0}
    kwargs.update(override)
    with pytest.raises(ValueError):
        ShareDispatcher().choose(**kwargs)


def test_unknown_mode_raises() -> None:
    with pytest.raises(ValueError, match="unknown dispatch mode"):
        ShareDispatcher("round-robin")  # type: ignore[arg-type]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.permutations([42, 7, 19, 3]), st.integers(0, 2), st.integers(1, 30)), min_size=1, max_size=6),
       st.lists(st.tuples(st.sampled_from([5, 42, 99]), st.integers(0, 3), st.integers(1, 4)), max_size=4),
       st.lists(st.sampled_from([42, 7, 19, 3]), max_size=2))
def test_counter_array_is_the_state_s_counters(calls: list[tuple[list[int], int, int]], records: list[tuple[int, int, int]],
                                              forgotten: list[int]) -> None:
    """``counter_array`` (the stored engine's column) holds exactly ``to_state()["counters"]``, rows sorted by
    (job, resource): credits of live ledgers and of closed ones, units recorded without a credit, forgotten jobs gone."""
    dispatcher = ShareDispatcher("stride")
    for order, resource, units in calls:
        ids = np.array(order, dtype=np.int64)
        for _ in range(units):
            dispatcher.choose(ids, SHARES, ALL, resource)
    for job, resource, units in records:
        dispatcher.record(job, resource, units)
    for job in forgotten:
        dispatcher.forget(job)
    expected = np.array(dispatcher.to_state()["counters"], dtype=np.float64).reshape(-1, 4)
    np.testing.assert_array_equal(dispatcher.counter_array(), expected)


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(["stride", "lottery", "fifo"]),
       st.lists(st.tuples(st.permutations([42, 7, 19, 3]), st.integers(0, 2), st.integers(1, 12)), min_size=1, max_size=5),
       st.lists(st.tuples(st.sampled_from([5, 42, 99]), st.integers(0, 3), st.integers(1, 4)), max_size=4),
       st.booleans(), st.sampled_from([5, 42, 7, 19, 3, 1000]))
def test_forget_drops_exactly_the_job_s_counters(mode: DispatchMode, calls: list[tuple[list[int], int, int]],
                                                 records: list[tuple[int, int, int]], restored: bool, job: int) -> None:
    """After ``forget(job)`` the counters are the ones before without that job's rows (live ledgers' credits,
    closed ones', units recorded on a resource no ledger opened, a dispatcher rebuilt from its state), and the
    next choices are those of a dispatcher rebuilt from the state before with the job's rows left out."""
    dispatcher = ShareDispatcher(mode, seed=3)
    for order, resource, units in calls:
        for _ in range(units):
            dispatcher.choose(np.array(order, dtype=np.int64), SHARES, ALL, resource)
    for who, resource, units in records:
        dispatcher.record(who, resource, units)
    if restored:
        dispatcher = ShareDispatcher.from_state(json.loads(json.dumps(dispatcher.to_state())))
    before = dispatcher.to_state()
    dispatcher.forget(job)
    after = dispatcher.to_state()
    assert after["counters"] == [row for row in before["counters"] if row[0] != job]
    reference = ShareDispatcher.from_state({**before, "counters": after["counters"]})
    order = np.array([3, 19, 7, 42], dtype=np.int64)
    for resource in (0, 1, 2, 3):
        assert [dispatcher.choose(order, SHARES, ALL, resource) for _ in range(9)] == \
            [reference.choose(order, SHARES, ALL, resource) for _ in range(9)]


def _frozen(array: NDArray[Any]) -> NDArray[Any]:
    out = np.array(array)
    out.flags.writeable = False
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(8, 40), st.lists(st.tuples(st.integers(0, 3), st.integers(0, 2 ** 32 - 1), st.booleans()), min_size=1, max_size=12))
def test_read_only_inputs_choose_as_fresh_ones(k: int, steps: list[tuple[int, int, bool]]) -> None:
    """Under stride, a caller that passes the same read-only shares and eligibility objects again (the
    placement's cache) gets the choices of a caller that passes fresh writable copies every time, while
    the objects change between runs of calls; a caller that writes into its own writable arrays between
    calls is never answered from what an earlier call saw."""
    ids = np.arange(100, 100 + k, dtype=np.int64)
    cached, fresh, written = ShareDispatcher("stride"), ShareDispatcher("stride"), ShareDispatcher("stride")
    weights, mask = np.zeros(k), np.zeros(k, dtype=np.bool_)  # the writing caller's arrays, changed in place
    for resource, seed, reuse in steps:
        rng = np.random.default_rng(seed)
        shares, eligible = rng.random(k) * (rng.random(k) < 0.8), rng.random(k) < 0.7
        frozen_shares, frozen_eligible = _frozen(shares), _frozen(eligible)
        weights[:], mask[:] = shares, eligible
        for _ in range(1 + 5 * reuse):
            got = cached.choose(ids, frozen_shares, frozen_eligible, resource)
            assert got == fresh.choose(ids, shares.copy(), eligible.copy(), resource)
            assert got == written.choose(ids, weights, mask, resource)
    assert cached.to_state() == fresh.to_state() == written.to_state()
