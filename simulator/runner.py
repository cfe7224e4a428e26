"""Offline what-if runs: a trace replayed through the market engine.

The loop is the live market's, on a simulated clock (README, "Data flow of a
bid"), through the same :class:`~simulator.market.engine.MarketEngine`: every job
arrival and every departure re-clears the market with the configured
mechanism (Abacus by default, paper 000, Alg. 1-2) and the Plan drives the
cluster's dispatch until the next arrival or departure; departures are
settled by the Plan's payment rules.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from scheduler.fairshare.fairness import QueueTree
from scheduler.plan import Plan, Reservation, empty_plan
from simulator.market.engine import MarketEngine
from simulator.market.records import Bid, Charge, MarketConfig, StepReport
from simulator.metrics import mean_utilisation, response_stats, response_times
from simulator.records import FairnessSample, JobFinished, JobSpec
from simulator.workloads.traces import TraceJob

BudgetFn = Callable[[TraceJob], float]
WeightsFn = Callable[[TraceJob], Sequence[float]]
UtilityFn = Callable[[TraceJob], str]
MinUtilityFn = Callable[[TraceJob], float | None]
ProgressFn = Callable[[float, int, int], None]
Bookings = Mapping[int, Sequence[tuple[Reservation, float]]]


@dataclass(frozen=True)
class MarketParams:
    """Market and cluster settings of a run.

    Attributes:
        alpha, tol, max_rounds: auction exponent, relative tolerance and
            round cap (paper 000, Sec. 3).
        mechanism: within-queue mechanism, a name in
            ``scheduler.registry.MECHANISMS``.
        utility: "linear" or "log" for every job, or job -> kind.
        min_utility: job -> its SLO (paper 000, Sec. 6: the minimum utility; None
            for a job without one); None: no job has an SLO.
        budget: job -> budget (> 0); None draws U[50, 200] per job.
        weights: job -> (m,) utility weights (>= 0); None draws U[0.5, 2]
            per type. The defaults are paper 000's auction-efficiency set-up
            (Sec. 7), drawn from ``default_rng([seed, job_id])`` so a job's
            values do not depend on which other jobs are in the run.
        fairshare, t_wait: policy across queues (``FAIRSHARE``) and H-LTRF
            ``T_wait`` (paper 002).
        dispatch: within a leaf (``DISPATCH``: "stride", "lottery", "fifo").
        staged, known_durations, sample_interval: passed to the cluster.
        seed: seeds the default budgets/weights and the dispatcher.
    """

    alpha: float = 0.5
    tol: float = 1e-6
    max_rounds: int = 1000
    mechanism: str = "abacus"
    utility: str | UtilityFn = "log"
    min_utility: MinUtilityFn | None = None
    budget: BudgetFn | None = None
    weights: WeightsFn | None = None
    fairshare: str = "hltrf"
    t_wait: float = 0.0
    history: str = "forever"
    history_length: float = math.inf
    dispatch: str = "stride"
    staged: bool = True
    known_durations: bool = True
    sample_interval: float = 60.0
    seed: int = 0

    def config(self) -> MarketConfig:
        """The engine's configuration (validates the stage names)."""
        return MarketConfig(
            mechanism=self.mechanism, fairshare=self.fairshare, dispatch=self.dispatch,
            alpha=self.alpha, tol=self.tol, max_rounds=self.max_rounds, t_wait=self.t_wait,
            history=self.history, history_length=self.history_length,
        )


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
        charges: what the jobs paid, under the Plans' payment rules.
        average_shares: job id -> (m,) its shares averaged over its life, at
            departure (paper 000, Sec. 5, Def. 1), for the finished jobs.
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
    charges: list[Charge] = field(default_factory=list)
    average_shares: dict[int, NDArray[np.float64]] = field(default_factory=dict)

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


def draw_bid(job: TraceJob, params: MarketParams, m: int) -> Bid:
    """The job's bid: given by ``params`` or drawn from its own seeded stream
    (paper 000, Sec. 7: budgets U[50, 200], weights U[0.5, 2])."""
    rng = np.random.default_rng([params.seed, job.job_id])
    drawn_b, drawn_w = rng.uniform(50.0, 200.0), rng.uniform(0.5, 2.0, size=m)
    budget = float(params.budget(job) if params.budget else drawn_b)
    weights = tuple(float(w) for w in (params.weights(job) if params.weights else drawn_w))
    if len(weights) != m:
        raise ValueError(f"job {job.job_id}: weights must have {m} entries")
    utility = params.utility if isinstance(params.utility, str) else params.utility(job)
    slo = params.min_utility(job) if params.min_utility else None
    return Bid(budget, weights, utility, None if slo is None else float(slo))


