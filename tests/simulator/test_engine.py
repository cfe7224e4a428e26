"""EventQueue: time order, ties by priority then insertion, state round-trip."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from simulator.engine import EventQueue


def drain(queue: EventQueue) -> list[object]:
    out = []
    while len(queue):
        out.append(queue.pop()[3])
    return out


def test_pops_in_time_order() -> None:
    q = EventQueue()
    for t, name in [(3.0, "c"), (1.0, "a"), (2.0, "b")]:
        q.push(t, 0, name)
    assert q.peek_time() == 1.0
    assert drain(q) == ["a", "b", "c"]


def test_equal_times_break_on_priority_then_insertion() -> None:
    q = EventQueue()
    q.push(5.0, 1, "arrive-1")
    q.push(5.0, 0, "finish-1")
    q.push(5.0, 1, "arrive-2")
    q.push(5.0, 0, "finish-2")
    assert drain(q) == ["finish-1", "finish-2", "arrive-1", "arrive-2"]


def test_payloads_are_never_compared() -> None:
    q = EventQueue()
    q.push(1.0, 0, {"not": "orderable"})
    q.push(1.0, 0, {"not": "orderable either"})
    assert len(drain(q)) == 2


def test_empty_queue() -> None:
    q = EventQueue()
    assert q.peek_time() == math.inf
    assert len(q) == 0
    with pytest.raises(IndexError):
        q.pop()


def test_nan_time_is_rejected() -> None:
    with pytest.raises(ValueError):
        EventQueue().push(math.nan, 0, "x")


def test_remove_if_keeps_the_order_of_the_rest() -> None:
    q = EventQueue()
    for k in range(10):
        q.push(float(k % 3), k % 2, k)
    dropped = q.remove_if(lambda p: p % 4 == 0)
    assert sorted(e[3] for e in dropped) == [0, 4, 8]
    reference = EventQueue()
    for k in range(10):
        reference.push(float(k % 3), k % 2, k)
    assert drain(q) == [p for p in drain(reference) if p % 4 != 0]


events = st.lists(st.tuples(st.sampled_from([0.0, 0.5, 1.0, 2.0, 1e9]), st.integers(0, 2)), max_size=40)


@given(events)
def test_order_is_time_priority_insertion(items: list[tuple[float, int]]) -> None:
    q = EventQueue()
    for k, (t, prio) in enumerate(items):
        q.push(t, prio, k)
    expected = [k for k, _ in sorted(enumerate(items), key=lambda e: (e[1][0], e[1][1], e[0]))]
    assert drain(q) == expected


@given(events, st.integers(0, 40))
def test_state_round_trip_through_json(items: list[tuple[float, int]], cut: int) -> None:
    a = EventQueue()
    for k, (t, prio) in enumerate(items):
        a.push(t, prio, [k])
    for _ in range(min(cut, len(a))):
        a.pop()
    b = EventQueue.from_state(json.loads(json.dumps(a.to_state())))
    a.push(0.5, 1, ["new"])
    b.push(0.5, 1, ["new"])
    assert drain(a) == drain(b)
