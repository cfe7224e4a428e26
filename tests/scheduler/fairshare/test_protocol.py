"""Every fair-share policy the registry names keeps the allocator contract (``scheduler.fairshare.protocol``)."""

from __future__ import annotations

import pytest

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.protocol import Allocator, ArrivalOrderAllocator, JobLevelAllocator
from scheduler.registry import FAIRSHARE, build_allocator


def _tree() -> QueueTree:
    return QueueTree.from_paths({"root.a.x": 1.0, "root.a.y": 1.0, "root.b": 2.0})


@pytest.mark.parametrize("name", FAIRSHARE.names())
def test_each_registered_policy_builds_an_allocator_with_its_flags_protocol(name: str) -> None:
    allocator = build_allocator(name, _tree(), t_wait=30.0)
    assert isinstance(allocator, Allocator)
    # a flag that asks the cluster for more names the second protocol's method
    assert isinstance(allocator, JobLevelAllocator) == bool(allocator.job_level)
    if allocator.uses_arrival_order:
        assert isinstance(allocator, ArrivalOrderAllocator)
    # and the state round-trips through the class's from_state
    again = type(allocator).from_state(_tree(), allocator.to_state())
    assert again.policy == allocator.policy and again.to_state() == allocator.to_state()