@dataclass
class _Tally:
    """Running totals of a run."""

    finished: list[JobFinished] = field(default_factory=list)
    samples: list[FairnessSample] = field(default_factory=list)
    charges: list[Charge] = field(default_factory=list)
    average_shares: dict[int, NDArray[np.float64]] = field(default_factory=dict)
    clearing_times: list[float] = field(default_factory=list)
    prices: list[NDArray[np.float64]] = field(default_factory=list)
    wall: list[float] = field(default_factory=list)
    rounds: int = 0
    unconverged: int = 0

    def record(self, report: StepReport) -> None:
        self.finished.extend(report.departures)
        self.samples.extend(report.samples)
        self.charges.extend(report.charges)
        self.average_shares.update(report.average_shares)

    def clearing(self, now: float, plan: Plan, charges: list[Charge]) -> None:
        d = plan.diagnostics
        self.clearing_times.append(now)
        self.prices.append(np.asarray(d.prices, dtype=np.float64))
        self.rounds += int(d.rounds)
        self.unconverged += 0 if d.converged else 1
        self.charges.extend(charges)


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
    progress: ProgressFn | None = None,
    bookings: Bookings | None = None,
) -> RunResult:
    """Replay ``jobs`` through a market engine, re-clearing the market at every
    arrival and every departure.

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
        progress: optional ``progress(now, events, submitted)`` called after
            every step of the loop with the simulated time reached (s), the
            events handled so far (arrivals plus departures) and the jobs
            submitted so far; it only observes (the run's result does not
            depend on it) and may raise to abort the run (the exception
            propagates, e.g. a cancelled lab run).
        bookings: job id -> its reservations and fixed price (ERA's accepted
            requests, paper 001 Sec. 2.3.1), booked when the job is submitted
            (``MarketEngine.book``), as the live market books them at acceptance.

    Returns:
        The :class:`RunResult`; the clock starts at the first submit time.

    Raises:
        KeyError: a user without a leaf.
        ValueError: a zero capacity, or a job whose shape does not fit
            ``capacity``.
        UnknownName: a stage name no registry holds.
    """
    if any(c <= 0 for c in capacity):
        raise ValueError("every resource type needs capacity > 0 (auction prices divide by it)")
    order = sorted(jobs, key=lambda j: (j.submit_time, j.job_id))
    start = order[0].submit_time if order else 0.0
    p = params
    engine = MarketEngine.create(
        capacity, tree, p.config(), seed=p.seed, sample_interval=p.sample_interval, now=start,
        staged=p.staged, known_durations=p.known_durations,
    )
    loop = _Loop(engine, p, _leaf_lookup(leaf_of_user), bookings or {})
    loop.run(order, math.inf if until is None else max(float(until), start), timer, progress)
    t = loop.tally
    done = {f.job_id for f in t.finished}
    cluster = engine.cluster
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
        charges=t.charges,
        average_shares=t.average_shares,
    )


class _Loop:
    """The arrival/departure loop of :func:`run`."""

    def __init__(self, engine: MarketEngine, params: MarketParams, leaf_of: Callable[[str], int], bookings: Bookings) -> None:
        self.engine, self.params, self.leaf_of, self.bookings = engine, params, leaf_of, bookings
        self.tally = _Tally()
        self.submitted = 0

    def run(
        self, order: Sequence[TraceJob], horizon: float, timer: Callable[[], float] | None, progress: ProgressFn | None = None
    ) -> None:
        engine = self.engine
        events = 0
        while True:
            arrival = order[self.submitted].submit_time if self.submitted < len(order) else math.inf
            report = engine.step(min(arrival, horizon), stop_on_departure=True)
            self.tally.record(report)
            if report.departures:
                self._clear(timer)
            before = self.submitted
            self._submit_due(order, timer)
            if progress is not None:
                events += len(report.departures) + self.submitted - before
                progress(engine.now, events, self.submitted)
            idle = self.submitted == len(order) and engine.cluster.idle()
            if engine.now >= horizon or idle or (math.isinf(arrival) and not report.departures):
                return

    def _submit_due(self, order: Sequence[TraceJob], timer: Callable[[], float] | None) -> bool:
        """Submit every job whose time has come, clearing after each (as the
        live market does after each bid); True if any was."""
        first = self.submitted
        engine = self.engine
        while self.submitted < len(order) and order[self.submitted].submit_time <= engine.now:
            job = order[self.submitted]
            spec = JobSpec(job.job_id, self.leaf_of(job.user), job.tasks, job.task_duration, job.submit_time)
            for reservation, price in self.bookings.get(job.job_id, ()):
                engine.book(reservation, price)
            engine.submit(spec, draw_bid(job, self.params, engine.m))
            self.submitted += 1
            self._clear(timer)
        return self.submitted > first

    def _clear(self, timer: Callable[[], float] | None) -> None:
        """One market clearing: snapshot, mechanism, Plan applied (none on an empty market)."""
        if not self.engine.cluster.active_jobs():
            self.engine.apply_plan(empty_plan(self.engine.m))
            return
        t0 = timer() if timer else 0.0
        plan, charges = self.engine.clear()
        if timer:
            self.tally.wall.append(timer() - t0)
        self.tally.clearing(self.engine.now, plan, charges)
