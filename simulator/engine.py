"""Discrete-event core: a time-ordered event heap.

Events are kept as ``(time, priority, sequence, payload)`` tuples in a binary
heap, the layout of SimPy's ``core.py``: equal times are broken by priority
(lower first), then by insertion order (the sequence number), so a run never
depends on comparing payloads and is reproducible bit for bit.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from typing import Any

Event = tuple[float, int, int, Any]

# Event kinds double as priorities: completions at time t free their slots
# before jobs arriving at t are activated; both before slots are handed out.
# WAKE only makes the cluster hand out free slots at its time (a reservation's
# window opens or closes there, paper 001 Alg. 1).
FINISH, ARRIVE, WAKE = 0, 1, 2
# Payload tags (at priority FINISH) of the ends an external executor reports
# (``simulator.cluster.model.Cluster.complete`` / ``fail``): done, or back to pending.
DONE_EXT, FAIL_EXT = 3, 4


class EventQueue:
    """A min-heap of events ordered by ``(time, priority, insertion order)``.

    Payloads are opaque to the queue. Keep them JSON-serialisable (lists,
    ints, floats, strings) if the queue is to survive ``to_state``.
    """

    def __init__(self) -> None:
        self._heap: list[Event] = []
        self._seq = 0

    def push(self, time: float, priority: int, payload: Any) -> None:
        """Schedule ``payload`` at ``time`` (seconds).

        Raises:
            ValueError: if ``time`` is NaN (it would corrupt the heap order).
        """
        if math.isnan(time):
            raise ValueError("event time is NaN")
        heapq.heappush(self._heap, (float(time), int(priority), self._seq, payload))
        self._seq += 1

    def pop(self) -> Event:
        """Remove and return the earliest event.

        Raises:
            IndexError: if the queue is empty.
        """
        return heapq.heappop(self._heap)

    def peek_time(self) -> float:
        """Time of the earliest event, ``math.inf`` when the queue is empty."""
        return self._heap[0][0] if self._heap else math.inf

    def remove_if(self, predicate: Callable[[Any], bool]) -> list[Event]:
        """Drop every event whose payload satisfies ``predicate``; return them.

        O(len) plus a re-heapify; the relative order of the kept events is
        unchanged because their sequence numbers are kept.
        """
        kept = [e for e in self._heap if not predicate(e[3])]
        dropped = [e for e in self._heap if predicate(e[3])]
        if dropped:
            heapq.heapify(kept)
            self._heap = kept
        return dropped

    def __len__(self) -> int:
        return len(self._heap)

    def __iter__(self) -> Iterator[Event]:
        """Events in heap (not time) order; use ``sorted()`` for time order."""
        return iter(self._heap)

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable copy: the heap list (in heap order) and counter.
        Tuple payloads are stored as lists (JSON has no tuples)."""
        heap = [[t, p, s, list(x) if isinstance(x, tuple) else x] for t, p, s, x in self._heap]
        return {"heap": heap, "seq": self._seq}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> EventQueue:
        """Rebuild a queue saved by :meth:`to_state` (heap order is preserved)."""
        queue = cls()
        queue._heap = [(float(t), int(p), int(s), x) for t, p, s, x in state["heap"]]
        queue._seq = int(state["seq"])
        return queue
