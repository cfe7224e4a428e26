"""Bookkeeping every published policy shares: running batches per leaf and per job, and the clock.

:class:`BatchBook` holds what the allocator interface tells a policy
(``record_start`` / ``record_more`` / ``record_finish``, paper 002's Alg. 1
bookkeeping): which batches of tasks run, in which leaf, for which job
(``app``), since when and on how many units. Policies subclass it and add
their own state through the ``_on_*`` hooks and ``_extra_state``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.running import from_json_float, json_float
from scheduler.fairshare.selection import argmin_first

BIG = np.iinfo(np.int64).max // 4


class BatchBook:
    """Running batches of one resource type and the policy's clock.

    Args:
        tree: the queue hierarchy (leaves are the users or tenants).
        t_wait, history, history_length: the market's fair-share settings;
            kept so a market can switch policies freely (each policy says
            which it uses).

    ``capacity`` (units of this type, default inf) is set by the owner.
    Time must not go backwards across mutating calls (ValueError).
    """

    policy: ClassVar[str] = ""
    uses_arrival_order: ClassVar[bool] = False
    tracks_demand: ClassVar[bool] = False
    job_level: ClassVar[bool] = False
    work_conserving: ClassVar[bool] = True

    def __init__(self, tree: QueueTree, *, t_wait: float = 0.0, history: str = "forever", history_length: float = math.inf) -> None:
        if math.isnan(t_wait) or t_wait < 0:
            raise ValueError("t_wait must be >= 0")
        self.tree = tree
        self.t_wait, self.history, self.history_length = float(t_wait), history, float(history_length)
        self.capacity = math.inf
        self._frac = tree.leaf_fraction()
        self._batches: dict[int, list[Any]] = {}  # key -> [leaf, start, units, app]
        self._running = np.zeros(len(tree.leaves), dtype=np.int64)
        self._job_units: dict[int, int] = {}  # app -> units running
        self._clock = -math.inf

    # ------------------------------------------------------------------ time

    def _advance(self, now: float) -> None:
        if math.isnan(now) or now < self._clock:
            raise ValueError(f"time went backwards: {now} < {self._clock}")
        if now > self._clock:
            self._on_time(self._clock, float(now))
        self._clock = float(now)

    def _on_time(self, before: float, now: float) -> None:
        """Time moved from ``before`` (-inf at first) to ``now`` with the running set unchanged."""

    # ------------------------------------------------------------ interface

    def update_demand(self, demanding: NDArray[np.bool_], now: float) -> None:
        """Demand changes need no bookkeeping here (``tracks_demand`` is False)."""

    def room(self, leaf: int) -> int:
        """More units leaf ``leaf`` may take: unlimited (these policies apply no share limits)."""
        return int(BIG)

    def running(self) -> NDArray[np.int64]:
        """(L,) units currently held per leaf."""
        return self._running.copy()

    def job_units(self, app: int) -> int:
        """Units job ``app`` holds now (0 if none)."""
        return self._job_units.get(app, 0)

    def record_start(
        self, task_key: int, leaf: int, now: float, expected_duration: float | None = None, units: int = 1, app: int | None = None
    ) -> None:
        """``units`` units were given to leaf ``leaf`` at ``now`` for the batch ``task_key`` of job ``app``.

        Raises ValueError on a duplicate key, a bad leaf or unit count, or time going backwards.
        """
        if task_key in self._batches:
            raise ValueError(f"task {task_key} is already running")
        if not 0 <= leaf < self._running.size:
            raise ValueError(f"leaf position out of range: {leaf}")
        if units < 1:
            raise ValueError("units must be >= 1")
        self._advance(now)
        key = -1 - int(leaf) if app is None else int(app)
        self._batches[int(task_key)] = [int(leaf), float(now), int(units), key]
        self._running[leaf] += units
        self._job_units[key] = self._job_units.get(key, 0) + int(units)
        self._on_start(int(leaf), key, int(units), float(now))

    def record_more(self, task_key: int, units: int = 1) -> None:
        """The batch ``task_key`` grew by ``units`` at the current time. Raises KeyError."""
        batch = self._batches[task_key]
        batch[2] += units
        self._running[batch[0]] += units
        self._job_units[batch[3]] += units
        self._on_start(int(batch[0]), int(batch[3]), int(units), self._clock)

    def record_finish(self, task_key: int, now: float) -> None:
        """The batch ``task_key`` ended at ``now``. Raises KeyError, ValueError (time backwards)."""
        if task_key not in self._batches:
            raise KeyError(task_key)
        self._advance(now)
        leaf, start, units, app = self._batches.pop(task_key)
        self._running[leaf] -= units
        left = self._job_units[app] - units
        if left:
            self._job_units[app] = left
        else:
            del self._job_units[app]
        self._on_finish(int(leaf), int(app), int(units), float(start), float(now))

    def _on_start(self, leaf: int, app: int, units: int, now: float) -> None:
        """Hook: ``units`` more units for job ``app`` of ``leaf`` at ``now``."""

    def _on_finish(self, leaf: int, app: int, units: int, start: float, now: float) -> None:
        """Hook: a batch of ``units`` of job ``app`` started at ``start`` ended at ``now``."""

    # ------------------------------------------------------------- helpers

    def _mask(self, demanding: NDArray[np.bool_]) -> NDArray[np.bool_]:
        mask = np.asarray(demanding, dtype=bool)
        if mask.shape != self._running.shape:
            raise ValueError(f"demanding must have shape {self._running.shape}, got {mask.shape}")
        return mask

    def pick_oldest(self, head: Sequence[float]) -> int:
        """The leaf whose oldest eligible job arrived first (FIFO's rule); -1 if none."""
        ranks = np.asarray(head, dtype=np.float64)
        return argmin_first(ranks, np.isfinite(ranks))

    # --------------------------------------------------------------- state

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable snapshot, restored by :meth:`from_state`."""
        return {
            "version": 1,
            "policy": self.policy,
            "leaf_names": list(self.tree.leaf_names),
            "settings": [json_float(self.t_wait), self.history, json_float(self.history_length)],
            "capacity": json_float(self.capacity),
            "clock": json_float(self._clock),
            "batches": [[key, *b] for key, b in self._batches.items()],
            "extra": self._extra_state(),
        }

    def _extra_state(self) -> dict[str, Any]:
        return {}

    def _load_extra(self, extra: dict[str, Any]) -> None:
        """Restore what :meth:`_extra_state` saved."""

    @classmethod
    def from_state(cls, tree: QueueTree, state: dict[str, Any]) -> Any:
        """Rebuild an allocator saved by :meth:`to_state` for the same tree.

        Raises ValueError if the state belongs to another tree, policy or version.
        """
        if state.get("version") != 1 or state.get("policy") != cls.policy or list(state["leaf_names"]) != list(tree.leaf_names):
            raise ValueError("state does not belong to this policy, queue tree or version")
        t_wait, history, length = state["settings"]
        alloc = cls(tree, t_wait=from_json_float(t_wait, math.inf), history=history, history_length=from_json_float(length, math.inf))
        alloc.capacity = from_json_float(state["capacity"], math.inf)
        alloc._clock = from_json_float(state["clock"], -math.inf)
        for key, leaf, start, units, app in state["batches"]:
            alloc._batches[int(key)] = [int(leaf), float(start), int(units), int(app)]
            alloc._running[int(leaf)] += int(units)
            alloc._job_units[int(app)] = alloc._job_units.get(int(app), 0) + int(units)
        alloc._load_extra(dict(state.get("extra", {})))
        return alloc
