"""Why a job waits, and the fair-share table (paper 002, Sec. 5; Slurm ``sshare``, Kueue visibility).

Read-only views of a :class:`~simulator.cluster.model.Cluster`:

* :func:`explain_wait` -- for one pending job and resource type: its position
  in its leaf queue, the jobs ahead of it there, at every level of the queue
  tree the sibling that is ahead of the job's queue and by how much
  accumulated usage per unit of weight (the H-LTRF walk, Alg. 2), how long
  its leaf has waited against ``T_wait``, and whether the starvation timeout
  will fire for it (Alg. 2, STARVATIONDETECTION);
* :func:`estimate_start` -- when the job's first task would start if no other
  job arrived and the Plan stayed: a copy of the cluster run forward (the
  real engine, so the estimate follows every policy exactly);
* :func:`fairshare_rows` -- per queue (every node of the tree): weight, fair
  fraction and share S_i (Eq. 2), accumulated usage as the policy weighs it
  and as measured (Eq. 1), fairness degree now (Eq. 3), demand, running.

Nothing here changes the cluster passed in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduler.fairshare.allocator import FairShareAllocator
from simulator.cluster.model import Cluster


@dataclass(frozen=True)
class Level:
    """One level of the H-LTRF walk from the root to the job's leaf (paper 002, Alg. 2).

    Attributes:
        queue: the node on the job's path at this level (its name).
        normalised: its accumulated usage / its fraction among siblings
            (resource-seconds; the walk picks the smallest).
        ahead: the demanding sibling the walk picks instead, or None if the
            job's node is the pick at this level.
        ahead_normalised: that sibling's usage / fraction among siblings.
        gap: ``normalised - ahead_normalised`` (>= 0; 0 if nothing is ahead).
    """

    queue: str
    normalised: float
    ahead: str | None
    ahead_normalised: float | None
    gap: float


@dataclass(frozen=True)
class WaitReason:
    """Why job ``job_id`` has pending tasks of type ``resource`` (see the module docstring).

    Attributes:
        position: 1-based rank of the job among its leaf's jobs with pending
            tasks of this type, in arrival order.
        jobs_ahead: ids of those older jobs.
        levels: the walk from the root's children down to the leaf.
        waited: seconds the leaf has waited since its last unit of this type
            or since it began demanding (0 if it is not demanding now).
        t_wait: the H-LTRF threshold (inf: off).
        lowest: the leaf has the lowest usage / fair fraction among demanding
            leaves, so the starvation timeout gives it the next unit once
            ``waited >= t_wait`` (Alg. 2, lines 17-18).
        running, share: units the leaf holds now and its fair share S_i.
        free: units of the type idle now.
        eligible: the job may start tasks of this type now (staged jobs wait
            for their earlier stages first).
    """

    job_id: int
    resource: int
    policy: str
    position: int
    jobs_ahead: tuple[int, ...]
    levels: tuple[Level, ...]
    waited: float
    t_wait: float
    lowest: bool
    running: int
    share: float
    free: int
    eligible: bool

    @property
    def blocking(self) -> Level | None:
        """The highest level at which another queue is ahead, or None."""
        return next((lv for lv in self.levels if lv.ahead is not None), None)


def explain_wait(cluster: Cluster, job_id: int, j: int) -> WaitReason:
    """Why the active job ``job_id`` waits for units of type ``j``.

    Raises:
        KeyError: the job is not active in the cluster.
        IndexError: no resource type ``j``.
    """
    job = cluster.job(job_id)
    if job is None or not job.active:
        raise KeyError(job_id)
    if not 0 <= j < cluster.m:
        raise IndexError(j)
    tree, leaf, now = cluster.tree, job.leaf, cluster.now
    alloc = cluster.allocator(j)
    demanding = cluster.shared_demanding(j)
    members = [jid for jid in cluster.placement.leaves[leaf] if (s := cluster.job(jid)) is not None and s.pending[j] > 0]
    ahead = tuple(members[: members.index(job_id)]) if job_id in members else tuple(members)
    levels: tuple[Level, ...] = ()
    waited, lowest = 0.0, False
    if isinstance(alloc, FairShareAllocator):  # the policies of paper 002 keep usage and starvation clocks
        usage = alloc.usage(now)
        levels = _walk(cluster, usage, demanding, leaf)
        waited = float(alloc.waiting(now)[leaf])
        norm = np.where(demanding, usage / tree.leaf_fraction(), np.inf)
        lowest = bool(demanding[leaf]) and float(norm[leaf]) <= float(norm.min()) * (1 + 1e-12)
    sample = cluster.sample()
    return WaitReason(
        job_id=job_id, resource=j, policy=cluster.policy, position=len(ahead) + 1, jobs_ahead=ahead, levels=levels,
        waited=waited, t_wait=cluster.t_wait, lowest=lowest, running=int(sample.running[leaf, j]),
        share=float(sample.share[leaf, j]), free=int(cluster.capacity[j]) - int(sample.running[:, j].sum()),
        eligible=job.eligible_pending(j, cluster.staged) > 0,
    )


def _walk(cluster: Cluster, usage: np.ndarray[Any, Any], demanding: np.ndarray[Any, Any], leaf: int) -> tuple[Level, ...]:
    """The naive H-LTRF walk (Sec. 5.2.1) compared level by level with the job's path."""
    tree = cluster.tree
    normalised = tree.aggregate(usage) / tree.sibling_fraction
    has_demand = tree.aggregate(demanding.astype(np.float64)) > 0
    path = list(reversed(tree.leaf_paths[leaf]))[1:]  # root's child ... leaf
    out = []
    for node in path:
        siblings = [s for s in tree.children[tree.parent[node]] if has_demand[s] or s == node]
        best = min(siblings, key=lambda s: (normalised[s], siblings.index(s)))
        mine = float(normalised[node])
        if best == node or math.isclose(normalised[best], mine, rel_tol=1e-12):
            out.append(Level(tree.names[node], mine, None, None, 0.0))
        else:
            out.append(Level(tree.names[node], mine, tree.names[best], float(normalised[best]), mine - float(normalised[best])))
    return tuple(out)


