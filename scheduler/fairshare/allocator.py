"""Long-term fair share: MLRF, LTRF and H-LTRF (paper 002, Sections 4-6).

A :class:`FairShareAllocator` decides which leaf queue of a
:class:`~scheduler.fairshare.fairness.QueueTree` gets the next free unit of ONE
resource type:

* ``"static"`` -- static partitioning: each leaf at most its whole-unit share
  of the capacity, nothing lent (the paper's non-shared baseline, Fig. 7);
* ``"mlrf"``  -- memoryless: smallest *current* units / fair fraction (the
  YARN/Mesos baseline; paper 002, Sec. 5.1, Table 1a);
* ``"ltrf"``  -- smallest *accumulated* usage / fair fraction over all leaves
  (Sec. 5.1, Alg. 1; Sec. 6.1, Eq. 6);
* ``"hltrf"`` -- starvation-aware hierarchical LTRF (Sec. 5.2.2, Alg. 2).

Multi-resource extension (the paper treats a single resource): the caller
keeps ONE allocator per resource type (map slots, reduce slots, ...). Usage,
Q estimates and starvation clocks are per resource type, and long-term
fairness holds for each type separately.

Deliberate deviations from the paper:

* ties are broken deterministically (lowest leaf position), not randomly;
* the starvation test is ``wait >= t_wait`` so ``t_wait = 0`` is exactly
  LTRF and ``t_wait = inf`` exactly the naive hierarchy (Theorem 1); as in
  Alg. 2 (lines 17-18) only the lowest-usage demanding leaf can be starved;
* a task's expected duration counts toward usage as soon as it starts, so
  several units handed out at one instant spread (how Table 1 works).

Every policy honours the queues' minimum and maximum shares (Sec. 6.2.3) and
one of the named history modes (``forever``, ``rounds`` of length L,
exponential ``decay`` with a half-life; :mod:`scheduler.fairshare.limits`).

The queue tree and the fairness metrics (Eqs. 1-5) live in
:mod:`scheduler.fairshare.fairness`; the paper's discrete unit-task model (Sec. 5) in
:mod:`scheduler.fairshare.unit_tasks`.
"""

from __future__ import annotations

import math
from functools import cached_property
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import (
    QueueTree,
)
from scheduler.fairshare.limits import check_history, decayed_integral, limit_masks, room, static_quota
from scheduler.fairshare.quantum import AppQuanta, TreeQuanta
from scheduler.fairshare.running import RunningTasks, from_json_float, json_float
from scheduler.fairshare.selection import SMALL, SmallTree, argmin_first, argmin_ratio_small, descend, descend_small

__all__ = ["POLICIES", "FairShareAllocator"]

POLICIES: tuple[str, ...] = ("static", "mlrf", "ltrf", "hltrf")
_PLAIN_TASKS = 256  # up to this many running batches, usage_list sums in plain Python

