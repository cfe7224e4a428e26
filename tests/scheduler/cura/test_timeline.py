"""A VM pool's reservation timeline: the vectorised earliest start against brute force."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.cura.timeline import Interval, PoolTimeline


def brute_earliest(pool: PoolTimeline, now: float, k: int, d: float, ready: float, latest: float) -> float:
    """Try every candidate start (ready and every interval end after it); check usage at
    every breakpoint inside the run."""
    ends = sorted({ready} | {iv.end for iv in pool.intervals.values() if iv.end > ready})
    points = sorted({now} | {iv.start for iv in pool.intervals.values()} | {iv.end for iv in pool.intervals.values()})
    for tau in ends:
        if tau > latest:
            break
        probes = [tau] + [p for p in points if tau < p < tau + d]
        if all(pool.used_at(p) + k <= pool.capacity for p in probes):
            return tau
    return np.inf


intervals = st.lists(
    st.tuples(st.integers(1, 6), st.integers(0, 40), st.integers(1, 30)), max_size=8,
)


@settings(max_examples=150, deadline=None)
@given(intervals, st.integers(1, 8), st.integers(1, 25), st.integers(0, 30), st.integers(0, 80))
def test_earliest_start_matches_brute_force(ivs: list[tuple[int, int, int]], k: int, d: int, ready: int, latest: int) -> None:
    pool = PoolTimeline(8)
    for owner, (units, start, length) in enumerate(ivs):
        pool.add(Interval(owner, units, float(start), float(start + length)))
    now = 0.0
    start, free = pool.earliest(now, np.array([k], float), np.array([d], float), np.array([ready], float), np.array([latest], float))
    expect = brute_earliest(pool, now, k, d, float(ready), float(latest))
    assert start[0] == expect
    if np.isfinite(expect):
        peak = max(pool.used_at(p) for p in [expect] + [iv.start for iv in pool.intervals.values() if expect < iv.start < expect + d])
        assert free[0] == pool.capacity - peak


def test_prune_and_peak() -> None:
    pool = PoolTimeline(10)
    pool.add(Interval(1, 4, 0.0, 5.0))
    pool.add(Interval(2, 3, 2.0, 9.0))
    assert pool.peak_after(0.0) == 7
    assert [iv.owner for iv in pool.prune(5.0)] == [1]
    assert pool.peak_after(5.0) == 3
