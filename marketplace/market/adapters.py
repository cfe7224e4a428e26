"""ORM rows <-> scheduler/simulator data: the only Django <-> numpy seam."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.db import connection

from marketplace.market.models.allocation import AllocationSnapshot
from marketplace.market.models.jobs import Job, JobWork
from marketplace.market.models.market import Market
from marketplace.market.models.queues import Queue, ResourceType, dotted_paths
from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Plan
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec
from simulator.runner import MarketParams, RunResult, run
from simulator.workloads.traces import TraceJob


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
    full = list(
        Queue.objects.filter(market_id=market_id).order_by("id").values_list("id", "name", "parent_id", "weight", "min_share", "max_share")
    )
    if not full:
        raise ValueError(f"market {market_id} has no queues")
    rows = [r[:4] for r in full]
    index = {pk: i for i, (pk, *_rest) in enumerate(rows)}
    paths = dotted_paths((pk, name, parent) for pk, name, parent, _ in rows)
    limited = any(lo > 0 or hi < 1 for *_rest, lo, hi in full)
    tree = QueueTree(
        names=tuple(paths[pk] for pk, *_rest in rows),
        parent=tuple(index[parent] if parent else -1 for _, _, parent, _ in rows),
        weight=tuple(float(w) for *_rest, w in rows),
        min_share=tuple(float(r[4]) for r in full) if limited else (),
        max_share=tuple(float(r[5]) for r in full) if limited else (),
    )
    tree.validate()
    leaf_ids = tuple(rows[i][0] for i in tree.leaves)
    signature = ";".join(f"{pk}:{parent}:{weight}:{lo}:{hi}" for pk, _, parent, weight, lo, hi in full)
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
        history=market.fairshare_history, history_length=market.fairshare_history_length,
    )


def clearing_params(config: MarketConfig, capacity: Iterable[int]) -> dict[str, Any]:
    """The parameters a clearing used, as stored with its Plan (``AllocationSnapshot.params``)
    and shown as the dashboard's "last clearing": the three stage names, the auction's knobs,
    the fair-share knobs (null for an infinite T_wait or history length: JSON has no inf)
    and the slots of each resource type. The same dict for the same settings (kept: every
    clearing of a tick stores one; callers must not mutate it)."""
    return _params(config, tuple(int(c) for c in capacity))


@lru_cache(maxsize=64)
def _params(config: MarketConfig, capacity: tuple[int, ...]) -> dict[str, Any]:
    def finite(x: float) -> float | None:
        return float(x) if math.isfinite(x) else None

    return {
        "mechanism": config.mechanism, "alpha": config.alpha, "auction_tolerance": config.tol,
        "auction_max_rounds": config.max_rounds, "fairshare_policy": config.fairshare, "t_wait": finite(config.t_wait),
        "fairshare_history": config.history, "fairshare_history_length": finite(config.history_length),
        "dispatch_mode": config.dispatch, "capacity": list(capacity),
    }


JOB_FIELDS = ("id", "queue_id", "budget", "utility", "sim_submit_time", "min_utility")  # what a job's spec reads of a Job

# job id -> (queue id, budget, utility, simulated submit time, {resource type id: (tasks, s per task, weight)}, SLO).
# A bid never changes after it is placed, so this process keeps what it read (or wrote).
_BIDS: OrderedDict[int, tuple[int, float, str, float, dict[int, tuple[int, float, float]], float | None]] = OrderedDict()
_BIDS_MAX = 50_000
_BIDS_LOCK = threading.Lock()


def remember_bid(job: Job, works: Iterable[JobWork]) -> None:
    """Keep a bid just written (call after commit), so the clearing and the tick need not read it back."""
    by_type = {w.resource_type_id: (int(w.tasks), float(w.task_duration), float(w.weight)) for w in works}
    with _BIDS_LOCK:
        slo = None if job.min_utility is None else float(job.min_utility)
        _BIDS[job.pk] = (job.queue_id, float(job.budget), job.utility, float(job.sim_submit_time), by_type, slo)
        while len(_BIDS) > _BIDS_MAX:
            _BIDS.popitem(last=False)


def forget_bids() -> None:
    """Drop every kept bid and Plan (a test database reuses primary keys; production never
    does, as bids are never deleted and only committed ones are kept)."""
    with _BIDS_LOCK:
        _BIDS.clear()
    with _PLANS_LOCK:
        _PLANS.clear()


def _read_bids(job_ids: list[int]) -> None:
    jobs = list(Job.objects.filter(pk__in=job_ids).only(*JOB_FIELDS))
    rows = JobWork.objects.filter(job_id__in=job_ids).only("job_id", "resource_type_id", "tasks", "task_duration", "weight")
    works: dict[int, list[JobWork]] = {}
    for w in rows:
        works.setdefault(w.job_id, []).append(w)
    for job in jobs:
        remember_bid(job, works.get(job.pk, []))


def job_specs(job_ids: Iterable[int], types: list[ResourceType], tree_map: TreeMap, now: float) -> list[tuple[JobSpec, Bid]]:
    """Jobs as the engine sees them: a JobSpec and a Bid each, in resource-type order,
    ordered by id (the order they were submitted). Bids this process has not seen
    are read (two queries for all of them).

    Raises:
        KeyError: an id of no job.
    """
    ids = sorted(job_ids)
    with _BIDS_LOCK:
        missing = [pk for pk in ids if pk not in _BIDS]
    if missing:
        _read_bids(missing)
    out = []
    for pk in ids:
        with _BIDS_LOCK:
            queue_id, budget, utility, submitted, by_type, slo = _BIDS[pk]
        spec = JobSpec(
            job_id=pk,
            leaf=tree_map.leaf_position(queue_id),
            tasks=tuple(by_type[t.pk][0] if t.pk in by_type else 0 for t in types),
            task_duration=tuple(by_type[t.pk][1] if t.pk in by_type else 1.0 for t in types),
            submit_time=max(submitted, now),
        )
        out.append((spec, Bid(budget, tuple(by_type[t.pk][2] if t.pk in by_type else 0.0 for t in types), utility, slo)))
    return out


def bid_work(job_ids: Iterable[int], types: list[ResourceType]) -> dict[int, tuple[float, ...]]:
    """job id -> the slot-seconds of its whole work per resource type (tasks x seconds per task, in
    resource-type order), from the bids this process keeps (read when missing)."""
    ids = sorted(job_ids)
    with _BIDS_LOCK:
        missing = [pk for pk in ids if pk not in _BIDS]
    if missing:
        _read_bids(missing)
    out = {}
    for pk in ids:
        with _BIDS_LOCK:
            by_type = _BIDS[pk][4]
        out[pk] = tuple(by_type[t.pk][0] * by_type[t.pk][1] if t.pk in by_type else 0.0 for t in types)
    return out


def latest_plan(market_id: int) -> tuple[int, Plan] | None:
    """(snapshot id, Plan) of the market's newest stored clearing, or None.

    One statement, built once (every clearing and tick reads it); when the newest Plan is the
    one this process stored last (:func:`remember_plan`: a clearing worker's next clearing, a
    tick after its own), the statement returns its id alone and the Plan comes from memory
    instead of being read and decoded again (hundreds of kilobytes at thousands of jobs)."""
    with _PLANS_LOCK:
        kept = _PLANS.get(market_id)
    newest = plan_unless(market_id, -1 if kept is None else kept[0])
    if newest is None:
        return None
    if newest[1] is None:
        assert kept is not None
        return kept
    return newest[0], newest[1]


def plan_unless(market_id: int, known_id: int) -> tuple[int, Plan | None] | None:
    """(snapshot id, Plan) of the market's newest stored clearing, with None for the Plan when
    its id is ``known_id`` (the caller has it: its bytes are not read); None without one. One statement."""
    with connection.cursor() as cursor:
        cursor.execute(_latest_plan_sql(), [known_id, market_id])
        row = cursor.fetchone()
    if row is None:
        return None
    if row[0] == known_id:
        return known_id, None
    with _PLANS_LOCK:
        kept = _PLANS.get(market_id)
    if kept is not None and kept[0] == row[0]:
        return kept  # decoded already (remember_plan)
    return int(row[0]), plan_of(row[1])


@lru_cache(maxsize=1)
def _latest_plan_sql() -> str:
    """The newest Plan's id, and its bytes unless its id is the first parameter."""
    meta = AllocationSnapshot._meta
    q = connection.ops.quote_name
    plan, market = (q(meta.get_field(name).column) for name in ("plan", "market"))  # type: ignore[union-attr]
    return (f"SELECT id, CASE WHEN id = %s THEN NULL ELSE {plan} END FROM {q(meta.db_table)}"
            f" WHERE {market} = %s AND {plan} IS NOT NULL ORDER BY id DESC LIMIT 1")