class FairShareAllocator:
    """Which leaf queue gets the next free unit of one resource type.

    Owns, per leaf, the accumulated usage (resource-seconds), the running
    tasks, the adaptive quantum Q (paper 002, Sec. 6.2.1) and the starvation
    clocks of H-LTRF (Sec. 5.2.2, Alg. 2). One allocator per resource type.
    Time (``now``, in seconds or simulation steps) must not go backwards
    across mutating calls: ValueError otherwise.

    Args:
        tree: the queue hierarchy.
        policy: one of :data:`POLICIES`.
        t_wait: H-LTRF starvation threshold T_wait >= 0 (may be ``math.inf``).
        initial_q: root quantum Q_0 > 0, the assumed duration of a task of
            unknown length before any task has finished (Sec. 6.2.1).
        history: how much of the past usage counts, one of
            :data:`~scheduler.fairshare.limits.HISTORY_MODES` ("forever",
            "rounds", "decay"; Sec. 6.2.2).
        history_length: the round length L or the decay half-life, seconds
            (finite, > 0; unused by "forever").

    ``capacity`` (units of this type, default inf) is set by the owner: static
    quotas and the tree's min / max shares are fractions of it.
    """

    def __init__(
        self, tree: QueueTree, *, policy: str = "hltrf", t_wait: float = 0.0, initial_q: float = 1.0,
        history: str = "forever", history_length: float = math.inf,
    ) -> None:
        if not (math.isfinite(initial_q) and initial_q > 0):
            raise ValueError("initial_q must be finite and > 0")
        check_history(history, history_length)
        self.history, self.history_length = history, float(history_length)
        self.capacity = math.inf
        self.tree = tree
        self.policy = policy
        self.t_wait = t_wait
        self.initial_q = float(initial_q)
        n_leaves = len(tree.leaves)
        self._frac = tree.leaf_fraction()
        self._frac_list: list[float] = [float(x) for x in self._frac]
        self._n_leaves = n_leaves
        # per leaf, plain floats (the per-unit path reads and writes single entries): finished usage
        # inside the current round, the last allocation's time, the time it became demanding (NaN: not)
        self._finished: list[float] = [0.0] * n_leaves
        self._apps = AppQuanta(n_leaves)  # application and leaf quanta from finished tasks, all rounds
        self._q = TreeQuanta(tree, self.initial_q)  # Q per node (Fig. 4), brought up to date when read
        self._tasks = RunningTasks()
        self._last_alloc: list[float] = [-math.inf] * n_leaves
        self._since: list[float] = [math.nan] * n_leaves
        self._since_mask: tuple[bool, ...] | None = None  # the demand _since last reflected
        self._round_start = -math.inf
        self._clock = -math.inf

    @property
    def policy(self) -> str:
        """Allocation policy, one of :data:`POLICIES` (ValueError otherwise)."""
        return self._policy

    @policy.setter
    def policy(self, value: str) -> None:
        if value not in POLICIES:
            raise ValueError(f"unknown policy {value!r}; expected one of {POLICIES}")
        self._policy = value

    @property
    def t_wait(self) -> float:
        """H-LTRF starvation threshold T_wait >= 0, ``math.inf`` allowed (ValueError otherwise)."""
        return self._t_wait

    @t_wait.setter
    def t_wait(self, value: float) -> None:
        if math.isnan(value) or value < 0:
            raise ValueError("t_wait must be >= 0")
        self._t_wait = float(value)

    def _advance(self, now: float) -> None:
        if now == self._clock > -math.inf:  # the same instant again: nothing moves (NaN is never equal)
            return
        if math.isnan(now) or now < self._clock:
            raise ValueError(f"time went backwards: {now} < {self._clock}")
        if self.history == "rounds":  # windows [kL, (k+1)L): a new one forgets the last
            start = math.floor(now / self.history_length) * self.history_length
            if start > self._round_start:
                self._finished = [0.0] * self._n_leaves
                self._round_start = start
        elif self.history == "decay" and now > self._clock > -math.inf:
            factor = 2.0 ** (-(now - self._clock) / self.history_length)
            self._finished = [f * factor for f in self._finished]
        self._clock = float(now)

    @property
    def work_conserving(self) -> bool:
        """False under static partitioning or share limits: a demanding leaf may
        then be refused a free unit (``pick_leaf`` returns -1, see :meth:`room`)."""
        return self._policy != "static" and not self.tree.has_limits

    def room(self, leaf: int) -> int:
        """More units leaf position ``leaf`` may take now: its static quota and the
        maximum shares on its path (paper 002, Sec. 6.2.3); large if unlimited."""
        running = self.running()
        out = room(self.tree, running, self.capacity, leaf)
        if self._policy == "static":
            out = min(out, int(static_quota(self.tree, self.capacity)[leaf] - running[leaf]))
        return max(out, 0)

    def _limit(self, mask: NDArray[np.bool_]) -> NDArray[np.bool_]:
        """Demanding leaves the limits let in: not at a maximum share (or static
        quota); only those below a minimum share if there are any (Sec. 6.2.3)."""
        running = self.running()
        allowed, needy = limit_masks(self.tree, running, self.capacity)
        if self._policy == "static":
            allowed &= running < static_quota(self.tree, self.capacity)
        mask = mask & allowed
        return mask & needy if (mask & needy).any() else mask

    def _mask(self, demanding: NDArray[np.bool_]) -> NDArray[np.bool_]:
        mask = np.asarray(demanding, dtype=bool)
        if mask.shape != self._frac.shape:
            raise ValueError(f"demanding must have shape {self._frac.shape}, got {mask.shape}")
        return mask

    def update_demand(self, demanding: NDArray[np.bool_], now: float) -> None:
        """Tell the starvation clocks which leaves have pending tasks at ``now``.

        ``pick_leaf`` calls this itself; call it also when demand changes
        while no unit is free, so a leaf's wait starts when it really began
        demanding (Alg. 2, lines 14-16: a leaf without pending tasks does not wait).
        Raises ValueError on a wrong shape or time going backwards.
        """
        self.update_demand_flags(self._mask(demanding).tolist(), now)

    def update_demand_flags(self, demanding: list[bool], now: float) -> None:
        """:meth:`update_demand` on (L,) plain bools (the cluster's shared stage keeps them so).
        Raises ValueError on a wrong length or time going backwards."""
        if len(demanding) != self._n_leaves:
            raise ValueError(f"demanding must have {self._n_leaves} entries, got {len(demanding)}")
        if now != self._clock or now == -math.inf:  # _advance's own early return, without the call
            self._advance(now)
        key = tuple(demanding)
        if key == self._since_mask:
            return  # the same demanding leaves as last time: their clocks run on
        self._since_mask = key
        since = self._since
        for leaf, flag in enumerate(demanding):
            if not flag:
                since[leaf] = math.nan
            elif math.isnan(since[leaf]):
                since[leaf] = now

    def waiting(self, now: float) -> NDArray[np.float64]:
        """(L,) how long each demanding leaf has waited at ``now``: now minus the later
        of its last allocation and the time it became demanding; 0 if not demanding."""
        since = np.array(self._since)
        ref = np.fmax(np.array(self._last_alloc), since)
        return np.where(np.isnan(since), 0.0, now - ref)

    uses_arrival_order = False  # pick_leaf ignores ``head`` (FifoAllocator uses it)
    tracks_demand = True  # update_demand starts and stops the starvation clocks
    job_level = False  # ranks leaf queues (Tiresias and Themis rank jobs: scheduler.published)

    def pick_leaf(self, demanding: NDArray[np.bool_], now: float, head: NDArray[np.float64] | None = None) -> int:
        """Leaf position to receive the next free unit at ``now``, or -1 if none demands.

        ``demanding``: (L,) bool, leaves with pending tasks of this resource type;
        ``head`` is ignored (the FIFO allocator's arrival ranks).
        Does not allocate: call :meth:`record_start` when the unit is given.
        MLRF / LTRF: paper 002, Sec. 5.1, Alg. 1 (line 6), Eq. 6. H-LTRF:
        Sec. 5.2.2, Alg. 2 -- the demanding leaf with the lowest usage /
        fair fraction gets the unit directly if it has waited >= T_wait
        (STARVATIONDETECTION), else the naive top-down walk
        (HIERARCHALLONGTERMALLOC). Raises ValueError on a wrong shape or
        time going backwards.
        """
        mask = self._mask(demanding)
        self.update_demand_flags(mask.tolist(), now)
        if not self.work_conserving:
            mask = self._limit(mask)
        if self._policy in ("mlrf", "static"):
            return argmin_first(self.running() / self._frac, mask)
        usage = self.usage(now)
        lowest = argmin_first(usage / self._frac, mask)
        if self._policy == "ltrf" or lowest < 0:
            return lowest
        waited = now - max(self._last_alloc[lowest], self._since[lowest])
        if waited >= self._t_wait:
            return lowest
        return self._descend(usage, mask)

    def pick_leaf_flags(self, demanding: list[bool], now: float) -> int:
        """:meth:`pick_leaf` on (L,) plain bools: the same leaf, in plain Python for LTRF and H-LTRF on
        a tree of at most ``SMALL`` nodes without limits (:meth:`usage_list`, ``argmin_first_small``,
        :func:`descend_small`: the same floats in the same order), else through :meth:`pick_leaf`.
        Raises ValueError on a wrong length or time going backwards."""
        self.update_demand_flags(demanding, now)
        if self._policy not in ("ltrf", "hltrf") or not self._plain_tree:
            return self.pick_leaf(np.array(demanding, dtype=np.bool_), now)
        usage = self.usage_list(now)
        lowest = argmin_ratio_small(usage, self._frac_list, demanding)
        if lowest is None:  # no demand, or a value that is not finite: numpy's edge cases
            return self.pick_leaf(np.array(demanding, dtype=np.bool_), now)
        if self._policy == "ltrf":
            return lowest
        waited = now - max(self._last_alloc[lowest], self._since[lowest])
        if waited >= self._t_wait:
            return lowest
        return descend_small(self._small_tree, usage, demanding)

    def _descend(self, usage: NDArray[np.float64], mask: NDArray[np.bool_]) -> int:
        """Naive hierarchical LTRF (Sec. 5.2.1): :func:`~scheduler.fairshare.selection.descend`."""
        return descend(self.tree, self._children, usage, mask, small=self._small_tree if len(self.tree.names) <= SMALL else None)

    @cached_property
    def _plain_tree(self) -> bool:  # pick_leaf_flags' plain path: no limits, no fraction underflowed to 0
        return len(self.tree.names) <= SMALL and not self.tree.has_limits and 0.0 not in self._frac_list

    @cached_property
    def _small_tree(self) -> SmallTree:
        return SmallTree.of(self.tree)

    @cached_property
    def _children(self) -> tuple[NDArray[np.int64], ...]:
        return tuple(np.asarray(k, dtype=np.int64) for k in self.tree.children)

    def record_start(
        self, task_key: int, leaf: int, now: float, expected_duration: float | None = None, units: int = 1, app: int | None = None
    ) -> None:
        """``units`` units were given to leaf position ``leaf`` at ``now`` for the
        batch of tasks ``task_key`` (one task by default).

        ``expected_duration`` (>= 0, finite) counts toward usage at once;
        None = unknown, estimated by the adaptive quantum Q (Sec. 6.2.1) of its
        application ``app`` (>= 0, e.g. the job id; its leaf's Q until one of
        its tasks finished) or, without ``app``, of its leaf.
        Raises ValueError on a duplicate key, a bad leaf, duration or unit
        count, an application seen in another leaf, or time going backwards.
        """
        if task_key in self._tasks.slot:
            raise ValueError(f"task {task_key} is already running")
        if not 0 <= leaf < self._n_leaves:
            raise ValueError(f"leaf position out of range: {leaf}")
        if units < 1:
            raise ValueError("units must be >= 1")
        exp = math.nan if expected_duration is None else float(expected_duration)
        if expected_duration is not None and not (math.isfinite(exp) and exp >= 0):
            raise ValueError("expected_duration must be finite and >= 0")
        if app is not None and app < 0:
            raise ValueError("application keys must be >= 0")
        if now != self._clock or now == -math.inf:  # _advance's own early return, without the call
            self._advance(now)
        leaf = int(leaf)
        key = AppQuanta.key(app, leaf)
        self._apps.start(key, leaf)
        self._tasks.add(int(task_key), leaf, float(now), exp, int(units), key)
        self._last_alloc[leaf] = now

    def record_more(self, task_key: int, units: int = 1) -> None:
        """Grow the batch ``task_key`` started at the current time by ``units`` units
        (the same leaf got the next unit too). Raises KeyError if not running."""
        self._tasks.grow(task_key, units)

    def record_finish(self, task_key: int, now: float) -> None:
        """Task ``task_key`` ended at ``now``: its usage becomes the actual duration
        (inside the current round) and Q is re-estimated bottom-up (Sec. 6.2.1).
        Raises KeyError if the task is not running, ValueError if time goes backwards.
        """
        if task_key not in self._tasks.slot:
            raise KeyError(task_key)
        if now != self._clock or now == -math.inf:  # _advance's own early return, without the call
            self._advance(now)
        leaf, start, units, app = self._tasks.pop(task_key)
        if self.history == "decay":
            self._finished[leaf] += units * float(decayed_integral(now - start, self.history_length))
        else:
            self._finished[leaf] += units * max(0.0, now - max(start, self._round_start))
        self._apps.finish(app, now - start, int(units))
        self._q.mark(leaf)  # Q is brought up to date when read: only unknown durations read it

    def quantum(self) -> NDArray[np.float64]:
        """(N,) assumed task duration Q per node (paper 002, Sec. 6.2.1, Fig. 4).

        Bottom-up: an application's Q is the mean duration of its finished
        tasks, a leaf's Q the mean of its applications' Q
        (:mod:`scheduler.fairshare.quantum`); a group's Q is the mean Q of its children that have finished tasks
        below them. Top-down: a node with no finished task below it inherits
        its parent's Q, the root falling back to ``initial_q``. Q persists
        across rounds (it estimates durations, not history).
        """
        return self._q.values(self._apps)

    def usage(self, now: float) -> NDArray[np.float64]:
        """(L,) estimated accumulated usage per leaf in resource-seconds at ``now``.

        Finished tasks count their actual duration; a running task counts
        max(expected duration or Q, elapsed) (Sec. 6.2.1); only the part
        after the current round's start counts (Sec. 6.2.2, time windows).
        """
        t = self._tasks
        if not len(t):
            return np.array(self._finished)
        leaf, start, exp, units, apps = t.arrays()
        if not t.unknown and self.history != "decay" and self._round_start == -math.inf:
            # every duration known, no round begun: max(est, elapsed) is what counts, bit for bit the
            # general case below (there, nothing lies before the round and no estimate is negative)
            held = np.maximum(exp, now - start)
            return np.array(self._finished) + np.bincount(leaf, weights=held * units, minlength=self._n_leaves)
        out = np.array(self._finished)
        unknown = np.isnan(exp)
        est = exp
        if unknown.any():  # an application's own Q, else its leaf's (Sec. 6.2.1, Fig. 4)
            est = np.where(unknown, self._q.values(self._apps)[self._leaf_nodes][leaf], exp)
            if self._apps.named:  # without named applications a leaf's Q is its only one's
                idx = np.flatnonzero(unknown)
                est[idx] = self._apps.estimates(apps[idx], est[idx])
        if self.history == "decay":  # the past decayed, the rest of the estimate in full
            held = decayed_integral(now - start, self.history_length) + np.maximum(est - (now - start), 0.0)
        else:
            before_round = np.maximum(self._round_start - start, 0.0)
            held = np.maximum(np.maximum(est, now - start) - before_round, 0.0)
        out += np.bincount(leaf, weights=held * units, minlength=out.size)
        return out

    def usage_list(self, now: float) -> list[float]:
        """:meth:`usage` as a list, the same floats bit for bit; plain Python when every duration is
        known and no round or decay applies (the simulator's case), numpy otherwise."""
        t = self._tasks
        if t.unknown or self.history == "decay" or self._round_start != -math.inf or len(t) > _PLAIN_TASKS:
            out: list[float] = self.usage(now).tolist()
            return out
        if not len(t):
            return self._finished[:]
        return t.held(now, self._n_leaves, self._finished)

    @cached_property
    def _leaf_nodes(self) -> NDArray[np.int64]:
        return np.asarray(self.tree.leaves, dtype=np.int64)

    def node_usage(self, now: float) -> NDArray[np.float64]:
        """(N,) estimated usage per tree node; a group's is the sum of its children's
        (paper 002, Sec. 5.2.1; Alg. 2, U(G_i))."""
        return self.tree.aggregate(self.usage(now))

    def running(self) -> NDArray[np.int64]:
        """(L,) units currently held per leaf (what MLRF balances)."""
        t = self._tasks
        return np.bincount(np.array(t.leaf, dtype=np.int64), weights=np.array(t.units, dtype=np.float64),
                           minlength=self._frac.size).astype(np.int64)  # fmt: skip

    def reset_round(self, now: float) -> None:
        """Start a new round (time window) at ``now``: accumulated usage restarts from 0
        (paper 002, Sec. 6.2.2). Running tasks count only their part after ``now``;
        starvation clocks and Q are kept. Raises ValueError if time goes backwards."""
        self._advance(now)
        self._finished = [0.0] * self._n_leaves
        self._round_start = float(now)

    def to_state(self) -> dict[str, Any]:
        """JSON-serialisable snapshot (plain lists, floats, ints; inf as ``"inf"``,
        -inf / NaN as None), restored by :meth:`from_state`."""
        n = len(self._tasks)
        t = self._tasks
        return {
            "version": 1,
            "leaf_names": list(self.tree.leaf_names),
            "policy": self._policy,
            "t_wait": json_float(self._t_wait),
            "initial_q": self.initial_q,
            "history": [self.history, json_float(self.history_length)],
            "capacity": json_float(self.capacity),
            "clock": json_float(self._clock),
            "round_start": json_float(self._round_start),
            "finished": [float(x) for x in self._finished],
            "quanta": self._apps.to_state(),
            "last_alloc": [json_float(x) for x in self._last_alloc],
            "since": [json_float(x) for x in self._since],
            "running": [
                [int(t.keys[i]), int(t.leaf[i]), float(t.start[i]), json_float(float(t.expected[i])), int(t.units[i]), int(t.app[i])]
                for i in range(n)
            ],
        }

    @classmethod
    def from_state(cls, tree: QueueTree, state: dict[str, Any]) -> FairShareAllocator:
        """Rebuild an allocator saved by :meth:`to_state` for the same tree.

        Raises ValueError if the state does not match the tree's leaves, has a
        wrong length or version; KeyError if a field is missing.
        """
        if state.get("version") != 1 or list(state["leaf_names"]) != list(tree.leaf_names):
            raise ValueError("state does not belong to this queue tree or version")
        alloc = cls(
            tree,
            policy=state["policy"],
            t_wait=from_json_float(state["t_wait"], math.inf),
            initial_q=float(state["initial_q"]),
            history=state.get("history", ["forever"])[0],
            history_length=from_json_float(state.get("history", [None, "inf"])[1], math.inf),
        )
        alloc.capacity = from_json_float(state.get("capacity", "inf"), math.inf)
        n_leaves = len(tree.leaves)
        fields = ("finished", "last_alloc", "since")
        if any(len(state[f]) != n_leaves for f in fields):
            raise ValueError("state arrays do not match the number of leaves")
        alloc._clock = from_json_float(state["clock"], -math.inf)
        alloc._round_start = from_json_float(state["round_start"], -math.inf)
        alloc._finished = [float(x) for x in state["finished"]]
        alloc._apps = AppQuanta.from_state(n_leaves, state)
        for leaf, count in enumerate(alloc._apps.leaf_n):
            if count:
                alloc._q.refresh(leaf, alloc._apps)
        alloc._last_alloc = [from_json_float(x, -math.inf) for x in state["last_alloc"]]
        alloc._since = [from_json_float(x, math.nan) for x in state["since"]]
        for key, leaf, start, exp, *rest in state["running"]:
            units = int(rest[0]) if rest else 1
            app = int(rest[1]) if len(rest) > 1 else AppQuanta.key(None, int(leaf))
            alloc._tasks.add(int(key), int(leaf), float(start), from_json_float(exp, math.nan), units, app)
            if "quanta" not in state:  # an older state: its running tasks belong to the leaf's pseudo-application
                alloc._apps.start(app, int(leaf))
        return alloc

