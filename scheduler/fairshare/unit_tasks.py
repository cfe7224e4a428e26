"""The paper's discrete model of fair share: unit tasks in unit time slots (paper 002,
Sec. 5.1 Table 1, Sec. 5.2.1 Fig. 2).

Every task needs one unit for one slot. At the start of slot t the tasks started
at t-1 have finished, the new tasks of slot t join each leaf's pending tasks
(unserved tasks carry over), and the ``capacity`` units are handed out one at a
time, each to the leaf the policy picks. A granted unit counts towards the
leaf's accumulated usage from the moment it is granted, so units handed out in
one slot spread over the leaves (this is how Table 1 works).

* :func:`unit_task_schedule` -- the public entry point on named queues
  (tests and external checks call it);
* :func:`allocate_rounds` -- the same on arrays, through
  :class:`scheduler.fairshare.allocator.FairShareAllocator` (the allocator the cluster
  uses), so the engine's allocator is what the worked examples check.

Pure Python / numpy; no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.allocator import FairShareAllocator
from scheduler.fairshare.fairness import QueueTree
from scheduler.fairshare.limits import apportion

__all__ = ["UNIT_TASK_POLICIES", "allocate_rounds", "tree_from_groups", "unit_task_schedule"]

# The policies of the discrete model: the fair-share allocators plus two baselines.
UNIT_TASK_POLICIES: tuple[str, ...] = ("fifo", "static", "mlrf", "ltrf", "hltrf")

GroupTree = Mapping[str, Any]  # group name -> children: leaf names, nested dicts, or a mix


def _walk(children: Any, parent: int, names: list[str], parents: list[int]) -> None:
    """Append the nodes below ``parent`` in the order they appear (depth first)."""
    if isinstance(children, str):
        items: list[Any] = [children]
    elif isinstance(children, Mapping):
        items = [{k: v} for k, v in children.items()]
    elif isinstance(children, Sequence):
        items = list(children)
    else:
        raise ValueError(f"children must be leaf names or nested dicts, got {type(children).__name__}")
    if not items:
        raise ValueError("a group must have at least one child")
    for item in items:
        if isinstance(item, str):
            names.append(item)
            parents.append(parent)
        elif isinstance(item, Mapping):
            for group, sub in item.items():
                if not isinstance(group, str):
                    raise ValueError(f"group names must be strings, got {group!r}")
                names.append(group)
                parents.append(parent)
                _walk(sub, len(names) - 1, names, parents)
        else:
            raise ValueError(f"a child must be a leaf name or a dict, got {item!r}")


def tree_from_groups(tree: GroupTree | Sequence[Any], weights: Mapping[str, float] | None = None) -> QueueTree:
    """A :class:`QueueTree` from nested groups, e.g. ``{"G1": ["A", "B"], "G2": ["C", "D"]}``.

    ``tree`` maps a group name to its children (leaf names, nested dicts for
    deeper levels, or a list mixing both); the top-level groups hang under an
    implicit root named ``"<root>"``. A plain list of leaf names is a flat
    tree. Leaves keep the order in which they appear (their leaf positions),
    so ties between leaves break in that order. ``weights`` maps any node name
    to its weight, default 1 (relative among siblings, paper 002 Sec. 5.2).

    Raises:
        ValueError: duplicate or empty names, an empty group, a weight that is
            not finite and > 0, or a weight for a name not in the tree.
    """
    names: list[str] = ["<root>"]
    parents: list[int] = [-1]
    _walk(tree, 0, names, parents)
    weights = dict(weights or {})
    unknown = set(weights) - set(names[1:])
    if unknown:
        raise ValueError(f"weights name nodes not in the tree: {sorted(unknown)}")
    for name, w in weights.items():
        if not (isinstance(w, (int, float)) and math.isfinite(w) and w > 0):
            raise ValueError(f"weight of {name!r} must be finite and > 0, got {w!r}")
    weight = [1.0] + [float(weights.get(n, 1.0)) for n in names[1:]]
    return QueueTree(tuple(names), tuple(parents), tuple(weight))


def _baseline_step(
    policy: str, pending: list[list[int]], capacity: int, quota: NDArray[np.int64]
) -> list[int]:
    """One slot of ``fifo`` (oldest pending task first; same slot: tree order) or
    ``static`` (each leaf at most its fixed partition, unused units idle).
    ``pending[k]`` lists leaf k's pending tasks by arrival slot, oldest first."""
    n = len(pending)
    got = [0] * n
    if policy == "static":
        for k in range(n):
            got[k] = min(int(quota[k]), len(pending[k]))
            del pending[k][: got[k]]
        return got
    for _ in range(capacity):
        heads = [(pending[k][0], k) for k in range(n) if pending[k]]
        if not heads:
            break
        _, k = min(heads)
        pending[k].pop(0)
        got[k] += 1
    return got