_PLANS: dict[int, tuple[int, Plan]] = {}  # market id -> (snapshot id, Plan) this process stored last
_PLANS_LOCK = threading.Lock()


def remember_plan(market_id: int, snapshot_id: int, plan: Plan) -> None:
    """Keep the Plan this process just stored (call after commit: a rolled-back one must not
    be kept) for :func:`latest_plan`. One per market; Plans are immutable."""
    with _PLANS_LOCK:
        _PLANS[market_id] = (snapshot_id, plan)


def plan_of(data: bytes | memoryview) -> Plan:
    """The Plan stored in ``AllocationSnapshot.plan`` (PostgreSQL returns a memoryview)."""
    return Plan.from_bytes(bytes(data))


def offline_replay(market: Market, job_ids: Iterable[int]) -> RunResult:
    """Replay a live market's jobs through the offline runner (``simulator.runner.run``):
    the same bids (budget, per-type weights, utility, SLO), submit times, leaf queues,
    capacities, stage names and parameters, and the live engine's dispatcher seed
    (``market.pk``). Job ids are the live primary keys, so the two runs can be
    compared job by job (the live and offline loops are the same engine).
    """
    from django.conf import settings

    ids = sorted(job_ids)
    tree_map = queue_tree(market)
    types = resource_types(market)
    specs = job_specs(ids, types, tree_map, now=-math.inf)  # the bids as placed, at their own submit times
    by_id = {spec.job_id: (spec, bid) for spec, bid in specs}
    jobs = [TraceJob(spec.job_id, spec.submit_time, str(spec.leaf), "", spec.tasks, spec.task_duration) for spec, _ in specs]
    params = MarketParams(
        alpha=market.alpha, tol=market.auction_tolerance, max_rounds=market.auction_max_rounds, mechanism=market.mechanism,
        fairshare=market.fairshare_policy, dispatch=market.dispatch_mode, t_wait=market.t_wait,
        history=market.fairshare_history, history_length=market.fairshare_history_length,
        budget=lambda j: by_id[j.job_id][1].budget, weights=lambda j: by_id[j.job_id][1].weights,
        utility=lambda j: by_id[j.job_id][1].utility, min_utility=lambda j: by_id[j.job_id][1].min_utility,
        sample_interval=settings.MARKET_SAMPLE_INTERVAL_S, seed=market.pk,
    )
    leaves = {str(k): k for k in range(len(tree_map.leaf_queue_ids))}
    return run(jobs, tree=tree_map.tree, leaf_of_user=leaves, capacity=[t.capacity for t in types], params=params)
