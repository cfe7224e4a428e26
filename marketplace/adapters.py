"""ORM rows <-> scheduler/simulator data: the only Django <-> numpy seam."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from marketplace.models import AllocationSnapshot, Job, JobShare, JobWork, Market, Queue, ResourceType
from scheduler.fairshare import QueueTree
from scheduler.types import MarketSnapshot
from simulator.cluster import JobSpec


@dataclass(frozen=True)
class TreeMap:
    """A market's queue tree and the mapping between leaf positions and queue ids."""

    tree: QueueTree
    leaf_queue_ids: tuple[int, ...]  # leaf position -> Queue.pk
    signature: str  # changes whenever the hierarchy or a weight changes

    def leaf_position(self, queue_id: int) -> int:
        return self.leaf_queue_ids.index(queue_id)


def queue_tree(market: Market) -> TreeMap:
    """Build the H-LTRF tree of the market's queues (node names are queue paths).

    Raises:
        ValueError: no queues, or the hierarchy is not a single rooted tree.
    """
    queues = list(Queue.objects.filter(market=market).order_by("id"))
    if not queues:
        raise ValueError(f"market {market.pk} has no queues")
    index = {q.pk: i for i, q in enumerate(queues)}
    by_id = {q.pk: q for q in queues}

    def path(q: Queue) -> str:
        parts = []
        node: Queue | None = q
        while node is not None:
            parts.append(node.name)
            node = by_id.get(node.parent_id) if node.parent_id else None
        return ".".join(reversed(parts))

    tree = QueueTree(
        names=tuple(path(q) for q in queues),
        parent=tuple(index[q.parent_id] if q.parent_id else -1 for q in queues),
        weight=tuple(float(q.weight) for q in queues),
    )
    tree.validate()
    leaf_ids = tuple(queues[i].pk for i in tree.leaves)
    signature = ";".join(f"{q.pk}:{q.parent_id}:{q.weight}" for q in queues)
    return TreeMap(tree=tree, leaf_queue_ids=leaf_ids, signature=signature)


def resource_types(market: Market) -> list[ResourceType]:
    """The market's resource types in stage order (the column order of every (n, m) array)."""
    return list(ResourceType.objects.filter(market=market).order_by("stage", "id"))


def job_spec(job: Job, works: list[JobWork], types: list[ResourceType], tree_map: TreeMap, now: float) -> JobSpec:
    """A job as the cluster simulator sees it (tasks and durations in resource-type order)."""
    by_type = {w.resource_type_id: w for w in works}
    tasks = tuple(by_type[t.pk].tasks if t.pk in by_type else 0 for t in types)
    durations = tuple(float(by_type[t.pk].task_duration) if t.pk in by_type else 1.0 for t in types)
    return JobSpec(
        job_id=job.pk,
        leaf=tree_map.leaf_position(job.queue_id),
        tasks=tasks,
        task_duration=durations,
        submit_time=max(job.sim_submit_time, now),
    )


def market_snapshot(market: Market, tree_map: TreeMap, types: list[ResourceType]) -> MarketSnapshot:
    """The active jobs as the auction's input (paper 000, Sec. 3), with a warm start.

    A job demands type j while it has pending or running tasks there; rows are
    ordered by job id.
    """
    # values_list, not model instances: this runs on every clearing.
    jobs = list(Job.objects.filter(market=market, status__in=Job.ACTIVE).order_by("id").values_list("id", "queue_id", "budget", "utility"))
    col = {t.pk: j for j, t in enumerate(types)}
    n, m = len(jobs), len(types)
    row = {job_id: i for i, (job_id, *_rest) in enumerate(jobs)}
    weights = np.zeros((n, m))
    demand = np.zeros((n, m), dtype=bool)
    works = JobWork.objects.filter(job__market=market, job__status__in=Job.ACTIVE).values_list("job_id", "resource_type_id", "weight", "pending", "running")
    for job_id, rt_id, weight, pending, running in works:
        i, j = row[job_id], col[rt_id]
        weights[i, j] = weight
        demand[i, j] = (pending + running) > 0
    return MarketSnapshot(
        job_ids=np.array([j[0] for j in jobs], dtype=np.int64),
        group=np.array([tree_map.leaf_position(j[1]) for j in jobs], dtype=np.int64),
        budgets=np.array([float(j[2]) for j in jobs]),
        weights=weights,
        utility=tuple(j[3] for j in jobs),
        demand=demand,
        capacity=np.array([float(t.capacity) for t in types]),
        alpha=market.alpha,
        tol=market.auction_tolerance,
        max_rounds=market.auction_max_rounds,
        warm_start=_warm_start(market, row, col, (n, m)),
    )


def _warm_start(market: Market, row: dict[int, int], col: dict[int, int], shape: tuple[int, int]) -> np.ndarray | None:
    """Sub-budgets of the latest clearing for jobs still active; NaN rows for new jobs."""
    latest = AllocationSnapshot.objects.filter(market=market).order_by("-id").first()
    if latest is None or not row:
        return None
    warm = np.full(shape, np.nan)
    seen = False
    for job_id, rt_id, b in JobShare.objects.filter(snapshot=latest).values_list("job_id", "resource_type_id", "sub_budget"):
        if job_id in row:
            warm[row[job_id], col[rt_id]] = b
            seen = True
    # A job that has since lost demand on a type keeps no sub-budget there.
    return warm if seen else None


def latest_shares(market: Market, types: list[ResourceType]) -> dict[int, np.ndarray]:
    """job id -> (m,) within-queue shares of the latest clearing."""
    latest = AllocationSnapshot.objects.filter(market=market).order_by("-id").first()
    if latest is None:
        return {}
    col = {t.pk: j for j, t in enumerate(types)}
    shares: dict[int, np.ndarray] = {}
    for job_id, rt_id, s in JobShare.objects.filter(snapshot=latest).values_list("job_id", "resource_type_id", "share"):
        shares.setdefault(job_id, np.zeros(len(types)))[col[rt_id]] = s
    return shares