def _run_step(alloc: Any, pending: NDArray[np.int64], capacity: int, t: float, first_key: int) -> list[int]:
    """Hand out up to ``capacity`` unit tasks at time t; decrements ``pending``; returns keys."""
    keys: list[int] = []
    for key in range(first_key, first_key + capacity):
        leaf = alloc.pick_leaf(pending > 0, t)
        if leaf < 0:
            break
        alloc.record_start(key, leaf, t, expected_duration=1.0)
        pending[leaf] -= 1
        keys.append(key)
    return keys


def allocate_rounds(
    tree: QueueTree,
    capacity: int,
    new_demands: NDArray[np.int64],
    *,
    policy: str = "hltrf",
    t_wait: float = 0.0,
) -> NDArray[np.int64]:
    """Discrete-time driver for unit tasks lasting one time unit (paper 002, Table 1; Sec. 5.2.1).

    At each step t: the tasks started at t-1 finish, each leaf's pending
    demand grows by ``new_demands[t]`` (unserved demand carries over), then
    ``capacity`` units are handed out one by one: through
    :meth:`FairShareAllocator.pick_leaf` / :meth:`~FairShareAllocator.record_start`
    (expected duration 1) for ``mlrf``, ``ltrf`` and ``hltrf``; oldest task
    first for ``fifo``; at most the leaf's whole-unit partition
    (:func:`apportion`) for ``static``.

    Args:
        tree: queue hierarchy with L leaves.
        capacity: units available at every step (>= 0).
        new_demands: (T, L) int >= 0, new unit tasks arriving per step and leaf.
        policy: one of :data:`UNIT_TASK_POLICIES`.
        t_wait: H-LTRF starvation threshold in steps (>= 0, inf allowed).

    Returns:
        (T, L) int64 units allocated per step and leaf.

    Raises:
        ValueError: bad shape, negative demand or capacity, unknown policy, bad t_wait.
    """
    demands = np.asarray(new_demands)
    if demands.ndim != 2 or demands.shape[1] != len(tree.leaves):
        raise ValueError(f"new_demands must have shape (T, {len(tree.leaves)})")
    if capacity < 0 or (demands < 0).any() or (demands != np.round(demands)).any():
        raise ValueError("capacity and new_demands must be non-negative integers")
    if policy not in UNIT_TASK_POLICIES:
        raise ValueError(f"unknown policy {policy!r}; expected one of {UNIT_TASK_POLICIES}")
    out = np.zeros(demands.shape, dtype=np.int64)
    if policy in ("fifo", "static"):
        queues: list[list[int]] = [[] for _ in range(demands.shape[1])]
        quota = apportion(int(capacity), tree.leaf_fraction())
        for t in range(demands.shape[0]):
            for k in range(demands.shape[1]):
                queues[k].extend([t] * int(demands[t, k]))
            out[t] = _baseline_step(policy, queues, int(capacity), quota)
        return out
    alloc = FairShareAllocator(tree, policy=policy, t_wait=t_wait)
    pending = np.zeros(demands.shape[1], dtype=np.int64)
    keys: list[int] = []
    next_key = 0
    for t in range(demands.shape[0]):
        for key in keys:
            alloc.record_finish(key, float(t))
        before = pending + demands[t].astype(np.int64)
        pending = before.copy()
        keys = _run_step(alloc, pending, int(capacity), float(t), next_key)
        alloc.update_demand(pending > 0, float(t))  # as the cluster's shared stage does after handing out
        next_key += len(keys)
        out[t] = before - pending
    return out


