"""Offline what-if runs: a trace replayed through the market and the cluster.

The loop is the live market's, on a simulated clock (SPEC 2, data flow of a
bid): every job arrival and every departure re-clears the market with the
registry policy (Abacus by default, paper 000, Alg. 1-2) on a
:class:`~scheduler.types.MarketSnapshot` built from the cluster (group = leaf
position, demand from ``Cluster.demand_mask``, warm start from the previous
sub-budgets), and the resulting shares drive the cluster's dispatch until the
next arrival or departure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare import QueueTree
from scheduler.registry import get_policy
from scheduler.types import MarketSnapshot, Outcome
from simulator.cluster import AdvanceReport, Cluster, FairnessSample, JobFinished, JobSpec
from simulator.metrics import mean_utilisation, response_stats, response_times
from simulator.workload import TraceJob

BudgetFn = Callable[[TraceJob], float]
WeightsFn = Callable[[TraceJob], Sequence[float]]


@dataclass(frozen=True)
class MarketParams:
    """Market and cluster settings of a run.

    Attributes:
        alpha, tol, max_rounds: auction exponent, relative tolerance and
            round cap (paper 000, Sec. 3; SPEC 3.1).
        policy: allocation policy name in ``scheduler.registry``.
        utility: "linear" or "log" utility for every job.
        budget: job -> budget (> 0); None draws U[50, 200] per job.
        weights: job -> (m,) utility weights (>= 0); None draws U[0.5, 2]
            per type. The defaults are paper 000's auction-efficiency set-up
            (Sec. 7), drawn from ``default_rng([seed, job_id])`` so a job's
            values do not depend on which other jobs are in the run.
        fairshare, t_wait: leaf-level policy and H-LTRF ``T_wait`` (paper 002).
        dispatch: "stride" or "lottery" within a leaf.
        staged, known_durations, sample_interval: passed to the cluster.
        seed: seeds the default budgets/weights and the dispatcher.
    """

    alpha: float = 0.5
    tol: float = 1e-6
    max_rounds: int = 1000
    policy: str = "abacus"
    utility: str = "log"
    budget: BudgetFn | None = None
    weights: WeightsFn | None = None
    fairshare: str = "hltrf"
    t_wait: float = 0.0
    dispatch: str = "stride"
    staged: bool = True
    known_durations: bool = True
    sample_interval: float = 60.0
    seed: int = 0


@dataclass(frozen=True)
class RunResult:
    """What a run produced.

    Attributes:
        jobs: jobs submitted.
        finished: departures in time order.
        unfinished: ids of jobs still active (or never submitted) at the end.
        start_time, end_time: simulated seconds the run covered.
        capacity: (m,) slots.
        clearings: market clearings run.
        auction_rounds: auction rounds summed over clearings.
        unconverged: clearings that hit ``max_rounds``.
        clearing_times: (clearings,) simulated time of each clearing.
        prices: (clearings, m) unit prices of each clearing (money per slot).
        clearing_wall_s: wall seconds per clearing, only when a timer was
            passed to :func:`run` (empty otherwise: runs stay deterministic).
        samples: periodic fairness samples; ``final`` is one at ``end_time``.
    """

    jobs: int
    finished: list[JobFinished]
    unfinished: list[int]
    start_time: float
    end_time: float
    capacity: NDArray[np.int64]
    clearings: int
    auction_rounds: int
    unconverged: int
    clearing_times: NDArray[np.float64]
    prices: NDArray[np.float64]
    clearing_wall_s: list[float]
    samples: list[FairnessSample]
    final: FairnessSample

    def response_times(self) -> NDArray[np.float64]:
        """(finished,) response time per finished job, seconds."""
        return response_times(self.finished)

    def summary(self) -> dict[str, Any]:
        """Headline figures (JSON-serialisable; floats rounded to 9 digits
        so a golden file does not churn on the last bit)."""
        span = self.end_time - self.start_time
        out: dict[str, Any] = {
            "jobs": self.jobs,
            "finished": len(self.finished),
            **response_stats(self.response_times()),
            "clearings": self.clearings,
            "auction_rounds": self.auction_rounds,
            "unconverged_clearings": self.unconverged,
            "makespan_s": span,
            "mean_utilisation": mean_utilisation(self.final.usage, self.capacity, span),
            "sharing_benefit": self.final.benefit.tolist(),
            "sharing_loss": self.final.loss.tolist(),
        }
        return {key: _rounded(value) for key, value in out.items()}


def _rounded(value: Any) -> Any:
    if isinstance(value, float):
        return float(f"{value:.9g}")
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


@dataclass
class _Market:
    """Bids of the active jobs and the last clearing's sub-budgets."""

    params: MarketParams
    m: int
    budget: dict[int, float] = field(default_factory=dict)
    weights: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    sub_budgets: dict[int, NDArray[np.float64]] = field(default_factory=dict)

    def add(self, job: TraceJob) -> None:
        """Record the job's bid (given or drawn from its own seeded stream)."""
        p = self.params
        rng = np.random.default_rng([p.seed, job.job_id])
        drawn_b, drawn_w = rng.uniform(50.0, 200.0), rng.uniform(0.5, 2.0, size=self.m)
        self.budget[job.job_id] = float(p.budget(job) if p.budget else drawn_b)
        w = np.asarray(p.weights(job) if p.weights else drawn_w, dtype=np.float64)
        if w.shape != (self.m,):
            raise ValueError(f"job {job.job_id}: weights must have {self.m} entries")
        self.weights[job.job_id] = w

    def snapshot(self, cluster: Cluster, leaf: Mapping[int, int]) -> MarketSnapshot:
        """The market now: active jobs, their bids and demand."""
        mask = cluster.demand_mask()
        ids = list(mask)
        nan = np.full(self.m, np.nan)
        p = self.params
        return MarketSnapshot(
            job_ids=np.array(ids, dtype=np.int64),
            group=np.array([leaf[i] for i in ids], dtype=np.int64),
            budgets=np.array([self.budget[i] for i in ids], dtype=np.float64),
            weights=np.array([self.weights[i] for i in ids], dtype=np.float64).reshape(-1, self.m),
            utility=(p.utility,) * len(ids),
            demand=np.array([mask[i] for i in ids], dtype=np.bool_).reshape(-1, self.m),
            capacity=cluster.capacity.astype(np.float64),
            alpha=p.alpha,
            tol=p.tol,
            max_rounds=p.max_rounds,
            warm_start=np.array([self.sub_budgets.get(i, nan) for i in ids]).reshape(-1, self.m),
        )

    def forget(self, job_ids: Sequence[int]) -> None:
        for jid in job_ids:
            self.budget.pop(jid, None)
            self.weights.pop(jid, None)
            self.sub_budgets.pop(jid, None)


