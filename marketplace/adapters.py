"""ORM rows <-> scheduler/simulator data: the only Django <-> numpy seam."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from marketplace.models import AllocationSnapshot, Job, JobWork, Market, Queue, ResourceType
from marketplace.models.queues import dotted_paths
from scheduler.fairshare import QueueTree
from scheduler.plan import Plan
from simulator.market import Bid, MarketConfig
from simulator.records import JobSpec


@dataclass(frozen=True)
class TreeMap:
    """A market's queue tree and the mapping between leaf positions and queue ids."""

    tree: QueueTree
    leaf_queue_ids: tuple[int, ...]  # leaf position -> Queue.pk
    signature: str  # changes whenever the hierarchy or a weight changes

    def leaf_position(self, queue_id: int) -> int:
        return self.leaf_queue_ids.index(queue_id)


def queue_tree(market: Market | int) -> TreeMap:
    """Build the H-LTRF tree of the market's queues (node names are queue paths).

    Raises:
        ValueError: no queues, or the hierarchy is not a single rooted tree.
    """
    market_id = market if isinstance(market, int) else market.pk
    rows = list(Queue.objects.filter(market_id=market_id).order_by("id").values_list("id", "name", "parent_id", "weight"))
    if not rows:
        raise ValueError(f"market {market_id} has no queues")
    index = {pk: i for i, (pk, *_rest) in enumerate(rows)}
    paths = dotted_paths((pk, name, parent) for pk, name, parent, _ in rows)
    tree = QueueTree(
        names=tuple(paths[pk] for pk, *_rest in rows),
        parent=tuple(index[parent] if parent else -1 for _, _, parent, _ in rows),
        weight=tuple(float(w) for *_rest, w in rows),
    )
    tree.validate()
    leaf_ids = tuple(rows[i][0] for i in tree.leaves)
    signature = ";".join(f"{pk}:{parent}:{weight}" for pk, _, parent, weight in rows)
    return TreeMap(tree=tree, leaf_queue_ids=leaf_ids, signature=signature)


def resource_types(market: Market | int) -> list[ResourceType]:
    """The market's resource types in stage order (the column order of every (n, m) array)."""
    market_id = market if isinstance(market, int) else market.pk
    return list(ResourceType.objects.filter(market_id=market_id).order_by("stage", "id"))


def market_config(market: Market) -> MarketConfig:
    """The engine's configuration from the market row (names validated by the registries)."""
    return MarketConfig(
        mechanism=market.mechanism, fairshare=market.fairshare_policy, dispatch=market.dispatch_mode,
        alpha=market.alpha, tol=market.auction_tolerance, max_rounds=market.auction_max_rounds, t_wait=market.t_wait,
    )


JOB_FIELDS = ("id", "queue_id", "budget", "utility", "sim_submit_time")  # what job_specs reads of a Job


def job_specs(jobs: Iterable[Job], types: list[ResourceType], tree_map: TreeMap, now: float) -> list[tuple[JobSpec, Bid]]:
    """Jobs (with their work rows) as the engine sees them: a JobSpec and a Bid each,
    in resource-type order, ordered by id (the order they were submitted)."""
    jobs = sorted(jobs, key=lambda j: j.pk)  # evaluates a queryset once
    if not jobs:
        return []
    works: dict[int, dict[int, tuple[int, float, float]]] = {}
    rows = JobWork.objects.filter(job_id__in=[j.pk for j in jobs]).values_list(
        "job_id", "resource_type_id", "tasks", "task_duration", "weight"
    )
    for job_id, rt_id, tasks, duration, weight in rows:
        works.setdefault(job_id, {})[rt_id] = (tasks, duration, weight)
    out = []
    for job in jobs:
        by_type = works.get(job.pk, {})
        spec = JobSpec(
            job_id=job.pk,
            leaf=tree_map.leaf_position(job.queue_id),
            tasks=tuple(by_type[t.pk][0] if t.pk in by_type else 0 for t in types),
            task_duration=tuple(float(by_type[t.pk][1]) if t.pk in by_type else 1.0 for t in types),
            submit_time=max(job.sim_submit_time, now),
        )
        bid = Bid(float(job.budget), tuple(float(by_type[t.pk][2]) if t.pk in by_type else 0.0 for t in types), job.utility)
        out.append((spec, bid))
    return out


def latest_plan(market_id: int) -> tuple[int, Plan] | None:
    """(snapshot id, Plan) of the market's newest stored clearing, or None."""
    row = AllocationSnapshot.objects.filter(market_id=market_id, plan__isnull=False).order_by("-id").values_list("id", "plan").first()
    if row is None:
        return None
    return row[0], plan_of(row[1])


def plan_of(data: bytes | memoryview) -> Plan:
    """The Plan stored in ``AllocationSnapshot.plan`` (PostgreSQL returns a memoryview)."""
    return Plan.from_bytes(bytes(data))
