"""Changing a running cluster's configuration: capacities, the dispatch rule and
the fair-share policy (paper 002, Sec. 5.1: LTRF's history is kept across a
change of T_wait or between the long-term policies)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.registry import DISPATCH, build_allocator
from simulator.cluster.core import ClusterCore, fresh_allocators
from simulator.cluster.jobs import as_capacity
from simulator.engine import FINISH


def set_capacity(c: ClusterCore, capacity: Sequence[int]) -> None:
    """Change the slot counts. Shrinking never kills: running tasks
    finish, and no task starts while a type is at or over capacity.

    Raises:
        ValueError: wrong length or negative / non-integer entries.
    """
    cap = as_capacity(capacity)
    if cap.shape != c.capacity.shape:
        raise ValueError(f"capacity needs {c.m} entries")
    if not np.array_equal(cap, c.capacity):
        c._integrate_to(c.now)  # the fair shares S_i change
        c.capacity = cap
        c._share = c._share_matrix()
        tell_capacity(c)

def set_dispatch(c: ClusterCore, dispatch: str) -> None:
    """Choose jobs inside leaves by another rule (``scheduler.registry.DISPATCH``);
    the new dispatcher starts without credits. Raises UnknownName."""
    DISPATCH.validate(dispatch)
    c.placement.dispatcher = DISPATCH.build(dispatch, seed=c.seed)
    c.placement.invalidate_all()
    c.dispatch = dispatch

def set_policy(
    c: ClusterCore, *, policy: str | None = None, t_wait: float | None = None, history: str | None = None,
    history_length: float | None = None,
) -> None:
    """Switch the fair-share policy and/or ``T_wait``, keeping the
    allocators' accumulated usage (history matters to LTRF, paper 002
    Sec. 5.1).

    Raises:
        ValueError: unknown policy or history mode, negative / NaN ``t_wait``,
            a bad history length.

    A new history mode or length restarts the allocators from the batches
    running now (the remembered usage was weighed by the old rule).
    """
    new_policy = c.policy if policy is None else policy
    new_t_wait = c.t_wait if t_wait is None else float(t_wait)
    new_history = c.history if history is None else history
    new_length = c.history_length if history_length is None else float(history_length)
    options: dict[str, Any] = {"t_wait": new_t_wait, "history": new_history, "history_length": new_length}
    fresh = build_allocator(new_policy, c.tree, **options)  # validates everything first
    if type(fresh) is not type(c._allocators[0]) or (new_history, new_length) != (c.history, c.history_length):
        # FIFO keeps no history: switching to or from it starts the allocators
        # afresh, told only about the batches running now.
        c.policy, c.t_wait, c.history, c.history_length = new_policy, new_t_wait, new_history, new_length
        c._allocators = fresh_allocators(c)
        _replay_running(c)
    else:
        for allocator in c._allocators:
            if isinstance(allocator, FairShareAllocator):  # one class for mlrf / ltrf / hltrf: usage is kept
                allocator.policy = new_policy
            allocator.t_wait = new_t_wait
    c.policy, c.t_wait = new_policy, new_t_wait

def tell_capacity(c: ClusterCore) -> None:
    """Give each allocator its type's capacity (static quotas and share limits are
    fractions of it; paper 002, Sec. 6.2.3)."""
    for allocator, cap in zip(c._allocators, c.capacity.tolist(), strict=True):
        allocator.capacity = float(cap)


def _replay_running(c: ClusterCore) -> None:
    """Record the running shared batches in fresh allocators, oldest first."""
    running = []
    for t_end, _, _, payload in c._events:
        if payload[0] == FINISH and payload[5]:
            _, job_id, j, key, units, _ = payload
            duration = c._jobs[job_id].spec.task_duration[j]
            running.append((t_end - duration, key, job_id, j, units, duration))
    for _, job_id, j, _, units, shared, alloc_key, start, expected_end in c._external.values():  # a real cluster's batches
        if shared:
            running.append((start, alloc_key, job_id, j, units, expected_end - start))
    for start, key, job_id, j, units, duration in sorted(running):
        expected = duration if c.known_durations else None
        c._allocators[j].record_start(key, c._jobs[job_id].leaf, min(start, c.now), expected, units, app=job_id if job_id >= 0 else None)