def unit_task_schedule(
    capacity: int,
    tree: GroupTree | Sequence[Any],
    arrivals: Mapping[int, Mapping[str, int]],
    *,
    policy: str,
    t_wait: float = math.inf,
    weights: Mapping[str, float] | None = None,
    horizon: int,
) -> list[dict[str, int]]:
    """Units allocated per slot and leaf in the paper's unit-task model (paper 002,
    Sec. 5.1 Table 1, Alg. 1; Sec. 5.2.1-5.2.2 Fig. 2, Alg. 2).

    Args:
        capacity: units available in every slot (int >= 0).
        tree: group name -> children (leaf names, or nested dicts for deeper
            levels); a list of leaf names is a flat tree (see :func:`tree_from_groups`).
        arrivals: slot number (0 <= slot) -> {leaf name: new unit tasks >= 0};
            slots at or after ``horizon`` do not affect the result.
        policy: ``"mlrf"`` (smallest current units / weight), ``"ltrf"``
            (smallest accumulated usage / weight, Alg. 1), ``"hltrf"``
            (Alg. 2 with ``t_wait``), or the baselines ``"fifo"`` and
            ``"static"`` (fixed whole-unit partitions, no lending).
        t_wait: H-LTRF starvation threshold in slots: a demanding leaf with the
            lowest usage / fair fraction that has waited ``>= t_wait`` slots
            since its last grant (or since it began demanding) gets the unit
            directly; 0 = LTRF, ``math.inf`` = the naive hierarchy (Theorem 1).
        weights: node name -> weight (> 0), default 1 for every node.
        horizon: number of slots to simulate (int >= 0).

    Returns:
        ``horizon`` dicts, one per slot, mapping every leaf name (in tree
        order) to the units it was granted in that slot. Ties break in the
        order leaves appear in ``tree``.

    Raises:
        ValueError: a malformed tree or weights, an unknown leaf or policy, a
            negative or non-integer count, capacity or horizon, a negative or
            NaN ``t_wait``.
    """
    if isinstance(capacity, bool) or not isinstance(capacity, (int, np.integer)) or capacity < 0:
        raise ValueError(f"capacity must be an int >= 0, got {capacity!r}")
    if isinstance(horizon, bool) or not isinstance(horizon, (int, np.integer)) or horizon < 0:
        raise ValueError(f"horizon must be an int >= 0, got {horizon!r}")
    if isinstance(t_wait, bool) or not isinstance(t_wait, (int, float)) or math.isnan(t_wait) or t_wait < 0:
        raise ValueError(f"t_wait must be >= 0 (math.inf for never), got {t_wait!r}")
    qtree = tree_from_groups(tree, weights)
    leaves = qtree.leaf_names
    position = {name: k for k, name in enumerate(leaves)}
    new = np.zeros((int(horizon), len(leaves)), dtype=np.int64)
    for slot, row in arrivals.items():
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)) or slot < 0:
            raise ValueError(f"arrival slots must be ints >= 0, got {slot!r}")
        for leaf, count in row.items():
            if leaf not in position:
                raise ValueError(f"arrivals name {leaf!r}, which is not a leaf of the tree")
            if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
                raise ValueError(f"new tasks must be ints >= 0, got {count!r} for {leaf!r} at slot {slot}")
            if slot < horizon:
                new[slot, position[leaf]] += int(count)
    out = allocate_rounds(qtree, int(capacity), new, policy=policy, t_wait=float(t_wait))
    return [dict(zip(leaves, (int(x) for x in row), strict=True)) for row in out]