@dataclass
class _Tally:
    """Running totals of a run."""

    finished: list[JobFinished] = field(default_factory=list)
    samples: list[FairnessSample] = field(default_factory=list)
    clearing_times: list[float] = field(default_factory=list)
    prices: list[NDArray[np.float64]] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    rounds: int = 0
    unconverged: int = 0

    def record(self, report: AdvanceReport) -> None:
        self.finished.extend(report.finished)
        self.samples.extend(report.samples)

    def clearing(self, now: float, outcome: Outcome) -> None:
        self.clearing_times.append(now)
        self.prices.append(np.asarray(outcome.prices, dtype=np.float64))
        self.rounds += int(outcome.rounds)
        self.unconverged += 0 if outcome.converged else 1


def _leaf_lookup(leaf_of_user: Callable[[str], int] | Mapping[str, int]) -> Callable[[str], int]:
    if isinstance(leaf_of_user, Mapping):
        return lambda user: int(leaf_of_user[user])
    return lambda user: int(leaf_of_user(user))


def run(
    jobs: Sequence[TraceJob],
    *,
    tree: QueueTree,
    leaf_of_user: Callable[[str], int] | Mapping[str, int],
    capacity: Sequence[int],
    params: MarketParams = MarketParams(),
    until: float | None = None,
    timer: Callable[[], float] | None = None,
) -> RunResult:
    """Replay ``jobs`` on a cluster, re-clearing the market at every arrival
    and departure.

    Args:
        jobs: the workload; sorted here by (submit time, id).
        tree: queue hierarchy of the cluster.
        leaf_of_user: user name -> leaf position in ``tree.leaves``.
        capacity: (m,) slots per resource type; m must match the jobs' tasks.
        params: market and cluster settings.
        until: stop at this simulated time (s); None runs until every job
            has departed (or nothing can run any more).
        timer: optional wall clock (e.g. ``time.perf_counter``) to time the
            clearings; it never influences the run.

    Returns:
        The :class:`RunResult`; the clock starts at the first submit time.

    Raises:
        KeyError: a user without a leaf.
        ValueError: a zero capacity, or a job whose shape does not fit
            ``capacity``.
    """
    if any(c <= 0 for c in capacity):
        raise ValueError("every resource type needs capacity > 0 (auction prices divide by it)")
    order = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    start = order[0].submit_time if order else 0.0
    p = params
    cluster = Cluster(
        capacity, tree, policy=p.fairshare, t_wait=p.t_wait, dispatch=p.dispatch,
        staged=p.staged, seed=p.seed, sample_interval=p.sample_interval, now=start,
        known_durations=p.known_durations,
    )  # fmt: skip
    loop = _Loop(cluster, _Market(p, cluster.m), get_policy(p.policy), _leaf_lookup(leaf_of_user))
    loop.run(order, math.inf if until is None else max(float(until), start), timer)
    t = loop.tally
    done = {f.job_id for f in t.finished}
    return RunResult(
        jobs=len(order),
        finished=t.finished,
        unfinished=sorted(j.job_id for j in order if j.job_id not in done),
        start_time=start,
        end_time=cluster.now,
        capacity=cluster.capacity.copy(),
        clearings=len(t.clearing_times),
        auction_rounds=t.rounds,
        unconverged=t.unconverged,
        clearing_times=np.array(t.clearing_times, dtype=np.float64),
        prices=np.array(t.prices, dtype=np.float64).reshape(-1, cluster.m),
        clearing_wall_s=t.wall,
        samples=t.samples,
        final=cluster.sample(),
    )