def estimate_start(cluster: Cluster, job_id: int, *, max_events: int = 20_000) -> float | None:
    """Simulated time at which the job's first task would start if no job arrived or
    left and the Plan stayed (a copy of the cluster run forward; the original is
    untouched). None if it would not start within ``max_events`` events.
    ``cluster.now`` for a job that has started already or starts at once.

    Raises:
        KeyError: the job is not known to the cluster.
    """
    before = cluster.job_state(job_id)
    started = sum(before[1]) + sum(before[2])
    if started:
        return cluster.now  # already running
    copy = Cluster.from_state(cluster.tree, cluster.to_state())
    copy.sample_interval = math.inf  # no fairness samples needed
    copy.simulate_external()  # a real cluster's tasks end, in the copy, when they are expected to
    for _ in range(max_events):
        try:
            _, running, done = copy.job_state(job_id)
        except KeyError:
            return copy.now  # it ran and left
        if sum(running) + sum(done) > started:
            return copy.now
        t = copy.next_event_time()
        if math.isinf(t):
            copy.advance(copy.now)
            _, running, done = copy.job_state(job_id)
            return copy.now if sum(running) + sum(done) > started else None
        copy.advance(t)
    return None


def fairshare_rows(cluster: Cluster, j: int) -> list[dict[str, Any]]:
    """One row per queue (tree order, depth-first) for type ``j``: ``queue``, ``depth``,
    ``leaf``, ``weight``, ``fraction`` (fair fraction of the cluster), ``share`` (S_i,
    units), ``usage`` (as the policy weighs it: history mode applied, running tasks
    at their estimate), ``measured`` (exact integral, Eq. 1), ``rho`` (Eq. 3; groups:
    sum of usage over sum of entitlement), ``demand`` and ``running`` (units)."""
    tree = cluster.tree
    sample = cluster.sample()
    alloc = cluster.allocator(j)
    weighed = alloc.usage(cluster.now) if hasattr(alloc, "usage") else sample.usage[:, j]
    agg = {
        "usage": tree.aggregate(np.asarray(weighed, dtype=np.float64)),
        "measured": tree.aggregate(sample.usage[:, j]),
        "entitled": tree.aggregate(sample.entitled[:, j]),
        "demand": tree.aggregate(sample.demand[:, j].astype(np.float64)),
        "running": tree.aggregate(sample.running[:, j].astype(np.float64)),
    }
    fraction = tree.node_fraction()
    rows = []
    for node, depth in _depth_first(cluster):
        ent, used = float(agg["entitled"][node]), float(agg["measured"][node])
        rho = used / ent if ent > 0 else (math.inf if used > 0 else 1.0)
        rows.append({
            "queue": tree.names[node], "depth": depth, "leaf": not tree.children[node], "weight": tree.weight[node],
            "fraction": float(fraction[node]), "share": float(fraction[node]) * float(cluster.capacity[j]),
            "usage": float(agg["usage"][node]), "measured": used, "rho": rho,
            "demand": int(agg["demand"][node]), "running": int(agg["running"][node]),
            "min_share": tree.min_fraction[node], "max_share": tree.max_fraction[node],
        })
    return rows


def _depth_first(cluster: Cluster) -> list[tuple[int, int]]:
    tree, out = cluster.tree, []
    stack = [(tree.root, 0)]
    while stack:
        node, depth = stack.pop()
        out.append((node, depth))
        stack.extend((c, depth + 1) for c in reversed(tree.children[node]))
    return out
