"""Running batches: the plain-Python sums and picks agree bit for bit with numpy's.

``RunningTasks.held`` keeps each leaf's sum between calls and updates it on starts, ends
and growth; whatever the order of those and the clock (batches overrunning their expected
duration included), it must equal ``np.bincount`` over the batches in their current order.
``FairShareAllocator.pick_leaf_flags`` must pick the leaf ``pick_leaf`` picks.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.running import RunningTasks

LEAVES = 5

steps = st.lists(
    st.tuples(
        st.sampled_from(["start", "start", "end", "grow", "tick", "read"]),
        st.integers(0, LEAVES - 1),
        st.sampled_from([0.0, 0.1, 1.0, 3.0, 7.25, 1e-12]),  # durations, a clock step
        st.integers(1, 4),
        st.integers(0, 10**6),
    ),
    max_size=80,
)


def numpy_held(tasks: RunningTasks, now: float) -> list[float]:
    leaf, start, expected, units, _ = tasks.arrays()
    out: list[float] = np.bincount(leaf, weights=np.maximum(expected, now - start) * units, minlength=LEAVES).tolist()
    return out


def _play(tasks: RunningTasks, now: float, key: int, action: str, leaf: int, duration: float, units: int, pick: int, *,
          grow_last: bool = False) -> tuple[float, int]:
    """One step of a generated program: start a batch, end or grow one (the newest with ``grow_last``), or move
    the clock (past a batch's expected end, it then counts its elapsed time); returns the clock and the next key."""
    if action == "start":
        tasks.add(key, leaf, now, duration, units)
        key += 1
    elif action == "end" and tasks.keys:
        tasks.pop(tasks.keys[pick % len(tasks.keys)])
    elif action == "grow" and tasks.keys:
        tasks.grow(tasks.keys[-1] if grow_last else tasks.keys[pick % len(tasks.keys)], units)
    elif action == "tick":
        now += duration
    return now, key


@settings(max_examples=300, deadline=None)
@given(steps)
def test_held_equals_numpy_bincount(program: list[tuple[str, int, float, int, int]]) -> None:
    tasks, now, key = RunningTasks(), 0.0, 0
    for action, leaf, duration, units, pick in program:
        now, key = _play(tasks, now, key, action, leaf, duration, units, pick, grow_last=True)
        assert tasks.held(now, LEAVES) == numpy_held(tasks, now)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.lists(st.booleans(), min_size=4, max_size=4), st.sampled_from([0.0, 0.5, 2.0, 40.0]),
                          st.sampled_from([0.0, 1.0, 2.5, 30.0]), st.integers(1, 3)), max_size=40),
       st.sampled_from(["ltrf", "hltrf", "mlrf"]), st.sampled_from([0.0, 5.0, float("inf")]))
def test_pick_leaf_flags_is_pick_leaf(program: list[tuple[list[bool], float, float, int]], policy: str, t_wait: float) -> None:
    tree = QueueTree.from_paths({"root.a.x": 1.0, "root.a.y": 2.0, "root.b.z": 1.0, "root.b.w": 1.0})
    flat, listed = (FairShareAllocator(tree, policy=policy, t_wait=t_wait) for _ in range(2))
    now, key = 0.0, 0
    for demanding, step, duration, units in program:
        now += step
        got = listed.pick_leaf_flags(demanding, now)
        assert got == flat.pick_leaf(np.array(demanding), now)
        if got >= 0:
            for alloc in (flat, listed):
                alloc.record_start(key, got, now, duration, units)
            key += 1
        for alloc in (flat, listed):
            for done in [k for k in range(key) if k % 3 == 0 and k in alloc._tasks.slot]:
                alloc.record_finish(done, now)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["start", "start", "start", "end", "end", "grow", "tick", "near"]),
                          st.integers(0, LEAVES - 1), st.floats(0.0, 50.0), st.integers(1, 5), st.integers(0, 10**6)),
                max_size=200),
       st.floats(0.0, 1e6))
def test_kept_sums_follow_any_batch_and_clock_near_the_ends(program: list[tuple[str, int, float, int, int]], origin: float) -> None:
    """Kept prefix sums and safe clocks: pops and growth anywhere in a leaf's batches, the clock
    stepped to just before, at and after a running batch's expected end (where the kept terms
    stop holding), from a large origin (where the rounding of ``now - start`` is coarse)."""
    tasks, now, key = RunningTasks(), origin, 0
    for action, leaf, duration, units, pick in program:
        now, key = _play(tasks, now, key, action, leaf, duration, units, pick)
        if action == "near" and tasks.keys:
            i = pick % len(tasks.keys)
            end = tasks.start[i] + tasks.expected[i]
            now = max(now, float(np.nextafter(end, -np.inf) if units == 1 else end if units == 2 else np.nextafter(end, np.inf)))
        got = tasks.held(now, LEAVES)
        assert got == numpy_held(tasks, now)
        assert [float(x).hex() for x in got] == [float(x).hex() for x in numpy_held(tasks, now)]  # signs of zero too
        base = [origin * k - 0.0 for k in range(LEAVES)]  # finished usage, -0.0 included
        assert tasks.held(now, LEAVES, base) == [b + h for b, h in zip(base, got, strict=True)]