class _Loop:
    """The arrival/departure loop of :func:`run`."""

    def __init__(self, cluster: Cluster, market: _Market, policy: Any, leaf_of: Callable[[str], int]) -> None:
        self.cluster, self.market, self.policy, self.leaf_of = cluster, market, policy, leaf_of
        self.leaf: dict[int, int] = {}
        self.tally = _Tally()
        self.submitted = 0

    def run(self, order: Sequence[TraceJob], horizon: float, timer: Callable[[], float] | None) -> None:
        cluster = self.cluster
        while True:
            arrival = order[self.submitted].submit_time if self.submitted < len(order) else math.inf
            report = cluster.advance(min(arrival, horizon), stop_on_departure=True)
            self.tally.record(report)
            self.market.forget([f.job_id for f in report.finished])
            arrived = self._submit_due(order)
            if report.finished or arrived:
                self._clear(timer)
            idle = self.submitted == len(order) and cluster.idle()
            if cluster.now >= horizon or idle or (math.isinf(arrival) and not report.finished):
                return

    def _submit_due(self, order: Sequence[TraceJob]) -> bool:
        """Submit every job whose time has come; True if any was."""
        first = self.submitted
        while self.submitted < len(order) and order[self.submitted].submit_time <= self.cluster.now:
            job = order[self.submitted]
            leaf = self.leaf_of(job.user)
            self.cluster.submit(JobSpec(job.job_id, leaf, job.tasks, job.task_duration, job.submit_time))
            self.leaf[job.job_id] = leaf
            self.market.add(job)
            self.submitted += 1
        return self.submitted > first

    def _clear(self, timer: Callable[[], float] | None) -> None:
        """One market clearing: snapshot, policy, shares to the cluster."""
        if not self.cluster.active_jobs():
            self.cluster.set_shares({})
            return
        snapshot = self.market.snapshot(self.cluster, self.leaf)
        t0 = timer() if timer else 0.0
        outcome = self.policy.allocate(snapshot)
        if timer:
            self.tally.wall.append(timer() - t0)
        ids = snapshot.job_ids.tolist()
        self.cluster.set_shares({jid: outcome.shares[k] for k, jid in enumerate(ids)})
        self.market.sub_budgets = {jid: outcome.sub_budgets[k] for k, jid in enumerate(ids)}
        self.tally.clearing(self.cluster.now, outcome)
