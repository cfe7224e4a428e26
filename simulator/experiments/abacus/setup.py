"""The market loop of paper 000's Hadoop experiments (Sec. 7.1.2-7.1.4) on the Table 1 workload.

The workload (Table 1's users, their Poisson arrivals and the tasks per job) is
``simulator.workloads.table1`` (with why ``MAP_TASKS == REDUCE_TASKS``); the
system runs until every job is done. A job's efficiency is the inverse of its
response time.

The paper does not give the cluster's slots (Epic, 72 single-core nodes, Hadoop
0.20). Our choices, each tied to its text:
* ``CAPACITY`` equal for map and reduce: Hadoop 0.20's task trackers offer the
  same number of map and reduce slots (``mapred.tasktracker.map.tasks.maximum``
  and ``...reduce.tasks.maximum``, 2 and 2 by default) on every node.
* The load: 10 tasks per job on 20 + 20 slots put the offered load at about
  124 % of the map slots and 93 % of the reduce slots, so a backlog builds in
  the 30 minutes and drains after. Fig. 10 needs one: its total completion
  time differs between Abacus and FIFO by 5-20 %, which only a work-bound
  (overloaded) run shows; at 80 % the last arrival would fix it.
* ``WHOLE_JOB_BIDS``: every active job bids on both types until it departs.
  Sec. 7.1: "When an event of job arrival or departure happens, the auction
  component recalculates the allocation probabilities for each active job on
  map nodes and reduce nodes" (and in Hadoop a job's reduces cannot finish
  before its maps). With bids only on the types a job still has tasks of
  (``whole_job_bids=False``, the market engine's rule) user 3's short reduces
  end early, its whole budget then moves to the maps whatever ratio it
  reported, and Fig. 9b is flat.

Map and reduce are two *independent* resource types (``STAGED = False``): a
job's reduce tasks may run while its maps do. The paper says so ("We regard Map
and Reduce nodes as two independent types of resources", Sec. 7.1) and its
model depends on it: the utility T_m x + T_r y is additive in the two shares
(Sec. 7.1.2), and Sec. 5 fits 1 / response time as linear in the average
shares. Its Hadoop 0.20 started reduces while maps ran (slow start). With a
strict map -> reduce barrier (``staged=True``, the simulator's MapReduce
default) sharing every job's maps delays every job's reduces (measured on an
earlier set-up of 30 + 10 slots and 10 + 4 tasks: Abacus 34 % behind FIFO at 6
users, paper at most 5 %; the Fig. 11 fit's ratio 0.74, true 6).
Each experiment takes ``staged`` to show that variant. As in the paper's
single Hadoop pool, all jobs compete in one queue (one auction), dispatched by
the stride rule.

``simulate`` is the arrival/departure loop of ``simulator.runner`` on the same
``MarketEngine`` (clear at every arrival and departure), keeping per job what
these experiments need: response time, average job resource (Sec. 5, Def. 1),
achieved utility and whether an SLO job paid.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Plan, empty_plan
from scheduler.types import MarketSnapshot
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, MarketConfig
from simulator.records import JobSpec
from simulator.workloads.table1 import Job, User

CAPACITY = (20, 20)  # map, reduce slots: equal, as Hadoop 0.20 task trackers
STAGED = False  # map and reduce as independent resource types (paper 000, Sec. 7.1)
WHOLE_JOB_BIDS = True  # jobs bid on map and reduce until they depart (paper 000, Sec. 7.1)


@dataclass(frozen=True)
class Outcome:
    """A job's fate: response time (s), average job resource (map, reduce) over its life
    (Sec. 5, Def. 1, as the engine settles SLOs on it), its average share of each type
    over the time it was served on that type (share > 0), achieved utility (of its SLO
    bid's weights; NaN without an SLO) and whether it paid."""

    job: Job
    response_s: float
    average_shares: tuple[float, float]
    served_shares: tuple[float, float]
    achieved: float
    paid: bool


class _ServedShares:
    """Per job and type: the integral of its share over the time the share was > 0, and that time."""

    def __init__(self) -> None:
        self.area: dict[int, np.ndarray] = {}
        self.span: dict[int, np.ndarray] = {}

    def add(self, shares: dict[int, tuple[float, np.ndarray]], dt: float) -> None:
        if dt <= 0:
            return
        for job_id, (_, share) in shares.items():
            on = share > 0
            self.area[job_id] = self.area.get(job_id, np.zeros(share.shape)) + share * dt
            self.span[job_id] = self.span.get(job_id, np.zeros(share.shape)) + on * dt

    def mean(self, job_id: int) -> tuple[float, float]:
        area, span = self.area.get(job_id, np.zeros(2)), self.span.get(job_id, np.zeros(2))
        avg = np.where(span > 0, area / np.where(span > 0, span, 1.0), 0.0)
        return float(avg[0]), float(avg[1])


BidFn = Callable[[Job], Bid]


class _WholeJobBids(MarketEngine):
    """The engine with every active job bidding on each type it has tasks of, done or not,
    until it departs (``WHOLE_JOB_BIDS``; paper 000, Sec. 7.1: probabilities "for each active
    job on map nodes and reduce nodes", recalculated at arrivals and departures)."""

    def snapshot(self, extra: Iterable[tuple[JobSpec, Bid]] = (), exclude: Iterable[int] = (),
                 warm: Plan | None = None, *, config: MarketConfig | None = None,
                 capacity: Sequence[int] | None = None) -> MarketSnapshot:
        snap = super().snapshot(extra, exclude, warm, config=config, capacity=capacity)
        specs = {spec.job_id: spec for spec, _ in extra}
        rows = []
        for k, job_id in enumerate(snap.job_ids.tolist()):
            state = self.cluster.job(int(job_id))
            spec = state.spec if state is not None else specs.get(int(job_id))
            rows.append([t > 0 for t in spec.tasks] if spec is not None else list(snap.demand[k]))
        return replace(snap, demand=np.array(rows, dtype=np.bool_).reshape(snap.demand.shape))


def simulate(jobs: Sequence[Job], bid: BidFn, *, alpha: float = 0.5, mechanism: str = "abacus", fifo: bool = False,
             capacity: Sequence[int] = CAPACITY, seed: int = 0, staged: bool = STAGED,
             whole_job_bids: bool = WHOLE_JOB_BIDS) -> list[Outcome]:
    """Run the jobs through one market (one queue), clearing at every arrival and departure.

    ``fifo``: the FIFO baseline of Fig. 10 (``fifo`` across queues and inside the queue;
    budgets ignored). ``staged``: reduces only after all the job's maps; ``whole_job_bids``:
    jobs bid on both types until they depart, else only while they have tasks left of
    the type (module doc).
    Returns the finished jobs' outcomes in departure order.
    """
    tree = QueueTree.from_paths({"root.pool": 1.0})
    config = MarketConfig(mechanism=mechanism, fairshare="fifo" if fifo else "hltrf",
                          dispatch="fifo" if fifo else "stride", alpha=alpha)
    kind = _WholeJobBids if whole_job_bids else MarketEngine
    engine = kind.create(list(capacity), tree, config, seed=seed, sample_interval=math.inf, now=0.0,
                                 staged=staged)
    by_id = {j.job_id: j for j in jobs}
    out: list[Outcome] = []
    pending = sorted(jobs, key=lambda j: (j.submit, j.job_id))
    served = _ServedShares()
    k = 0
    while True:
        arrival = pending[k].submit if k < len(pending) else math.inf
        shares, before = engine.current_shares(), engine.now
        report = engine.step(arrival, stop_on_departure=True)
        served.add(shares, report.now - before)
        for done in report.departures:
            paid = any(c.job_id == done.job_id for c in report.charges)
            avg = report.average_shares.get(done.job_id, np.zeros(2))
            out.append(Outcome(by_id[done.job_id], done.finish_time - done.submit_time, (float(avg[0]), float(avg[1])),
                               served.mean(done.job_id), report.achieved_utility.get(done.job_id, math.nan), paid))
        changed = bool(report.departures)
        while k < len(pending) and pending[k].submit <= engine.now:
            j = pending[k]
            engine.submit(JobSpec(j.job_id, 0, j.tasks, j.task_s, j.submit), bid(j))
            k += 1
            changed = True
        if changed:
            if engine.cluster.active_jobs():
                engine.clear()
            else:
                engine.apply_plan(empty_plan(engine.m))
        if k == len(pending) and engine.cluster.idle():
            return out
        if math.isinf(arrival) and not report.departures and not changed:
            return out  # nothing can run any more


def efficiency_by_user(outcomes: Sequence[Outcome], n_users: int) -> list[float]:
    """Mean job efficiency (1 / response time, 1 / simulated s) per user (NaN without jobs)."""
    out = []
    for k in range(n_users):
        times = [o.response_s for o in outcomes if o.job.user == k]
        out.append(float(np.mean([1.0 / t for t in times])) if times else math.nan)
    return out


def response_by_user(outcomes: Sequence[Outcome], n_users: int) -> list[float]:
    """Mean response time per user (simulated s; NaN without jobs)."""
    out = []
    for k in range(n_users):
        times = [o.response_s for o in outcomes if o.job.user == k]
        out.append(float(np.mean(times)) if times else math.nan)
    return out


def alone_s(job: Job, capacity: Sequence[int] = CAPACITY, staged: bool = STAGED) -> float:
    """The job's response time alone on the cluster (simulated s): its map waves, then its
    reduce waves (``staged``), or the longer of the two (independent types)."""
    waves = [math.ceil(t / c) * d for t, c, d in zip(job.tasks, capacity, job.task_s, strict=True) if t]
    return sum(waves) if staged else max(waves, default=0.0)


def slowdown_by_user(outcomes: Sequence[Outcome], n_users: int, staged: bool = STAGED) -> list[float]:
    """Mean slowdown (response time / time alone) per user (NaN without jobs)."""
    out = []
    for k in range(n_users):
        ratios = [o.response_s / alone_s(o.job, staged=staged) for o in outcomes if o.job.user == k]
        out.append(float(np.mean(ratios)) if ratios else math.nan)
    return out


def true_bid(users: Sequence[User]) -> BidFn:
    """Every job bids its user's budget and true linear utility (Table 1)."""
    return lambda j: Bid(users[j.user].budget, users[j.user].true_weights, "linear")
